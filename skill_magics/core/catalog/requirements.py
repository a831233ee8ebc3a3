"""What a skill's scripts need before they can start: packages and programs (docs/architecture.md,
*Real skills*). Read from files only: nothing is imported, installed or run.

Packages, per Python script, from the first source that has them:

1. the script's PEP 723 block (``# /// script`` ... ``dependencies = [...]``);
2. the skill's ``requirements.txt`` / ``pyproject.toml`` (root or ``scripts/``);
3. otherwise the script's static imports (``ast``): the standard library
   (``sys.stdlib_module_names``) and the skill's own modules are left out, imports inside
   ``try/except ImportError`` are optional, and import names map to distributions through
   ``distnames`` (installed metadata plus a table of the known mismatches: PIL -> pillow).

``installed`` is checked for the Python that would run the scripts (the skill's venv, its
managed environment, else the kernel's: ``envdirs.choose_python``), without starting it.

Programs: literal names a script runs (``shutil.which("gh")``, the first element of a
``subprocess``/``os`` command list), checked on ``PATH``.

Example:
    >>> reqs = skill_requirements(skill)
    >>> [(p.name, p.imports, p.installed) for p in reqs.packages], reqs.missing
    ([('pillow', ('PIL',), False)], ['pillow', 'soffice'])
"""

from __future__ import annotations

import importlib.machinery
import os
import re
import shutil
import sys
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skill_magics.core import envdirs
from skill_magics.core.catalog import distnames, kinds
from skill_magics.core.catalog.pysource import analyze
from skill_magics.core.models import ScriptMetadata

try:  # pip and nearly every environment ship it; without it versions are not compared
    from packaging.requirements import InvalidRequirement, Requirement
except ModuleNotFoundError:  # pragma: no cover
    Requirement = None  # type: ignore[assignment,misc]
    InvalidRequirement = ValueError  # type: ignore[assignment,misc]

REQUIREMENT_FILES = ("requirements.txt", "scripts/requirements.txt")
PYPROJECT_FILES = ("pyproject.toml", "scripts/pyproject.toml")
SOURCE_IMPORTS = "imports"
_NAME_RE = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__", "__main__"}


@dataclass(frozen=True)
class PackageRequirement:
    """A package scripts need: ``name`` is the distribution pip installs (``pillow``)."""

    name: str
    imports: tuple[str, ...] = ()  # import names, e.g. ("PIL",)
    scripts: tuple[str, ...] = ()  # scripts (relative) that need it
    installed: bool = False  # for the Python that would run them
    optional: bool = False  # only imported inside try/except ImportError (or an extra)
    source: str = SOURCE_IMPORTS  # "imports", "PEP 723 scripts/x.py", "requirements.txt", ...
    spec: str = ""  # what to install ("pypdf>=4"); the name when nothing more is known
    version: str = ""  # installed version, when installed


@dataclass(frozen=True)
class ProgramRequirement:
    """A program scripts run (``soffice``, ``gh``); ``path`` is where PATH finds it."""

    name: str
    scripts: tuple[str, ...] = ()
    found: bool = False
    path: str = ""


