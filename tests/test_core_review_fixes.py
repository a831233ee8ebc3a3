"""Guards for the fixes to the second core review: hostile frontmatter, argv passed through
unchanged, tsx from PATH, versioned Python shebangs, previews that never raise, refusal
durations.

Real files, real processes, no mocks.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from skill_magics import SkillManager
from skill_magics.core.audit import arguments_preview
from skill_magics.core.catalog.frontmatter import MAX_DEPTH, parse_frontmatter_yaml
from skill_magics.core.errors import (
    ArgumentSerializationError,
    InterpreterNotAllowedError,
    InterpreterNotFoundError,
    PathSecurityError,
    ScriptNotFoundError,
    SkillParseError,
    ToolRestrictionError,
)
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.payload import normalize_argv

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX scripts and PATH")

ARGV_JSON = "import json, sys\nprint(json.dumps(sys.argv[1:]))\n"


def _skill_md(skill_dir: Path, extra: str) -> None:
    skill_dir.mkdir(parents=True, exist_ok=True)
    text = f"---\nname: {skill_dir.name}\ndescription: d\n{extra}---\n# {skill_dir.name}\n"
    (skill_dir / "SKILL.md").write_text(text)


def _refusals(manager: SkillManager) -> list:
    return [r for r in manager.audit.records() if r.outcome == "refused"]


# -- 1. one bad SKILL.md skips that skill only ------------------------------------------------


@pytest.mark.parametrize(
    ("extra", "reason"),
    [
        ("metadata:\n  updated: 2024-02-30\n", "day is out of range for month"),
        ("x: " + "9" * 5000 + "\n", "integer string conversion"),
    ],
    ids=["impossible-date", "5000-digit-int"],
)
def test_a_value_python_cannot_build_skips_only_that_skill(tmp_path, extra, reason):
    _skill_md(tmp_path / "good", "")
    _skill_md(tmp_path / "typo", extra)
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["good"]
    (warning,) = [w for w in manager.warnings if "typo" in w]
    assert warning.startswith(f"Skipped {tmp_path / 'typo' / 'SKILL.md'}: ")
    assert reason in warning and "put it in quotes" in warning and "\n" not in warning
    assert "set_int_max_str_digits" not in warning  # Python's hint is not the fix here


def test_the_bad_value_is_named_by_its_line_of_skill_md():
    with pytest.raises(SkillParseError, match=r"at line 5 of SKILL\.md"):
        parse_frontmatter_yaml("name: a\ndescription: d\nmetadata:\n  updated: 2024-02-30\n")


@pytest.mark.parametrize(
    "nesting",
    [
        pytest.param("x: " + "[" * 25_000 + "]" * 25_000 + "\n", id="flow"),
        pytest.param("x:\n" + "- " * 25_000 + "a\n", id="block"),
    ],
)
def test_absurd_nesting_is_refused_before_libyaml_can_crash(tmp_path, nesting):
    # ~50 KB, under the 256 KB frontmatter cap; the C composer segfaulted on it. A separate
    # process, so a regression fails this test instead of killing the test run.
    _skill_md(tmp_path / "skills" / "good", "")
    _skill_md(tmp_path / "skills" / "evil", nesting)
    code = textwrap.dedent(
        """
        import sys
        from skill_magics import SkillManager
        manager = SkillManager([sys.argv[1]])
        print([m.name for m in manager.list_skills()])
        print([w for w in manager.warnings if "evil" in w][0])
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "skills")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed, warning = proc.stdout.splitlines()
    assert listed == "['good']"
    assert f"more than {MAX_DEPTH} levels deep" in warning and "flatten it" in warning


def test_nesting_limit_boundary():
    # The top-level mapping counts as one level.
    ok = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    data, _ = parse_frontmatter_yaml(ok)
    assert "x" in data
    with pytest.raises(SkillParseError, match="levels deep"):
        parse_frontmatter_yaml("x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")


