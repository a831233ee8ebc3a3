"""Reading and writing in folders a script can change, never through a link.

A script (sandboxed or not) can leave a symlink, a FIFO or a device node under any name in
a folder it may write: its working folder, an eval run's ``outputs/``, a skill it wrote
into. The kernel must never do there on the script's behalf what the script could not do
itself (docs/architecture.md, *Folders a script can write*). So every access here is made
relative to a folder descriptor opened without following links (``O_NOFOLLOW``):

- :func:`write_file` creates an unpredictable temporary name exclusively (``O_EXCL``:
  a link left under a guessed name is never followed) and renames it within the same
  folder (``os.replace`` with ``src_dir_fd``/``dst_dir_fd``: a link under the final name is
  replaced, not written through);
- :func:`read_files` walks with ``os.fwalk`` (links never followed), opens each entry with
  ``O_NOFOLLOW | O_NONBLOCK`` (a FIFO cannot block it) and keeps only regular files, bounded
  in count and bytes;
- :func:`remove_aside` removes a file or folder whole (moved aside, then deleted), and
  :func:`open_private_root` opens a per-user folder checked to be this user's alone.

Hard links need no rule of their own: a sandboxed script can only link files it sees, so a
regular file in its outputs is one it could read itself.
"""

from __future__ import annotations

import os
import secrets
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
NEW_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def open_dir(path: str | Path, *, create: bool = False) -> int:
    """A descriptor of the folder ``path``, its last part never a link (OSError ELOOP /
    ENOTDIR when it is one). ``create``: make it (and its parents) first."""
    if create:
        os.makedirs(path, exist_ok=True)
    return os.open(path, DIR_FLAGS)


def write_file(folder: str | Path | int, name: str, data: bytes | str, mode: int = 0o644) -> None:
    """``data`` as the file ``name`` in ``folder`` (a path or a descriptor), whole or not at
    all, never through a link: an exclusive unpredictable temporary, then a rename within
    the folder."""
    if os.sep in name or name in ("", ".", ".."):
        raise ValueError(f"{name!r} is not one file name")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    dir_fd = folder if isinstance(folder, int) else open_dir(folder, create=True)
    tmp = f".{name[:40]}.{secrets.token_hex(8)}.tmp"
    try:
        fd = os.open(tmp, NEW_FLAGS, mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb", closefd=False) as fh:
                fh.write(raw)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            _unlink(tmp, dir_fd)
            raise
    except BaseException:
        _unlink(tmp, dir_fd)
        raise
    finally:
        if not isinstance(folder, int):
            os.close(dir_fd)


def remove_aside(parent_fd: int, name: str, aside: str = "") -> bool:
    """Remove ``name`` from the folder ``parent_fd`` whole: moved aside first (one rename to
    ``aside`` in the same folder, a fresh hidden name by default), then deleted, so nobody
    ever reads half of it; a link or file planted under the name is unlinked, never
    followed. False when nothing was there; OSError when the rename fails."""
    aside = aside or f".{name[:40]}.{secrets.token_hex(8)}.old"
    try:
        os.rename(name, aside, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    except FileNotFoundError:
        return False
    if stat.S_ISDIR(os.stat(aside, dir_fd=parent_fd, follow_symlinks=False).st_mode):
        try:
            shutil.rmtree(aside, dir_fd=parent_fd)
        except OSError:
            pass  # what is left sits under the aside name, out of every reader's way
    else:
        _unlink(aside, parent_fd)
    return True


class NotPrivate(PermissionError):
    """A folder that must be this user's alone is not (its message says how)."""


def open_private_root(path: str | Path, *, create: bool, others: int = 0o077) -> int:
    """A descriptor of the per-user folder ``path`` (made 0700, its parents as the umask
    says, when ``create``), checked to be this user's alone: no link, owned by this user,
    and none of the mode bits ``others`` set (0o077: nobody else may even read it; 0o022:
    nobody else may write). Someone else's folder could hold forged records or files.
    FileNotFoundError when it is missing (and not ``create``); NotPrivate when it is not
    private; another OSError (ELOOP, ENOTDIR) when it is a link or no folder."""
    if create and not os.path.lexists(path):
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    fd = os.open(path, DIR_FLAGS)
    st = os.fstat(fd)
    if st.st_uid != os.getuid() or st.st_mode & others:
        os.close(fd)
        raise NotPrivate(
            f"{os.fspath(path)!r} is not ours alone (owner uid {st.st_uid}, mode "
            f"{stat.S_IMODE(st.st_mode):o})"
        )
    return fd


def _unlink(name: str, dir_fd: int) -> None:
    try:
        os.unlink(name, dir_fd=dir_fd)
    except OSError:
        pass


@dataclass(frozen=True)
class FoundFile:
    """A regular file read by :func:`read_files`: its path relative to the folder, its
    size, its first bytes (at most the per-file limit) and its mtime."""

    rel: str
    size: int
    head: bytes
    mtime_ns: int


def read_files(
    folder: str | Path,
    *,
    max_files: int = 1000,
    max_bytes: int = 1 << 20,
    max_total: int = 8 << 20,
    skip: frozenset[str] = frozenset(),
) -> Iterator[FoundFile]:
    """The regular files under ``folder`` (sorted, links and special files skipped), at most
    ``max_files``, each read up to ``max_bytes``, all together up to ``max_total``."""
    try:
        top = open_dir(folder)
    except OSError:
        return
    total = count = 0
    try:
        for root, dirs, files, root_fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs.sort()
            for name in sorted(files):
                rel = os.path.normpath(os.path.join(root, name))
                if rel in skip:
                    continue
                if count >= max_files:
                    return
                found = _read_one(root_fd, name, rel, min(max_bytes, max(max_total - total, 0)))
                if found is None:
                    continue
                count += 1
                total += len(found.head)
                yield found
    finally:
        os.close(top)


def _read_one(dir_fd: int, name: str, rel: str, limit: int) -> FoundFile | None:
    try:
        fd = os.open(name, READ_FLAGS, dir_fd=dir_fd)
    except OSError:
        return None  # a link (ELOOP), gone, or unreadable
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None
        chunks, left = [], limit
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return FoundFile(rel, st.st_size, b"".join(chunks), st.st_mtime_ns)
    except OSError:
        return None
    finally:
        os.close(fd)


__all__ = ["FoundFile", "open_dir", "read_files", "write_file"]
