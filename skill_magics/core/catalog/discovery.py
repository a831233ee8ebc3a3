"""Where skills live: configured directories, precedence, and lazy loading of each skill.

Listing reads only each SKILL.md's frontmatter (progressive disclosure); a skill's body and
scripts load when it is first used. The first directory wins a name clash; skipped skills and
clashes are reported in ``warnings`` with the path and the reason.

Skills appear when they appear: the index remembers the mtime of every folder its scan looked
into (-1 for a configured folder that was missing). ``list_skills()`` and a name that is not
found stat those folders (one stat each) and scan again when one changed, keeping the loaded
``Skill`` of every unchanged SKILL.md; so a skill written later, or a ``./skills`` folder
made later, is listed and runs without ``%skills reload``.

Example:
    >>> finder = SkillFinder(["skills"])
    >>> [m.name for m in finder.list_skills()]
    ['csv-profiler', 'demo-behaviours', 'text-tools']
    >>> [s.path.as_posix() for s in finder.get_skill("csv-profiler").scripts]
    ['scripts/profile.py']
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skill_magics.core.base.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.core.base.models import ScriptMetadata, SkillMetadata
from skill_magics.core.base.paths import folder_name_problem
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.frontmatter import load_skill_metadata
from skill_magics.core.catalog.plugins import PLUGIN_FILE, is_plugin, plugin_skill_dirs
from skill_magics.core.catalog.skill import Skill

ENV_VAR = "SKILL_MAGICS_PATH"
DEFAULT_SUBDIRS = ("skills", ".agents/skills", ".claude/skills")
MAX_SCAN_DEPTH = 5
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})
SKILL_FILES = ("SKILL.md", "skill.md")  # the file that makes a folder a skill


DirsArg = Iterable[str | os.PathLike[str]] | str | os.PathLike[str] | None


def examples_dir() -> Path:
    """The bundled example skills (csv-profiler, text-tools, unit-converter, demo-behaviours)."""
    return Path(__file__).resolve().parents[2] / "examples" / "skills"


def default_skill_dirs(env: Mapping[str, str] | None = None) -> list[Path]:
    """``$SKILL_MAGICS_PATH`` entries, then ./skills, ./.agents/skills, ./.claude/skills, then ~."""
    values = os.environ if env is None else env
    dirs: list[Path] = []
    for entry in (values.get(ENV_VAR) or "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()))
    cwd = Path.cwd()
    home = Path.home()
    dirs.extend(cwd / sub for sub in DEFAULT_SUBDIRS)
    dirs.extend(home / sub for sub in DEFAULT_SUBDIRS)
    return dirs


@dataclass
class _Index:
    skills: dict[str, SkillMetadata] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # dir name -> why it was skipped
    reasons: dict[str, str] = field(default_factory=dict)  # the same without the path
    # (path, mtime_ns) of every folder the scan looked into, -1 for a configured one that was
    # missing: a skill folder added (or a ./skills made) later changes one of them.
    folders: tuple[tuple[str, int], ...] = ()


def _as_dirs(value: DirsArg) -> list[Path]:
    if value is None:
        return default_skill_dirs()
    if isinstance(value, (str, os.PathLike)):
        return [Path(value)]  # one directory, not its characters
    return [Path(d) for d in value]


class RemoteSkills(Protocol):
    """Skills that are not in a skills folder: an MCP server's, named ``LABEL/NAME``
    (core/mcp/runs.py). ``skill`` gives the verified local copy (re-hashed on every call);
    ``fetch`` brings that copy up to the server's current listing (before a run is planned;
    ``repair``: a copy that no longer verifies is fetched again, else left to be refused)."""

    def skill(self, name: str, detector: ScriptDetector) -> Skill: ...

    def fetch(self, name: str, *, repair: bool = True) -> None: ...


def is_qualified(name: str) -> bool:
    """``LABEL/NAME``: a skill of an MCP server, never one of a skills folder. Exactly one
    ``/`` between two folder names; anything else with a ``/`` (``../../x/precious``) is a
    local name, refused by the name check as one that climbs out of its folder.

        >>> is_qualified("team/pdf"), is_qualified("../../x/precious"), is_qualified("../x")
        (True, False, False)
    """
    if not isinstance(name, str) or name.count("/") != 1:
        return False
    return all(folder_name_problem(part) is None for part in name.split("/"))


class SkillFinder:
    """The skills found in ``skill_dirs`` (earlier wins a name clash), loaded lazily.

    ``detector`` decides which files of a skill are scripts (SkillManager swaps it when
    ``allowed_interpreters`` changes whether ``.ts`` files count). Thread-safe.
    """

    def __init__(
        self, skill_dirs: DirsArg = None, *, detector: ScriptDetector | None = None
    ) -> None:
        self._lock = threading.RLock()
        self._index: _Index | None = None
        self._skills: dict[str, Skill] = {}
        self._dirs = _dedupe([_absolute(d) for d in _as_dirs(skill_dirs)])
        self._detector = detector or ScriptDetector()
        # MCP servers' skills (``LABEL/NAME``); None until a server is added.
        self.remote: RemoteSkills | None = None

    @property
    def detector(self) -> ScriptDetector:
        return self._detector

    @detector.setter
    def detector(self, detector: ScriptDetector) -> None:
        with self._lock:
            self._detector = detector
            self._skills = {}  # their cached script lists used the old detector

    def __repr__(self) -> str:
        return f"SkillFinder(skill_dirs={[str(d) for d in self._dirs]!r})"

    # -- directories -----------------------------------------------------------------------

    @property
    def skill_dirs(self) -> list[Path]:
        """Directories searched, in precedence order (absolute; may not all exist).

        Assign a new list to replace them all (None: the defaults); the next use rescans.
        """
        return list(self._dirs)

    @skill_dirs.setter
    def skill_dirs(self, dirs: DirsArg) -> None:
        paths = _as_dirs(dirs)
        with self._lock:
            self._dirs = _dedupe([_absolute(p) for p in paths])
            self._invalidate()

    def add_dir(self, path: str | os.PathLike, *, first: bool = False) -> Path:
        """Add a directory (last in precedence, or first with ``first=True``) and rescan."""
        new = _absolute(Path(path))
        with self._lock:
            dirs = [d for d in self._dirs if d != new]
            dirs.insert(0, new) if first else dirs.append(new)
            self._dirs = dirs
            self._invalidate()
        return new

    def remove_dir(self, path: str | os.PathLike) -> bool:
        """Stop searching a directory and rescan; False when it was not configured."""
        gone = _absolute(Path(path))
        with self._lock:
            if gone not in self._dirs:
                return False
            self._dirs = [d for d in self._dirs if d != gone]
            self._invalidate()
        return True

    def reload(self) -> None:
        """Forget everything loaded and scan the directories again on next use."""
        with self._lock:
            self._invalidate()

    def _invalidate(self) -> None:
        self._index = None
        self._skills = {}

    # -- listing ---------------------------------------------------------------------------

    def list_skills(self) -> list[SkillMetadata]:
        """Every usable skill's metadata, sorted by name: what is on disk now (a folder that
        changed since the last scan is scanned again). Reads frontmatter only."""
        index = self.refresh()
        return [index.skills[name] for name in sorted(index.skills)]

    def refresh(self) -> _Index:
        """The index, scanned again when a folder changed since the last scan (one stat per
        folder the scan looked into: a new skill folder, a ./skills made later). Skills whose
        SKILL.md stays where it was keep their loaded state."""
        with self._lock:
            index = self._index
            if index is None or not _changed(index.folders):
                return self._ensure_index()
            fresh = self._scan()
            self._skills = {
                name: skill
                for name, skill in self._skills.items()
                if name in fresh.skills and fresh.skills[name].path == skill.metadata.path
            }
            self._index = fresh
            return fresh

    @property
    def warnings(self) -> list[str]:
        """Skipped skills, name clashes and spec warnings, each naming the path and reason."""
        return list(self.refresh().warnings)

    def get_skill(self, name: str) -> Skill:
        """The skill called ``name`` (body and scripts load on first use, then cached).
        ``LABEL/NAME`` is an MCP server's skill, its verified cached copy; never a local
        skill (a local SKILL.md naming itself so is listed, never run)."""
        if is_qualified(name):
            label = name.partition("/")[0]
            if self.remote is None:
                raise SkillNotFoundError(
                    f"No skill named {name!r}: no MCP server is labelled {label!r} "
                    "(manager.add_mcp_server)",
                    magic=f"No skill named {name!r}: no MCP server is labelled {label!r} "
                    f"(%skills add mcp {label} -- COMMAND)",
                )
            return self.remote.skill(name, self._detector)
        index = self._ensure_index()
        with self._lock:
            skill = self._skills.get(name)
            if skill is not None:
                return skill
            metadata = index.skills.get(name)
            if metadata is None:
                index = self.refresh()  # written to disk since the last scan?
                metadata = index.skills.get(name)
            if metadata is None:
                raise SkillNotFoundError(
                    self._not_found_message(name, index, magic=False),
                    magic=self._not_found_message(name, index, magic=True),
                    skipped=index.reasons.get(name, ""),
                    name=name,
                )
            skill = Skill(metadata, detector=self._detector)
            self._skills[name] = skill
            return skill

    def _not_found_message(self, name: str, index: _Index, *, magic: bool) -> str:
        """The error, in the words of the magics or of Python (``magic``)."""
        if name in index.skipped:
            return f"Skill {name!r} was skipped: {index.skipped[name]}"
        close = difflib.get_close_matches(name, list(index.skills), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
        where = ", ".join(str(d) for d in self._dirs) or "(no directories)"
        listing, add = (
            ("%skills", "%skills add DIR")
            if magic
            else ("manager.list_skills()", "manager.add_dir(path)")
        )
        return (
            f"No skill named {name!r}{hint} List skills with {listing}; searched {where} "
            f"(rescanned just now): add a directory with {add} or ${ENV_VAR}"
        )

    def _ensure_index(self) -> _Index:
        with self._lock:
            if self._index is None:
                self._index = self._scan()
            return self._index

    def _scan(self) -> _Index:
        index = _Index()
        owner: dict[str, Path] = {}  # skill name -> winning SKILL.md
        seen_skills: set[tuple] = set()  # so overlapping dirs do not look like clashes
        folders: dict[str, int] = {}
        for root in self._dirs:
            for skill_md, identity in _find_skill_files(root, folders):
                if identity in seen_skills:
                    continue
                seen_skills.add(identity)
                try:
                    metadata = load_skill_metadata(skill_md)
                except (SkillMagicsError, OSError, UnicodeError) as exc:
                    reason = _reason(exc)
                    index.warnings.append(f"Skipped {skill_md}: {reason}")
                    index.skipped.setdefault(skill_md.parent.name, f"{skill_md}: {reason}")
                    index.reasons.setdefault(skill_md.parent.name, reason)
                    continue
                winner = owner.get(metadata.name)
                if winner is not None:
                    index.warnings.append(
                        f"Skill {metadata.name!r} at {skill_md} is shadowed by {winner} "
                        "(earlier in skill_dirs); rename one or remove a directory to use it"
                    )
                    continue
                for warning in metadata.warnings:
                    index.warnings.append(f"{skill_md}: {warning}")
                owner[metadata.name] = skill_md
                index.skills[metadata.name] = metadata
        for name in index.skills:
            index.skipped.pop(name, None)
            index.reasons.pop(name, None)
        index.folders = tuple(folders.items())
        return index

    def fetch_remote(self, name: str, *, repair: bool = True) -> None:
        """Before a run of ``LABEL/NAME`` is planned: its copy as the server lists it now
        (nothing for a local skill). ``repair`` False: a copy that no longer verifies is not
        fetched again (a batch under way: its items share that copy, and are refused)."""
        if is_qualified(name) and self.remote is not None:
            self.remote.fetch(name, repair=repair)

    def resolve_script(
        self, skill_name: str, script: str | os.PathLike[str], *, repair: bool = True
    ) -> tuple[Skill, ScriptMetadata]:
        """(skill, script) for a skill name and a script stem, file name or relative path
        (``repair``: as for :meth:`fetch_remote`)."""
        self.fetch_remote(skill_name, repair=repair)
        skill = self.get_skill(skill_name)
        return skill, skill.find_script(script)


def _find_skill_files(
    root: Path, folders: dict[str, int] | None = None, max_depth: int = MAX_SCAN_DEPTH
) -> list[tuple[Path, tuple]]:
    """(SKILL.md, identity) pairs under ``root`` (root itself may be a skill); depth-bounded.

    The identity is the directory's (st_dev, st_ino): it detects symlink loops and the same
    skill reached twice, at one stat per directory (realpath would lstat every component).
    ``folders`` gets each folder looked into with its mtime (-1: missing), for :func:`_changed`.
    """
    found: list[tuple[Path, tuple]] = []
    visited: set[tuple[int, int]] = set()
    seen = {} if folders is None else folders

    def walk(path: str, depth: int) -> None:
        seen.setdefault(path, -1)
        try:
            st = os.stat(path)
            seen[path] = st.st_mtime_ns
            key = (st.st_dev, st.st_ino)
            if key in visited:
                return  # symlink loop or a directory reached twice
            visited.add(key)
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # missing or unreadable: not an error for a search path
        for entry in entries:
            if entry.name in SKILL_FILES and _is_file(entry):
                found.append((Path(entry.path), key))
                return  # a skill's own subdirectories are its scripts and data, not skills
        if any(e.name == PLUGIN_FILE for e in entries) and is_plugin(path):
            # An Agent Plugin: its skills are skills/<name>/ only (catalog/plugins.py).
            for folder in plugin_skill_dirs(path):
                walk(folder, depth + 2)
            return
        if depth >= max_depth:
            return
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                walk(entry.path, depth + 1)

    walk(os.fspath(root), 0)
    return found


def _changed(folders: tuple[tuple[str, int], ...]) -> bool:
    """Has any folder the last scan looked into changed (entries added, removed, renamed), or
    a missing one appeared? One stat each."""
    for path, mtime in folders:
        try:
            now = os.stat(path).st_mtime_ns
        except OSError:
            now = -1
        if now != mtime:
            return True
    return False


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def _dedupe(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot read it ({exc.strerror or exc})"
    if isinstance(exc, UnicodeError):
        return "it is not UTF-8 text"
    return str(exc)


__all__ = [
    "SkillFinder",
    "RemoteSkills",
    "is_qualified",
    "default_skill_dirs",
    "examples_dir",
    "ENV_VAR",
    "DEFAULT_SUBDIRS",
    "SKILL_FILES",
]
