"""The working directory of a run, and how a ``python -m`` script is launched from it
(docs/architecture.md, *Real skills*).

``cwd`` is ``"skill"`` (the skill folder), ``"workspace"`` (the caller's working directory:
a notebook's folder, so ``data/form.pdf`` next to the notebook is found) or a path. Scripts
always get ``SKILL_BASE_DIR`` (the skill folder) and ``SKILL_WORKSPACE`` (the caller's
working directory) in their environment, whatever the cwd.

A module script (``ScriptMetadata.module``) needs the skill root first on ``sys.path``. From
the skill folder ``python -m scripts.x`` does that by itself; from another folder the command
is ``python -P -m scripts.x`` with ``PYTHONPATH`` = the skill folder: ``-P`` (Python 3.11+)
keeps the cwd off ``sys.path``, so a ``scripts/`` folder next to the notebook can never
stand in for the skill's approved code.

Example:
    >>> resolve_cwd("workspace", Path("skills/csv-profiler")) == Path.cwd()
    True
"""

from __future__ import annotations

import os
from pathlib import Path

from skill_magics.core.base.errors import WorkingDirectoryError

SKILL = "skill"
WORKSPACE = "workspace"
CHOICES = (SKILL, WORKSPACE)

CwdArg = str | os.PathLike[str]


def check_cwd(cwd: CwdArg | None) -> CwdArg | None:
    """Validate a setting early: "skill", "workspace", None or an existing folder."""
    if cwd is None or cwd in CHOICES:
        return cwd
    if not isinstance(cwd, (str, os.PathLike)):
        raise WorkingDirectoryError(
            f"cwd must be 'skill', 'workspace' or a folder path, got {type(cwd).__name__}: "
            "pass e.g. cwd='workspace'"
        )
    folder = Path(os.path.expanduser(os.fspath(cwd)))
    if not folder.is_dir():
        raise WorkingDirectoryError(
            f"cwd {os.fspath(cwd)!r} is not a folder: pass 'skill', 'workspace' or an existing "
            "folder"
        )
    return cwd


def resolve_cwd(cwd: CwdArg | None, skill_real_base: Path) -> Path:
    """The folder a run starts in (absolute; symlinks resolved)."""
    if cwd is None or cwd == SKILL:
        return skill_real_base
    if cwd == WORKSPACE:
        return Path(os.path.realpath(os.getcwd()))
    check_cwd(cwd)
    return Path(os.path.realpath(os.path.expanduser(os.fspath(cwd))))


def workspace() -> str:
    """The caller's working directory (``SKILL_WORKSPACE``)."""
    try:
        return os.getcwd()
    except OSError:  # the folder was deleted under the kernel
        return ""


__all__ = ["SKILL", "WORKSPACE", "CHOICES", "check_cwd", "resolve_cwd", "workspace"]
