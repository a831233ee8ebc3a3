"""SkillManager end to end: the bundled examples really run; approval order; audit records."""

from __future__ import annotations

import json
import os
import shutil
import signal
import threading
from pathlib import Path

import pytest

from skill_magics.core.errors import (
    AmbiguousScriptError,
    ApprovalDeclined,
    ApprovalUnavailable,
    ScriptNotFoundError,
    SkillNotFoundError,
    ToolRestrictionError,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.approval import ApprovalRequest, Decision

pytest.importorskip("skill_magics.core.run.executor")


class Recorder:
    """An approver that answers ``answer`` and remembers what it was asked."""

    def __init__(self, answer: str | Decision | Exception) -> None:
        self.answer = answer
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest):
        self.requests.append(request)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@pytest.fixture
def examples_copy(tmp_path, examples_dir) -> Path:
    """A private copy of the examples, for tests that edit scripts."""
    dest = tmp_path / "examples"
    shutil.copytree(examples_dir, dest)
    return dest


def outcomes(manager: SkillManager) -> list[str]:
    return [r.outcome for r in manager.audit.records()]


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


def test_csv_profiler_refuses_paths_outside_the_skill(example_manager):
    result = example_manager.execute_skill_script(
        "csv-profiler", "profile.py", {"path": "../../../../etc/passwd"}
    )
    assert result.exit_code == 1
    assert "outside the skill directory" in result.stderr


def test_text_tools_bash_json_and_argv(example_manager):
    result = example_manager.execute_skill_script(
        "text-tools", "wordcount", {"text": 'The cat saw the "other" cat.\nThe end', "top": 2}
    )
    assert result.success, result.stderr
    out = result.json()
    assert (out["lines"], out["words"]) == (2, 8)
    assert out["top_words"] == {"the": 3, "cat": 2}
    by_file = example_manager.execute_skill_script(
        "text-tools", "wordcount.sh", argv=["--file", "SKILL.md", "--top", "1"]
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
    assert result.timeout and result.exit_code == 124
    assert "tick 0" in result.stdout
    assert outcomes(example_manager)[-1] == "timeout"


def test_flood_is_capped(examples_dir):
    manager = SkillManager([examples_dir], max_output_size=2**20)
    result = manager.execute_skill_script("demo-behaviours", "flood", {"mb": 3})
    assert result.success
    assert result.stdout_truncated and len(result.stdout.encode()) == 2**20
    assert result.stdout_bytes == 3 * 2**20


# -- approval order and outcomes ----------------------------------------------------------


def test_no_means_nothing_ran(example_manager, tmp_path):
    marker = tmp_path / "marker"
    approver = Recorder("no")
    with pytest.raises(ApprovalDeclined):
        example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
    assert not marker.exists()
    assert len(approver.requests) == 1
    record = example_manager.audit.records()[-1]
    assert (record.outcome, record.script, record.exit_code) == (
        "declined",
        "scripts/touch_marker.py",
        None,
    )
    assert str(marker) in record.arguments


def test_unavailable_approval_runs_nothing(example_manager, tmp_path):
    marker = tmp_path / "marker"
    approver = Recorder(ApprovalUnavailable("nobody can click in a headless run"))
    with pytest.raises(ApprovalUnavailable):
        example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
    assert not marker.exists()
    assert outcomes(example_manager)[-1] == "approval_unavailable"
    assert "headless" in example_manager.audit.records()[-1].reason


def test_yes_once_asks_every_time(example_manager, tmp_path):
    approver = Recorder(Decision.YES_ONCE)
    for i in range(2):
        marker = tmp_path / f"m{i}"
        result = example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
        assert result.success and marker.exists()
    assert len(approver.requests) == 2


def test_yes_in_session_until_a_script_changes(examples_copy, tmp_path):
    approver = Recorder("yes_in_session")
    manager = SkillManager([examples_copy], approver=approver)  # the manager's default approver
    for i in range(3):
        assert manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(tmp_path / f"m{i}")}
        ).success
    assert len(approver.requests) == 1
    # Editing any script of the skill changes the hash: the session approval lapses.
    script = examples_copy / "demo-behaviours" / "scripts" / "sleepy.py"
    script.write_text(script.read_text() + "# edited\n")
    manager.execute_skill_script("demo-behaviours", "touch_marker", {"path": str(tmp_path / "m")})
    assert len(approver.requests) == 2
    assert approver.requests[0].content_hash != approver.requests[1].content_hash


def test_explicit_none_approver_overrides_default(examples_dir, tmp_path):
    approver = Recorder("no")
    manager = SkillManager([examples_dir], approver=approver)
    marker = tmp_path / "marker"
    manager.execute_skill_script(
        "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=None
    )
    assert marker.exists() and approver.requests == []


def test_checks_come_before_approval(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "locked",
        {"name": "locked", "description": "x", "allowed-tools": "Read Write"},
        scripts={"scripts/run.py": "print('ran')\n"},
    )
    approver = Recorder("yes_once")
    manager = SkillManager([tmp_path])
    with pytest.raises(ToolRestrictionError):
        manager.execute_skill_script("locked", "run", approver=approver)
    assert approver.requests == []  # nobody is asked about a run that cannot happen
    assert outcomes(manager) == ["refused"]


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
    approver = Recorder("yes_once")
    with pytest.raises(error):
        manager.execute_skill_script(skill, script, {"a": 1}, approver=approver)
    assert approver.requests == []
    (record,) = manager.audit.records()
    assert (record.outcome, record.skill, record.script) == ("refused", skill, script)
    assert error.__name__ in record.reason


