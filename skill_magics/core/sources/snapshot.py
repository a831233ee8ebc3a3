"""A source's files at one moment, the skills among them, and staged copies of the chosen ones.

Every source (git commit, archive, folder) becomes a :class:`Snapshot`: a listing of
entries (path, kind, size, executable bit) and a way to copy one entry's bytes. The skills are
found in the listing before anything is read: a folder with a ``SKILL.md`` is a skill, the
outermost one wins (a skill's subfolders are its files), and hidden folders are searched too
(openai/skills keeps its skills in ``skills/.curated``, ``.system``, ``.experimental``).

Staging copies the chosen skills into a private temporary folder, checking every entry first
(no links, submodules or device files; relative paths only; at most :data:`MAX_FILES` files
and :data:`MAX_TOTAL_BYTES` bytes) and hashing each file as it is written. What a person
approves is that staged copy; the install moves it into place.

Example (not run as a doctest: it fetches a source)::

    with open_snapshot(spec) as snap:
        found = find_skills(snap)
        chosen = choose_skills(snap, found, ["pdf"])
        staged = stage(snap, chosen, Path(tmp))
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from skill_magics.core.base.errors import SkillMagicsError, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.catalog.discovery import SKILL_FILES
from skill_magics.core.catalog.frontmatter import parse_skill_md
from skill_magics.core.installed.lock import FileRecord, tree_digest
from skill_magics.core.installed.names import folder_name, name_problem, path_problem
from skill_magics.core.installed.signature import NO_ANCHORS, Anchors, Signature
from skill_magics.core.sources.sourcespec import SourceSpec

FILE = "file"
LINK = "link"
SUBMODULE = "submodule"
SPECIAL = "special"

MAX_TOTAL_BYTES = 100 * 1000 * 1000  # per install: all chosen skills together
MAX_FILES = 10_000
MAX_SKILL_MD_BYTES = 1 << 20
LIMITS_TEXT = f"{MAX_TOTAL_BYTES // 1_000_000} MB and {MAX_FILES:,} files"
# Never part of a skill's source: version control, bytecode, macOS archive litter.
NEVER_COPIED = frozenset({".git", "__pycache__", "__MACOSX"})
# Installed environments next to a skill in a local folder: rebuilt from its requirements.
ENVIRONMENT_DIRS = frozenset({"venv", ".venv", "node_modules", "site-packages"})
_CHUNK = 1 << 16


@dataclass(frozen=True)
class Entry:
    """One thing in a source: ``path`` relative to the source's top, '/'-separated."""

    path: str
    kind: str = FILE  # FILE, LINK, SUBMODULE or SPECIAL
    size: int = 0
    executable: bool = False
    key: str = ""  # how the snapshot reads it (a blob id, a member name, a file path)


class Snapshot:
    """A source's entries, readable until :meth:`close` (a context manager).

    Subclasses fill ``entries`` (and ``commit`` for git) and implement :meth:`copy_to`.
    """

    def __init__(self, spec: SourceSpec) -> None:
        self.spec = spec
        self.commit: str | None = None
        self.entries: list[Entry] = []
        self.notes: list[str] = []  # what was left out, said in the report

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        """Write ``entry``'s bytes to ``out``."""
        raise NotImplementedError

    def read_small(self, entry: Entry, limit: int = MAX_SKILL_MD_BYTES) -> bytes:
        """``entry``'s bytes when it is at most ``limit`` bytes, else b""."""
        if entry.kind != FILE or entry.size > limit:
            return b""
        sink = _Capped(limit)
        self.copy_to(entry, sink)  # type: ignore[arg-type]
        return bytes(sink.data)

    def lock_fields(self, path: str) -> dict[str, Any]:
        """Extra lock fields of the skill at ``path`` (a well-known artifact's url and digest)."""
        return {}

    def signature(self, path: str, signers: str | None, anchors: Anchors = NO_ANCHORS) -> Signature:
        """Who signed the skill at ``path``, verified against the allowed-signers file
        ``signers`` (None: none given) and what the policy trusts besides (``anchors``:
        OpenPGP fingerprints with the user's keyring, sigstore identities), by core/trust;
        a source kind that carries no signature is unsigned."""
        return Signature.unsigned("no signature")

    def close(self) -> None:
        """Remove whatever the snapshot holds on disk (always safe to call again)."""

    def __enter__(self) -> Snapshot:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Capped:
    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.data = bytearray()

    def write(self, chunk: bytes) -> int:
        if len(self.data) + len(chunk) > self.limit:
            raise SourceError(f"a SKILL.md is larger than {self.limit:,} bytes")
        self.data += chunk
        return len(chunk)