@dataclass(frozen=True)
class Requirements:
    """Everything a skill's scripts need, checked for ``python`` (see the module docstring)."""

    skill: str
    python: str  # the interpreter that would run the skill's .py scripts
    python_source: str  # "skill venv", "managed env" or "kernel"
    packages: tuple[PackageRequirement, ...] = ()
    programs: tuple[ProgramRequirement, ...] = ()
    warnings: tuple[str, ...] = ()  # scripts that do not parse, unreadable requirement files

    @property
    def missing(self) -> list[str]:
        """Names of what is missing: required packages not installed, programs not found."""
        return [p.name for p in self.missing_packages] + [
            p.name for p in self.programs if not p.found
        ]

    @property
    def missing_packages(self) -> list[PackageRequirement]:
        """Required (not optional) packages that are not installed, in order."""
        return [p for p in self.packages if not p.installed and not p.optional]

    @property
    def missing_optional(self) -> list[str]:
        return [p.name for p in self.packages if not p.installed and p.optional]

    def missing_for(self, script: str) -> list[str]:
        """What one script (relative path) lacks."""
        return [p.name for p in self.missing_packages if script in p.scripts] + [
            p.name for p in self.programs if not p.found and script in p.scripts
        ]

    def summary(self) -> str:
        """One line: ``needs pillow (missing), lxml; programs: soffice (missing)``."""
        if not self.packages and not self.programs:
            return "no third-party packages or programs"
        parts = []
        if self.packages:
            parts.append(
                "packages: "
                + ", ".join(_state(p.name, p.installed, p.optional) for p in self.packages)
            )
        if self.programs:
            parts.append(
                "programs: " + ", ".join(_state(p.name, p.found, False) for p in self.programs)
            )
        return "; ".join(parts)

    def __str__(self) -> str:
        missing = ", ".join(self.missing) or "nothing"
        return f"{self.skill}: {self.summary()} (missing: {missing}; Python: {self.python_source})"


def _state(name: str, ok: bool, optional: bool) -> str:
    suffix = "" if ok else (" (missing, optional)" if optional else " (missing)")
    return name + suffix


# -- computing -----------------------------------------------------------------------------


def skill_requirements(
    skill_name: str,
    base_dir: Path | str,
    scripts: Sequence[ScriptMetadata],
    *,
    python: str | None = None,
    python_source: str | None = None,
) -> Requirements:
    """The requirements of a skill's ``scripts`` (see the module docstring)."""
    base = os.fspath(base_dir)
    if python is None:
        python, python_source = envdirs.choose_python(base)
    search = envdirs.import_path(python)
    stamp = folder_stamp(search)  # once per call: _found_in is asked per import
    warnings: list[str] = []
    declared = _declared_files(base, warnings)
    packages: dict[str, _Pkg] = {}
    programs: dict[str, list[str]] = {}
    exists = kinds._Exists(base)
    py_scripts = [s for s in scripts if s.script_type == "python"]
    covered_by_files: list[str] = []
    imports_of: dict[str, dict[str, bool]] = {}  # script -> {import top: optional}
    graph: dict[str, set[str]] = {}  # script -> the skill's files it imports
    for script in py_scripts:
        rel = script.path.as_posix()
        info = analyze(os.path.join(base, rel))
        if info.error and not info.dependencies:
            warnings.append(f"{rel}: {info.error}; its imports may be incomplete")
        for program in info.programs:
            programs.setdefault(program, []).append(rel)
        tops = _third_party(rel, info.imports, exists)
        graph[rel] = kinds._imported_files(rel, info.imports, exists)[0]
        imports_of[rel] = tops
        if info.dependencies is not None:
            for spec in info.dependencies:
                _add_spec(packages, spec, rel, f"PEP 723 {rel}", False)
        elif declared:
            covered_by_files.append(rel)
        else:
            for top, optional in tops.items():
                dist = _dist_for(top, search, stamp)
                pkg = packages.setdefault(
                    distnames.normalize(dist), _Pkg(dist, SOURCE_IMPORTS, dist)
                )
                pkg.imports.setdefault(top, None)
                pkg.scripts.setdefault(rel, None)
                pkg.optional = pkg.optional and optional
    for source, specs in declared:
        for spec, optional in specs:
            _add_spec(packages, spec, None, source, optional)
    # Which imports and scripts a declared package stands for (by the import -> dist map).
    for pkg in packages.values():
        if pkg.source == SOURCE_IMPORTS:
            continue
        key = distnames.normalize(pkg.name)
        for rel, tops in imports_of.items():
            own = pkg.scripts if pkg.source.startswith("PEP 723") else covered_by_files
            if rel not in own:
                continue
            for top in tops:
                if distnames.normalize(_dist_for(top, search, stamp)) == key:
                    pkg.imports.setdefault(top, None)
                    pkg.scripts.setdefault(rel, None)
        if not pkg.scripts:  # a skill-wide file: every script it covers
            for rel in covered_by_files:
                pkg.scripts.setdefault(rel, None)
    # An entry needs what the helpers it imports need: scripts_for closes over imports.
    out = tuple(
        _finish(pkg, search, _importers(pkg.scripts, graph), stamp) for pkg in packages.values()
    )
    progs = tuple(_program(name, _importers(rels, graph)) for name, rels in programs.items())
    return Requirements(
        skill=skill_name,
        python=python,
        python_source=python_source or "",
        packages=tuple(sorted(out, key=lambda p: (p.optional, p.name.lower()))),
        programs=tuple(sorted(progs, key=lambda p: p.name)),
        warnings=tuple(warnings),
    )


