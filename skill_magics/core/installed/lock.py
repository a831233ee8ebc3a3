"""``skills-lock.json``: what was installed into a folder, from where, and every file's digest.

One lock per install folder (next to the skill folders it describes). Per skill folder: the
source, the ref asked for, the commit it resolved to, the subfolder and the skill's path in
the source, each file's sha256, size and executable bit, and a tree digest over all of them.
It is JSON with sorted keys and an indent, written atomically (a temporary file, then
``os.replace``), so a person can read and review it like any other lock file.

A lock may come from someone else (a cloned project): everything read from it is checked
(folder names, file paths, digests) before it is used.

Also here, because the approval panel of every run and ``%skills show`` ask it: whether an
installed skill's files still match its lock (:func:`skill_lock_status`).

Example (not run as a doctest: it needs an installed skills folder)::

    lock = read_lock(Path(".agents/skills"))
    lock.skills["pdf"].commit
    # -> '3f1c...'
    compare_folder(Path(".agents/skills/pdf"), lock.skills["pdf"])
    # -> ['changed scripts/extract.py']
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import tempfile
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skill_magics.core.base import fingerprint
from skill_magics.core.base.errors import LockFileError, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.names import folder_name, relative_path
from skill_magics.core.installed.signature import Signature

LOCK_NAME = "skills-lock.json"
LOCK_VERSION = 1
MAX_LOCK_BYTES = 32 << 20  # a lock of 10,000 files is about 2 MB
# Python writes bytecode next to a skill's modules on a run: not a change of the skill.
IGNORED_DIRS = frozenset({"__pycache__"})
MAX_DEPTH = 32
WELL_KNOWN = "well-known"
# A kind's name as the lock may hold it; which kinds there are, and what each entry of a kind
# must hold, is the source kinds' table (core/sources/kinds/: read_lock there checks both).
_KIND_NAME = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
FieldsFn = Callable[["LockedSkill"], Mapping[str, str]]
CheckFn = Callable[[Any, "LockedSkill"], "LockedSkill"]
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COMMIT = re.compile(r"^[0-9a-f]{40}([0-9a-f]{24})?$")


@dataclass(frozen=True)
class FileRecord:
    """One installed file: its path in the skill folder, sha256, size, executable bit."""

    path: str
    sha256: str
    size: int
    executable: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"sha256": self.sha256, "size": self.size}
        if self.executable:
            out["executable"] = True
        return out


@dataclass(frozen=True)
class LockedSkill:
    """One skill folder of the lock. ``folder`` is its name in the install folder."""

    folder: str
    name: str  # the name in its SKILL.md (shown; never used as a path)
    kind: str  # a source kind's name ("git", "archive", "folder", "well-known", ...)
    source: str  # the git URL or the archive's / folder's absolute path
    ref: str | None = None  # the ref asked for (None: the default branch)
    commit: str | None = None  # what it resolved to (git only)
    subfolder: str = ""  # the subfolder of the source the install looked in
    path: str = ""  # the skill's folder in the source ("" when the source is the skill)
    files: tuple[FileRecord, ...] = ()
    tree: str = ""
    url: str | None = None  # well-known: the artifact's URL (``source`` is the index)
    digest: str | None = None  # well-known: ``sha256:...`` of the artifact, as the index said
    # The ``skills`` CLI's folder hash (:func:`computed_hash`), so that tool can read our lock.
    computed_hash: str = ""
    # Who signed what was installed, as verified at install/sync/update/verify (None: not
    # checked, a lock from before signatures). Shown and compared; a run believes the
    # private record (core/trust/record.py), never this field alone.
    signature: Signature | None = None

    def to_json(self, fields: FieldsFn | None = None) -> dict[str, Any]:
        """The entry as written; ``fields`` adds the ``skills`` CLI's fields of its kind
        (core/sources/kinds/: ``lock_fields``)."""
        out: dict[str, Any] = {
            "name": self.name,
            "type": self.kind,
            "source": self.source,
            "ref": self.ref,
            "commit": self.commit,
            "subfolder": self.subfolder,
            "path": self.path,
            "tree": self.tree,
            "files": {f.path: f.to_json() for f in self.files},
        }
        if self.url is not None:
            out["url"] = self.url
        if self.digest is not None:
            out["digest"] = self.digest
        if self.computed_hash:
            out["computedHash"] = self.computed_hash
        if self.signature is not None:
            out["signature"] = self.signature.to_json()
        if fields is not None:
            out.update(fields(self))
        return out

    @property
    def where(self) -> str:
        """``source@ref (path)``: where updates come from (without the commit)."""
        text = self.source + (f"@{self.ref}" if self.ref else "")
        return visible(text + (f" ({self.path})" if self.path else ""))

    @property
    def origin(self) -> str:
        """``source@ref (commit abc1234)`` for messages."""
        text = self.source + (f"@{self.ref}" if self.ref else "")
        if self.path:
            text += f" ({self.path})"
        if self.commit:
            text += f", commit {self.commit[:12]}"
        return visible(text)


@dataclass(frozen=True)
class Lock:
    """A whole ``skills-lock.json``: folder name -> LockedSkill."""

    path: Path
    skills: dict[str, LockedSkill] = field(default_factory=dict)

    def with_skills(self, skills: list[LockedSkill]) -> Lock:
        """A copy with ``skills`` added or replaced (by folder)."""
        merged = dict(self.skills)
        for skill in skills:
            merged[skill.folder] = skill
        return replace(self, skills=merged)

    def to_json(self, fields: FieldsFn | None = None) -> dict[str, Any]:
        return {
            "version": LOCK_VERSION,
            "skills": {k: self.skills[k].to_json(fields) for k in sorted(self.skills)},
        }


def computed_hash(folder: Path) -> str:
    """The ``skills`` CLI's ``computedHash`` of a skill folder: SHA-256 over every regular
    file, sorted by path as JavaScript's ``localeCompare`` sorts them, each path (UTF-8, ``/``)
    followed by the file's bytes with no separator; ``.git`` and ``node_modules`` folders
    skipped at any depth, links and empty folders contribute nothing."""
    found: list[tuple[str, str]] = []

    def walk(top: str, rel: str, depth: int) -> None:
        with os.scandir(top) as it:
            for entry in it:
                name = f"{rel}/{entry.name}" if rel else entry.name
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in (".git", "node_modules") and depth < MAX_DEPTH:
                        walk(entry.path, name, depth + 1)
                elif entry.is_file(follow_symlinks=False):
                    found.append((name, entry.path))

    walk(os.fspath(folder), "", 0)
    found.sort(key=lambda item: locale_key(item[0]))
    digest = hashlib.sha256()
    for rel, full in found:
        digest.update(rel.encode("utf-8", "surrogateescape"))
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(full, flags), "rb") as fh:
            for chunk in iter(lambda: fh.read(1 << 16), b""):
                digest.update(chunk)
    return digest.hexdigest()


# ICU's root collation of printable ASCII (what ``"a".localeCompare("b")`` uses in Node with
# an English or root locale), measured with Node 20: spaces and punctuation before digits
# before letters, a letter's cases equal at the first level.
_ICU_ASCII = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {c: i for i, c in enumerate(_ICU_ASCII)}


def locale_key(text: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A sort key giving ``localeCompare``'s order: letters compared without case or accents
    first, then accents, then case (lower before upper). Exact for ASCII; other characters
    sort by their base letter, then by code point (an approximation of ICU)."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for ch in text:
        low = ch.lower() if ch.isascii() else ch
        rank = _PRIMARY.get(low)
        accent = 0
        if rank is None:
            base = unicodedata.normalize("NFD", ch)
            rank = _PRIMARY.get(base[0].lower()) if base[0].isascii() else None
            if rank is not None and len(base) > 1:
                accent = ord(base[1])
            else:
                rank = 1000 + ord(ch.lower())
        primary.append(rank)
        secondary.append(accent)
        tertiary.append(1 if ch != ch.lower() else 0)
    return tuple(primary), tuple(secondary), tuple(tertiary)


def tree_digest(files: list[FileRecord] | tuple[FileRecord, ...]) -> str:
    """SHA-256 over every file's path, digest, size and executable bit (sorted by path)."""
    digest = hashlib.sha256()
    for f in sorted(files, key=lambda r: r.path):
        line = f"{f.path}\0{f.sha256}\0{f.size}\0{'x' if f.executable else '-'}\n"
        digest.update(line.encode("utf-8", "surrogateescape"))
    return digest.hexdigest()


