"""May a script run, is it offered, and does it run as ``python -m`` (docs/architecture.md,
*Real skills*).

Two questions about each script of a skill (``ScriptMetadata.role``, a
:class:`~skill_magics.core.base.status.ScriptRole`):

*May it run?* Everything a person could sensibly run may: a main guard, a shebang, the exec
bit, top-level statements beyond imports/definitions/constants (catalog/toplevel.py), and
every non-Python script. Only ``__init__.py`` and Python modules holding nothing but
imports, definitions and constants are refused (``LIBRARY``): running them does nothing.

*Is it offered* (an LLM tool, a completion, ``%skills show``'s main table)? A runnable
script is, when a markdown file of the skill names it (SKILL.md, ``forms.md``,
``references/*.md``: catalog/references.py ``scan_markdown``) or when no other script of the
skill imports it (``OFFERED``), and when it has work of its own to do (:func:`has_entry`: a
Python file runnable only by its shebang or exec bit, holding nothing but definitions, is
``RUNNABLE``: asked by name it runs, but no model is offered a tool that does nothing).
One that other scripts import and no markdown names
(``quick_validate.py`` imported by ``package_skill.py``, ``validators/base.py``) still runs
when asked, but is not offered (``RUNNABLE``). Imports are Python imports, shell
``source``/``.`` and JavaScript ``require``/``import`` of the skill's files (includes.py).

How a Python script runs follows from its own imports: one that imports the skill's modules
from the skill root (``from scripts.utils import x`` in ``scripts/run.py``), uses a relative
import, or that a markdown file runs as ``python -m scripts.x`` runs as ``python -m
scripts.x`` with the skill root on ``sys.path`` (``ScriptMetadata.module``). One that
imports its siblings from its own folder (``from office.soffice import x`` next to
``office/``) runs as a file.

Example:
    >>> from skill_magics.core.catalog.detect import ScriptDetector
    >>> base = Path("layouts/eval-skill")   # scripts/run_eval.py: from scripts.utils import ..
    >>> scripts, refs = ScriptDetector().detect(base), ["scripts/run_eval.py"]
    >>> [(s.path.as_posix(), s.role, s.module) for s in classify(base, scripts, refs)]
    [('scripts/run_eval.py', 'offered', 'scripts.run_eval'), ('scripts/utils.py', 'library', '')]
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from skill_magics.core.base.models import ScriptMetadata
from skill_magics.core.base.status import ScriptRole
from skill_magics.core.catalog.includes import MAX_TEXT, included_files
from skill_magics.core.catalog.pysource import ImportRef, analyze

_IDENT_RE = re.compile(r"^[A-Za-z_]\w*$")
_STDLIB = frozenset(sys.stdlib_module_names)
_EXEC_BITS = stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH


def module_name(rel: str) -> str:
    """``scripts/run_eval.py`` -> ``scripts.run_eval`` ("" when not importable by that name)."""
    parts = rel[:-3].split("/") if rel.endswith(".py") else []
    if parts and parts[-1] == "__main__":
        parts = parts[:-1]
    if not parts or not all(_IDENT_RE.match(p) for p in parts):
        return ""
    return ".".join(parts)


def classify(
    base_dir: Path | str,
    scripts: Sequence[ScriptMetadata],
    referenced: Iterable[str],
    modules_run: Iterable[str] = (),
) -> list[ScriptMetadata]:
    """``scripts`` with ``role`` and ``module`` set (see the module docstring).

    ``referenced``: relative paths the skill's markdown files name (references that may
    run); ``modules_run``: dotted names they run with ``python -m``.
    """
    base = os.fspath(base_dir)
    refs = set(referenced)
    by_module = {module_name(s.path.as_posix()): s for s in scripts if s.script_type == "python"}
    run_as_module = {by_module[m].path.as_posix() for m in modules_run if m in by_module}
    refs |= run_as_module
    imported: set[str] = set()
    modules: dict[str, str] = {}
    exists = _Exists(base)
    for script in scripts:
        rel = script.path.as_posix()
        if script.script_type != "python":
            imported |= _included(base, rel, script.script_type, exists)
            continue
        info = analyze(os.path.join(base, rel))
        targets, root_import = _imported_files(rel, info.imports, exists)
        targets.discard(rel)
        imported |= targets
        if (root_import or rel in run_as_module) and script.path.name != "__init__.py":
            name = module_name(rel)
            if name and "/" in rel:  # a root script already has the root on sys.path
                modules[rel] = name
    out = []
    for script in scripts:
        rel = script.path.as_posix()
        if not may_run(base, rel, script.script_type):
            role = ScriptRole.LIBRARY
        elif (rel in refs or rel not in imported) and has_entry(base, rel, script.script_type):
            role = ScriptRole.OFFERED
        else:
            role = ScriptRole.RUNNABLE
        out.append(replace(script, role=role, module=modules.get(rel, "")))
    return out


def may_run(base_dir: Path | str, rel: str, script_type: str = "python") -> bool:
    """Would running ``rel`` (relative to the skill) do anything? False only for
    ``__init__.py`` and Python modules holding nothing but imports, definitions and
    constants."""
    if script_type != "python":
        return True
    if rel.rsplit("/", 1)[-1] == "__init__.py":
        return False
    path = os.path.join(os.fspath(base_dir), rel)
    info = analyze(path)
    if info.main_guard or info.shebang:
        return True
    try:
        if os.stat(path).st_mode & _EXEC_BITS:
            return True
    except OSError:
        return True  # unreadable: let the run say why
    return not info.only_definitions


def has_entry(base_dir: Path | str, rel: str, script_type: str = "python") -> bool:
    """Does running ``rel`` do any work of its own: a main guard or top-level statements
    beyond imports, definitions and constants (every non-Python script does)? A Python
    module with only a shebang or the exec bit besides its definitions (a template an app
    imports) may still run when asked, but is not offered as a tool (issue 44)."""
    if script_type != "python":
        return True
    info = analyze(os.path.join(os.fspath(base_dir), rel))
    return bool(info.main_guard) or not info.only_definitions


def module_for(base_dir: Path | str, rel: str) -> str:
    """The dotted name ``rel`` must run as (``python -m``), from its own imports: "" when it
    runs as a file. The markdown's ``python -m`` references are not read here (a script
    without root or relative imports runs the same either way)."""
    if not rel.endswith(".py") or "/" not in rel or rel.endswith("/__init__.py"):
        return ""
    info = analyze(os.path.join(os.fspath(base_dir), rel))
    _, root_import = _imported_files(rel, info.imports, _Exists(os.fspath(base_dir)))
    return module_name(rel) if root_import else ""


def _included(base: str, rel: str, script_type: str, exists: _Exists) -> set[str]:
    try:
        with open(os.path.join(base, rel), "rb") as fh:
            text = fh.read(MAX_TEXT).decode("utf-8", "replace")
    except OSError:
        return set()
    return included_files(rel, script_type, text, exists.file)


class _Exists:
    """Cached ``os.path`` checks relative to the skill (a skill's imports repeat a lot)."""

    def __init__(self, base: str) -> None:
        self.base = base
        self._files: dict[str, bool] = {}
        self._dirs: dict[str, bool] = {}

    def file(self, rel: str) -> bool:
        hit = self._files.get(rel)
        if hit is None:
            hit = self._files[rel] = os.path.isfile(os.path.join(self.base, rel))
        return hit

    def dir(self, rel: str) -> bool:
        hit = self._dirs.get(rel)
        if hit is None:
            hit = self._dirs[rel] = os.path.isdir(os.path.join(self.base, rel))
        return hit

    def module(self, folder: str, dotted: str) -> bool:
        """Is ``dotted``'s first part a module or package in ``folder`` (relative)?"""
        top = _join(folder, dotted.split(".", 1)[0])
        return self.file(top + ".py") or self.dir(top)


def _join(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _imported_files(
    rel: str, imports: Iterable[ImportRef], exists: _Exists
) -> tuple[set[str], bool]:
    """(skill files ``rel`` imports, whether it imports a skill module from the skill root)."""
    folder = posix_dirname(rel)
    found: set[str] = set()
    root_import = False
    for ref in imports:
        if ref.level:
            parts = folder.split("/") if folder else []
            if ref.level - 1 > len(parts):
                continue
            package = "/".join(parts[: len(parts) - (ref.level - 1)])
            root_import = True  # relative imports only work inside a package: run with -m
            _add_module(package, ref.module, ref.names, exists, found)
            continue
        if not ref.module or ref.top in _STDLIB:
            continue  # a skill module shadowing the stdlib would break itself anyway
        if exists.module(folder, ref.module):
            _add_module(folder, ref.module, ref.names, exists, found)  # a sibling import
        elif folder and exists.module("", ref.module):
            root_import = True  # the skill root's module: needs the root on sys.path
            _add_module("", ref.module, ref.names, exists, found)
    return found, root_import


def _add_module(
    folder: str, dotted: str, names: tuple[str, ...], exists: _Exists, found: set[str]
) -> None:
    path = folder
    for part in dotted.split(".") if dotted else []:
        path = _join(path, part)
        for candidate in (path + ".py", path + "/__init__.py"):
            if exists.file(candidate):
                found.add(candidate)
    for name in names:  # ``from pkg import mod`` imports pkg/mod.py when it exists
        sub = _join(path, name)
        for candidate in (sub + ".py", sub + "/__init__.py"):
            if exists.file(candidate):
                found.add(candidate)


def posix_dirname(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


__all__ = ["classify", "may_run", "module_for", "module_name"]
