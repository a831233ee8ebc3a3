"""The checks (core/run/planning/checks.py) and the launch through the one call site: refusals
(audited), stdin JSON, argv, env, cwd. ``executor`` is conftest's Runner: a real manager's
checks, then its ``run_planned`` (the executor re-checks the file before it spawns).

Also, through a SkillManager, what a run cannot be talked into: script names that look like
options, a swap or an edit between prepare() and run(), shebangs naming a program that is not
allowed, .ts run by anything but tsx from PATH, secrets and loader variables in the
environment, oversized arguments or argv, a script that allowed-tools does not permit.

Real scripts in tmp_path, real processes. Process-level behaviour (timeouts, signals, output
capture, stdin pipes, concurrency, cancellation, processes that leave the group) is in
test_executor_process.py.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from manager_support import BadRepr, Runner, last, manager_for, posix_only, refusals, run_plan

import skill_magics
from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import (
    ArgumentSerializationError,
    ArgumentSizeError,
    CommandError,
    InterpreterNotAllowedError,
    InterpreterNotFoundError,
    PathSecurityError,
    ScriptNotFoundError,
    ScriptPermissionError,
    SkillMagicsError,
    ToolRestrictionError,
    UnknownScriptTypeError,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.planning.checks import RunChecks
from skill_magics.core.run.planning.payload import MAX_ARGUMENT_DEPTH, normalize_argv

PRINT_ENV = "import json, os\nprint(json.dumps(dict(os.environ)))\n"
ECHO_STDIN_ARGV = (
    "import json, os, sys\n"
    "print(json.dumps({'stdin': sys.stdin.read(), 'argv': sys.argv[1:], 'cwd': os.getcwd(),"
    " 'exe': sys.executable}))\n"
)


# -- stdin JSON, argv, cwd ------------------------------------------------------------------


def test_json_arguments_arrive_on_stdin_utf8(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    args = {"text": "héllo 😀", "n": [1, 2.5, None, True], "nested": {"k": "v"}}
    result = executor.execute("scripts/echo.py", args, base, meta)
    assert result.success, result.stderr
    seen = result.json()
    assert seen["stdin"] == json.dumps(args, ensure_ascii=False)  # not \\u-escaped
    assert json.loads(seen["stdin"]) == args
    assert seen["argv"] == []
    assert result.script_path == Path("scripts/echo.py")
    assert result.execution_time_ms > 0
    rec = last(executor)
    assert (rec.skill, rec.script, rec.outcome, rec.exit_code) == (
        "demo",
        "scripts/echo.py",
        "completed",
        0,
    )
    assert rec.arguments.startswith('{"text": "héllo 😀"') and rec.duration_ms > 0


def test_cwd_is_the_skill_directory(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    result = executor.execute(base / "scripts/echo.py", {}, base, meta)  # absolute path too
    assert result.json()["cwd"] == os.path.realpath(base)


def test_argv_is_passed_verbatim_and_never_through_a_shell(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    argv = ["--name", "a b", "$(touch pwned)", "*", "; rm -rf /", "é", 3, Path("x/y")]
    result = executor.execute("scripts/echo.py", None, base, meta, argv=argv)
    seen = result.json()
    assert seen["argv"] == ["--name", "a b", "$(touch pwned)", "*", "; rm -rf /", "é", "3", "x/y"]
    assert seen["stdin"] == ""  # argv mode without arguments: nothing on stdin
    assert not (base / "pwned").exists()
    assert "argv: --name a b" in last(executor).arguments


def test_argv_with_arguments_sends_both(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    seen = executor.execute("scripts/echo.py", {"a": 1}, base, meta, argv=["-v"]).json()
    assert seen["stdin"] == '{"a": 1}' and seen["argv"] == ["-v"]


def test_no_arguments_and_no_argv_sends_an_empty_object(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    assert executor.execute("scripts/echo.py", None, base, meta).json()["stdin"] == "{}"


def test_bad_argv_is_refused(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    for bad in ("--one-string", ["ok", None], ["a\0b"], [b"bytes"], 5):
        with pytest.raises(ArgumentSerializationError, match="argv"):
            executor.prepare("scripts/echo.py", None, base, meta, argv=bad)
        assert last(executor).outcome == "refused"


# -- environment ------------------------------------------------------------------------------


def test_skill_variables_and_minimal_env(
    tmp_path: Path, executor: Runner, monkeypatch, make_skill
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    monkeypatch.setenv("HOME", str(tmp_path))
    base, meta = make_skill(
        tmp_path,
        "demo",
        {"name": "demo", "description": "test", "version": "1.2.0"},
        {"scripts/env.py": PRINT_ENV},
        with_metadata=True,
    )
    env = executor.execute("scripts/env.py", {}, base, meta).json()
    assert env["SKILL_NAME"] == "demo"
    assert env["SKILL_BASE_DIR"] == str(base)
    assert env["SKILL_VERSION"] == "1.2.0"
    assert env["SKILLKIT_VERSION"] == skill_magics.__version__
    assert env["SKILL_MAGICS_VERSION"] == skill_magics.__version__
    assert "OPENAI_API_KEY" not in env  # a notebook's keys do not leak by default
    assert env["PATH"] == os.environ["PATH"]
    assert env["HOME"] == str(tmp_path) and env["LC_ALL"] == "C.UTF-8"


def test_minimal_env_is_exactly_the_base_names_and_locale(
    tmp_path: Path, executor: Runner, monkeypatch, make_skill
) -> None:
    """What the child gets is os.environ filtered by name: BASE_ENV and LC_*, values byte-exact
    (an undecodable value survives the round trip), nothing else, whatever else is set."""
    from skill_magics.core.run.executor import BASE_ENV

    monkeypatch.setenv("LC_TIME", "de_DE.UTF-8")
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("XLC_NOT_LOCALE", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    monkeypatch.setitem(os.environb, b"LC_ODD", b"caf\xe9")  # not UTF-8
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/env.py": PRINT_ENV}, with_metadata=True
    )
    prepared = executor.prepare("scripts/env.py", {}, base, meta)
    ours = ("SKILL", "PYTHONDONTWRITEBYTECODE")
    inherited = {k: v for k, v in prepared.env.items() if not k.startswith(ours)}
    expected = {k: v for k, v in os.environ.items() if k in BASE_ENV or k.startswith("LC_")}
    assert inherited == expected
    assert os.fsencode(inherited["LC_ODD"]) == b"caf\xe9"
    result = executor.run(prepared)
    assert result.exit_code == 0, result.stderr
    assert set(result.json()) - {
        "SKILL_NAME",
        "SKILL_BASE_DIR",
        "SKILL_VERSION",
        "SKILLKIT_VERSION",
        "SKILL_MAGICS_VERSION",
        "SKILL_WORKSPACE",
        "PYTHONDONTWRITEBYTECODE",
        "SKILL_MAGICS_RUN_ID",  # added at spawn: how the run's daemons are recognized
    } <= set(expected) | {"PWD", "SHLVL", "_", "LC_CTYPE"}


def test_the_minimal_env_follows_os_environ_from_run_to_run(
    tmp_path: Path, executor: Runner, monkeypatch, make_skill
) -> None:
    """The inherited part is decoded again only when os.environ changed (checks.py,
    childenv._base_env): a change, an addition or a removal between two runs is seen by the next."""
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/env.py": PRINT_ENV}, with_metadata=True
    )
    monkeypatch.setenv("LANG", "C.UTF-8")
    first = executor.prepare("scripts/env.py", {}, base, meta).env
    monkeypatch.setenv("LANG", "de_DE.UTF-8")
    monkeypatch.setenv("LC_NEW", "x")
    second = executor.prepare("scripts/env.py", {}, base, meta).env
    monkeypatch.delenv("LC_NEW")
    third = executor.prepare("scripts/env.py", {}, base, meta).env
    assert (first["LANG"], second["LANG"], third["LANG"]) == ("C.UTF-8",) + ("de_DE.UTF-8",) * 2
    assert "LC_NEW" not in first and second["LC_NEW"] == "x" and "LC_NEW" not in third
    second["MINE"] = "1"  # each run's environment is its own
    assert "MINE" not in executor.prepare("scripts/env.py", {}, base, meta).env


def test_a_prepared_run_holds_every_field(tmp_path: Path, executor: Runner, make_skill) -> None:
    """The checks build a PreparedRun from one dict (PreparedRun.of_fields): it must name every
    field, and equal what the dataclass's own constructor makes of the same values."""
    import dataclasses

    from skill_magics.core.run.launching.prepared import PreparedRun

    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/env.py": PRINT_ENV}, with_metadata=True
    )
    prepared = executor.prepare("scripts/env.py", {"a": 1}, base, meta)
    names = {f.name for f in dataclasses.fields(PreparedRun)}
    assert set(vars(prepared)) == names
    assert prepared == PreparedRun(**{name: getattr(prepared, name) for name in names})
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.command = ("/bin/sh",)  # type: ignore[misc]


