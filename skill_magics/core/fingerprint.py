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

Cheap on repeat: file digests are cached by (device, inode) and reused while the file's
stat identity (mtime, ctime, size) is unchanged, so a fingerprint costs one stat per file.
Limit: a symlinked directory is recorded by its target text, not walked.

Example:
    >>> skill_fingerprint(Path("skills/csv-profiler"))
    '5f1c...'
"""

from __future__ import annotations

import hashlib
import os
import stat
import threading
from pathlib import Path

from skill_magics.core import interpreters

MAX_HASHED_BYTES = 1 << 20
MAX_DEPTH = 16  # deeper trees are recorded as one opaque entry (no real skill nests this far)
SKIP_DIRS = frozenset({"venv", ".venv", "node_modules", "__pycache__", ".git"})
VENV_ENTRY = "<venv python>"
# Files a script may load or run: a change to one by the approved run lapses the approval.
CODE_SUFFIXES = frozenset(
    ".py .pyc .pyw .pth .sh .bash .zsh .ksh .fish .inc .js .mjs .cjs .ts .mts .cts .rb .pl .pm"
    " .php .lua .r .ps1 .bat .cmd .so .dylib .dll .jar .class .wasm .ipynb".split()
)

# (st_dev, st_ino) -> (stat identity, sha256 hex of the bytes)
_DIGESTS: dict[tuple[int, int], tuple[tuple[int, ...], str]] = {}
_LOCK = threading.Lock()
_MAX_CACHE = 8192


def _identity(st: os.stat_result) -> tuple[int, ...]:
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def _file_digest(path: str, st: os.stat_result) -> str:
    """Content digest of a regular file (identity digest when large), cached by identity."""
    ident = _identity(st)
    if st.st_size > MAX_HASHED_BYTES:
        return "stat:" + ":".join(str(v) for v in ident)
    key = (st.st_dev, st.st_ino)
    with _LOCK:
        hit = _DIGESTS.get(key)
    if hit is not None and hit[0] == ident:
        return hit[1]
    digest = hashlib.sha256()
    try:
        # O_NONBLOCK: a FIFO swapped in after the stat must not block us.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
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
        _DIGESTS[key] = (ident, value)
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
        value = _file_digest(path, st)
        if value.startswith("unreadable:"):
            raise PermissionError(f"cannot read {path}")
        return value
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _target_entry(path: str) -> str:
    """What a symlink leads to: a file's digest, or the kind of thing it is."""
    try:
        st = os.stat(path)
    except OSError:
        return "dangling"
    if stat.S_ISREG(st.st_mode):
        return _file_digest(path, st)
    if stat.S_ISDIR(st.st_mode):
        return "dir:" + ":".join(str(v) for v in _identity(st))
    return f"special:{stat.S_IFMT(st.st_mode)}"


def _walk(top: str, rel: str, depth: int, out: list[tuple[str, str]]) -> None:
    try:
        with os.scandir(top) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        out.append((rel or ".", f"unlistable:{type(exc).__name__}"))
        return
    for entry in entries:
        name = rel + "/" + entry.name if rel else entry.name
        try:
            if entry.is_symlink():
                target = os.readlink(entry.path)
                out.append((name, f"link:{target}:{_target_entry(entry.path)}"))
            elif entry.is_dir(follow_symlinks=False):
                if entry.name in SKIP_DIRS:
                    # Not even its existence: Python creates __pycache__/ on the first run.
                    continue
                if depth >= MAX_DEPTH:
                    st = entry.stat(follow_symlinks=False)
                    out.append((name, "deep-dir:" + ":".join(str(v) for v in _identity(st))))
                else:
                    _walk(entry.path, name, depth + 1, out)
            else:
                st = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(st.st_mode):
                    out.append((name, _file_digest(entry.path, st)))
                else:
                    out.append((name, f"special:{stat.S_IFMT(st.st_mode)}"))
        except OSError as exc:  # vanished between listing and looking: still deterministic
            out.append((name, f"error:{type(exc).__name__}"))


def _walk_skipped(top: str, rel: str, depth: int, inside: bool, out: list[tuple[str, str]]) -> None:
    """Files under the directories the fingerprint skips, by stat identity only (one stat
    each, no reads): enough to see that a run changed something there."""
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
    """What the fingerprint is made of: relative path -> digest (or stat/link/kind entry)."""
    base = os.path.abspath(skill_base_dir)
    entries: list[tuple[str, str]] = []
    _walk(base, "", 0, entries)
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
    """SHA-256 over every file of the skill (see the module docstring for the rules)."""
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