def test_long_flat_frontmatter_is_not_mistaken_for_deep_nesting():
    # Far more ':' and '-' than MAX_DEPTH: the cheap bound is exceeded, the exact scan passes.
    lines = "".join(f"  key-{i}: 'value - {i}: with colons'\n" for i in range(200))
    data, _ = parse_frontmatter_yaml("metadata:\n" + lines)
    assert len(data["metadata"]) == 200


@pytest.mark.parametrize(
    "text",
    [
        "a: 2024-13-01\n",
        "a: 2024-02-30T10:00:00Z\n",
        "- 1\n- 2\n",
        "a: [\n",
        "x: " + "{a: " * 100 + "1" + "}" * 100 + "\n",
        "\tbad: tab\n",
    ],
)
def test_hostile_yaml_raises_only_skill_parse_error(text):
    with pytest.raises(SkillParseError):
        parse_frontmatter_yaml(text)


def test_an_edit_that_breaks_the_yaml_shows_the_last_good_metadata_but_runs_nothing(tmp_path):
    _skill_md(tmp_path / "s", "version: '1'\n")
    skill = SkillManager([tmp_path]).get_skill("s")
    assert skill.content == "# s\n"
    (tmp_path / "s" / "SKILL.md").write_text(
        "---\nname: s\ndescription: d\nversion: '2'\nx: " + "[" * 30_000 + "\n---\nnew body\n"
    )
    assert skill.content == "new body\n"
    assert skill.metadata.version == "1"  # what %skills show still has to show
    with pytest.raises(SkillParseError, match="no longer parses"):
        skill.current_metadata()  # what a run checks allowed-tools against: fail closed


# -- 2. argv reaches the executor's checks unchanged ------------------------------------------


@pytest.fixture
def argv_manager(make_skill, tmp_path) -> SkillManager:
    make_skill(tmp_path / "skills", "s", scripts={"scripts/argv.py": ARGV_JSON})
    return SkillManager([tmp_path / "skills"])


@pytest.mark.parametrize(
    "argv",
    ["--input data.csv", b"--input", 5, [b"raw"], [None], [True], [{"a": 1}]],
    ids=["str", "bytes", "int", "bytes-item", "none-item", "bool-item", "dict-item"],
)
def test_manager_refuses_bad_argv_like_the_executor_and_audits_it(argv_manager, argv):
    with pytest.raises(ArgumentSerializationError, match="argv"):
        argv_manager.execute_skill_script("s", "argv", argv=argv)
    (record,) = _refusals(argv_manager)
    assert record.reason.startswith("ArgumentSerializationError: ")
    assert record.script == "scripts/argv.py"


def test_a_string_argv_is_previewed_whole_not_letter_by_letter(argv_manager):
    with pytest.raises(ArgumentSerializationError, match=r"shlex\.split"):
        argv_manager.execute_skill_script("s", "argv", argv="--input data.csv")
    assert _refusals(argv_manager)[0].arguments == "argv: --input data.csv"


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


def test_approval_request_normalises_argv_like_the_executor(argv_manager, tmp_path):
    _, meta = argv_manager.resolve_script("s", "argv")
    request = argv_manager.approval_request("s", [meta], None, [1, tmp_path / "p"])
    assert request.argv == ("1", str(tmp_path / "p"))
    assert request.scripts[0].command[-2:] == ("1", str(tmp_path / "p"))
    with pytest.raises(ArgumentSerializationError):
        argv_manager.approval_request("s", [meta], None, "--input data.csv")


def test_an_approver_sees_the_argv_that_runs(argv_manager):
    seen = []

    def approver(request):
        seen.append(request)
        return "yes_once"

    result = argv_manager.execute_skill_script("s", "argv", argv=["-n", 7], approver=approver)
    assert seen[0].argv == ("-n", "7") and seen[0].scripts[0].command[-2:] == ("-n", "7")
    assert result.json() == ["-n", "7"]


# -- 3. .ts runs with tsx from PATH, never npx, never the skill's own -------------------------