# -- a local folder ------------------------------------------------------------------------

MAX_LISTED = 200_000  # entries a folder walk looks at before it gives up


class FolderSnapshot(Snapshot):
    """A folder's files as they are on disk (links and device files listed, never followed).
    Installed environments (``.venv``, ``node_modules``, ...) are left out and noted."""

    def __init__(self, spec: SourceSpec) -> None:
        super().__init__(spec)
        # The folder the user named may be reached through a link; links inside it are refused.
        top = os.path.realpath(spec.location)
        root = Path(top) / spec.subfolder if spec.subfolder else Path(top)
        if not root.is_dir() or root.is_symlink():
            raise SourceError(f"{visible(str(root))} is not a folder")
        self.root = root
        prefix = f"{spec.subfolder}/" if spec.subfolder else ""
        left_out: set[str] = set()
        count = 0

        def walk(top: str, rel: str) -> None:
            nonlocal count
            try:
                with os.scandir(top) as it:
                    items = sorted(it, key=lambda e: e.name)
            except OSError as exc:
                raise SourceError(f"Cannot list {visible(top)}: {exc.strerror or exc}") from None
            for item in items:
                count += 1
                if count > MAX_LISTED:
                    raise SourceError(
                        f"{visible(str(root))} holds more than {MAX_LISTED:,} entries: give the "
                        "folder of the skill (or of a few skills) instead"
                    )
                path = f"{rel}/{item.name}" if rel else item.name
                st = item.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    if item.name in NEVER_COPIED:
                        continue
                    if item.name in ENVIRONMENT_DIRS:
                        left_out.add(item.name)
                        continue
                    walk(item.path, path)
                elif stat.S_ISLNK(st.st_mode):
                    self.entries.append(Entry(prefix + path, LINK, key=item.path))
                elif stat.S_ISREG(st.st_mode):
                    if item.name.endswith(".pyc"):
                        continue
                    executable = bool(st.st_mode & 0o111)
                    self.entries.append(
                        Entry(prefix + path, FILE, st.st_size, executable, item.path)
                    )
                else:
                    self.entries.append(Entry(prefix + path, SPECIAL, key=item.path))

        walk(str(root), "")
        if left_out:
            self.notes.append(
                "left out installed environments (rebuilt from the requirements): "
                + ", ".join(sorted(left_out))
            )

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        try:
            fd = os.open(entry.key, flags)
        except OSError as exc:
            raise SourceError(f"Cannot read {visible(entry.key)}: {exc.strerror or exc}") from None
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise SourceError(f"{visible(entry.key)} is no longer a regular file")
            for chunk in iter(lambda: fh.read(_CHUNK), b""):
                out.write(chunk)

    def signature(self, path: str, signers: str | None, anchors: Anchors = NO_ANCHORS) -> Signature:
        return Signature.unsigned("local")


# -- finding and choosing skills -----------------------------------------------------------


@dataclass(frozen=True)
class FoundSkill:
    """A skill in a source: its folder's path there, the folder name it installs under (or
    why it cannot), and its files."""

    path: str  # "" when the source (or its subfolder) is itself the skill
    folder: str  # the install folder name (the source folder's name)
    problem: str | None = None  # why ``folder`` is not usable as a folder name
    entries: tuple[Entry, ...] = field(default=(), repr=False)


def find_skills(snapshot: Snapshot) -> list[FoundSkill]:
    """The skills in the snapshot (below its subfolder), outermost first, by path.

    SourceError when there is none (naming what to give instead)."""
    spec = snapshot.spec
    top = spec.subfolder
    roots: list[str] = []
    candidates = sorted(
        {
            e.path.rsplit("/", 1)[0] if "/" in e.path else ""
            for e in snapshot.entries
            if e.kind == FILE and e.path.rsplit("/", 1)[-1] in SKILL_FILES
        },
        key=lambda p: (p.count("/") if p else -1, p),
    )
    for folder in candidates:
        if top and not (folder == top or folder.startswith(top + "/")):
            continue
        if NEVER_COPIED.intersection(folder.split("/")):
            continue
        if any(r == "" or folder == r or folder.startswith(r + "/") for r in roots):
            continue  # inside another skill: one of its files
        roots.append(folder)
    if not roots:
        where = f"{spec.location} ({spec.subfolder})" if spec.subfolder else spec.location
        raise SourceError(
            f"No SKILL.md in {visible(where)}: give the repository, archive or folder that "
            "holds skill folders (each with a SKILL.md), or a subfolder with --path"
        )
    by_root: dict[str, list[Entry]] = {r: [] for r in roots}
    for entry in snapshot.entries:
        root = _owner(entry.path, roots)
        if root is not None and _copied(entry, root):
            by_root[root].append(entry)
    found = []
    for root in sorted(roots):
        base = root.rsplit("/", 1)[-1] if root else spec.default_name
        found.append(FoundSkill(root, base, name_problem(base), tuple(by_root[root])))
    return found


