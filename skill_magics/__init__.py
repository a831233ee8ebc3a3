"""skill_magics: use Agent Skills from IPython and Jupyter.

Example (not run as a doctest: it runs a script)::

    from skill_magics import SkillManager
    manager = SkillManager(["skills"])
    manager.execute_skill_script("csv-profiler", "profile", {"csv": "a,b\\n1,2\\n"}).json()

In IPython/Jupyter: ``%load_ext skill_magics``.
"""

from __future__ import annotations

from skill_magics.core.base.errors import *  # noqa: F403
from skill_magics.core.base.errors import __all__ as _error_names
from skill_magics.core.base.models import ScriptExecutionResult, ScriptMetadata, SkillMetadata

_LAZY = {
    "SkillManager": ("skill_magics.core.manager", "SkillManager"),
    "Skill": ("skill_magics.core.catalog.skill", "Skill"),
    "ScriptExecutor": ("skill_magics.core.run.executor", "ScriptExecutor"),
    "ScriptDetector": ("skill_magics.core.catalog.detect", "ScriptDetector"),
    "build_skill_context": ("skill_magics.core.prompt.context", "build_skill_context"),
    "available_skills": ("skill_magics.core.prompt.available_skills", "available_skills"),
    "skills_catalog": ("skill_magics.core.prompt.available_skills", "skills_catalog"),  # deprecated
    "validate_skill": ("skill_magics.core.lab.validation", "validate_skill"),
    "tool_definitions": ("skill_magics.core.prompt.tools", "tool_definitions"),
    "handle_tool_call": ("skill_magics.core.prompt.tools", "handle_tool_call"),
    "Decision": ("skill_magics.core.run.gating.approval", "Decision"),
    "ApprovalRequest": ("skill_magics.core.run.gating.approval", "ApprovalRequest"),
    "SkillRunResult": ("skill_magics.notebook.result", "SkillRunResult"),
    "BatchResult": ("skill_magics.core.run.batch.result", "BatchResult"),
    "BatchItem": ("skill_magics.core.run.batch.result", "BatchItem"),
    # the skill lab (core/lab): a model with skills, trigger and output evaluations
    "run_agent": ("skill_magics.core.lab.agent", "run_agent"),
    "run_agent_async": ("skill_magics.core.lab.agent", "run_agent_async"),
    "AgentOptions": ("skill_magics.core.lab.options", "AgentOptions"),
    "TriggerOptions": ("skill_magics.core.lab.options", "TriggerOptions"),
    "EvalOptions": ("skill_magics.core.lab.options", "EvalOptions"),
    "Transcript": ("skill_magics.core.lab.transcript", "Transcript"),
    "evaluate_triggers": ("skill_magics.core.lab.triggers", "evaluate_triggers"),
    "evaluate_triggers_async": ("skill_magics.core.lab.triggers", "evaluate_triggers_async"),
    "TriggerReport": ("skill_magics.core.lab.triggers", "TriggerReport"),
    "run_evals": ("skill_magics.core.lab.evals", "run_evals"),
    "run_evals_async": ("skill_magics.core.lab.evals", "run_evals_async"),
    "EvalReport": ("skill_magics.core.lab.evals", "EvalReport"),
    "install_skills": ("skill_magics.core.sources.install", "install_skills"),
    "verify_skills": ("skill_magics.core.sources.verify", "verify_skills"),
    "sync_skills": ("skill_magics.core.sources.update", "sync_skills"),
    "update_skills": ("skill_magics.core.sources.update", "update_skills"),
    "InstallReport": ("skill_magics.core.sources.install", "InstallReport"),
}


def __getattr__(name: str):
    # Public names resolve on first use so `import skill_magics` and %load_ext stay fast.
    if name == "__version__":  # read from package metadata on first use
        from skill_magics.core.base.version import VERSION

        globals()[name] = VERSION
        return VERSION
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'skill_magics' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext skill_magics``: register the magics (imports the notebook layer lazily)."""
    from skill_magics.notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from skill_magics.notebook.extension import unload

    unload(ipython)


__all__ = [
    "__version__",  # noqa: F405 - module __getattr__ reads it from the package metadata
    "SkillMetadata",
    "ScriptMetadata",
    "ScriptExecutionResult",
    *_error_names,
    *_LAZY,
    "load_ipython_extension",
    "unload_ipython_extension",
]