# -- reading and writing ---------------------------------------------------------------------


def lock_path(folder: Path) -> Path:
    return Path(folder) / LOCK_NAME


def read_lock(folder: Path, *, missing_ok: bool = False, check: CheckFn | None = None) -> Lock:
    """The lock of install folder ``folder``; every field is checked (it may come from
    someone else). ``missing_ok``: an empty Lock when there is none. ``check(key, entry)``:
    each entry as its kind keeps it, ValueError when its kind refuses it (installs, updates
    and verifies read through ``core.sources.kinds.read_lock``, which checks by kind)."""
    path = lock_path(folder)
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_LOCK_BYTES + 1)
    except FileNotFoundError:
        if missing_ok:
            return Lock(path)
        raise LockFileError(
            f"No {LOCK_NAME} in {folder}: install skills there first (install_skills / "
            "%skills install SOURCE --into DIR), or give the folder that holds the lock"
        ) from None
    except OSError as exc:
        raise LockFileError(f"Cannot read {path}: {exc.strerror or exc}") from None
    if len(raw) > MAX_LOCK_BYTES:
        raise LockFileError(f"{path} is larger than {MAX_LOCK_BYTES >> 20} MB: not read")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LockFileError(
            f"{path} is not valid JSON ({exc}): restore it from version control, or install "
            "the skills again"
        ) from None
    try:
        return Lock(path, _parse(data, check))
    except (SourceError, TypeError, ValueError, KeyError, AttributeError) as exc:
        raise LockFileError(
            f"{path} is not a skills lock this version reads ({visible(str(exc))}): restore "
            "it, or install the skills again"
        ) from None