@dataclass
class _Pkg:
    name: str
    source: str
    spec: str
    optional: bool = True
    imports: dict[str, None] = field(default_factory=dict)
    scripts: dict[str, None] = field(default_factory=dict)


def _add_spec(
    packages: dict[str, _Pkg], spec: str, rel: str | None, source: str, optional: bool
) -> None:
    name = _spec_name(spec)
    if not name or not _marker_applies(spec):
        return
    key = distnames.normalize(name)
    pkg = packages.get(key)
    if pkg is None:
        pkg = packages[key] = _Pkg(name, source, spec.strip(), optional)
    else:
        pkg.optional = pkg.optional and optional
    if rel is not None:
        pkg.scripts.setdefault(rel, None)


def _third_party(rel: str, imports: Sequence, exists: kinds._Exists) -> dict[str, bool]:
    """{top-level import: optional} for imports that are neither stdlib nor the skill's own."""
    folder = kinds.posix_dirname(rel)
    tops: dict[str, bool] = {}
    for ref in imports:
        if ref.level or not ref.module:
            continue
        top = ref.top
        if top in _STDLIB or exists.module(folder, top) or exists.module("", top):
            continue
        tops[top] = tops.get(top, True) and ref.optional
    return tops


def _dist_for(top: str, search: Sequence[str], stamp: tuple[int, ...] | None = None) -> str:
    folder = _found_in(top, search, stamp)
    return distnames.distribution_for(top, search, folder)


_FOUND: dict[tuple[str, tuple[str, ...]], tuple[tuple[int, ...], str | None]] = {}


def _found_in(top: str, search: Sequence[str], stamp: tuple[int, ...] | None = None) -> str | None:
    """The search folder where import ``top`` is found (None: not importable there).

    Cached per (name, folders) until one of the folders changes (its mtime): an install
    adds entries to a site-packages folder, so it is seen at once.
    """
    key = (top, tuple(search))
    if stamp is None:
        stamp = folder_stamp(search)
    hit = _FOUND.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    found = _find(top, search)
    if len(_FOUND) > 4096:
        _FOUND.clear()
    _FOUND[key] = (stamp, found)
    return found


def folder_stamp(search: Sequence[str]) -> tuple[int, ...]:
    """The folders' mtimes: any install or removal in one of them changes it."""
    return tuple(_mtime(folder) for folder in search)


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _find(top: str, search: Sequence[str]) -> str | None:
    try:
        spec = importlib.machinery.PathFinder.find_spec(top, list(search))
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    origin = spec.origin if spec.origin not in (None, "namespace") else None
    locations = list(spec.submodule_search_locations or [])
    location = origin or (locations[0] if locations else None)
    if location is None:
        return search[0] if search else None
    location = os.path.realpath(location)
    for folder in search:
        if location.startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep):
            return folder
    return None


def _importers(rels: Iterable[str], graph: dict[str, set[str]]) -> list[str]:
    """``rels`` plus every script that imports one of them, directly or through helpers."""
    out = dict.fromkeys(rels)
    changed = True
    while changed:
        changed = False
        for script, targets in graph.items():
            if script not in out and not targets.isdisjoint(out):
                out[script] = None
                changed = True
    return list(out)