def test_skill_version_none_is_empty(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/env.py": PRINT_ENV}, with_metadata=True
    )
    assert executor.execute("scripts/env.py", {}, base, meta).json()["SKILL_VERSION"] == ""


def test_env_passthrough_and_inherit_env(tmp_path: Path, monkeypatch, make_skill) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("OPENAI_ORG", "org-1")
    monkeypatch.setenv("OTHER_TOKEN", "t")
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/env.py": PRINT_ENV}, with_metadata=True
    )

    env = (
        Runner(env_passthrough=["OPENAI_API_KEY"]).execute("scripts/env.py", {}, base, meta).json()
    )
    assert env["OPENAI_API_KEY"] == "sk-secret" and "OPENAI_ORG" not in env

    env = Runner(env_passthrough=["OPENAI_*"]).execute("scripts/env.py", {}, base, meta)
    assert {"OPENAI_API_KEY", "OPENAI_ORG"} <= env.json().keys()

    env = Runner(inherit_env=True).execute("scripts/env.py", {}, base, meta).json()
    assert env["OPENAI_API_KEY"] == "sk-secret" and env["OTHER_TOKEN"] == "t"
    assert env["SKILL_NAME"] == "demo"  # still set on top


# -- interpreters -----------------------------------------------------------------------------


def test_python_runs_with_the_kernels_python_not_path_python3(
    tmp_path: Path, executor: Runner, monkeypatch, make_skill
) -> None:
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    for name in ("python3", "python"):
        fake = fake_bin / name
        fake.write_text("#!/bin/sh\necho WRONG PYTHON\n")
        fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake_bin}{os.pathsep}{os.environ['PATH']}")
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    assert executor.execute("scripts/echo.py", {}, base, meta).json()["exe"] == sys.executable


def test_python_prefers_the_skills_own_venv(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/echo.py": ECHO_STDIN_ARGV}, with_metadata=True
    )
    venv_bin = base / ".venv" / "bin"
    venv_bin.mkdir(parents=True)
    (venv_bin / "python").symlink_to(os.path.realpath(sys.executable))
    prepared = executor.prepare("scripts/echo.py", {}, base, meta)
    assert prepared.program == str(venv_bin / "python")
    assert executor.run(prepared).json()["exe"] == str(venv_bin / "python")