def _parse(data: Any, check: CheckFn | None = None) -> dict[str, LockedSkill]:
    if not isinstance(data, dict) or data.get("version") != LOCK_VERSION:
        raise ValueError(f"expected version {LOCK_VERSION}")
    skills = data.get("skills")
    if not isinstance(skills, dict):
        raise ValueError("'skills' is not an object")
    out = {}
    for key, entry in skills.items():
        skill = _parse_skill(key, entry)
        out[skill.folder] = skill if check is None else check(key, skill)
    return out


def _parse_skill(key: Any, entry: Any) -> LockedSkill:
    """One entry of the lock's ``skills`` (ValueError naming what is wrong)."""
    folder = folder_name(str(key))
    if not isinstance(entry, dict):
        raise ValueError(f"skill {key!r} is not an object")
    kind = entry.get("type")
    if not isinstance(kind, str) or not _KIND_NAME.match(kind):
        raise ValueError(f"skill {key!r} has type {kind!r}")
    commit = _optional(entry, "commit")
    if commit is not None and not _COMMIT.match(commit):
        raise ValueError(f"skill {key!r} has commit {commit!r}")
    raw_files = entry.get("files")
    if not isinstance(raw_files, dict):
        raise ValueError(f"skill {key!r} has no files object")
    files = sorted(
        (_parse_file(key, rel, rec) for rel, rec in raw_files.items()), key=lambda r: r.path
    )
    subfolder = str(entry.get("subfolder") or "")
    path = str(entry.get("path") or "")
    for value in (subfolder, path):
        if value:
            relative_path(value, "source folder")
    url, digest = _optional(entry, "url"), _optional(entry, "digest")  # checked by kind
    chash = _optional(entry, "computedHash") or ""
    if chash and not _SHA256.match(chash):
        raise ValueError(f"skill {key!r} has computedHash {chash!r}")
    signature = None
    if entry.get("signature") is not None:
        try:
            signature = Signature.from_json(entry["signature"])
        except ValueError as exc:
            raise ValueError(f"skill {key!r}: {exc}") from None
    return LockedSkill(
        folder=folder,
        name=str(entry.get("name") or folder),
        kind=kind,
        source=_required(entry, "source"),
        ref=_optional(entry, "ref"),
        commit=commit,
        subfolder=subfolder,
        path=path,
        files=tuple(files),
        tree=tree_digest(files),  # recomputed: a hand-edited digest would prove nothing
        url=url,
        digest=digest,
        computed_hash=chash,
        signature=signature,
    )