def _copied(entry: Entry, root: str) -> bool:
    """Is ``entry`` (inside the skill at ``root``) one of its files? Not bytecode or
    version control folders."""
    rel = entry.path[len(root) + 1 :] if root else entry.path
    return not NEVER_COPIED.intersection(rel.split("/")[:-1])


def skill_at(snapshot: Snapshot, path: str, folder: str) -> FoundSkill:
    """The skill whose folder is ``path`` in the snapshot (installed as ``folder``), for an
    update or a sync; SourceError when there is no SKILL.md there any more."""
    entries = tuple(
        e
        for e in snapshot.entries
        if (not path or e.path.startswith(path + "/")) and _copied(e, path)
    )
    top = {e.path[len(path) + 1 :] if path else e.path for e in entries}
    if not top.intersection(SKILL_FILES):
        where = f"{path!r}" if path else "its top folder"
        at = f" at commit {snapshot.commit}" if snapshot.commit else ""
        raise SourceError(
            f"{folder}: {visible(snapshot.spec.location)}{at} has no skill in {visible(where)} any "
            "more; nothing was written. Install it again from where it moved"
        )
    return FoundSkill(path, folder, name_problem(folder), entries)


def _owner(path: str, roots: list[str]) -> str | None:
    best = None
    for root in roots:
        if root == "" or path.startswith(root + "/"):
            if best is None or len(root) > len(best):
                best = root
    return best


def skill_md_name(snapshot: Snapshot, found: FoundSkill) -> str:
    """The ``name`` in the skill's SKILL.md ("" when there is none or it cannot be read)."""
    for entry in found.entries:
        rel = entry.path[len(found.path) + 1 :] if found.path else entry.path
        if rel in SKILL_FILES:
            try:
                data, _body, _warnings = parse_skill_md(snapshot.read_small(entry).decode())
            except (SkillMagicsError, UnicodeDecodeError, ValueError):
                return ""
            name = data.get("name")
            return name if isinstance(name, str) else ""
    return ""


def choose_skills(
    snapshot: Snapshot, found: list[FoundSkill], wanted: Sequence[str] | None
) -> tuple[list[FoundSkill], list[str]]:
    """(the skills to install, notes on the ones left out).

    ``wanted`` None: every skill whose folder name can be used (the others are noted);
    else each item names a skill by its folder name, its path in the source or its SKILL.md
    name. Two skills with one folder name cannot both be installed: SourceError naming them.
    """
    notes: list[str] = []
    if wanted is None:
        chosen = []
        for skill in found:
            if skill.problem is not None:
                notes.append(
                    f"left out {visible(skill.path or skill.folder)!r}: its folder name cannot "
                    f"be used ({skill.problem})"
                )
            else:
                chosen.append(skill)
        if not chosen:
            raise SourceError(
                "No skill in the source has a usable folder name: " + "; ".join(notes)
            )
    else:
        chosen = []
        for want in dict.fromkeys(wanted):
            match = _match(snapshot, found, want)
            folder_name(match.folder)  # refuses, naming why
            if match not in chosen:
                chosen.append(match)
    seen: dict[str, FoundSkill] = {}
    for skill in chosen:
        other = seen.get(skill.folder)
        if other is not None:
            raise SourceError(
                f"Two skills would install as {skill.folder!r}: {visible(other.path)!r} and "
                f"{visible(skill.path)!r}; choose one with skills=[PATH] (--skill PATH)"
            )
        seen[skill.folder] = skill
    return chosen, notes


def _match(snapshot: Snapshot, found: list[FoundSkill], want: str) -> FoundSkill:
    want = want.strip().strip("/")
    for skill in found:
        if want in (skill.path, skill.folder):
            return skill
    for skill in found:
        if skill_md_name(snapshot, skill) == want:
            return skill
    shown = ", ".join(visible(s.path or s.folder) for s in found[:20])
    more = f" (+{len(found) - 20} more)" if len(found) > 20 else ""
    raise SourceError(
        f"No skill {visible(want)!r} in {snapshot.spec}: it has {shown}{more}; name one by "
        "folder name, path or SKILL.md name"
    )


