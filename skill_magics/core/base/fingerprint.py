"""A skill's fingerprint: the hash a "Yes in session" approval is keyed to.

A script can load code that is not itself a detected script (``source lib.inc``, ``import
helpers`` from a ``lib/`` folder, a dot-file, the skill venv's ``python``), so the fingerprint
covers every file of the skill, not only its scripts:

- every regular file (hidden ones too), by relative path and content. Files larger than
  ``MAX_HASHED_BYTES`` (1 MiB: data, not code, in practice) count by their stat identity
  (size, mtime, ctime, inode) instead of their bytes, so a 2 GB data set never gets read;
  any write to them still changes the ctime and so the fingerprint;
- symlinks by their target text, plus what they point to (followed, same rule as files);
- not ``venv/``, ``.venv/``, ``node_modules/``, ``__pycache__/`` or ``.git/`` directories
  (thousands of installed files, rewritten by pip, npm and Python itself on a first run),
  but the skill venv's interpreter by its real path and stat identity, so swapping
  ``venv/bin/python`` lapses the approval. Limit: an edit inside an installed package
  (``venv/lib/...``, ``node_modules/...``) made between runs does not (one made by an
  approved run does: see below).

After an approved run, files the run itself wrote keep the approval only while none of them
is code (:func:`is_code`): an output file does not ask again, a script that rewrites itself
or drops a new helper module does, and so does any change inside the skipped directories
(:func:`skipped_entries`: a package installed into ``venv/``, a ``.pth`` file, bytecode).

Every folder is walked, whatever its depth, up to ``MAX_DEPTH`` (64) levels: a skill with a
folder nested deeper is refused (:class:`SkillTooDeepError`, one line, before anything runs:
the planner audits it), never half-seen, since an edit down there would keep an approval.
The walk goes by directory file descriptors (``openat``), so no path grows past ``PATH_MAX``,
a folder swapped for a symlink mid-walk is not followed, and it holds at most one descriptor
per level. It never follows a symlinked directory, so symlink loops cannot make it loop; a
folder met again on its own path (a bind mount of an ancestor) is recorded as ``loop``, its
files being those of the ancestor already walked.

Cheap on repeat: file digests are cached by (device, inode) and reused while the file's
stat identity (mtime, ctime, size) is unchanged, so a fingerprint costs one stat per file
(plus one open per folder); only a file whose identity changed is read again. File times
are coarse (a kernel tick, seconds on some file systems), so two writes close together can
leave the same identity: like git's "racily clean" entries, a digest is trusted only for a
file whose last change was more than ``RACY_NS`` before it was hashed; a fresher file is
read again each time.

:func:`skill_snapshot` gives the entries together with a :class:`StatSnapshot` of them: the
stat identity of every folder, file, link target and venv interpreter candidate. Its
:meth:`~StatSnapshot.unchanged` re-stats those paths only (no listing, no reads): the fast
path a batch takes before each item, falling back to the full walk when anything moved.
Limit: a symlinked directory is recorded by its target text, not walked.

Example:
    >>> len(skill_fingerprint(Path("skills/csv-profiler")))  # hex SHA-256
    64
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base import interpreters
from skill_magics.core.base.errors import SkillTooDeepError
from skill_magics.core.base.visible import visible

MAX_HASHED_BYTES = 1 << 20
# Folder levels walked; a deeper folder refuses the skill (no real skill nests this far: it
# bounds the descriptors one walk holds open, not what it sees).
MAX_DEPTH = 64
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC
# A file changed less than this before it was hashed (or snapshotted) may change again
# without its stat identity moving (timestamps are per kernel tick, 2 s on FAT): not trusted.
RACY_NS = 2_500_000_000
SKIP_DIRS = frozenset({"venv", ".venv", "node_modules", "__pycache__", ".git"})
VENV_ENTRY = "<venv python>"
# Files a script may load or run: a change to one by the approved run lapses the approval.
CODE_SUFFIXES = frozenset(
    ".py .pyc .pyw .pth .sh .bash .zsh .ksh .fish .inc .js .mjs .cjs .ts .mts .cts .rb .pl .pm"
    " .php .lua .r .ps1 .bat .cmd .so .dylib .dll .jar .class .wasm .ipynb".split()
)

# (st_dev, st_ino) -> (stat identity, sha256 hex of the bytes, time.time_ns() when hashed)
_DIGESTS: dict[tuple[int, int], tuple[tuple[int, ...], str, int]] = {}
_LOCK = threading.Lock()
_MAX_CACHE = 8192


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _racy(st: os.stat_result, seen_ns: int) -> bool:
    """Could the file change again without its identity moving, as seen at ``seen_ns``?"""
    return max(st.st_mtime_ns, st.st_ctime_ns) + RACY_NS > seen_ns


def _file_digest(
    path: str, st: os.stat_result, *, dir_fd: int | None = None, follow: bool = True
) -> str:
    """Content digest of a regular file (identity digest when large), cached by identity.
    ``path`` is relative to ``dir_fd`` when given; ``follow=False``: a file swapped for a
    symlink since it was looked at is not followed (an ``unreadable`` entry instead)."""
    ident = _identity(st)
    if st.st_size > MAX_HASHED_BYTES:
        return "stat:" + ":".join(str(v) for v in ident)
    key = (st.st_dev, st.st_ino)
    with _LOCK:
        hit = _DIGESTS.get(key)
    if hit is not None and hit[0] == ident and not _racy(st, hit[2]):
        return hit[1]
    hashed_at = time.time_ns()  # before reading: a write during the read is racy too
    digest = hashlib.sha256()
    # O_NONBLOCK: a FIFO swapped in after the stat must not block us.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC | (0 if follow else _NOFOLLOW)
    try:
        fd = os.open(path, flags, dir_fd=dir_fd)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"
    try:
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            digest.update(chunk)
    except OSError as exc:
        return f"unreadable:{type(exc).__name__}"
    finally:
        os.close(fd)
    value = digest.hexdigest()
    with _LOCK:
        if len(_DIGESTS) >= _MAX_CACHE:
            _DIGESTS.clear()
        _DIGESTS[key] = (ident, value, hashed_at)
    return value


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 hex of a regular file's bytes, whatever its size (a lock file pins them all).

    Small files reuse the fingerprint's cache; large ones are read in full each time (rare:
    skills hold code and documents). Raises OSError when it is not a readable regular file.
    """
    path = os.fspath(path)
    st = os.stat(path, follow_symlinks=False)
    if not stat.S_ISREG(st.st_mode):
        raise IsADirectoryError(f"{path} is not a regular file")
    if st.st_size <= MAX_HASHED_BYTES:
        value = _file_digest(path, st, follow=False)
        if value.startswith("unreadable:"):
            raise PermissionError(f"cannot read {path}")
        return value
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _target_entry(name: str, dir_fd: int) -> str:
    """What a symlink leads to: a file's digest, or the kind of thing it is."""
    try:
        st = os.stat(name, dir_fd=dir_fd)
    except OSError:
        return "dangling"
    if stat.S_ISREG(st.st_mode):
        return _file_digest(name, st, dir_fd=dir_fd)
    if stat.S_ISDIR(st.st_mode):
        return "dir:" + ":".join(str(v) for v in _identity(st))
    return f"special:{stat.S_IFMT(st.st_mode)}"


