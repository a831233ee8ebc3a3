"""The public API: every public name is importable from ``skill_magics`` with the
documented signature, attributes and behaviour (checked on the bundled example skills)."""

from __future__ import annotations

import dataclasses
import inspect
import sys
from pathlib import Path

import pytest

import skill_magics

MIB = 10 * 2**20

ERRORS = [
    "SkillNotFoundError",
    "ScriptNotFoundError",
    "AmbiguousScriptError",
    "SkillParseError",
    "PathSecurityError",
    "ScriptPermissionError",
    "InterpreterNotFoundError",
    "InterpreterNotAllowedError",
    "ToolRestrictionError",
    "ArgumentSerializationError",
    "ArgumentSizeError",
    "ApprovalDeclined",
    "ApprovalUnavailable",
]
NAMES = [
    "SkillManager",
    "Skill",
    "SkillMetadata",
    "ScriptMetadata",
    "ScriptExecutor",
    "ScriptExecutionResult",
    "SkillMagicsError",
    *ERRORS,
    "build_skill_context",
    "available_skills",
    "skills_catalog",  # deprecated: the old name of available_skills
    "validate_skill",
    "load_ipython_extension",
    # the skill lab (issue 19)
    "run_agent",
    "run_agent_async",
    "AgentOptions",
    "TriggerOptions",
    "EvalOptions",
    "Transcript",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "TriggerReport",
    "run_evals",
    "run_evals_async",
    "EvalReport",
    "ModelCallError",
    "install_skills",
    "verify_skills",
    "sync_skills",
    "update_skills",
    "InstallReport",
    "SourceError",
    "UnsafeArchiveError",
    "SkillExistsError",
    "LockFileError",
]


def params(func) -> dict[str, inspect.Parameter]:
    return dict(inspect.signature(func).parameters)


def assert_params(func, expected: list[tuple[str, object, object]]) -> None:
    """``expected``: (name, kind, default) in order; default ``...`` means required."""
    got = params(func)
    for name, kind, default in expected:
        assert name in got, f"{func.__qualname__} lacks parameter {name!r}"
        p = got[name]
        assert p.kind is kind, f"{func.__qualname__}({name}) is {p.kind}, documented {kind}"
        want = inspect.Parameter.empty if default is ... else default
        assert p.default == want, f"{func.__qualname__}({name}) default {p.default!r}"
    order = [n for n in got if n in {e[0] for e in expected}]
    assert order == [e[0] for e in expected], f"{func.__qualname__} parameter order {order}"


POS = inspect.Parameter.POSITIONAL_OR_KEYWORD
KW = inspect.Parameter.KEYWORD_ONLY


@pytest.mark.parametrize("name", NAMES)
def test_documented_names_are_importable_and_listed(name):
    assert hasattr(skill_magics, name), f"skill_magics.{name} is missing"
    assert name in skill_magics.__all__


def test_errors_form_one_tree():
    for name in ERRORS:
        assert issubclass(getattr(skill_magics, name), skill_magics.SkillMagicsError), name


