"""Entry points and helpers, and which scripts run as ``python -m`` (docs/architecture.md,
*Real skills*).

A skill's ``scripts/`` folder holds the programs SKILL.md tells an agent to run and the
modules those programs import. Only the first kind may run on its own or become a tool.
``kind`` is decided in this order:

1. referenced from SKILL.md (``python scripts/x.py``, ``python -m scripts.x``, a link) → entry;
2. an ``__init__.py`` → helper;
3. imported by another script of the skill (and not referenced) → helper, even with a main
   guard (``validators/base.py``);
4. a main guard, a shebang, the exec bit, or not Python → entry;
5. anything else → helper.

How a Python script runs follows from its own imports: one that imports the skill's modules
from the skill root (``from scripts.utils import x`` in ``scripts/run.py``), uses a relative
import, or that SKILL.md runs as ``python -m scripts.x`` runs as ``python -m scripts.x`` with
the skill root on ``sys.path`` (``ScriptMetadata.module``). One that imports its siblings from
its own folder (``from office.soffice import x`` next to ``office/``) runs as a file.

Example:
    >>> [(s.path.as_posix(), s.kind, s.module) for s in classify(base, scripts, refs, text)]
    [('scripts/run_eval.py', 'entry', 'scripts.run_eval'), ('scripts/utils.py', 'helper', '')]
"""

from __future__ import annotations

import os
import re
import stat
import sys
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path

from skill_magics.core.catalog.pysource import ImportRef, analyze
from skill_magics.core.models import ScriptMetadata

ENTRY = "entry"
HELPER = "helper"

# ``python -m scripts.run_eval``, ``python3.11 -u -m pkg.tool``, ``uv run python -m x``
_MODULE_RUN_RE = re.compile(
    r"(?:^|(?<=[\s`;&|(\"']))(?:uv\s+run\s+)?python3?(?:\.\d+)?(?:\s+-[A-Za-z]+)*\s+-m\s+"
    r"(?P<module>[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*)",
    re.MULTILINE,
)
_IDENT_RE = re.compile(r"^[A-Za-z_]\w*$")
_STDLIB = frozenset(sys.stdlib_module_names)


def module_runs(text: str) -> set[str]:
    """Dotted module names the instructions run with ``python -m``."""
    return {m.group("module") for m in _MODULE_RUN_RE.finditer(text or "")}


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
    instructions: str = "",
) -> list[ScriptMetadata]:
    """``scripts`` with ``kind`` and ``module`` set (see the module docstring)."""
    base = os.fspath(base_dir)
    refs = set(referenced)
    by_module = {module_name(s.path.as_posix()): s for s in scripts if s.script_type == "python"}
    run_as_module = {
        by_module[m].path.as_posix() for m in module_runs(instructions) if m in by_module
    }
    refs |= run_as_module
    imported: set[str] = set()
    modules: dict[str, str] = {}
    exists = _Exists(base)
    for script in scripts:
        if script.script_type != "python":
            continue
        rel = script.path.as_posix()
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
        kind = _kind(base, script, rel, refs, imported)
        out.append(replace(script, kind=kind, module=modules.get(rel, "")))
    return out


def _kind(base: str, script: ScriptMetadata, rel: str, refs: set[str], imported: set[str]) -> str:
    if rel in refs:
        return ENTRY
    if script.path.name == "__init__.py":
        return HELPER
    if rel in imported:
        return HELPER
    if script.script_type != "python":
        return ENTRY
    path = os.path.join(base, rel)
    info = analyze(path)
    if info.main_guard or info.shebang:
        return ENTRY
    try:
        if os.stat(path).st_mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH):
            return ENTRY
    except OSError:
        pass
    return HELPER


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


__all__ = ["ENTRY", "HELPER", "classify", "module_name", "module_runs"]
