"""The worker's shipping area (docs/architecture.md, *Batch runs*): a private per-user
folder in the worker's temp directory, checked before every use (this user's alone, no link,
not in a temp folder others may rename in), where a packed skill is unpacked into a fresh
folder, remembered as trusted, and removed whole (ship_owner.py says whose it is)."""

from __future__ import annotations

import errno
import io
import os
import shutil
import stat
import tarfile
import tempfile
import threading
import zlib
from pathlib import Path

from skill_magics.core.base.errors import PathSecurityError, SkillMagicsError
from skill_magics.core.run.batch import ship_owner

MAX_BUNDLE_BYTES = 256 * 1024 * 1024  # a skill folder bigger than this is data, not a skill
SHIP_DIR_NAME = "skill-magics-shipped"  # + "-<uid>", under the worker's temp directory

# Ownership checks need POSIX owners and O_NOFOLLOW; elsewhere (Windows) the temp folder is
# per user already and copies are only checked by fingerprint.
_OWNERS = hasattr(os, "geteuid") and hasattr(os, "O_NOFOLLOW") and os.open in os.supports_dir_fd
_DIR_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_DIRECTORY", 0)
    | getattr(os, "O_NOFOLLOW", 0)
    | getattr(os, "O_CLOEXEC", 0)
)


class ShippedSkillMismatch(PathSecurityError):
    """A worker's copy of a skill does not have the fingerprint that was approved."""


class ShipAreaError(PathSecurityError):
    """The worker's shipping folder cannot be trusted (another user's, a symlink, or in a
    temp folder others may rename things in): nothing runs from it."""


_UNPACK_LOCK = threading.Lock()


def ship_root() -> Path:
    """This user's shipping folder on this machine: ``$TMPDIR/skill-magics-shipped-<uid>``
    (one per user, so another user's folder is never even looked at)."""
    name = f"{SHIP_DIR_NAME}-{os.geteuid()}" if hasattr(os, "geteuid") else SHIP_DIR_NAME
    return Path(tempfile.gettempdir()) / name


def _owned_private(st: os.stat_result) -> bool:
    """Owned by this user, and nobody else may write to it."""
    return st.st_uid == os.geteuid() and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def _open_private_dir(name: str, dir_fd: int | None, create: bool) -> tuple[int, bool]:
    """(fd, trusted) of the folder ``name`` (relative to ``dir_fd``), created private when
    missing and ``create``. Never follows a symlink; ``trusted``: a folder owned by this user
    with no group/other write. FileNotFoundError when missing and not ``create``."""
    created = False
    if create:
        try:
            os.mkdir(name, 0o700, dir_fd=dir_fd)
            created = True
        except FileExistsError:
            pass
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
            return -1, False  # a symlink or a file where a folder should be
        raise
    st = os.fstat(fd)
    if created and st.st_uid == os.geteuid():
        os.fchmod(fd, 0o700)  # mkdir's mode went through the umask
        return fd, True
    return fd, _owned_private(st)


def _private_parents(target: Path) -> None:
    """Make sure the shipping root, this process's folder and the digest folder above
    ``target`` are this user's private folders: the root is created 0700 (refused when it is
    not ours); the other two, which only this process uses, are created 0700, or replaced
    when they are not ours. This process's folder is removed when it exits
    (ship_owner.adopt), and the folders of dead processes are swept when it is first made."""
    own = target.parent.parent
    root = own.parent
    if not _OWNERS:
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        ship_owner.adopt(own)
        return
    _check_temp_parent(root.parent)
    fd, trusted = _open_private_dir(os.fspath(root), None, create=True)
    try:
        if not trusted:
            raise ShipAreaError(
                f"The shipping folder {root} is not a private folder of this user (another "
                "user's, writable by others, or a symlink): nothing ran; remove it, or point "
                "TMPDIR at a private folder"
            )
        own_fd = _private_child(fd, own)
        try:
            ship_owner.adopt(own)
            os.close(_private_child(own_fd, target.parent))
        finally:
            os.close(own_fd)
    finally:
        if fd >= 0:
            os.close(fd)


def _private_child(parent_fd: int, folder: Path) -> int:
    """An fd of ``folder`` (in the folder open as ``parent_fd``), created private, or
    replaced when it is not this user's private folder."""
    sub, trusted = _open_private_dir(folder.name, parent_fd, create=True)
    if not trusted:
        if sub >= 0:
            os.close(sub)
        _discard(folder)
        sub, trusted = _open_private_dir(folder.name, parent_fd, create=True)
        if not trusted:
            if sub >= 0:
                os.close(sub)
            raise ShipAreaError(
                f"The shipping folder {folder} is not a private folder of this user and "
                "could not be replaced: nothing ran; remove it"
            )
    return sub


def _check_temp_parent(folder: Path) -> None:
    """Refuse a temp folder where others may rename our root away (writable by them without
    the sticky bit that /tmp has)."""
    try:
        st = os.stat(folder)
    except OSError as exc:
        raise SkillMagicsError(
            f"The worker's temp folder {folder} cannot be used ({exc}): set TMPDIR to a "
            "folder of this user"
        ) from exc
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not st.st_mode & stat.S_ISVTX:
        raise ShipAreaError(
            f"The worker's temp folder {folder} is writable by other users and has no sticky "
            "bit, so they could swap a shipped skill: nothing ran; set TMPDIR to a private "
            "folder"
        )


