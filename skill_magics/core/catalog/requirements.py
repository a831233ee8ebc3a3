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

Every requirement must name a distribution: a PEP 508 requirement (a name, optional extras,
versions and markers) without a URL, a path or a pip option (:func:`requirement_problem`,
parsed by ``packaging``, PyPA's implementation of PEP 508). Anything else, a NUL byte and
text that is not UTF-8 included, is not a package: it lands in ``Requirements.refused`` with
its file and line, and an install is refused before anyone is asked
(run/env/install.py), so the installer never builds code from outside the skill under a false
name (``x/../../../tmp/evil`` is not the package ``x``; ``foo @ file:///etc`` is not foo).
``packaging`` rather than a regex: PEP 508 (extras, markers, ``===``, parenthesised
versions) is its reference implementation, strict since 22.0.

Example:
    >>> from skill_magics.core.catalog.detect import ScriptDetector
    >>> base = Path("layouts/eval-skill")   # imports lxml, calls soffice
    >>> reqs = skill_requirements("eval-skill", base, ScriptDetector().detect(base))
    >>> [(p.name, p.imports) for p in reqs.packages], reqs.missing
    ([('lxml', ('lxml',))], [...'soffice'])
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

# A declared dependency (ipykernel needs it too): the strict PEP 508 parser since 22.0.
from packaging.requirements import InvalidRequirement, Requirement

from skill_magics.core.base import envdirs
from skill_magics.core.catalog import distnames, kinds
from skill_magics.core.catalog.pysource import SourceInfo, analyze
from skill_magics.core.base.models import ScriptMetadata
from skill_magics.core.base.visible import mark_non_ascii

REQUIREMENT_FILES = ("requirements.txt", "scripts/requirements.txt")
PYPROJECT_FILES = ("pyproject.toml", "scripts/pyproject.toml")
SOURCE_IMPORTS = "imports"
_STDLIB = frozenset(sys.stdlib_module_names) | {"__future__", "__main__"}
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")


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
class RefusedRequirement:
    """A requirement line that names no distribution (a path, a URL, a pip option, bad
    bytes): never installed. ``source`` is the file (relative to the skill), ``line`` its
    1-based line (0: unknown)."""

    source: str
    line: int
    text: str
    reason: str

    def __str__(self) -> str:
        where = f"{self.source}, line {self.line}" if self.line else self.source
        shown = mark_non_ascii(self.text[:120])
        return (
            f"{where}: {shown!r} {self.reason}; write a package name such as 'pypdf>=4' (no "
            "paths, URLs or pip options) or remove the line"
        )


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
    refused: tuple[RefusedRequirement, ...] = ()  # lines naming no distribution: no install

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
        refused = f"; refused: {self.refused[0]}" if self.refused else ""
        return (
            f"{self.skill}: {self.summary()} (missing: {missing}; Python: "
            f"{self.python_source}{refused})"
        )


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
    acc = _Found(base, search, folder_stamp(search))  # the stamp: once per call
    acc.declared = _declared_files(base, acc.warnings, acc.refused)
    for script in scripts:
        if script.script_type == "python":
            acc.script(script.path.as_posix())
    for source, specs in acc.declared:
        for spec, optional, _line in specs:
            _add_spec(acc.packages, spec, None, source, optional)
    for pkg in acc.packages.values():
        acc.link_declared(pkg)
    # An entry needs what the helpers it imports need: scripts_for closes over imports.
    graph, stamp = acc.graph, acc.stamp
    out = tuple(
        _finish(pkg, search, _importers(pkg.scripts, graph), stamp) for pkg in acc.packages.values()
    )
    progs = tuple(_program(name, _importers(rels, graph)) for name, rels in acc.programs.items())
    return Requirements(
        skill=skill_name,
        python=python,
        python_source=python_source or "",
        packages=tuple(sorted(out, key=lambda p: (p.optional, p.name.lower()))),
        programs=tuple(sorted(progs, key=lambda p: p.name)),
        warnings=tuple(acc.warnings) + tuple(str(r) for r in acc.refused),
        refused=tuple(acc.refused),
    )


class _Found:
    """What :func:`skill_requirements` has found so far in one skill."""

    def __init__(self, base: str, search: Sequence[str], stamp: tuple[int, ...]) -> None:
        self.base = base
        self.search = search
        self.stamp = stamp  # folder_stamp(search): _dist_for is asked per import
        self.exists = kinds._Exists(base)
        self.warnings: list[str] = []
        self.refused: list[RefusedRequirement] = []
        # requirement files: (source, [(spec, optional, line)])
        self.declared: list[tuple[str, list[tuple[str, bool, int]]]] = []
        self.packages: dict[str, _Pkg] = {}
        self.programs: dict[str, list[str]] = {}
        self.covered_by_files: list[str] = []  # scripts a requirement file speaks for
        self.imports_of: dict[str, dict[str, bool]] = {}  # script -> {import top: optional}
        self.graph: dict[str, set[str]] = {}  # script -> the skill's files it imports

    def script(self, rel: str) -> None:
        """One Python script: its programs, its imports, its PEP 723 block."""
        path = os.path.join(self.base, rel)
        info = analyze(path)
        if info.error and not info.dependencies:
            self.warnings.append(f"{rel}: {info.error}; its imports may be incomplete")
        for program in info.programs:
            self.programs.setdefault(program, []).append(rel)
        tops = _third_party(rel, info.imports, self.exists)
        self.graph[rel] = kinds._imported_files(rel, info.imports, self.exists)[0]
        self.imports_of[rel] = tops
        if info.dependencies is not None:
            for spec in info.dependencies:
                why = requirement_problem(spec)
                if why is not None:
                    line = _line_of(path, spec)
                    self.refused.append(RefusedRequirement(f"{rel} (PEP 723)", line, spec, why))
                    continue
                _add_spec(self.packages, spec, rel, f"PEP 723 {rel}", False)
        elif self.declared:
            self.covered_by_files.append(rel)
        else:
            for top, optional in tops.items():
                self._imported(rel, top, optional, info)

    def _imported(self, rel: str, top: str, optional: bool, info: SourceInfo) -> None:
        """A third-party import of a script no requirement file or PEP 723 block covers."""
        dist = _dist_for(top, self.search, self.stamp)
        why = requirement_problem(dist)
        if why is not None:  # an import name no distribution can have (non-ASCII)
            line = next((r.line for r in info.imports if r.top == top), 0)
            self.refused.append(RefusedRequirement(rel, line, f"import {top}", why))
            return
        pkg = self.packages.setdefault(distnames.normalize(dist), _Pkg(dist, SOURCE_IMPORTS, dist))
        pkg.imports.setdefault(top, None)
        pkg.scripts.setdefault(rel, None)
        pkg.optional = pkg.optional and optional

    def link_declared(self, pkg: _Pkg) -> None:
        """Which imports and scripts a declared package stands for (by the import -> dist
        map); a skill-wide file's package: every script it covers."""
        if pkg.source == SOURCE_IMPORTS:
            return
        key = distnames.normalize(pkg.name)
        own = pkg.scripts if pkg.source.startswith("PEP 723") else self.covered_by_files
        for rel, tops in self.imports_of.items():
            if rel not in own:
                continue
            for top in tops:
                if distnames.normalize(_dist_for(top, self.search, self.stamp)) == key:
                    pkg.imports.setdefault(top, None)
                    pkg.scripts.setdefault(rel, None)
        if not pkg.scripts:
            for rel in self.covered_by_files:
                pkg.scripts.setdefault(rel, None)


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
    """Add a spec that passed :func:`requirement_problem`."""
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


def _declared_files(
    base: str, warnings: list[str], refused: list[RefusedRequirement]
) -> list[tuple[str, list[tuple[str, bool, int]]]]:
    """[(source, [(spec, optional, line), ...])] for the skill's requirement files that
    exist; lines that name no distribution go to ``refused`` instead."""
    out = []
    for rel in REQUIREMENT_FILES:
        text = _read(os.path.join(base, rel))
        if text is None:
            continue
        specs = []
        for line, spec in requirement_lines(text):
            why = requirement_problem(spec)
            if why is None:
                specs.append((spec, False, line))
            else:
                refused.append(RefusedRequirement(rel, line, spec, why))
        out.append((rel, specs))
    for rel in PYPROJECT_FILES:
        text = _read(os.path.join(base, rel))
        if text is None:
            continue
        parsed = parse_pyproject(text)
        if parsed is None:
            warnings.append(f"{rel} does not parse as TOML; its dependencies are not known")
            continue
        good = []
        for spec, optional in parsed:
            why = requirement_problem(spec)
            if why is None:
                good.append((spec, optional, 0))
            else:
                refused.append(RefusedRequirement(rel, _line_in(text, spec), spec, why))
        if good:
            out.append((rel, good))
    return out


def _read(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read(1 << 20)
    except OSError:
        return None


def _line_of(path: str, spec: str) -> int:
    """The 1-based line of a file where ``spec`` is written (0: not found)."""
    return _line_in(_read(path) or "", spec)


def _line_in(text: str, spec: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if spec and spec in line:
            return i
    return 0


def requirement_problem(spec: str) -> str | None:
    """Why ``spec`` does not name a distribution, or None when it does.

    A distribution is named by a PEP 508 requirement: a name (ASCII letters, digits, ``.``
    ``_`` ``-``), optional extras, version specifiers and markers, and nothing else: no
    URL or file (``foo @ file:///etc``), no path (``x/../../y``), no pip option (``-e .``,
    ``--index-url``), no control character or undecodable byte.

    Example:
        >>> requirement_problem("pypdf>=4") is None
        True
        >>> requirement_problem("foo @ file:///etc")
        "points at 'file:///etc' instead of naming a package on the index"
    """
    if not isinstance(spec, str):
        return f"is a {type(spec).__name__}, not a requirement string"
    text = spec.strip()
    if not text:
        return "is empty"
    if "\x00" in text:
        return "holds a NUL byte"
    if "\ufffd" in text:
        return "holds bytes that are not UTF-8 text"
    if _CONTROL.search(text):
        return "holds a control character"
    if text.startswith("-"):
        return "is a pip option, not a package"
    try:
        requirement = Requirement(text)
    except InvalidRequirement:
        if "://" in text:
            return "is a URL, not a package name"
        if "/" in text or "\\" in text or text.startswith("."):
            return "is a path, not a package name"
        if any(ord(c) > 127 for c in text.split(";", 1)[0]):
            return "has non-ASCII letters, which no package name has (a lookalike?)"
        return "is not a PEP 508 requirement (a package name, extras, versions, markers)"
    if requirement.url:
        return f"points at {requirement.url!r} instead of naming a package on the index"
    return None


def requirement_lines(text: str) -> list[tuple[int, str]]:
    """(1-based line, text) of every requirement line of a requirements.txt: comments and
    blank lines left out, ``\\`` continuations joined (numbered by their first line).
    Options and URLs stay in: :func:`requirement_problem` refuses them.

    >>> requirement_lines("pypdf>=4  # pdf\\n\\nlxml\\n")
    [(1, 'pypdf>=4'), (3, 'lxml')]
    """
    out = []
    pending, first = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not pending:
            first = number
        if raw.endswith("\\"):
            pending += raw[:-1] + " "
            continue
        full, pending = pending + raw, ""
        line = re.split(r"(?:^|\s)#", full, maxsplit=1)[0].strip()
        if line:
            out.append((first, line))
    if pending.strip():
        out.append((first, pending.strip()))
    return out


def parse_requirements_txt(text: str) -> list[str]:
    """The requirement specs of a requirements.txt that name distributions (comments,
    options, URLs and paths left out: see :func:`requirement_lines` for every line).

    >>> parse_requirements_txt("pypdf>=4  # pdf\\n-r dev.txt\\nlxml\\n")
    ['pypdf>=4', 'lxml']
    """
    return [spec for _, spec in requirement_lines(text) if requirement_problem(spec) is None]


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
    out = [(s if isinstance(s, str) else repr(s), False) for s in _list(project, "dependencies")]
    extras = project.get("optional-dependencies", {}) or {}
    if isinstance(extras, dict):
        for key in extras:
            out += [(s if isinstance(s, str) else repr(s), True) for s in _list(extras, key)]
    return out


def _list(table: dict, key: str) -> list:
    value = table.get(key) or []
    return value if isinstance(value, list) else [value]


def _spec_name(spec: str) -> str:
    try:
        return Requirement(spec).name
    except InvalidRequirement:
        return ""


def _marker_applies(spec: str) -> bool:
    if ";" not in spec:
        return True
    try:
        marker = Requirement(spec).marker
    except InvalidRequirement:
        return True
    return marker is None or bool(marker.evaluate())


def _version_ok(spec: str, version: str) -> bool:
    try:
        requirement = Requirement(spec)
        return not requirement.specifier or requirement.specifier.contains(
            version, prereleases=True
        )
    except (InvalidRequirement, ValueError, TypeError):
        return True


__all__ = [
    "PackageRequirement",
    "RefusedRequirement",
    "ProgramRequirement",
    "Requirements",
    "skill_requirements",
    "parse_requirements_txt",
    "parse_pyproject",
    "requirement_lines",
    "requirement_problem",
]