# -- staging -------------------------------------------------------------------------------


@dataclass(frozen=True)
class StagedSkill:
    """A chosen skill copied into the staging folder, with every file's digest."""

    found: FoundSkill
    staged: Path
    files: tuple[FileRecord, ...]
    tree: str

    @property
    def folder(self) -> str:
        return self.found.folder

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def check_entries(chosen: Iterable[FoundSkill]) -> None:
    """Refuse (before anything is written) a link, submodule or device file in a chosen
    skill, a path that is not a clean relative path, and more than the limits in all."""
    total = files = 0
    for skill in chosen:
        for entry in skill.entries:
            rel = _relative(skill, entry)
            where = f"{skill.folder}/{visible(rel)}"
            problem = path_problem(rel)
            if problem is not None:
                raise SourceError(f"{where} is refused: {problem}; nothing was installed")
            if entry.kind == LINK:
                raise SourceError(
                    f"{where} is a symbolic link: links are not installed (they can point "
                    "outside the skill); nothing was installed. Ask the author to commit the file"
                )
            if entry.kind == SUBMODULE:
                raise SourceError(
                    f"{where} is a git submodule: submodules are not fetched, so the skill would "
                    "be incomplete; nothing was installed. Install from the submodule's repository"
                )
            if entry.kind != FILE:
                raise SourceError(f"{where} is not a regular file; nothing was installed")
            files += 1
            total += entry.size
    if files > MAX_FILES or total > MAX_TOTAL_BYTES:
        raise SourceError(
            f"The chosen skills hold {files:,} files and {total:,} bytes, over the limits of "
            f"{LIMITS_TEXT}; nothing was installed. Choose fewer skills with skills=[...] "
            "(--skill NAME)"
        )


def _relative(skill: FoundSkill, entry: Entry) -> str:
    return entry.path[len(skill.path) + 1 :] if skill.path else entry.path


def stage(snapshot: Snapshot, chosen: list[FoundSkill], dest: Path) -> list[StagedSkill]:
    """Copy the chosen skills into ``dest/<folder>/`` (a fresh private folder), hashing each
    file as it is written. Checks everything first (:func:`check_entries`)."""
    check_entries(chosen)
    out = []
    for skill in chosen:
        folder = dest / folder_name(skill.folder)
        folder.mkdir(mode=0o755)
        records = [
            _write(snapshot, entry, folder, _relative(skill, entry)) for entry in skill.entries
        ]
        records.sort(key=lambda r: r.path)
        out.append(StagedSkill(skill, folder, tuple(records), tree_digest(records)))
    return out


class _Hashing:
    """A file being written: counts and hashes, and stops at the entry's size."""

    def __init__(self, fh: BinaryIO, limit: int, where: str) -> None:
        self.fh = fh
        self.limit = limit
        self.where = where
        self.size = 0
        self.digest = hashlib.sha256()

    def write(self, chunk: bytes) -> int:
        self.size += len(chunk)
        if self.size > self.limit:
            raise SourceError(
                f"{self.where} grew beyond the size its source declared; nothing was installed"
            )
        self.digest.update(chunk)
        return self.fh.write(chunk)


def _write(snapshot: Snapshot, entry: Entry, folder: Path, rel: str) -> FileRecord:
    target = folder.joinpath(*rel.split("/"))
    target.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    mode = 0o755 if entry.executable else 0o644
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(target, flags, mode)
    except FileExistsError:
        raise SourceError(
            f"{folder.name}/{visible(rel)} appears twice in the source (or differs only in "
            "case); nothing was installed"
        ) from None
    with os.fdopen(fd, "wb") as fh:
        sink = _Hashing(fh, entry.size, f"{folder.name}/{visible(rel)}")
        snapshot.copy_to(entry, sink)  # type: ignore[arg-type]
    os.chmod(target, mode)  # not the umask's choice: the lock records the executable bit
    if sink.size != entry.size:
        raise SourceError(
            f"{folder.name}/{visible(rel)} changed while it was copied; nothing was installed. "
            "Try again"
        )
    return FileRecord(rel, sink.digest.hexdigest(), sink.size, entry.executable)


__all__ = [
    "Entry",
    "Snapshot",
    "FolderSnapshot",
    "FoundSkill",
    "StagedSkill",
    "find_skills",
    "skill_at",
    "choose_skills",
    "check_entries",
    "stage",
    "skill_md_name",
    "MAX_TOTAL_BYTES",
    "MAX_FILES",
    "LIMITS_TEXT",
]