def _parse_file(key: Any, rel: Any, rec: Any) -> FileRecord:
    rel = relative_path(str(rel))
    sha = rec.get("sha256") if isinstance(rec, dict) else None
    size = rec.get("size") if isinstance(rec, dict) else None
    if not isinstance(sha, str) or not _SHA256.match(sha):
        raise ValueError(f"file {rel!r} of {key!r} has no sha256")
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ValueError(f"file {rel!r} of {key!r} has no size")
    return FileRecord(rel, sha, size, bool(rec.get("executable", False)))


def _optional(entry: dict, key: str) -> str | None:
    value = entry.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ValueError(f"{key!r} is not a string")
    return value


def _required(entry: dict, key: str) -> str:
    value = _optional(entry, key)
    if value is None:
        raise ValueError(f"{key!r} is missing")
    return value


def write_lock(lock: Lock, *, fields: FieldsFn | None = None) -> Path:
    """Write ``lock`` atomically (temporary file in the same folder, then ``os.replace``)."""
    tmp = write_lock_beside(lock, fields=fields)
    try:
        os.replace(tmp, lock.path)
    except BaseException:
        discard(tmp)
        raise
    return lock.path


def write_lock_beside(lock: Lock, *, fields: FieldsFn | None = None) -> Path:
    """Write ``lock`` whole into a new temporary file beside its lock file (flushed to
    disk) and return its path: the caller swaps it in together with the skill folders
    (``os.replace``) or discards it. Nothing is left behind when writing fails.
    ``fields``: the ``skills`` CLI's fields of each entry's kind (``kinds.lock_fields``)."""
    text = json.dumps(lock.to_json(fields), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    folder = lock.path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".skills-lock-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
    except BaseException:
        discard(Path(tmp))
        raise
    return Path(tmp)


def discard(path: Path) -> None:
    """Remove a temporary file if it is there."""
    try:
        os.unlink(path)
    except OSError:
        pass


# -- comparing a folder with its lock -------------------------------------------------------


def folder_files(folder: Path) -> tuple[dict[str, FileRecord], list[str]]:
    """({path: FileRecord} for every regular file under ``folder``, [what is not a regular
    file: "link x", "special x"]). ``__pycache__`` folders are left out."""
    files: dict[str, FileRecord] = {}
    other: list[str] = []

    def walk(top: str, rel: str, depth: int) -> None:
        try:
            with os.scandir(top) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            other.append(f"unreadable {rel or '.'} ({type(exc).__name__})")
            return
        for entry in entries:
            name = f"{rel}/{entry.name}" if rel else entry.name
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                other.append(f"unreadable {name}")
                continue
            if stat.S_ISLNK(st.st_mode):
                other.append(f"link {name}")
            elif stat.S_ISDIR(st.st_mode):
                if entry.name in IGNORED_DIRS:
                    continue
                if depth >= MAX_DEPTH:
                    other.append(f"too deep {name}")
                    continue
                walk(entry.path, name, depth + 1)
            elif stat.S_ISREG(st.st_mode):
                try:
                    sha = fingerprint.file_sha256(entry.path)
                except OSError:
                    other.append(f"unreadable {name}")
                    continue
                files[name] = FileRecord(name, sha, st.st_size, bool(st.st_mode & 0o111))
            else:
                other.append(f"special {name}")

    walk(os.fspath(folder), "", 0)
    return files, other


MISSING = "removed (the skill folder is missing)"


def record_changes(old: dict[str, FileRecord], new: dict[str, FileRecord]) -> list[str]:
    """``added x`` / ``removed x`` / ``changed x`` / ``mode x (executable: yes)`` for every
    file that differs from ``old`` to ``new`` (path -> FileRecord), sorted by path."""
    lines = []
    for rel in sorted(set(old) | set(new)):
        before, after = old.get(rel), new.get(rel)
        if after is None:
            lines.append(f"removed {rel}")
        elif before is None:
            lines.append(f"added {rel}")
        elif after.sha256 != before.sha256 or after.size != before.size:
            lines.append(f"changed {rel}")
        elif after.executable != before.executable:
            lines.append(f"mode {rel} (executable: {'yes' if after.executable else 'no'})")
    return [visible(line) for line in lines]


def compare_folder(folder: Path, locked: LockedSkill) -> list[str]:
    """What changed in ``folder`` since it was installed as ``locked``, one line per file:
    ``added x``, ``removed x``, ``changed x``, ``mode x`` (executable bit), or the folder
    missing. Empty: the files match the lock."""
    if not os.path.lexists(folder):
        return [MISSING]
    if os.path.islink(folder) or not os.path.isdir(folder):
        return ["changed (the skill folder is no longer a plain folder)"]
    files, other = folder_files(folder)
    want = {f.path: f for f in locked.files}
    odd = {item.partition(" ")[2]: item.partition(" ")[0] for item in other}
    lines = [line for line in record_changes(want, files) if line.partition(" ")[2] not in odd]
    for rel, kind in sorted(odd.items()):
        verb = "changed" if rel in want else "added"
        what = "a symbolic link" if kind == "link" else f"{kind} entry"
        lines.append(visible(f"{verb} {rel} (now {what})"))
    return lines


@dataclass(frozen=True)
class LockStatus:
    """An installed skill against its lock: where it came from, and what changed since."""

    lock: Path
    locked: LockedSkill
    changes: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        return not self.changes

    def summary(self, limit: int = 5) -> str:
        """One line: ``files match skills-lock.json`` or what differs."""
        if self.matches:
            return f"files match {self.lock}"
        shown = ", ".join(self.changes[:limit])
        more = f" (+{len(self.changes) - limit} more)" if len(self.changes) > limit else ""
        return f"{len(self.changes)} differ from {self.lock}: {shown}{more}"


_STATUS_LOCKS: dict[str, tuple[tuple[int, ...], Lock]] = {}


def skill_lock_status(base_dir: Path) -> LockStatus | None:
    """The lock status of the skill at ``base_dir`` (its parent's ``skills-lock.json``
    naming its folder), or None when no lock describes it (one stat when there is none).
    A lock that cannot be read counts as none here; verify_skills reports it."""
    base = Path(os.path.abspath(base_dir))
    path = lock_path(base.parent)
    try:
        st = os.stat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    # Every run's checks and request ask: parse the lock once per change of the file.
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    hit = _STATUS_LOCKS.get(os.fspath(path))
    if hit is not None and hit[0] == key:
        lock = hit[1]
    else:
        try:
            lock = read_lock(base.parent)
        except LockFileError:
            return None
        _STATUS_LOCKS[os.fspath(path)] = (key, lock)
    locked = lock.skills.get(base.name)
    if locked is None:
        return None
    return LockStatus(path, locked, tuple(compare_folder(base, locked)))


__all__ = [
    "discard",
    "write_lock_beside",
    "LOCK_NAME",
    "FileRecord",
    "LockedSkill",
    "Lock",
    "LockStatus",
    "tree_digest",
    "computed_hash",
    "locale_key",
    "WELL_KNOWN",
    "lock_path",
    "read_lock",
    "write_lock",
    "folder_files",
    "compare_folder",
    "record_changes",
    "MISSING",
    "skill_lock_status",
]