def test_bash_and_shebang_scripts(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path,
        "demo",
        scripts={
            "scripts/hello.sh": 'echo "bash $BASH_VERSION" | cut -c1-4\n',
            "scripts/tool": "#!/usr/bin/env python3\nimport sys; print(sys.executable)\n",
            "scripts/posix": "#!/bin/sh\necho sh-ok\n",
        },
        with_metadata=True,
    )
    assert executor.execute("scripts/hello.sh", {}, base, meta).stdout == "bash\n"
    assert executor.execute("scripts/tool", {}, base, meta).stdout.strip() == sys.executable
    assert executor.execute("scripts/posix", {}, base, meta).stdout == "sh-ok\n"


def test_prepared_run_carries_what_the_approval_ui_needs(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/hello.sh": "echo hi\n"}, with_metadata=True
    )
    prepared = executor.prepare("scripts/hello.sh", {"a": 1}, base, meta, argv=["-x"], timeout=5)
    assert isinstance(prepared, PreparedRun)
    assert prepared.script_rel == Path("scripts/hello.sh")
    assert prepared.interpreter.interpreter == "bash"
    assert os.path.basename(prepared.command[0]) == "bash"
    assert prepared.command[-2:] == (os.path.realpath(base / "scripts/hello.sh"), "-x")
    assert prepared.payload == b'{"a": 1}'
    assert prepared.cwd == Path(os.path.realpath(base)) and prepared.timeout == 5
    assert prepared.skill_name == "demo"
    assert prepared.env["SKILL_NAME"] == "demo"
    assert "sk-" not in repr(prepared) and "env" not in repr(prepared)  # env stays out of logs
    with pytest.raises(dataclasses.FrozenInstanceError):
        prepared.timeout = 9


def test_interpreter_not_allowed(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path,
        "demo",
        scripts={"scripts/x.rb": "puts 1\n", "scripts/x.js": "1\n"},
        with_metadata=True,
    )
    with pytest.raises(InterpreterNotAllowedError, match="'ruby' is not allowed.*allowed_interp"):
        executor.prepare("scripts/x.rb", {}, base, meta)
    rec = last(executor)
    assert rec.outcome == "refused" and rec.reason.startswith("InterpreterNotAllowedError")
    only_python = Runner(allowed_interpreters=["python"])  # alias of python3
    with pytest.raises(InterpreterNotAllowedError, match="'node'"):
        only_python.prepare("scripts/x.js", {}, base, meta)


def test_interpreter_not_found(tmp_path: Path, executor: Runner, monkeypatch, make_skill) -> None:
    base, meta = make_skill(
        tmp_path,
        "demo",
        scripts={
            "scripts/build.js": "console.log(1)\n",
            "scripts/odd": "#!/usr/bin/env nosuchlang\n",
        },
        with_metadata=True,
    )
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(InterpreterNotFoundError) as info:
        executor.prepare("scripts/build.js", {}, base, meta)
    assert str(info.value) == (
        "Interpreter 'node' not found in PATH for scripts/build.js: "
        "install Node.js or remove 'node' from allowed_interpreters"
    )
    assert last(executor).outcome == "refused"
    monkeypatch.undo()
    custom = Runner(allowed_interpreters=["nosuchlang"])
    with pytest.raises(InterpreterNotFoundError, match="'nosuchlang' not found in PATH"):
        custom.prepare("scripts/odd", {}, base, meta)


def test_interpreter_lookup_cache_follows_path_changes(
    tmp_path: Path, monkeypatch, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/x.rb": "puts 1\n"}, with_metadata=True
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    monkeypatch.setenv("PATH", str(bin_dir))
    executor = Runner(allowed_interpreters=["ruby"])
    with pytest.raises(InterpreterNotFoundError, match="install Ruby"):
        executor.prepare("scripts/x.rb", {}, base, meta)
    ruby = bin_dir / "ruby"  # "installed" after a miss: misses are not cached
    ruby.write_text("#!/bin/sh\necho fake-ruby\n")
    ruby.chmod(0o755)
    assert executor.prepare("scripts/x.rb", {}, base, meta).program == str(ruby)
    ruby.unlink()  # uninstalled: a cached hit that vanished is looked up again
    with pytest.raises(InterpreterNotFoundError):
        executor.prepare("scripts/x.rb", {}, base, meta)


def test_unknown_file_type(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"data.txt": "just text\n"}, with_metadata=True
    )
    with pytest.raises(UnknownScriptTypeError, match="No interpreter known for data.txt"):
        executor.prepare("data.txt", {}, base, meta)


def test_interpreter_that_cannot_start_is_a_failed_result(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/x.py": "print(1)\n"}, with_metadata=True
    )
    broken = base / "venv" / "bin" / "python"
    broken.parent.mkdir(parents=True)
    broken.write_text("not a program")  # exists, not executable
    result = executor.execute("scripts/x.py", {}, base, meta)
    assert result.exit_code == 126 and "Could not start scripts/x.py" in result.stderr
    assert last(executor).outcome == "failed" and last(executor).exit_code == 126


# -- refusals: paths, permissions, tools, arguments, timeout -------------------------------------


