"""SkillManager end to end: the bundled examples really run; lookups, argv and arguments are
refused and audited like the executor does; the approval request it builds; settings; SKILL.md
edits reach the next run.

Who is asked and what a decision does (approvals, declines, "Yes in session") is in
test_gate.py.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import pytest
from manager_support import (
    BadRepr,
    RecordingApprover,
    manager_for,
    outcomes,
    posix_only,
    refusals,
    request_of,
    run_plan,
)

from skill_magics.core.base.errors import (
    AmbiguousScriptError,
    ArgumentSerializationError,
    ScriptNotFoundError,
    SkillNotFoundError,
    SkillParseError,
    ToolRestrictionError,
)
from skill_magics.core.manager import SkillManager

pytest.importorskip("skill_magics.core.run.executor")


# -- the examples run ---------------------------------------------------------------------


def test_csv_profiler_with_path_and_with_text(example_manager):
    result = example_manager.execute_skill_script(
        "csv-profiler", "profile", {"path": "data/sample.csv"}
    )
    assert result.success, result.stderr
    profile = result.json()
    assert profile["rows"] == 8
    columns = {c["name"]: c for c in profile["columns"]}
    assert columns["population"]["type"] == "integer"
    assert columns["population"]["nulls"] == 1
    assert columns["area_km2"]["type"] == "float"
    assert columns["area_km2"]["max"] == 2672.0
    assert columns["capital"]["type"] == "boolean"
    assert columns["founded"]["type"] == "date" and columns["founded"]["nulls"] == 3
    assert columns["country"]["top"]["Norway"] == 2

    text = example_manager.execute_skill_script(
        "csv-profiler", "scripts/profile.py", {"csv": "x;y\n1;a\n3;b\n"}, argv=["--top", "1"]
    ).json()
    x, y = text["columns"]
    assert (x["type"], x["min"], x["max"], x["mean"]) == ("integer", 1, 3, 2.0)
    assert len(y["top"]) == 1


def test_csv_profiler_refuses_paths_outside_the_callers_folder_and_the_skill(example_manager):
    result = example_manager.execute_skill_script(
        "csv-profiler", "profile.py", {"path": "../../../../etc/passwd"}
    )
    assert result.exit_code == 1
    assert "no file '../../../../etc/passwd' in" in result.stderr
    assert '{"path": "mine.csv"}' in result.stderr  # names the fix


def test_csv_profiler_reads_a_csv_beside_the_notebook(example_manager, tmp_path, monkeypatch):
    # Issue 31: {"path": "mine.csv"} in the caller's folder was looked up in the skill folder.
    (tmp_path / "data").mkdir()
    (tmp_path / "mine.csv").write_text("city,temp\nOslo,4\nLima,19\n", encoding="utf-8")
    (tmp_path / "data" / "sample.csv").write_text("own\n1\n", encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # the caller's folder (a notebook's)
    result = example_manager.execute_skill_script("csv-profiler", "profile", {"path": "mine.csv"})
    assert result.success, result.stderr
    assert result.json()["rows"] == 2
    # The caller's file wins over the skill's bundled one of the same name...
    own = example_manager.execute_skill_script(
        "csv-profiler", "profile", {"path": "data/sample.csv"}
    )
    assert [c["name"] for c in own.json()["columns"]] == ["own"]
    # ...and cwd="skill" keeps the old rule: the skill folder's files, not the caller's.
    in_skill = example_manager.execute_skill_script(
        "csv-profiler", "profile", {"path": "data/sample.csv"}, cwd="skill"
    )
    assert in_skill.json()["rows"] == 8
    missing = example_manager.execute_skill_script(
        "csv-profiler", "profile", {"path": "mine.csv"}, cwd="skill"
    )
    assert missing.exit_code == 1 and "no file 'mine.csv'" in missing.stderr


def test_csv_profiler_falls_back_to_its_bundled_sample(example_manager, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no data/sample.csv here: the skill's own is used
    result = example_manager.execute_skill_script(
        "csv-profiler", "profile", {"path": "data/sample.csv"}
    )
    assert result.success, result.stderr
    assert result.json()["rows"] == 8


def test_text_tools_bash_json_and_argv(example_manager):
    result = example_manager.execute_skill_script(
        "text-tools", "wordcount", {"text": 'The cat saw the "other" cat.\nThe end', "top": 2}
    )
    assert result.success, result.stderr
    out = result.json()
    assert (out["lines"], out["words"]) == (2, 8)
    assert out["top_words"] == {"the": 3, "cat": 2}
    by_file = example_manager.execute_skill_script(
        "text-tools", "wordcount.sh", argv=["--file", "SKILL.md", "--top", "1"], cwd="skill"
    ).json()
    assert by_file["words"] > 50 and len(by_file["top_words"]) == 1


def test_unit_converter_argv_and_json(example_manager):
    out = example_manager.execute_skill_script(
        "unit-converter", "convert", argv=["--value", "3", "--from", "km", "--to", "mi"]
    ).json()
    assert out["result"] == pytest.approx(1.864114)
    temp = example_manager.execute_skill_script(
        "unit-converter", "convert", {"value": 212, "from": "F", "to": "C"}
    ).json()
    assert temp["result"] == pytest.approx(100.0)
    bad = example_manager.execute_skill_script(
        "unit-converter", "convert", argv=["--value", "1", "--from", "kg", "--to", "km"]
    )
    assert bad.exit_code == 2 and "cannot convert mass" in bad.stderr


def test_env_report_sees_skill_vars_not_secrets(examples_dir, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret")
    report = SkillManager([examples_dir]).execute_skill_script("demo-behaviours", "env_report")
    data = report.json()
    assert data["skill_vars"]["SKILL_NAME"] == "demo-behaviours"
    assert data["skill_vars"]["SKILL_VERSION"] == "1.0"
    assert Path(data["skill_vars"]["SKILL_BASE_DIR"]) == examples_dir / "demo-behaviours"
    assert "OPENAI_API_KEY" not in data["other_var_names"]
    passthrough = SkillManager([examples_dir], env_passthrough=["OPENAI_API_KEY"])
    data = passthrough.execute_skill_script("demo-behaviours", "env_report").json()
    assert "OPENAI_API_KEY" in data["other_var_names"]


def test_crash_is_a_signal_result(example_manager):
    result = example_manager.execute_skill_script("demo-behaviours", "crash")
    assert result.exit_code == -signal.SIGSEGV
    assert result.signal == "SIGSEGV" and "Signal: SIGSEGV" in result.stderr
    assert "about to crash" in result.stdout
    assert outcomes(example_manager)[-1] == "signaled"


def test_sleepy_times_out(example_manager):
    result = example_manager.execute_skill_script(
        "demo-behaviours", "sleepy", {"seconds": 30}, timeout=1
    )
    assert result.timed_out and result.exit_code == 124
    assert "tick 0" in result.stdout
    assert outcomes(example_manager)[-1] == "timeout"


def test_flood_is_capped(examples_dir):
    manager = SkillManager([examples_dir], max_output_size=2**20)
    result = manager.execute_skill_script("demo-behaviours", "flood", {"mb": 3})
    assert result.success
    assert result.stdout_truncated and len(result.stdout.encode()) == 2**20
    assert result.stdout_bytes == 3 * 2**20


# -- lookups, the approval request, prepare, settings ---------------------------------------


@pytest.mark.parametrize(
    ("skill", "script", "error"),
    [
        ("no-such-skill", "x", SkillNotFoundError),
        ("tools", "nope", ScriptNotFoundError),
        ("tools", "convert", AmbiguousScriptError),
    ],
)
def test_lookup_failures_are_audited_as_refused(tmp_path, make_skill, skill, script, error):
    make_skill(
        tmp_path,
        "tools",
        scripts={"scripts/convert.py": "pass\n", "scripts/convert.sh": "true\n"},
    )
    manager = SkillManager([tmp_path])
    approver = RecordingApprover("yes_once")
    with pytest.raises(error):
        manager.execute_skill_script(skill, script, {"a": 1}, approver=approver)
    assert approver.requests == []
    (record,) = manager.audit.records()
    assert (record.outcome, record.skill, record.script) == ("refused", skill, script)
    assert error.__name__ in record.reason


def test_approval_request_contents(example_manager):
    skill = example_manager.get_skill("csv-profiler")
    meta = skill.find_script("profile")
    request = request_of(
        example_manager, "csv-profiler", [meta], {"path": "data/sample.csv"}, argv=["--top", 3]
    )
    assert request.skill_name == "csv-profiler"
    (item,) = request.scripts
    assert (item.path, item.interpreter) == ("scripts/profile.py", "python3")
    source = (skill.base_dir / "scripts/profile.py").read_text().splitlines()
    # The whole script (up to 200 KB), its real size, and the exact command that runs.
    assert item.preview.splitlines() == source
    assert item.lines == len(source)
    assert item.size == (skill.base_dir / "scripts/profile.py").stat().st_size
    assert item.command[1:] == (
        str((skill.base_dir / "scripts/profile.py").resolve()),
        "--top",
        "3",
    )
    assert os.path.isabs(item.command[0])
    assert request.arguments == {"path": "data/sample.csv"}
    assert request.argv == ("--top", "3")
    assert request.content_hash == skill.content_hash() and len(request.content_hash) == 64
    assert request.request_id
    assert request.code is None


def test_approval_request_sees_the_arguments_passed(example_manager):
    approver = RecordingApprover("yes_once")
    example_manager.execute_skill_script(
        "unit-converter",
        "convert",
        argv=["--value", "1", "--from", "m", "--to", "ft"],
        approver=approver,
    )
    (request,) = approver.requests
    assert request.argv == ("--value", "1", "--from", "m", "--to", "ft")
    assert [s.path for s in request.scripts] == ["scripts/convert.py"]


def test_a_plan_runs_nothing(example_manager, tmp_path):
    marker = tmp_path / "marker"
    plan = example_manager.plan("demo-behaviours", "scripts/touch_marker.py", {"path": str(marker)})
    prepared = plan.prepared
    assert prepared.script_rel == Path("scripts/touch_marker.py")
    assert json.loads(prepared.payload) == {"path": str(marker)}
    assert not marker.exists()
    result = run_plan(example_manager, plan)
    assert result.success and marker.exists()


def test_manager_settings_reach_the_run(make_skill, tmp_path):
    make_skill(tmp_path, "s", scripts={"scripts/ok.py": "print('ok')\n"})
    manager = SkillManager(
        [tmp_path], timeout=12, max_output_size=1234, allowed_interpreters=["python3"]
    )
    settings = manager.settings
    assert (settings.timeout, settings.max_output_size) == (12, 1234)
    assert settings.allowed == frozenset({"python3"})
    prepared = manager.plan("s", "ok").prepared
    assert (prepared.timeout, prepared.max_output_size) == (12, 1234)
    assert manager._executor.audit is manager.audit


def test_audit_log_file(examples_dir, tmp_path):
    log = tmp_path / "audit" / "log.jsonl"
    manager = SkillManager([examples_dir], audit_log=log)
    manager.execute_skill_script("unit-converter", "convert", {"value": 1, "from": "m", "to": "m"})
    with pytest.raises(SkillNotFoundError):
        manager.execute_skill_script("nope", "x")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [line["outcome"] for line in lines] == ["completed", "refused"]
    assert lines[0]["script"] == "scripts/convert.py"


def test_concurrent_runs_are_independent(example_manager):
    results: dict[int, float] = {}

    def work(i: int) -> None:
        out = example_manager.execute_skill_script(
            "unit-converter", "convert", argv=["--value", str(i), "--from", "m", "--to", "cm"]
        ).json()
        results[i] = out["result"]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {i: i * 100.0 for i in range(8)}


def test_changed_settings_count_from_the_next_run_and_nothing_is_rebuilt(tmp_path, make_skill):
    make_skill(tmp_path, "s", scripts={"scripts/ok.py": "print('ok')\n"})
    manager = SkillManager([tmp_path], audit_log=tmp_path / "a.jsonl")
    executor, planner = manager._executor, manager._planner
    manager.configure(timeout=5)
    assert manager.settings.timeout == 5 and manager.plan("s", "ok").prepared.timeout == 5
    manager.configure(env_passthrough="OPENAI_API_KEY, HF_TOKEN")
    assert manager.settings.env_passthrough == ("OPENAI_API_KEY", "HF_TOKEN")
    manager.configure(inherit_env=True)
    assert manager.settings.inherit_env is True
    manager.configure(max_output_size=99)
    assert manager.settings.max_output_size == 99
    assert manager.plan("s", "ok").prepared.max_output_size == 99
    audit = manager.audit
    audit.write_to(tmp_path / "b.jsonl")
    assert manager.audit is audit and audit.jsonl_path == tmp_path / "b.jsonl"
    assert manager._executor is executor and manager._planner is planner  # nothing rebuilt
    assert manager._executor.audit is audit  # one history


def test_allowed_interpreters_as_string_and_typescript_detection(tmp_path, make_skill):
    make_skill(tmp_path, "ts", scripts={"scripts/build.ts": "// Build.\n", "scripts/a.py": ""})
    manager = SkillManager([tmp_path], allowed_interpreters="python3, bash")
    assert manager.settings.allowed_interpreters == ("python3", "bash")
    assert manager.settings.allowed == frozenset({"python3", "bash"})
    assert [s.name for s in manager.get_skill("ts").scripts] == ["a"]
    manager.configure(allowed_interpreters=["python3", "tsx"])
    assert [s.name for s in manager.get_skill("ts").scripts] == ["a", "build"]


def test_skill_dirs_can_be_replaced(tmp_path, make_skill):
    make_skill(tmp_path / "one", "first")
    make_skill(tmp_path / "two", "second")
    manager = SkillManager([tmp_path / "one"])
    assert [m.name for m in manager.list_skills()] == ["first"]
    manager.skill_dirs = [tmp_path / "two"]
    assert [m.name for m in manager.list_skills()] == ["second"]
    manager.skill_dirs = str(tmp_path / "one")
    assert manager.skill_dirs == [tmp_path / "one"]


@pytest.mark.parametrize(
    ("setting", "value"),
    [("timeout", 0), ("timeout", 601), ("timeout", "30"), ("max_output_size", -1)],
)
def test_bad_settings_fail_at_construction(tmp_path, setting, value):
    with pytest.raises(ValueError, match=setting):
        SkillManager([tmp_path], **{setting: value})
    manager = SkillManager([tmp_path])
    with pytest.raises(ValueError, match=setting):
        manager.configure(**{setting: value})
    with pytest.raises(AttributeError, match=rf"manager.configure\({setting}=\.\.\.\)"):
        setattr(manager, setting, value)  # configure() is the one way
    assert manager.settings == SkillManager([tmp_path]).settings


# -- stdin convention ------------------------------------------------------------------------

STDIN_REPORTER = "import sys\nprint(repr(sys.stdin.read()), sys.argv[1:])\n"


def test_manager_passes_arguments_through_to_the_executor(tmp_path, make_skill):
    """argv mode without arguments: nothing on stdin (not "{}"); neither given: "{}"."""
    make_skill(tmp_path, "stdin", scripts={"scripts/report.py": STDIN_REPORTER})
    manager = SkillManager([tmp_path])
    argv_only = manager.execute_skill_script("stdin", "report", argv=["--flag"])
    assert argv_only.stdout.strip() == "'' ['--flag']"
    neither = manager.execute_skill_script("stdin", "report")
    assert neither.stdout.strip() == "'{}' []"
    both = manager.execute_skill_script("stdin", "report", {"a": 1}, argv=["x"])
    assert both.stdout.strip() == "'{\"a\": 1}' ['x']"
    prepared = manager.plan("stdin", "report", argv=[]).prepared
    assert prepared.payload is None, "argv=[] is still argv mode: empty stdin"


# -- lookups, argv and arguments: refused and audited like the executor does ------------------


@posix_only
def test_unknown_script_refused_and_audited(make_skill, tmp_path):
    make_skill(tmp_path, "nf", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(ScriptNotFoundError):
        manager.execute_skill_script("nf", "nope")
    assert len(refusals(manager)) == 1


ARGV_JSON = "import json, sys\nprint(json.dumps(sys.argv[1:]))\n"


@pytest.fixture
def argv_manager(make_skill, tmp_path) -> SkillManager:
    make_skill(tmp_path / "skills", "s", scripts={"scripts/argv.py": ARGV_JSON})
    return SkillManager([tmp_path / "skills"])


@posix_only
@pytest.mark.parametrize(
    "argv",
    ["--input data.csv", b"--input", 5, [b"raw"], [None], [True], [{"a": 1}]],
    ids=["str", "bytes", "int", "bytes-item", "none-item", "bool-item", "dict-item"],
)
def test_manager_refuses_bad_argv_like_the_executor_and_audits_it(argv_manager, argv):
    with pytest.raises(ArgumentSerializationError, match="argv"):
        argv_manager.execute_skill_script("s", "argv", argv=argv)
    (record,) = refusals(argv_manager)
    assert record.reason.startswith("ArgumentSerializationError: ")
    assert record.script == "scripts/argv.py"


@posix_only
def test_a_string_argv_is_previewed_whole_not_letter_by_letter(argv_manager):
    with pytest.raises(ArgumentSerializationError, match=r"shlex\.split"):
        argv_manager.execute_skill_script("s", "argv", argv="--input data.csv")
    assert refusals(argv_manager)[0].arguments == "argv: --input data.csv"


@posix_only
def test_good_argv_items_reach_the_script_verbatim(argv_manager, tmp_path):
    argv = ["--input", "data file.csv", 3, 2.5, tmp_path / "x y", "; rm -rf ~"]
    result = argv_manager.execute_skill_script("s", "argv", argv=argv)
    assert result.json() == [
        "--input",
        "data file.csv",
        "3",
        "2.5",
        str(tmp_path / "x y"),
        "; rm -rf ~",
    ]


@posix_only
def test_approval_request_normalises_argv_like_the_executor(argv_manager, tmp_path):
    _, meta = argv_manager._finder.resolve_script("s", "argv")
    request = request_of(argv_manager, "s", [meta], None, [1, tmp_path / "p"])
    assert request.argv == ("1", str(tmp_path / "p"))
    assert request.scripts[0].command[-2:] == ("1", str(tmp_path / "p"))
    with pytest.raises(ArgumentSerializationError):
        request_of(argv_manager, "s", [meta], None, "--input data.csv")


@posix_only
def test_an_approver_sees_the_argv_that_runs(argv_manager):
    seen = []

    def approver(request):
        seen.append(request)
        return "yes_once"

    result = argv_manager.execute_skill_script("s", "argv", argv=["-n", 7], approver=approver)
    assert seen[0].argv == ("-n", "7") and seen[0].scripts[0].command[-2:] == ("-n", "7")
    assert result.json() == ["-n", "7"]


@posix_only
def test_an_argument_whose_repr_raises_is_refused_and_audited(argv_manager):
    with pytest.raises(ArgumentSerializationError, match="BadRepr"):
        argv_manager.execute_skill_script("s", "argv", {"a": BadRepr()})
    (record,) = refusals(argv_manager)
    assert "<unprintable BadRepr>" in record.arguments


@posix_only
@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"arguments": {BadRepr(): 1}}, "Argument key <unprintable BadRepr>"),
        ({"argv": [BadRepr()]}, r"argv\[0\] is BadRepr <unprintable BadRepr>"),
    ],
    ids=["dict-key", "argv-item"],
)
def test_unprintable_keys_and_argv_items_are_refused_not_crashed_on(argv_manager, kwargs, match):
    with pytest.raises(ArgumentSerializationError, match=match):
        argv_manager.execute_skill_script("s", "argv", **kwargs)
    assert len(refusals(argv_manager)) == 1


# -- the approval request: the program that really runs, the whole script ---------------------


@posix_only
def test_approval_request_names_the_program_that_really_runs(make_skill, tmp_path):
    make_skill(
        tmp_path,
        "venvy",
        scripts={
            "scripts/ok.py": "print('benign')\n",
            "venv/bin/python": "#!/bin/sh\necho PWNED-by-venv\n",
        },
    )
    recorder = RecordingApprover()
    manager = manager_for(tmp_path, allowed_interpreters=["python3"], approver=recorder)
    prepared = manager.plan("venvy", "ok").prepared
    result = manager.execute_skill_script("venvy", "ok")
    assert result.stdout == "PWNED-by-venv\n"  # what really ran
    assert prepared.program in repr(recorder.requests[-1])


@posix_only
def test_preview_of_a_huge_script_is_capped_but_counts_everything(make_skill, tmp_path):
    line = "# " + "x" * 97 + "\n"  # 100 bytes
    make_skill(tmp_path, "huge", scripts={"scripts/h.py": line * 5000})  # 500 KB
    manager = SkillManager([tmp_path])
    (item,) = request_of(manager, "huge", [manager.get_skill("huge").find_script("h")]).scripts
    assert (item.lines, item.size) == (5000, 500_000)
    assert len(item.preview) <= 200_000 and item.preview.endswith("\n")


# -- SKILL.md edits reach the next run --------------------------------------------------------


@posix_only
def test_allowed_tools_edit_takes_effect_without_reload(make_skill, tmp_path):
    skill = make_skill(tmp_path, "t", scripts={"scripts/a.sh": "echo ran\n"})
    manager = manager_for(tmp_path)
    assert manager.execute_skill_script("t", "a").stdout == "ran\n"
    (skill / "SKILL.md").write_text("---\nname: t\ndescription: d\nallowed-tools: Read\n---\nx\n")
    with pytest.raises(ToolRestrictionError):
        manager.execute_skill_script("t", "a")


@posix_only
def test_an_edit_that_breaks_skill_md_stops_runs_until_fixed(tmp_path, make_skill):
    """Fail closed: a broken edit may have narrowed allowed-tools; never run on the old one."""
    skill = make_skill(tmp_path, "edited", scripts={"scripts/a.sh": "echo ran\n"})
    manager = SkillManager([tmp_path])
    assert manager.execute_skill_script("edited", "a").stdout == "ran\n"
    skill_md = skill / "SKILL.md"
    good = skill_md.read_text()
    skill_md.write_text("---\nname: edited\ndescription: [broken\nallowed-tools: Read\n---\n# x\n")
    with pytest.raises(SkillParseError, match="no longer parses .*scripts do not run until"):
        manager.execute_skill_script("edited", "a")
    assert manager.audit.records()[-1].outcome == "refused"
    assert "# x" in manager.get_skill("edited").content  # still readable
    skill_md.write_text(good)
    assert manager.execute_skill_script("edited", "a").stdout == "ran\n"


def test_a_missing_package_gets_the_hint_naming_skills_env(tmp_path, make_skill):
    # Issue 31 item 5: a ModuleNotFoundError for a package the panel listed got no hint.
    make_skill(
        tmp_path,
        "needs-pkg",
        scripts={
            "scripts/run.py": "import json\nimport no_such_pkg_i31.sub\n",
            # the skill's own module, not found the way this script looks for it
            "scripts/local.py": "raise ModuleNotFoundError(\"No module named 'helpers_i31'\")\n",
            "helpers_i31.py": "X = 1\n",
        },
    )
    manager = SkillManager([tmp_path])
    result = manager.execute_skill_script("needs-pkg", "run")
    assert result.exit_code == 1
    assert "Hint: the package for 'no_such_pkg_i31' is not installed" in result.stderr
    assert "%skills env needs-pkg" in result.stderr
    # Not a package to install: the skill's own module gets no such hint.
    local = manager.execute_skill_script("needs-pkg", "local")
    assert "ModuleNotFoundError" in local.stderr and "Hint:" not in local.stderr


# The manager's whole public surface: a thin facade (docs/architecture.md). A new capability
# is a package of functions over these, not one more method; growing this list is a decision.
PUBLIC_SURFACE = {
    # settings: read, and configure() the one way to change them
    "settings": "property",
    "configure": "method",
    "sandbox_network": "property",
    # who approves, and the session's state
    "approver": "attribute",
    "approver_for": "method",
    "approvals": "property",
    "audit": "attribute",
    "grant_network": "method",
    "provide_secret": "method",
    "secret_status": "method",
    # skills
    "skill_dirs": "property",
    "add_dir": "method",
    "remove_dir": "method",
    "add_mcp_server": "method",  # issue 32 names it; the work is core/mcp/servers.py's
    "remove_mcp_server": "method",
    "reload": "method",
    "list_skills": "method",
    "local_skills": "method",
    "get_skill": "method",
    "warnings": "property",
    "requirements": "method",
    "prepare_env": "method",
    # warm start
    "warm_up": "method",
    "warm_servers": "method",
    "stop_warm_servers": "method",
    # plan -> gate -> execute
    "plan": "method",
    "plan_code": "method",
    "plan_references": "method",
    "plan_scope": "method",
    "plan_map": "method",
    "run_planned": "method",
    "run_planned_async": "method",
    "execute_skill_script": "method",
    "map": "method",
    # issue 43 names it; the work is core/usage/'s
    "usage": "method",
}


def test_the_managers_public_surface_is_the_listed_one(tmp_path):
    manager = SkillManager([tmp_path])

    def kind(name: str) -> str:
        if name in vars(manager):
            return "attribute"
        found = getattr(type(manager), name)
        return "property" if isinstance(found, property) else "method"

    public = {name: kind(name) for name in dir(manager) if not name.startswith("_")}
    assert public == PUBLIC_SURFACE, "the facade changed: update PUBLIC_SURFACE on purpose"


def test_the_managers_parts_stay_inside(tmp_path):
    """Its finder, planner, gate, executor and pipeline are not reached through it: the
    operations callers need are its methods (plan_code, plan_references, plan_scope)."""
    manager = SkillManager([tmp_path])
    for part in ("finder", "planner", "gate", "executor", "pipeline", "secrets", "grants"):
        assert not hasattr(manager, part), part