def _stat_identity(name: str, dir_fd: int | None = None) -> tuple[int, ...] | None:
    try:
        return _identity(os.stat(name, dir_fd=dir_fd))
    except OSError:
        return None


def _listing(fd: int) -> list[os.DirEntry[str]]:
    with os.scandir(fd) as it:
        return sorted(it, key=lambda e: e.name)


@dataclass
class _Folder:
    """A folder being walked: its descriptor (kept open while its entries are looked at:
    they are relative to it), its path in the skill, depth and identity."""

    fd: int
    rel: str
    depth: int
    entries: Iterator[os.DirEntry[str]]
    key: tuple[int, int]


def _too_deep(base: str, rel: str) -> SkillTooDeepError:
    parts = rel.split("/")
    shown = "/".join(parts[:3] + ["…"] + parts[-1:]) if len(parts) > 4 else rel
    return SkillTooDeepError(
        f"Skill folder {visible(base)} nests folders more than {MAX_DEPTH} deep "
        f"({visible(shown[:200])}): a change that deep could not be seen, so it is not run; "
        "move that data out of the skill"
    )


# What a StatSnapshot re-stats: (path relative to the skill, follow symlinks?, identity or
# None when absent). "" is the skill folder itself.
_Seen = tuple[str, bool, "tuple[int, ...] | None"]