def test_import_does_not_load_the_notebook_layer():
    """``import skill_magics`` and core use stay free of IPython/ipywidgets (section 1)."""
    import subprocess

    code = (
        "import sys, skill_magics\n"
        "skill_magics.SkillManager; skill_magics.build_skill_context\n"
        "import skill_magics.core.manager, skill_magics.core.prompt.context\n"
        "import skill_magics.core.prompt.tools\n"
        "bad = sorted(m for m in sys.modules if m.startswith(('IPython', 'ipywidgets')))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_skill_manager_signature():
    assert_params(
        skill_magics.SkillManager,
        [
            ("skill_dirs", POS, None),
            ("timeout", KW, 30),
            ("max_output_size", KW, MIB),
            ("allowed_interpreters", KW, None),
            ("approver", KW, None),
            ("inherit_env", KW, False),
            ("env_passthrough", KW, ()),
        ],
    )
    assert_params(
        skill_magics.SkillManager.execute_skill_script,
        [
            ("skill_name", POS, ...),
            ("script", POS, ...),
            ("arguments", POS, None),
            ("argv", KW, None),
            ("timeout", KW, None),
        ],
    )
    for method in ("list_skills", "get_skill", "reload"):
        assert callable(getattr(skill_magics.SkillManager, method))


def test_script_executor_signature():
    assert_params(
        skill_magics.ScriptExecutor,
        [("timeout", POS, 30), ("max_output_size", POS, MIB), ("use_cache", POS, True)],
    )
    assert_params(
        skill_magics.ScriptExecutor.execute,
        [
            ("script_path", POS, ...),
            ("arguments", POS, ...),
            ("skill_base_dir", POS, ...),
            ("skill_metadata", POS, ...),
            ("timeout", POS, None),
            ("argv", KW, None),
        ],
    )


def test_context_functions_signature():
    assert list(params(skill_magics.build_skill_context))[:2] == ["manager", "names"]
    assert list(params(skill_magics.available_skills))[0] == "manager"


def assert_fields(kind, expected: list[tuple[str, object]]) -> None:
    """``expected``: (field, default) of an options dataclass, in order; ``...``: required."""
    got = [(f.name, f.default) for f in dataclasses.fields(kind)]
    want = [(n, dataclasses.MISSING if d is ... else d) for n, d in expected]
    assert got[: len(want)] == want, f"{kind.__name__} fields {got}"


def test_skill_lab_signatures():
    """As issue 19 documents them (the choices now fields of an options object, issue 30,
    given whole or as keywords); approver defaults to "the manager's approver"."""
    from skill_magics.core.manager import USE_DEFAULT

    VAR = inspect.Parameter.VAR_KEYWORD
    per_call = [("options", POS, None), ("approver", KW, USE_DEFAULT), ("choices", VAR, ...)]
    assert_params(
        skill_magics.run_agent,
        [("client", POS, ...), ("manager", POS, ...), ("prompt", POS, ...), *per_call],
    )
    assert_fields(
        skill_magics.AgentOptions,
        [
            ("model", ...),
            ("skills", None),
            ("system", None),
            ("max_turns", 8),
            ("max_tokens", 1024),
        ],
    )
    assert_params(
        skill_magics.evaluate_triggers,
        [
            ("client", POS, ...),
            ("manager", POS, ...),
            ("skill", POS, ...),
            ("queries", POS, ...),
            ("options", POS, None),
            ("on_progress", KW, None),
            ("choices", VAR, ...),
        ],
    )
    assert_fields(
        skill_magics.TriggerOptions,
        [
            ("model", ...),
            ("runs", 3),
            ("threshold", 0.5),
            ("description", None),
            ("skills", None),
            ("holdout", None),
            ("seed", 42),
            ("max_calls", None),
            ("max_tokens_total", None),
        ],
    )
    assert_params(
        skill_magics.run_evals,
        [
            ("client", POS, ...),
            ("manager", POS, ...),
            ("skill", POS, ...),
            ("options", POS, None),
            ("grader", KW, None),
            *per_call[1:],
        ],
    )
    assert_fields(
        skill_magics.EvalOptions,
        [
            ("model", ...),
            ("configurations", ("with_skill", "without_skill")),
            ("runs", 1),
            ("workspace", None),
            ("max_calls", None),
        ],
    )
    for name in ("activated", "tool_calls", "final_text", "usage"):
        assert isinstance(getattr(skill_magics.Transcript, name), property)
    for name in ("to_pandas", "to_json", "compare", "chart"):
        assert callable(getattr(skill_magics.TriggerReport, name))
    assert isinstance(skill_magics.TriggerReport.summary, property)


def test_install_functions_signature():
    """Installed skills (issue 20): the documented parameters, in order."""
    from skill_magics.core.manager import USE_DEFAULT

    assert_params(
        skill_magics.install_skills,
        [
            ("source", POS, ...),
            ("into", KW, None),
            ("skills", KW, None),
            ("ref", KW, None),
            ("subfolder", KW, None),
            ("force", KW, False),
            ("manager", KW, None),
            ("approver", KW, USE_DEFAULT),
        ],
    )
    assert_params(skill_magics.verify_skills, [("folder", POS, None)])
    assert_params(
        skill_magics.sync_skills,
        [("folder", POS, None), ("force", KW, False), ("approver", KW, USE_DEFAULT)],
    )
    assert_params(
        skill_magics.update_skills,
        [("folder", POS, None), ("names", POS, None), ("approver", KW, USE_DEFAULT)],
    )
    for name in ("SourceError", "UnsafeArchiveError", "SkillExistsError", "LockFileError"):
        assert issubclass(getattr(skill_magics, name), skill_magics.SkillMagicsError)


def test_model_fields():
    fields = {f.name for f in dataclasses.fields(skill_magics.SkillMetadata)}
    assert {
        "name",
        "description",
        "version",
        "license",
        "compatibility",
        "allowed_tools",
        "metadata",
        "path",
        "warnings",
    } <= fields
    fields = {f.name for f in dataclasses.fields(skill_magics.ScriptMetadata)}
    assert {"name", "path", "script_type", "interpreter", "description"} <= fields
    fields = {f.name for f in dataclasses.fields(skill_magics.ScriptExecutionResult)}
    assert {
        "stdout",
        "stderr",
        "exit_code",
        "execution_time_ms",
        "script_path",
        "signal",
        "signal_number",
        "timed_out",
        "stdout_truncated",
        "stderr_truncated",
        "stdout_bytes",
        "stderr_bytes",
    } <= fields
    # The old name of timed_out still reads it, with a warning (tests/test_one_meaning.py).
    assert isinstance(skill_magics.ScriptExecutionResult.timeout, property)


def test_manager_and_skill_behave_as_documented(examples_dir):
    manager = skill_magics.SkillManager([examples_dir])
    assert manager.skill_dirs == [Path(examples_dir)]
    names = [m.name for m in manager.list_skills()]
    assert names == sorted(names) and "csv-profiler" in names
    assert isinstance(manager.warnings, list)
    with pytest.raises(skill_magics.SkillNotFoundError, match="csv-profiler"):
        manager.get_skill("csv-profilr")  # close matches are named

    skill = manager.get_skill("csv-profiler")
    assert isinstance(skill, skill_magics.Skill)
    assert isinstance(skill.metadata, skill_magics.SkillMetadata)
    assert skill.base_dir == Path(examples_dir) / "csv-profiler"
    assert skill.content.strip() and "---" not in skill.content.splitlines()[0]
    assert [s.path.as_posix() for s in skill.scripts] == ["scripts/profile.py"]
    assert all(not p.is_absolute() for p in skill.references)
    assert any(p.parts[0] == "references" for p in skill.references)
    assert "scripts/profile.py" in [r.path for r in skill.referenced_scripts]
    manager.reload()

    result = manager.execute_skill_script("csv-profiler", "profile", {"csv": "a,b\n1,2\n"})
    assert isinstance(result, skill_magics.ScriptExecutionResult)
    assert result.success and result.exit_code == 0 and not result.signaled
    assert result.execution_time_ms > 0
    assert result.script_path == Path("scripts/profile.py")
    assert isinstance(result.json(), dict)
    assert result.stdout_bytes == len(result.stdout.encode())
    same = manager.execute_skill_script("csv-profiler", "scripts/profile.py", {"csv": "a\n1\n"})
    assert same.success


def test_executor_and_context_behave_as_documented(examples_dir):
    manager = skill_magics.SkillManager([examples_dir])
    skill = manager.get_skill("unit-converter")
    executor = skill_magics.ScriptExecutor(timeout=60)
    result = executor.execute(
        "scripts/convert.py",
        None,
        skill.base_dir,
        skill.metadata,
        argv=["--value", "1", "--from", "km", "--to", "m"],
    )
    assert result.success, result.stderr
    xml = skill_magics.build_skill_context(manager, "unit-converter", run_scripts=False)
    assert xml.startswith('<skill_context id="unit-converter">')
    assert skill_magics.available_skills(manager).startswith("<available_skills>\n<skill>")