# Copies this process checked in full (or unpacked itself): path -> (dev, inode) of the
# folder. A private root keeps everyone else out, so one full check per copy is enough.
_TRUSTED: dict[str, tuple[int, int]] = {}


def _remember_trusted(copy: Path) -> None:
    try:
        st = os.lstat(copy)
    except OSError:
        return
    if len(_TRUSTED) > 256:
        _TRUSTED.clear()
    _TRUSTED[os.fspath(copy)] = (st.st_dev, st.st_ino)


def _trusted_copy(copy: Path) -> bool:
    """Is ``copy`` a folder (not a symlink) owned by this user with no group/other write,
    and so is everything in it? False when it is missing."""
    if not _OWNERS:
        return copy.is_dir() and not copy.is_symlink()
    try:
        fd = os.open(copy, _DIR_FLAGS)
    except FileNotFoundError:
        return False
    except OSError:
        return False  # a symlink or a file: replaced
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if not _owned_private(st):
        return False
    key = os.fspath(copy)
    if _TRUSTED.get(key) == (st.st_dev, st.st_ino):
        return True
    if not _tree_private(key):
        return False
    _TRUSTED[key] = (st.st_dev, st.st_ino)
    return True


def _tree_private(top: str) -> bool:
    """Is every entry under ``top`` owned by this user, and (symlinks aside, whose mode means
    nothing) not writable by group or others?"""
    uid = os.geteuid()
    stack = [top]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    st = entry.stat(follow_symlinks=False)
                    if st.st_uid != uid:
                        return False
                    if stat.S_ISLNK(st.st_mode):
                        continue
                    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                        return False
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
        except OSError:
            return False
    return True


def _unpack_members(data: bytes, dest: Path, name: str) -> None:
    """Write the bundle's files under ``dest`` (a fresh private folder): plain relative paths
    and regular files only, created exclusively (never through a link), 0600 or 0700."""
    flags = (
        os.O_WRONLY
        | os.O_CREAT
        | os.O_EXCL
        | getattr(os, "O_NOFOLLOW", 0)
        | getattr(os, "O_CLOEXEC", 0)
        | getattr(os, "O_BINARY", 0)
    )
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
            for member in tar:
                parts = _member_parts(member.name)
                if parts is None or not member.isreg():
                    raise ShippedSkillMismatch(
                        f"The bundle of skill {name!r} holds {member.name!r}, which is not a "
                        "plain file inside the skill: refused, nothing was unpacked"
                    )
                total += member.size
                if total > MAX_BUNDLE_BYTES:
                    raise ShippedSkillMismatch(
                        f"The bundle of skill {name!r} unpacks to more than "
                        f"{MAX_BUNDLE_BYTES >> 20} MiB: refused"
                    )
                folder = dest
                for part in parts[:-1]:
                    folder = folder / part
                    try:
                        os.mkdir(folder, 0o700)
                    except FileExistsError:
                        if not stat.S_ISDIR(os.lstat(folder).st_mode):
                            raise
                source = tar.extractfile(member)
                if source is None:  # not a regular file after all
                    raise ShippedSkillMismatch(
                        f"The bundle of skill {name!r} holds {member.name!r}, which cannot be "
                        "read as a file: refused"
                    )
                mode = 0o700 if member.mode & 0o111 else 0o600
                fd = os.open(folder / parts[-1], flags, mode)
                with os.fdopen(fd, "wb") as out:
                    if hasattr(os, "fchmod"):
                        os.fchmod(fd, mode)  # whatever the umask
                    shutil.copyfileobj(source, out, 1 << 20)
                os.utime(folder / parts[-1], (member.mtime, member.mtime))
            for sub, dirs, _ in os.walk(dest):
                for d in dirs:
                    os.chmod(os.path.join(sub, d), 0o700)
    except (tarfile.TarError, EOFError, OSError, zlib.error) as exc:
        if isinstance(exc, SkillMagicsError):
            raise
        raise ShippedSkillMismatch(
            f"The bundle of skill {name!r} could not be unpacked ({exc}): refused"
        ) from exc


def _member_parts(member: str) -> tuple[str, ...] | None:
    """The parts of a member's path when it is a plain relative path, else None."""
    if not member or member.startswith("/") or "\\" in member or "\0" in member:
        return None
    parts = tuple(member.split("/"))
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def _discard(copy: Path) -> None:
    """Move ``copy`` aside (one rename in this process's own folder) and remove it; a
    symlink is removed, never followed."""
    _TRUSTED.pop(os.fspath(copy), None)
    ship_owner.remove(copy)


__all__ = [
    "MAX_BUNDLE_BYTES",
    "SHIP_DIR_NAME",
    "ShipAreaError",
    "ShippedSkillMismatch",
    "ship_root",
]