def _fake_tsx(directory: Path, says: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    tsx = directory / "tsx"
    tsx.write_text(f'#!/bin/sh\necho "{says}: $*"\n')
    tsx.chmod(0o755)
    return tsx


@pytest.fixture
def ts_skill(make_skill, tmp_path) -> Path:
    skill = make_skill(
        tmp_path / "skills", "ts", scripts={"scripts/hello.ts": "console.log('hi')\n"}
    )
    _fake_tsx(skill / "node_modules" / ".bin", "SKILL-SHIPPED tsx")
    return skill


def test_ts_runs_tsx_found_on_path_not_the_skills_node_modules(ts_skill, tmp_path, monkeypatch):
    tsx = _fake_tsx(tmp_path / "bin", "PATH tsx")
    monkeypatch.setenv("PATH", f"{tsx.parent}{os.pathsep}{os.environ['PATH']}")
    manager = SkillManager([ts_skill.parent], allowed_interpreters=["python3", "tsx"])
    seen = []

    def approver(request):
        seen.append(request)
        return "yes_once"

    result = manager.execute_skill_script("ts", "hello", approver=approver)
    script = os.path.realpath(ts_skill / "scripts" / "hello.ts")
    assert result.stdout == f"PATH tsx: {script}\n"
    assert seen[0].scripts[0].command == (str(tsx), script)  # the exact command, no npx


def test_missing_tsx_names_the_fix(ts_skill, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    manager = SkillManager([ts_skill.parent], allowed_interpreters=["tsx"])
    with pytest.raises(InterpreterNotFoundError) as caught:
        manager.execute_skill_script("ts", "hello")
    message = str(caught.value)
    assert "npm install -g tsx" in message and "remove 'tsx' from allowed_interpreters" in message
    assert _refusals(manager)[0].reason.startswith("InterpreterNotFoundError: ")


def test_an_interpreter_found_on_path_inside_the_skill_is_refused(ts_skill, monkeypatch):
    shipped = ts_skill / "node_modules" / ".bin"
    monkeypatch.setenv("PATH", f"{shipped}{os.pathsep}{os.environ['PATH']}")
    manager = SkillManager([ts_skill.parent], allowed_interpreters=["tsx"])
    with pytest.raises(InterpreterNotFoundError, match="inside the skill"):
        manager.execute_skill_script("ts", "hello")


@pytest.mark.parametrize("query", ["hello", "hello.ts", "scripts/hello.ts"])
def test_a_ts_script_while_tsx_is_not_allowed_says_to_allow_tsx(ts_skill, query):
    manager = SkillManager([ts_skill.parent])  # default allow-list: no tsx
    with pytest.raises(InterpreterNotAllowedError, match="add 'tsx' to allowed_interpreters"):
        manager.execute_skill_script("ts", query)
    (record,) = _refusals(manager)
    assert record.reason.startswith("InterpreterNotAllowedError: ")


def test_other_missing_scripts_still_say_not_found(ts_skill):
    with pytest.raises(ScriptNotFoundError):
        SkillManager([ts_skill.parent]).execute_skill_script("ts", "goodbye")


# -- 4. versioned Python shebangs are Python ----------------------------------------------------


@pytest.mark.parametrize("shebang", ["#!/usr/bin/python3.11", "#!/usr/bin/env python3.99 -u"])
def test_versioned_python_shebang_runs_the_kernels_python_with_its_docstring(
    make_skill, tmp_path, shebang
):
    code = f'{shebang}\n"""Says which Python runs it."""\nimport sys\nprint(sys.executable)\n'
    make_skill(tmp_path / "skills", "py", scripts={"scripts/which": code})
    manager = SkillManager([tmp_path / "skills"])
    (script,) = manager.get_skill("py").scripts
    assert (script.script_type, script.interpreter) == ("python", "python3")
    assert script.description == "Says which Python runs it."
    result = manager.execute_skill_script("py", "which")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == sys.executable


# -- 5. previews never raise --------------------------------------------------------------------


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("repr boom")

    __str__ = __repr__


def test_an_argument_whose_repr_raises_is_refused_and_audited(argv_manager):
    with pytest.raises(ArgumentSerializationError, match="_BadRepr"):
        argv_manager.execute_skill_script("s", "argv", {"a": _BadRepr()})
    (record,) = _refusals(argv_manager)
    assert "<unprintable _BadRepr>" in record.arguments


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"arguments": {_BadRepr(): 1}}, "Argument key <unprintable _BadRepr>"),
        ({"argv": [_BadRepr()]}, r"argv\[0\] is _BadRepr <unprintable _BadRepr>"),
    ],
    ids=["dict-key", "argv-item"],
)
def test_unprintable_keys_and_argv_items_are_refused_not_crashed_on(argv_manager, kwargs, match):
    with pytest.raises(ArgumentSerializationError, match=match):
        argv_manager.execute_skill_script("s", "argv", **kwargs)
    assert len(_refusals(argv_manager)) == 1