@pytest.mark.parametrize("path", ["../../etc/passwd", "/etc/passwd", "scripts/../../x"])
def test_path_escapes_are_refused_and_audited(
    tmp_path: Path, executor: Runner, path: str, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    with pytest.raises(PathSecurityError):
        executor.execute(path, {"a": 1}, base, meta)
    rec = last(executor)
    assert (rec.outcome, rec.script, rec.exit_code) == ("refused", path, None)
    assert rec.reason.startswith("PathSecurityError") and rec.arguments == '{"a": 1}'


def test_symlinks_pointing_outside_are_refused(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.sh").write_text("echo evil\n")
    (base / "scripts" / "evil.sh").symlink_to(outside / "evil.sh")
    (base / "linked").symlink_to(outside, target_is_directory=True)
    for path in ("scripts/evil.sh", "linked/evil.sh"):
        with pytest.raises(PathSecurityError):
            executor.execute(path, {}, base, meta)
        assert last(executor).outcome == "refused"


def test_missing_script_and_setuid(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    with pytest.raises(ScriptNotFoundError):
        executor.execute("scripts/nope.sh", {}, base, meta)
    assert last(executor).reason.startswith("ScriptNotFoundError")
    for bit in (stat.S_ISUID, stat.S_ISGID):
        (base / "scripts/ok.sh").chmod(0o755 | bit)
        if not (base / "scripts/ok.sh").stat().st_mode & bit:
            continue
        with pytest.raises(ScriptPermissionError, match="chmod ug-s"):
            executor.execute("scripts/ok.sh", {}, base, meta)
        assert last(executor).reason.startswith("ScriptPermissionError")


@pytest.mark.parametrize(
    ("tools", "allowed"),
    [
        (None, True),
        ([], True),
        (["Bash", "Read"], True),
        (["Read", "Bash(git:*)"], True),
        (["Read", "Write"], False),
        (["bash"], False),  # case-sensitive, as the spec writes tool names
        (["BashTool"], False),
    ],
)
def test_allowed_tools(
    tmp_path: Path, executor: Runner, tools: list[str] | None, allowed: bool, make_skill
) -> None:
    frontmatter = {"name": "demo", "description": "test"}
    if tools is not None:
        frontmatter["allowed-tools"] = tools
    base, meta = make_skill(
        tmp_path, "demo", frontmatter, {"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    assert meta.allowed_tools == tools
    if allowed:
        assert executor.execute("scripts/ok.sh", {}, base, meta).stdout == "ok\n"
        return
    with pytest.raises(ToolRestrictionError) as info:
        executor.execute("scripts/ok.sh", {}, base, meta)
    message = str(info.value)
    assert message.startswith("Tool 'Bash' not allowed for skill 'demo'")
    assert " ".join(tools) in message and "\n" not in message
    assert last(executor).outcome == "refused"


@pytest.mark.parametrize(
    ("arguments", "fragment"),
    [
        ({"x": float("nan")}, "arguments['x'] is nan"),
        ({"x": [1, float("inf")]}, "arguments['x'][1] is inf"),
        ({"tags": {"a", "b"}}, "arguments['tags'] has type 'set'"),
        ({1: "one"}, "key 1 in arguments is int"),
        ({"deep": {"k": {2: 3}}}, "key 2 in arguments['deep']['k']"),
        ({"obj": object()}, "arguments['obj'] has type 'object'"),
        ([1, 2], "must be a dict"),
        ({"s": "\ud800"}, "lone surrogate"),
    ],
)
def test_unserializable_arguments(
    tmp_path: Path, executor: Runner, arguments, fragment: str, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    with pytest.raises(ArgumentSerializationError) as info:
        executor.prepare("scripts/ok.sh", arguments, base, meta)
    assert fragment in str(info.value)
    assert last(executor).outcome == "refused"


def test_circular_arguments(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    loop: dict = {"a": []}
    loop["a"].append(loop)
    with pytest.raises(ArgumentSerializationError, match=r"arguments\['a'\]\[0\].*circular"):
        executor.prepare("scripts/ok.sh", loop, base, meta)
    assert last(executor).outcome == "refused"
    shared = [1, 2]  # the same list twice is not a cycle
    assert executor.prepare("scripts/ok.sh", {"a": shared, "b": shared}, base, meta).payload


def test_argument_size_counts_bytes_not_characters(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    text = "é" * (6 * 2**20)  # 6 Mi characters, 12 MiB of UTF-8: over the limit
    with pytest.raises(ArgumentSizeError, match=r"12,582,9\d\d bytes.*10 MiB"):
        executor.prepare("scripts/ok.sh", {"s": text}, base, meta)
    assert last(executor).outcome == "refused"
    assert len(last(executor).arguments) <= 256
    ascii_ok = {"s": "e" * (10 * 2**20 - 20)}  # just under 10 MiB of bytes
    assert len(executor.prepare("scripts/ok.sh", ascii_ok, base, meta).payload) <= 10 * 2**20


@pytest.mark.parametrize("bad", [0, 0.5, 601, -1, "10", True])
def test_timeout_range(tmp_path: Path, executor: Runner, bad, make_skill) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    with pytest.raises(ValueError, match="timeout"):
        executor.prepare("scripts/ok.sh", {}, base, meta, timeout=bad)
    with pytest.raises(ValueError, match="timeout"):
        Runner(timeout=bad)
    assert executor.prepare("scripts/ok.sh", {}, base, meta, timeout=600).timeout == 600


def test_settings_are_checked_when_made() -> None:
    from skill_magics.core.run.planning.settings import RunSettings

    with pytest.raises(ValueError, match="max_output_size"):
        RunSettings(max_output_size=-1)
    with pytest.raises(ValueError, match="max_output_size"):
        ScriptExecutor(max_output_size=-1)  # the standalone executor's settings too
    assert RunSettings(allowed_interpreters="python bash").allowed == {"python3", "bash"}
    assert isinstance(ScriptExecutor().audit, AuditLog)


def test_file_changed_after_prepare_is_refused_at_run(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    prepared = executor.prepare("scripts/ok.sh", {}, base, meta)
    (base / "scripts/ok.sh").write_text("echo something else entirely\n")
    with pytest.raises(PathSecurityError, match="changed after it was checked"):
        executor.run(prepared)
    assert last(executor).outcome == "refused"


class _SwapAfterChecks(RunChecks):
    """Real checks, then what an attacker racing them does: the script file is rewritten
    right after it passed (between the checks and the spawn of one ``execute()`` call)."""

    def __init__(self, script: Path, text: str) -> None:
        super().__init__()
        self.target, self.text = script, text

    def script(self, *args, **kwargs) -> PreparedRun:
        prepared = super().script(*args, **kwargs)
        self.target.write_text(self.text)
        return prepared


def test_execute_rechecks_a_file_swapped_right_after_its_checks(tmp_path: Path, make_skill) -> None:
    """No call skips the re-check, not even execute()'s checks-then-run with nothing waiting
    in between (it once did: ``just_checked=True``)."""
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo checked\n"}, with_metadata=True
    )
    executor = ScriptExecutor(timeout=10)
    executor.checks = _SwapAfterChecks(base / "scripts/ok.sh", "echo SWAPPED-IN\n")
    executor.checks.audit = executor.audit
    with pytest.raises(PathSecurityError, match="changed after it was checked"):
        executor.execute("scripts/ok.sh", {}, base, meta)
    assert executor.audit.records()[-1].outcome == "refused"


def test_a_cached_check_never_launches_a_file_reached_through_a_swapped_folder(
    tmp_path: Path, make_skill
) -> None:
    """The checks' cache re-validates with one stat (same inode, unedited); the re-check
    before the spawn catches the file's folder moved out of the skill and linked back."""
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/ok.sh": "echo ok\n"}, with_metadata=True
    )
    executor = ScriptExecutor(timeout=10)
    assert executor.execute("scripts/ok.sh", {}, base, meta).stdout == "ok\n"  # cached now
    outside = tmp_path / "outside"
    outside.mkdir()
    (base / "scripts").rename(outside / "scripts")  # the same inode, unedited...
    (outside / "scripts" / "evil.sh").write_text("echo evil\n")
    (base / "scripts").symlink_to(outside / "scripts")  # ...now reached through a link
    with pytest.raises(PathSecurityError, match="symlink"):
        executor.execute("scripts/ok.sh", {}, base, meta)
    # What it must not refuse: the folder put back, the same file runs again.
    (base / "scripts").unlink()
    (outside / "scripts").rename(base / "scripts")
    assert executor.execute("scripts/ok.sh", {}, base, meta).stdout == "ok\n"


def test_failed_script_result_and_audit(tmp_path: Path, executor: Runner, make_skill) -> None:
    base, meta = make_skill(
        tmp_path,
        "demo",
        scripts={"scripts/fail.sh": "echo bad input >&2\nexit 3\n"},
        with_metadata=True,
    )
    result = executor.execute("scripts/fail.sh", {}, base, meta)
    assert (result.exit_code, result.stderr, result.success) == (3, "bad input\n", False)
    assert result.signal is None and not result.timed_out
    rec = last(executor)
    assert (rec.outcome, rec.exit_code) == ("failed", 3)


@pytest.mark.parametrize("use_cache", [True, False])
def test_repeated_prepare_sees_every_change(tmp_path: Path, use_cache: bool, make_skill) -> None:
    """prepare() reuses earlier path/interpreter decisions only while nothing changed."""
    base, meta = make_skill(
        tmp_path, "demo", scripts={"scripts/tool": "#!/bin/sh\necho sh\n"}, with_metadata=True
    )
    executor = Runner(use_cache=use_cache)
    assert executor.prepare("scripts/tool", {}, base, meta).interpreter.interpreter == "sh"
    assert executor.prepare("scripts/tool", {}, base, meta).interpreter.interpreter == "sh"

    # New content with another shebang: another interpreter.
    (base / "scripts/tool").write_text("#!/usr/bin/env python3\nprint('py')\n")
    prepared = executor.prepare("scripts/tool", {}, base, meta)
    assert prepared.interpreter.script_type == "python" and prepared.program == sys.executable

    # A venv created in the skill afterwards is picked up.
    venv_python = base / "venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.symlink_to(os.path.realpath(sys.executable))
    assert executor.prepare("scripts/tool", {}, base, meta).program == str(venv_python)

    # setuid added later (mode change only: same mtime and size).
    (base / "scripts/tool").chmod(0o4755)
    if (base / "scripts/tool").stat().st_mode & stat.S_ISUID:
        with pytest.raises(ScriptPermissionError):
            executor.prepare("scripts/tool", {}, base, meta)
    (base / "scripts/tool").chmod(0o755)

    # Swapped for a symlink pointing outside.
    outside = tmp_path / "outside.py"
    outside.write_text("print('evil')\n")
    (base / "scripts/tool").unlink()
    (base / "scripts/tool").symlink_to(outside)
    with pytest.raises(PathSecurityError):
        executor.prepare("scripts/tool", {}, base, meta)

    # The allow-list changed on the live executor.
    (base / "scripts/tool").unlink()
    (base / "scripts/tool").write_text("#!/bin/sh\necho sh\n")
    executor.prepare("scripts/tool", {}, base, meta)
    executor.manager.configure(allowed_interpreters=["python"])  # normalised when set
    assert executor.settings.allowed == {"python3"}
    with pytest.raises(InterpreterNotAllowedError):
        executor.prepare("scripts/tool", {}, base, meta)


def test_prepare_command_runs_code_with_the_same_safety(
    tmp_path: Path, executor: Runner, monkeypatch, make_skill
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    base, meta = make_skill(tmp_path, "demo", with_metadata=True)
    code = "import json, os; print(json.dumps([os.getcwd(), os.environ.get('SKILL_NAME'), "
    code += "'OPENAI_API_KEY' in os.environ]))"
    prepared = executor.prepare_command(
        [sys.executable, "-c", code],
        skill_base_dir=base,
        skill_metadata=meta,
        label="<python -c>",
        timeout=5,
        arguments_preview="print(...)",
    )
    assert prepared.script is None and prepared.payload is None
    result = executor.run(prepared)
    assert result.json() == [os.path.realpath(base), "demo", False]
    assert result.script_path == Path("<python -c>")
    rec = last(executor)
    assert (rec.script, rec.outcome, rec.arguments) == ("<python -c>", "completed", "print(...)")

    with pytest.raises(CommandError, match="absolute program path"):
        executor.prepare_command(
            ["python3", "-c", "1"], skill_base_dir=base, skill_metadata=meta, label="<x>"
        )
    assert last(executor).outcome == "refused"
    with pytest.raises(InterpreterNotFoundError, match="missing or not executable"):
        executor.prepare_command(
            [str(base / "nope")], skill_base_dir=base, skill_metadata=meta, label="<x>"
        )
    with pytest.raises(ValueError, match="timeout"):
        executor.prepare_command(
            [sys.executable], skill_base_dir=base, skill_metadata=meta, label="<x>", timeout=0
        )


def test_runs_write_no_bytecode_into_the_skill(
    tmp_path: Path, executor: Runner, make_skill
) -> None:
    """PYTHONDONTWRITEBYTECODE: importing a helper leaves no __pycache__/ in the skill, so
    bytecode that appears there after an approved run is the run's own doing (it revokes a
    session approval: test_gate.py)."""
    base, meta = make_skill(
        tmp_path,
        "demo",
        scripts={"scripts/main.py": "import helper\nprint(helper.WHO)\n", "scripts/helper.py": ""},
        with_metadata=True,
    )
    (base / "scripts" / "helper.py").write_text("WHO = 'source'\n")
    result = executor.execute("scripts/main.py", {}, base, meta)
    assert result.stdout == "source\n", result.stderr
    assert not list(base.rglob("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    plain = subprocess.run(  # what a plain run does, so the check above means something
        [sys.executable, "scripts/main.py"], cwd=base, env=env, capture_output=True, text=True
    )
    assert plain.stdout == "source\n" and list(base.rglob("__pycache__"))


# -- script names and argv: exactly the named file runs, never an option ----------------------


@posix_only
def test_nul_in_argv_refused_and_audited(make_skill, tmp_path):
    make_skill(tmp_path, "nul", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(ArgumentSerializationError):
        manager.execute_skill_script("nul", "a", argv=["ok", "bad\0arg"])
    assert len(refusals(manager)) == 1


@posix_only
@pytest.mark.parametrize("name", ["-c", "--help.py", "-", "--version"])
def test_leading_dash_script_names_are_never_interpreter_options(make_skill, tmp_path, name):
    # A file literally named "-c" must be run as a file, not read by the interpreter as a flag.
    body = "print('ran the file')\n" if name.endswith(".py") else "#!/bin/sh\necho ran the file\n"
    make_skill(tmp_path, "dash", scripts={f"scripts/{name}": body})
    manager = manager_for(tmp_path)
    plan = manager.plan("dash", f"scripts/{name}")
    script_arg = plan.prepared.command[-1]
    assert os.path.isabs(script_arg) and not script_arg.startswith("-")
    result = run_plan(manager, plan)
    assert result.stdout == "ran the file\n", result.stderr


@posix_only
@pytest.mark.parametrize("name", ["sp ace.sh", "new\nline.sh", "üñí😀.sh", "quote'\"$(x).sh"])
def test_odd_script_names_run_exactly_the_named_file(make_skill, tmp_path, name):
    make_skill(tmp_path, "odd", scripts={f"scripts/{name}": "echo ran\n"})
    manager = manager_for(tmp_path)
    result = manager.execute_skill_script("odd", f"scripts/{name}")
    assert result.stdout == "ran\n"
    assert result.script_path.as_posix() == f"scripts/{name}"


# -- between prepare() and run(): a swap or an edit is refused --------------------------------


@posix_only
def test_run_refuses_script_replaced_by_symlink_after_prepare(make_skill, tmp_path):
    marker = tmp_path / "ran"
    evil = tmp_path / "evil.sh"
    evil.write_text(f"touch {marker}\n")
    skill = make_skill(tmp_path / "skills", "swap", scripts={"scripts/a.sh": "echo a\n"})
    manager = manager_for(tmp_path / "skills")
    plan = manager.plan("swap", "a")
    target = skill / "scripts" / "a.sh"
    target.unlink()
    os.symlink(evil, target)
    with pytest.raises(SkillMagicsError):
        run_plan(manager, plan)
    assert not marker.exists()
    assert len(refusals(manager)) == 1


@posix_only
def test_run_refuses_parent_dir_swapped_for_symlink_after_prepare(make_skill, tmp_path):
    marker = tmp_path / "ran"
    evil_dir = tmp_path / "evil"
    evil_dir.mkdir()
    (evil_dir / "a.sh").write_text(f"touch {marker}\n")
    skill = make_skill(tmp_path / "skills", "swap", scripts={"scripts/a.sh": "echo a\n"})
    manager = manager_for(tmp_path / "skills")
    plan = manager.plan("swap", "a")
    (skill / "scripts").rename(skill / "old")
    os.symlink(evil_dir, skill / "scripts")
    with pytest.raises(PathSecurityError):
        run_plan(manager, plan)
    assert not marker.exists()


@posix_only
def test_run_refuses_script_edited_after_prepare(make_skill, tmp_path):
    skill = make_skill(tmp_path, "edit", scripts={"scripts/a.sh": "echo approved\n"})
    manager = manager_for(tmp_path)
    plan = manager.plan("edit", "a")
    (skill / "scripts" / "a.sh").write_text("echo something else entirely\n")
    with pytest.raises(SkillMagicsError):
        run_plan(manager, plan)


@posix_only
def test_run_refuses_same_size_edit_with_restored_mtime(make_skill, tmp_path):
    skill = make_skill(tmp_path, "edit", scripts={"scripts/a.sh": "echo AAAA\n"})
    manager = manager_for(tmp_path)
    plan = manager.plan("edit", "a")
    path = skill / "scripts" / "a.sh"
    st = path.stat()
    path.write_text("echo BBBB\n")  # same size
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    try:
        result = run_plan(manager, plan)
    except SkillMagicsError:
        return
    assert "BBBB" not in result.stdout


# -- shebangs name an allow-listed program, found on PATH -------------------------------------


@posix_only
@pytest.mark.parametrize("shebang", ["#!/bin/rm -rf", "#!/usr/bin/env rm -rf", "#!/bin/dd"])
def test_shebang_to_a_program_not_allowed_is_refused(make_skill, tmp_path, shebang):
    make_skill(tmp_path, "sheb", scripts={"scripts/run": f"{shebang}\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(InterpreterNotAllowedError):
        manager.execute_skill_script("sheb", "run")
    assert len(refusals(manager)) == 1


@posix_only
def test_shebang_absolute_path_cannot_smuggle_a_fake_allowed_interpreter(make_skill, tmp_path):
    fake = tmp_path / "bin" / "bash"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho PWNED-fake-bash\n")
    fake.chmod(0o755)
    make_skill(tmp_path / "skills", "sheb", scripts={"scripts/run": f"#!{fake}\necho body\n"})
    manager = manager_for(tmp_path / "skills", allowed_interpreters=["bash"])
    try:
        result = manager.execute_skill_script("sheb", "run")
    except SkillMagicsError:
        return
    assert "PWNED" not in result.stdout


@posix_only
def test_absolute_shebang_runs_the_allow_listed_program_on_path_with_its_flags(
    make_skill, tmp_path
):
    fake = tmp_path / "bin" / "bash"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho FAKE\n")
    fake.chmod(0o755)
    make_skill(tmp_path / "s", "sh", scripts={"scripts/run": f"#!{fake} -e\necho real $0\n"})
    manager = SkillManager([tmp_path / "s"])
    plan = manager.plan("sh", "run")
    assert plan.prepared.command[0] == shutil.which("bash")
    assert plan.prepared.command[1] == "-e"  # the shebang's flags are kept
    assert run_plan(manager, plan).stdout.startswith("real ")


# -- .ts runs with tsx from PATH, never npx, never the skill's own ----------------------------


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


@posix_only
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


@posix_only
def test_missing_tsx_names_the_fix(ts_skill, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    manager = SkillManager([ts_skill.parent], allowed_interpreters=["tsx"])
    with pytest.raises(InterpreterNotFoundError) as caught:
        manager.execute_skill_script("ts", "hello")
    message = str(caught.value)
    assert "npm install -g tsx" in message and "remove 'tsx' from allowed_interpreters" in message
    assert refusals(manager)[0].reason.startswith("InterpreterNotFoundError: ")


@posix_only
def test_an_interpreter_found_on_path_inside_the_skill_is_refused(ts_skill, monkeypatch):
    shipped = ts_skill / "node_modules" / ".bin"
    monkeypatch.setenv("PATH", f"{shipped}{os.pathsep}{os.environ['PATH']}")
    manager = SkillManager([ts_skill.parent], allowed_interpreters=["tsx"])
    with pytest.raises(PathSecurityError, match="inside the skill"):
        manager.execute_skill_script("ts", "hello")


@posix_only
@pytest.mark.parametrize("query", ["hello", "hello.ts", "scripts/hello.ts"])
def test_a_ts_script_while_tsx_is_not_allowed_says_to_allow_tsx(ts_skill, query):
    manager = SkillManager([ts_skill.parent])  # default allow-list: no tsx
    with pytest.raises(InterpreterNotAllowedError, match="add 'tsx' to allowed_interpreters"):
        manager.execute_skill_script("ts", query)
    (record,) = refusals(manager)
    assert record.reason.startswith("InterpreterNotAllowedError: ")


@posix_only
def test_other_missing_scripts_still_say_not_found(ts_skill):
    with pytest.raises(ScriptNotFoundError):
        SkillManager([ts_skill.parent]).execute_skill_script("ts", "goodbye")


# -- the environment: no secrets, no loader variables -----------------------------------------


@posix_only
def test_minimal_env_drops_secrets_and_loader_variables(make_skill, tmp_path, monkeypatch):
    sourced = tmp_path / "bash_env.sh"
    sourced.write_text("echo BASH_ENV_WAS_SOURCED\n")
    hostile = {
        "OPENAI_API_KEY": "sk-leak",
        "ANTHROPIC_API_KEY": "sk-ant-leak",
        "AWS_SECRET_ACCESS_KEY": "leak",
        "BASH_ENV": str(sourced),
        "ENV": str(sourced),
        "PYTHONPATH": str(tmp_path),
        "PYTHONSTARTUP": str(sourced),
        "PYTHONINSPECT": "1",
        "LD_PRELOAD": "/nonexistent.so",
        "LD_LIBRARY_PATH": str(tmp_path),
        "NODE_OPTIONS": "--require /nonexistent.js",
        "PERL5OPT": "-Mstrict",
        "RUBYOPT": "-rnonexistent",
    }
    for key, value in hostile.items():
        monkeypatch.setenv(key, value)
    make_skill(tmp_path / "s", "envt", scripts={"scripts/a.sh": "env\n"})
    out = manager_for(tmp_path / "s").execute_skill_script("envt", "a").stdout
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert not names & set(hostile), names & set(hostile)
    assert "BASH_ENV_WAS_SOURCED" not in out


# -- argument and argv limits -----------------------------------------------------------------


@posix_only
def test_deeply_nested_arguments_refused_cleanly(make_skill, tmp_path):
    make_skill(tmp_path, "deep", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path)
    deep: dict = {}
    cur = deep
    for _ in range(50_000):
        cur["a"] = {}
        cur = cur["a"]
    with pytest.raises(ArgumentSerializationError):
        manager.plan("deep", "a", deep)
    assert len(refusals(manager)) == 1


def test_argument_depth_limit_is_the_same_on_every_python(make_skill, tmp_path):
    """500 levels reach the script; 501 are refused before it starts, whether or not this
    Python's json.dumps would raise RecursionError there (3.11/3.12 do near 1,000, 3.13 not)."""
    reader = (
        "import json, sys\nd = json.load(sys.stdin)\nn = 1\n"
        "while d['a'] != 0:\n    d = d['a']\n    n += 1\nprint(n)\n"
    )
    make_skill(tmp_path, "depth", scripts={"scripts/read.py": reader})
    manager = manager_for(tmp_path)

    def nested(levels: int) -> dict:
        value: object = 0
        for _ in range(levels):
            value = {"a": value}
        assert isinstance(value, dict)
        return value

    result = manager.execute_skill_script("depth", "read", nested(MAX_ARGUMENT_DEPTH))
    assert result.success and result.stdout.strip() == str(MAX_ARGUMENT_DEPTH), result.stderr
    with pytest.raises(ArgumentSerializationError, match="more than 500 levels deep"):
        manager.plan("depth", "read", nested(MAX_ARGUMENT_DEPTH + 1))
    assert len(refusals(manager)) == 1


@posix_only
def test_ten_mib_limit_counts_utf8_bytes_exactly(make_skill, tmp_path):
    make_skill(tmp_path, "big", scripts={"scripts/a.sh": "cat > /dev/null\n"})
    manager = manager_for(tmp_path)
    limit = 10 * 2**20
    overhead = len(b'{"k": ""}')
    # 2-byte characters: one more pushes the payload over the limit by bytes, not chars.
    fits = "é" * ((limit - overhead) // 2) + "a" * ((limit - overhead) % 2)
    assert len(json.dumps({"k": fits}, ensure_ascii=False).encode()) == limit
    plan = manager.plan("big", "a", {"k": fits})
    assert len(plan.prepared.payload) == limit
    with pytest.raises(ArgumentSizeError):
        manager.plan("big", "a", {"k": fits + "é"})


@posix_only
def test_huge_argv_is_refused_before_spawn(make_skill, tmp_path):
    make_skill(tmp_path, "argv", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(ArgumentSizeError):
        manager.plan("argv", "a", argv=["x" * 300_000])


@posix_only
def test_argv_over_the_total_limit_is_refused_before_spawn_and_audited(make_skill, tmp_path):
    make_skill(tmp_path, "argv", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path])
    many = ["y" * 100_000] * (os.sysconf("SC_ARG_MAX") // 100_000 + 2)
    with pytest.raises(ArgumentSizeError, match="stdin"):
        manager.plan("argv", "a", argv=many)
    (record,) = manager.audit.records()
    assert (record.outcome, record.script) == ("refused", "scripts/a.sh")
    # Well under the limits: runs.
    assert manager.execute_skill_script("argv", "a", argv=["z" * 100_000]).stdout == "hi\n"


@posix_only
def test_normalize_argv_message_survives_an_unprintable_item():
    with pytest.raises(ArgumentSerializationError, match="unprintable"):
        normalize_argv([BadRepr()])


# -- allowed-tools as SKILL.md writes it ------------------------------------------------------


@posix_only
@pytest.mark.parametrize("tools", ["Read Grep", "bash", "BASH", "[Read, Write]", "Bashful"])
def test_allowed_tools_without_bash_refuses(make_skill, tmp_path, tools):
    marker = tmp_path / "ran"
    make_skill(
        tmp_path / "s",
        "t",
        frontmatter=f"name: t\ndescription: d\nallowed-tools: {tools}\n",
        scripts={"scripts/a.sh": f"touch {marker}\n"},
    )
    manager = manager_for(tmp_path / "s")
    with pytest.raises(ToolRestrictionError):
        manager.execute_skill_script("t", "a")
    assert not marker.exists()
    assert len(refusals(manager)) == 1


@posix_only
@pytest.mark.parametrize("tools", ["Bash", "Read Bash", "[Read, Bash]", "Bash(git:*)", "Read,Bash"])
def test_allowed_tools_with_bash_runs(make_skill, tmp_path, tools):
    # NOTE: a scoped Bash(git:*) lets *every* script run; the scope is not enforced.
    make_skill(
        tmp_path / "s",
        "t",
        frontmatter=f"name: t\ndescription: d\nallowed-tools: {tools}\n",
        scripts={"scripts/a.sh": "echo ran\n"},
    )
    assert manager_for(tmp_path / "s").execute_skill_script("t", "a").stdout == "ran\n"


# Decision ("no allowed-tools specified (null/empty) -> execution proceeds", the original
# requirement): an explicit empty allowed-tools declares no restriction, like an
# absent key. Refusing it instead was weighed and not adopted.
@posix_only
@pytest.mark.parametrize("tools", ["[]", "''"])
def test_explicit_empty_allowed_tools_proceeds(make_skill, tmp_path, tools):
    make_skill(
        tmp_path / "s",
        "t",
        frontmatter=f"name: t\ndescription: d\nallowed-tools: {tools}\n",
        scripts={"scripts/a.sh": "echo ran\n"},
    )
    manager = manager_for(tmp_path / "s")
    assert manager.execute_skill_script("t", "a").stdout == "ran\n"
    assert refusals(manager) == []