def _walk(base: str, out: list[tuple[str, str]], seen: list[_Seen] | None = None) -> None:
    """Every entry under ``base``, depth first in name order (see the module docstring);
    ``seen`` collects the stat identities a :class:`StatSnapshot` needs."""
    try:
        top = os.open(base, _DIR_FLAGS)
        st = os.fstat(top)
    except OSError as exc:
        out.append((".", f"unlistable:{type(exc).__name__}"))
        if seen is not None:
            seen.append(("", True, None))
        return
    if seen is not None:
        seen.append(("", True, _identity(st)))
    stack: list[_Folder] = []
    try:
        try:
            stack.append(_Folder(top, "", 0, iter(_listing(top)), (st.st_dev, st.st_ino)))
        except OSError as exc:
            os.close(top)
            out.append((".", f"unlistable:{type(exc).__name__}"))
            return
        on_path = {stack[0].key}
        while stack:
            folder = stack[-1]
            entry = next(folder.entries, None)
            if entry is None:
                stack.pop()
                on_path.discard(folder.key)
                os.close(folder.fd)
                continue
            name = folder.rel + "/" + entry.name if folder.rel else entry.name
            try:
                if entry.is_symlink():
                    target = os.readlink(entry.name, dir_fd=folder.fd)
                    out.append((name, f"link:{target}:{_target_entry(entry.name, folder.fd)}"))
                    if seen is not None:
                        seen.append((name, False, _identity(entry.stat(follow_symlinks=False))))
                        seen.append((name, True, _stat_identity(entry.name, folder.fd)))
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name in SKIP_DIRS:
                        # Not even its existence: Python creates __pycache__/ on the first run.
                        continue
                    if folder.depth >= MAX_DEPTH:
                        raise _too_deep(base, name)
                    child = _open_folder(entry.name, folder.fd, name, on_path, out, seen)
                    if child is not None:
                        stack.append(_Folder(child[0], name, folder.depth + 1, *child[1:]))
                        on_path.add(child[2])
                else:
                    st = entry.stat(follow_symlinks=False)
                    if seen is not None:
                        seen.append((name, False, _identity(st)))
                    if stat.S_ISREG(st.st_mode):
                        digest = _file_digest(entry.name, st, dir_fd=folder.fd, follow=False)
                        out.append((name, digest))
                    else:
                        out.append((name, f"special:{stat.S_IFMT(st.st_mode)}"))
            except OSError as exc:  # vanished between listing and looking: still deterministic
                out.append((name, f"error:{type(exc).__name__}"))
    finally:
        for folder in stack:
            os.close(folder.fd)