@pytest.mark.parametrize(
    ("arguments", "argv"),
    [({"a": _BadRepr()}, None), (None, [_BadRepr()]), (None, 5), (_BadRepr(), None), (None, "")],
)
def test_arguments_preview_never_raises(arguments, argv):
    assert isinstance(arguments_preview(arguments, argv), str)


def test_normalize_argv_message_survives_an_unprintable_item():
    with pytest.raises(ArgumentSerializationError, match="unprintable"):
        normalize_argv([_BadRepr()])


# -- 6. refusals record how long they took -----------------------------------------------------


def test_every_refusal_records_a_duration(make_skill, tmp_path):
    make_skill(tmp_path / "skills", "s", scripts={"scripts/ok.py": "print(1)\n"})
    make_skill(
        tmp_path / "skills",
        "locked",
        {"name": "locked", "description": "d", "allowed-tools": "Read"},
        scripts={"scripts/ok.py": "print(1)\n"},
    )
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(ScriptNotFoundError):  # refused by the manager, before the executor
        manager.execute_skill_script("s", "nope")
    with pytest.raises(ToolRestrictionError):  # refused by the executor
        manager.execute_skill_script("locked", "ok")
    with pytest.raises(PathSecurityError):
        manager.execute_skill_script("s", "../../etc/passwd")
    prepared = manager.prepare_skill_script("s", "ok")
    (tmp_path / "skills" / "s" / "scripts" / "ok.py").write_text("print(2)  # edited\n")
    with pytest.raises(Exception, match="changed"):  # re-checked at run time
        manager.executor.run(prepared)
    refusals = _refusals(manager)
    assert len(refusals) == 4
    assert all(r.duration_ms is not None and r.duration_ms > 0 for r in refusals), refusals


def test_prepare_command_refusal_records_a_duration(make_skill, tmp_path):
    skill = make_skill(tmp_path, "s")
    executor = ScriptExecutor()
    meta = SkillManager([tmp_path]).get_skill("s").metadata
    with pytest.raises(InterpreterNotFoundError):
        executor.prepare_command(
            ["python3", "-c", "1"], skill_base_dir=skill, skill_metadata=meta, label="<python -c>"
        )
    assert executor.audit.records()[-1].duration_ms > 0


def test_yaml_alias_expansion_skips_only_that_skill(tmp_path, make_skill):
    """'Billion laughs': aliases loaded cheaply but expanding exponentially when shown."""
    lines = ["name: laughs", "description: ok", "metadata:", "  a0: &a0 [x, x, x, x, x, x, x, x]"]
    lines += [f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 8)}]" for i in range(1, 12)]
    make_skill(tmp_path, "laughs", "\n".join(lines))
    make_skill(tmp_path, "fine")
    # shared (not repeated) values stay fine: an alias used a few times is ordinary YAML
    make_skill(tmp_path, "anchors", "name: anchors\ndescription: &d ok\nmetadata: {x: *d, y: *d}")
    manager = SkillManager([tmp_path])
    assert [m.name for m in manager.list_skills()] == ["anchors", "fine"]
    warnings = "\n".join(manager.warnings)
    assert "laughs" in warnings and "expands to more than 10,000 values" in warnings


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
