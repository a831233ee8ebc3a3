"""skill_magics: use Agent Skills from IPython and Jupyter.

>>> from skill_magics import SkillManager
>>> manager = SkillManager(["skills"])
>>> manager.execute_skill_script("csv-profiler", "profile", {"csv": "a,b\\n1,2\\n"}).json()

In IPython/Jupyter: ``%load_ext skill_magics``.
"""

from __future__ import annotations

__version__ = "0.1.0"

from .core.errors import *  # noqa: F403
from .core.errors import __all__ as _error_names
from .core.models import ScriptExecutionResult, ScriptMetadata, SkillMetadata

_LAZY = {
    "SkillManager": ("skill_magics.core.discovery", "SkillManager"),
    "Skill": ("skill_magics.core.skill", "Skill"),
    "ScriptExecutor": ("skill_magics.core.executor", "ScriptExecutor"),
    "ScriptDetector": ("skill_magics.core.detect", "ScriptDetector"),
    "build_skill_context": ("skill_magics.core.context", "build_skill_context"),
    "skills_catalog": ("skill_magics.core.context", "skills_catalog"),
    "tool_definitions": ("skill_magics.core.tools", "tool_definitions"),
    "handle_tool_call": ("skill_magics.core.tools", "handle_tool_call"),
    "Decision": ("skill_magics.core.approval", "Decision"),
    "ApprovalRequest": ("skill_magics.core.approval", "ApprovalRequest"),
    "SkillRunResult": ("skill_magics.notebook.result", "SkillRunResult"),
}


def __getattr__(name: str):
    # Public names resolve on first use so `import skill_magics` and %load_ext stay fast.
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'skill_magics' has no attribute {name!r}")


def load_ipython_extension(ipython) -> None:
    """``%load_ext skill_magics``: register the magics (imports the notebook layer lazily)."""
    from .notebook.extension import load

    load(ipython)


def unload_ipython_extension(ipython) -> None:
    from .notebook.extension import unload

    unload(ipython)


__all__ = [
    "__version__",
    "SkillMetadata",
    "ScriptMetadata",
    "ScriptExecutionResult",
    *_error_names,
    *_LAZY,
    "load_ipython_extension",
    "unload_ipython_extension",
]