def _open_folder(
    name: str,
    parent: int,
    rel: str,
    on_path: set[tuple[int, int]],
    out: list[tuple[str, str]],
    seen: list[_Seen] | None,
) -> tuple[int, Iterator[os.DirEntry[str]], tuple[int, int]] | None:
    """Open and list a subfolder (None when recorded as an entry instead: a loop, or
    unlistable)."""
    fd = os.open(name, _DIR_FLAGS | _NOFOLLOW, dir_fd=parent)
    try:
        st = os.fstat(fd)
        if seen is not None:
            seen.append((rel, False, _identity(st)))
        key = (st.st_dev, st.st_ino)
        if key in on_path:  # a bind mount of a folder it is inside: already being walked
            out.append((rel, "loop"))
            os.close(fd)
            return None
        try:
            entries = _listing(fd)
        except OSError as exc:
            out.append((rel, f"unlistable:{type(exc).__name__}"))
            os.close(fd)
            return None
    except BaseException:
        try:
            os.close(fd)
        except OSError:
            pass
        raise
    return fd, iter(entries), key


def _walk_skipped(top: str, rel: str, depth: int, inside: bool, out: list[tuple[str, str]]) -> None:
    """Files under the directories the fingerprint skips, by stat identity only (one stat
    each, no reads): enough to see that a run changed something there. Limit: entries more
    than MAX_DEPTH folders deep in there are not looked at (installed packages never nest
    that far; the fingerprint proper refuses such a depth instead)."""
    if depth > MAX_DEPTH:
        return
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        name = rel + "/" + entry.name if rel else entry.name
        try:
            is_dir = entry.is_dir(follow_symlinks=False)
            if inside and is_dir:
                if name.endswith("node_modules/.cache"):
                    continue  # bundlers' caches: data, rewritten on every run
                _walk_skipped(entry.path, name, depth + 1, True, out)
            elif inside:
                st = entry.stat(follow_symlinks=False)
                out.append((name, "stat:" + ":".join(str(v) for v in _identity(st))))
            elif is_dir and entry.name != ".git":  # git rewrites its index on `git status`
                _walk_skipped(entry.path, name, depth + 1, entry.name in SKIP_DIRS, out)
        except OSError as exc:
            out.append((name, f"error:{type(exc).__name__}"))


def skipped_entries(skill_base_dir: str | os.PathLike[str]) -> dict[str, str]:
    """What lies in the skill's ``venv/``, ``node_modules/``, ``__pycache__/`` ... directories
    (the ones :func:`skill_entries` leaves out), by name and stat identity. Compared before
    and after an approved run: a run that installs or plants code there lapses the approval."""
    entries: list[tuple[str, str]] = []
    _walk_skipped(os.path.abspath(skill_base_dir), "", 0, False, entries)
    return dict(entries)


def skill_entries(skill_base_dir: str | os.PathLike[str]) -> dict[str, str]:
    """What the fingerprint is made of: relative path -> digest (or stat/link/kind entry).

    Raises :class:`SkillTooDeepError` for a folder nested deeper than ``MAX_DEPTH``."""
    return _entries(os.path.abspath(skill_base_dir), None)


@dataclass(frozen=True)
class StatSnapshot:
    """The stat identities of everything :func:`skill_entries` looked at (folders, files,
    link targets, the venv interpreter candidates).

    ``unchanged()`` re-stats exactly those paths: True means the entries are still what
    they were (a file changed in place moves its mtime/ctime; one added, removed or renamed
    moves its folder's). Not ``trusted`` (something changed less than RACY_NS before the
    snapshot, so a further change might not move any time stamp): never unchanged.
    """

    base: str
    seen: tuple[_Seen, ...]  # (absolute path, follow symlinks?, identity or None)
    trusted: bool

    def unchanged(self) -> bool:
        if not self.trusted:
            return False
        do_stat = os.stat
        for path, follow, ident in self.seen:
            try:
                st = do_stat(path, follow_symlinks=follow)
            except OSError:  # gone, or a path past PATH_MAX: the full walk decides
                if ident is not None:
                    return False
                continue
            if ident is None or ident != (
                st.st_dev,
                st.st_ino,
                st.st_mtime_ns,
                st.st_ctime_ns,
                st.st_size,
            ):
                return False
        return True