def test_approval_request_contents(example_manager):
    skill = example_manager.get_skill("csv-profiler")
    meta = skill.find_script("profile")
    request = example_manager.approval_request(
        "csv-profiler", [meta], {"path": "data/sample.csv"}, argv=["--top", 3]
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
    approver = Recorder("yes_once")
    example_manager.execute_skill_script(
        "unit-converter",
        "convert",
        argv=["--value", "1", "--from", "m", "--to", "ft"],
        approver=approver,
    )
    (request,) = approver.requests
    assert request.argv == ("--value", "1", "--from", "m", "--to", "ft")
    assert [s.path for s in request.scripts] == ["scripts/convert.py"]


def test_prepare_runs_nothing(example_manager, tmp_path):
    marker = tmp_path / "marker"
    prepared = example_manager.prepare_skill_script(
        "demo-behaviours", "scripts/touch_marker.py", {"path": str(marker)}
    )
    assert prepared.script_rel == Path("scripts/touch_marker.py")
    assert json.loads(prepared.payload) == {"path": str(marker)}
    assert not marker.exists()
    result = example_manager.executor.run(prepared)
    assert result.success and marker.exists()


def test_manager_settings_reach_the_executor(tmp_path):
    manager = SkillManager(
        [tmp_path], timeout=12, max_output_size=1234, allowed_interpreters=["python3"]
    )
    executor = manager.executor
    assert (executor.timeout, executor.max_output_size) == (12, 1234)
    assert executor.allowed_interpreters == frozenset({"python3"})
    assert executor.audit is manager.audit
    assert manager.executor is executor


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


def test_changing_settings_rebuilds_the_executor(tmp_path):
    manager = SkillManager([tmp_path], audit_log=tmp_path / "a.jsonl")
    first = manager.executor
    manager.timeout = 5
    second = manager.executor
    assert second is not first and second.timeout == 5
    manager.env_passthrough = "OPENAI_API_KEY, HF_TOKEN"
    assert manager.executor.env_passthrough == ("OPENAI_API_KEY", "HF_TOKEN")
    manager.inherit_env = True
    assert manager.executor.inherit_env is True
    manager.max_output_size = 99
    assert manager.executor.max_output_size == 99
    audit = manager.audit
    manager.audit_log = tmp_path / "b.jsonl"
    assert manager.audit is audit and audit.jsonl_path == tmp_path / "b.jsonl"
    assert manager.executor.audit is audit  # one history across rebuilds


def test_allowed_interpreters_as_string_and_typescript_detection(tmp_path, make_skill):
    make_skill(tmp_path, "ts", scripts={"scripts/build.ts": "// Build.\n", "scripts/a.py": ""})
    manager = SkillManager([tmp_path], allowed_interpreters="python3, bash")
    assert manager.allowed_interpreters == ("python3", "bash")
    assert manager.executor.allowed_interpreters == frozenset({"python3", "bash"})
    assert [s.name for s in manager.get_skill("ts").scripts] == ["a"]
    manager.allowed_interpreters = ["python3", "tsx"]
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
        setattr(manager, setting, value)


# -- stdin convention and ask_approval ----------------------------------------------------

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
    prepared = manager.prepare_skill_script("stdin", "report", argv=[])
    assert prepared.payload is None, "argv=[] is still argv mode: empty stdin"


def test_ask_approval_audits_declines_for_every_script_then_raises(tmp_path, make_skill):
    make_skill(
        tmp_path, "two", scripts={"scripts/a.py": "print(1)\n", "scripts/b.py": "print(2)\n"}
    )
    manager = SkillManager([tmp_path])
    skill = manager.get_skill("two")
    request = manager.approval_request("two", skill.scripts, {"k": 1}, argv=["--v"])
    assert manager.ask_approval(request, None) is None, "None: the caller decided"
    assert manager.audit.records() == []
    with pytest.raises(ApprovalDeclined):
        manager.ask_approval(request, Recorder("no"))
    with pytest.raises(ApprovalUnavailable):
        manager.ask_approval(request, Recorder(ApprovalUnavailable("nobody there")))
    records = manager.audit.records()
    assert [(r.script, r.outcome) for r in records] == [
        ("scripts/a.py", "declined"),
        ("scripts/b.py", "declined"),
        ("scripts/a.py", "approval_unavailable"),
        ("scripts/b.py", "approval_unavailable"),
    ]
    assert records[0].arguments == '{"k": 1} argv: --v'
    assert records[-1].reason == "ApprovalUnavailable: nobody there"
    manager.approver = Recorder("yes_in_session")
    assert manager.ask_approval(request) is Decision.YES_IN_SESSION
    assert manager.ask_approval(request, Recorder("no")) is Decision.YES_IN_SESSION, (
        "a stored Yes in session for the same scripts counts"
    )