def _finish(
    pkg: _Pkg, search: Sequence[str], scripts: list[str], stamp: tuple[int, ...]
) -> PackageRequirement:
    version = distnames.installed_version(pkg.name, search)
    installed = version is not None
    if not installed and pkg.imports:
        # No metadata (a vendored module, a source checkout on sys.path): importable counts.
        installed = all(_found_in(top, search, stamp) is not None for top in pkg.imports)
    if installed and version and pkg.spec and not _version_ok(pkg.spec, version):
        installed = False  # pypdf 3 installed where pypdf>=4 is asked for
    return PackageRequirement(
        name=pkg.name,
        imports=tuple(pkg.imports),
        scripts=tuple(scripts),
        installed=installed,
        optional=pkg.optional,
        source=pkg.source,
        spec=pkg.spec or pkg.name,
        version=version or "",
    )


def _program(name: str, rels: Iterable[str]) -> ProgramRequirement:
    found = shutil.which(name)
    return ProgramRequirement(name, tuple(dict.fromkeys(rels)), found is not None, found or "")


# -- declared requirement files ------------------------------------------------------------


def _declared_files(base: str, warnings: list[str]) -> list[tuple[str, list[tuple[str, bool]]]]:
    """[(source, [(spec, optional), ...])] for the skill's requirement files that exist."""
    out = []
    for rel in REQUIREMENT_FILES:
        text = _read(os.path.join(base, rel))
        if text is not None:
            out.append((rel, [(spec, False) for spec in parse_requirements_txt(text)]))
    for rel in PYPROJECT_FILES:
        text = _read(os.path.join(base, rel))
        if text is None:
            continue
        specs = parse_pyproject(text)
        if specs is None:
            warnings.append(f"{rel} does not parse as TOML; its dependencies are not known")
            continue
        if specs:
            out.append((rel, specs))
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)
    except OSError:
        return None


def parse_requirements_txt(text: str) -> list[str]:
    """Requirement specs of a requirements.txt (options, comments, URLs without a name skipped).

    >>> parse_requirements_txt("pypdf>=4  # pdf\\n-r dev.txt\\nlxml\\n")
    ['pypdf>=4', 'lxml']
    """
    specs = []
    for raw in text.replace("\\\n", " ").splitlines():
        line = re.split(r"(?:^|\s)#", raw, maxsplit=1)[0].strip()
        if not line or line.startswith("-"):
            continue
        if "://" in line and " @ " not in line:
            continue
        if _spec_name(line):
            specs.append(line)
    return specs


def parse_pyproject(text: str) -> list[tuple[str, bool]] | None:
    """[(spec, optional)] from ``[project] dependencies`` and ``optional-dependencies``;
    None when the file is not TOML."""
    try:
        data = tomllib.loads(text)
    except ValueError:
        return None
    project = data.get("project", {})
    if not isinstance(project, dict):
        return []
    out = [(str(s), False) for s in project.get("dependencies", []) or []]
    extras = project.get("optional-dependencies", {}) or {}
    if isinstance(extras, dict):
        for specs in extras.values():
            out += [(str(s), True) for s in specs or []]
    return out


def _spec_name(spec: str) -> str:
    if Requirement is not None:
        try:
            return Requirement(spec).name
        except InvalidRequirement:
            pass
    match = _NAME_RE.match(spec)
    return match.group(1) if match else ""


def _marker_applies(spec: str) -> bool:
    if Requirement is None or ";" not in spec:
        return True
    try:
        marker = Requirement(spec).marker
    except InvalidRequirement:
        return True
    return marker is None or bool(marker.evaluate())


def _version_ok(spec: str, version: str) -> bool:
    if Requirement is None:
        return True
    try:
        requirement = Requirement(spec)
        return not requirement.specifier or requirement.specifier.contains(
            version, prereleases=True
        )
    except (InvalidRequirement, ValueError, TypeError):
        return True


__all__ = [
    "PackageRequirement",
    "ProgramRequirement",
    "Requirements",
    "skill_requirements",
    "parse_requirements_txt",
    "parse_pyproject",
]