def skill_snapshot(
    skill_base_dir: str | os.PathLike[str],
) -> tuple[dict[str, str], StatSnapshot]:
    """:func:`skill_entries` and a :class:`StatSnapshot` taken during the same walk."""
    base = os.path.abspath(skill_base_dir)
    taken = time.time_ns()
    seen: list[_Seen] = []
    entries = _entries(base, seen)
    # The skipped venv folders: their interpreter counts (VENV_ENTRY). One absent is covered
    # by the skill folder's own identity (creating it moves that); one present by its bin/
    # folders (a new interpreter moves them) and the interpreter candidates themselves.
    for venv in ("venv", ".venv"):
        if os.path.isdir(os.path.join(base, venv)):
            pythons = [c for c in interpreters.VENV_PYTHON_CANDIDATES if c.startswith(venv + "/")]
            for rel in (f"{venv}/bin", f"{venv}/Scripts", *pythons):
                seen.append((rel, True, _stat_identity(os.path.join(base, rel))))
    trusted = all(
        ident is None or max(ident[2], ident[3]) + RACY_NS <= taken for _, _, ident in seen
    )
    absolute = tuple((os.path.join(base, rel), follow, ident) for rel, follow, ident in seen)
    return entries, StatSnapshot(base, absolute, trusted)


def _entries(base: str, seen: list[_Seen] | None) -> dict[str, str]:
    entries: list[tuple[str, str]] = []
    _walk(base, entries, seen)
    venv_python = interpreters.skill_venv_python(Path(base))
    if venv_python is not None:
        real = os.path.realpath(venv_python)
        try:
            st = os.stat(real)
            ident = ":".join(str(v) for v in _identity(st))
        except OSError:
            ident = "missing"
        entries.append((VENV_ENTRY, f"{real}:{ident}"))
    return dict(entries)


def fingerprint_of(entries: dict[str, str]) -> str:
    """SHA-256 over :func:`skill_entries` (in walk order: the dict keeps it)."""
    digest = hashlib.sha256()
    for name, value in entries.items():
        digest.update(name.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(value.encode("utf-8", "surrogateescape") + b"\0")
    return digest.hexdigest()


def skill_fingerprint(skill_base_dir: str | os.PathLike[str]) -> str:
    """SHA-256 over every file of the skill (see the module docstring for the rules);
    :class:`SkillTooDeepError` for a skill nesting folders deeper than ``MAX_DEPTH``."""
    return fingerprint_of(skill_entries(skill_base_dir))


def changed_entries(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """Relative paths added, removed or changed between two :func:`skill_entries`."""
    names = set(before) | set(after)
    return sorted(n for n in names if before.get(n) != after.get(n))


def is_code(skill_base_dir: str | os.PathLike[str], rel: str) -> bool:
    """Whether a file could be code a run loads, so a change to it must lapse an approval.

    SKILL.md, the venv interpreter, anything under ``scripts/``, a code extension, the
    executable bit or a ``#!`` first line count as code; a missing file counts as code
    (a deleted script). Data a script writes (``out.json``, ``report.csv``) does not.
    """
    parts = rel.split("/")
    name = parts[-1]
    if rel == VENV_ENTRY or name == "SKILL.md" or parts[0] == "scripts":
        return True
    if SKIP_DIRS.intersection(parts[:-1]):  # installed packages, bytecode: code by nature
        return True
    if os.path.splitext(name)[1].lower() in CODE_SUFFIXES:
        return True
    path = os.path.join(os.fspath(skill_base_dir), rel)
    try:
        st = os.lstat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o111:
            return True
        with open(path, "rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return True


__all__ = [
    "MAX_DEPTH",
    "RACY_NS",
    "StatSnapshot",
    "skill_snapshot",
    "MAX_HASHED_BYTES",
    "SKIP_DIRS",
    "changed_entries",
    "file_sha256",
    "fingerprint_of",
    "is_code",
    "skill_entries",
    "skill_fingerprint",
    "skipped_entries",
]
