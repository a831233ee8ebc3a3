"""Running batch items in other processes (a process pool, Dask workers) without a shared
filesystem: the approved skill folder travels with the work and is checked on arrival.

docs/architecture.md, *Batch runs*: the caller packs the skill's files into a
:class:`SkillBundle` right after the approval (refused when the files no longer have the
approved fingerprint), together with a *portable* fingerprint of exactly the bytes packed.
Each worker process unpacks it once into its temp directory, and before every item
recomputes the portable fingerprint of its copy: a copy that differs (tampered with,
corrupted, half written) is refused, the refusal is audited, and the audit records of the
item go back to the caller with its result. The item itself runs through the same core
executor as a local run (:func:`run_shipped_item`): the same checks, process group,
timeout, output caps and minimal environment.

Skills that cannot travel are refused before anything is asked to run: a skill with its own
``venv/`` (an installed environment is tied to its machine), symlinks or special files.

Where copies live (docs/architecture.md, *Batch runs*): ``$TMPDIR/skill-magics-shipped-<uid>/
<owner>/<digest>/<folder>``, where ``<owner>`` names this process (pid, start time, boot and
PID namespace: core/run/batch/ship_owner.py), ``<digest>`` hashes the packed files and ``<folder>``
is the skill folder's own last component; the skill's *name* never becomes a path. Only the
owner writes, replaces or removes anything in its folder, so another process of this user
(another kernel's workers, another test suite) can never pull a copy from under running
items; the folder goes when its process exits, and the folder of one that died without
cleaning up is swept once it is provably dead. The per-user root, the owner's folder, the
digest folder and the copy are created private (0700, whatever the umask) and trusted only
while they are real folders (never followed through a symlink) owned by this user with no
group/other write, checked from the root down before every item; a copy that fails is moved
aside and unpacked again, a root that fails refuses the item. A copy is unpacked into a fresh
private folder and renamed into place in one step, member by member with our own checks
(plain relative paths, regular files only; nothing relies on ``tarfile``'s extraction
filters, which older Pythons lack).

Example (not run as a doctest: it ships a skill to a worker process)::

    bundle = SkillBundle.pack(skill.base_dir, skill.name, approved_hash)
    copy = bundle.unpack()            # on the worker; raises ShippedSkillMismatch
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import socket
import stat
import tarfile
import tempfile
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from skill_magics.core import trace
from skill_magics.core.base import fingerprint, paths
from skill_magics.core.base.audit import AuditLog, AuditRecord, arguments_preview
from skill_magics.core.base.errors import ApprovalStale, PathSecurityError, SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.status import RunStatus
from skill_magics.core.catalog.discovery import SkillFinder
from skill_magics.core.run.batch import ship_owner
from skill_magics.core.run.settings import RunSettings
from skill_magics.core.run.warm import modes as warm_modes

MAX_BUNDLE_BYTES = 256 * 1024 * 1024  # a skill folder bigger than this is data, not a skill
SHIP_DIR_NAME = "skill-magics-shipped"  # + "-<uid>", under the worker's temp directory
DEFAULT_FOLDER = "skill"  # a copy's folder when the skill's own folder name cannot be one

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


class CancelSignal(Protocol):
    """Something a worker can poll to learn that the caller cancelled the batch."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class FileFlag:
    """A cancel signal for workers on this machine (a process pool): a file that appears."""

    path: str

    def is_set(self) -> bool:
        return os.path.exists(self.path)

    def set(self) -> None:
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(self.path, flags, 0o600))


def _open_regular(path: str) -> io.BufferedReader:
    """``path`` opened for reading only when it is a regular file, never through a link
    (the skill folder is a script's to change between the listing and the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise PathSecurityError(f"{path} is no longer a regular file: run it again") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathSecurityError(f"{path} is no longer a regular file: run it again")
    return os.fdopen(fd, "rb")


def _portable_entries(base: str | os.PathLike[str]) -> dict[str, str]:
    """fingerprint.skill_entries with the machine-bound entries made portable: big files
    (recorded by stat identity) by the sha256 of their bytes."""
    entries = fingerprint.skill_entries(base)
    out = {}
    for rel, value in entries.items():
        if value.startswith("stat:"):
            digest = hashlib.sha256()
            with _open_regular(os.path.join(base, rel)) as fh:  # never through a link
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            value = "sha256:" + digest.hexdigest()
        out[rel] = value
    return out


def portable_fingerprint(base: str | os.PathLike[str]) -> str:
    """A fingerprint of a skill folder that is the same for an identical copy elsewhere."""
    return fingerprint.fingerprint_of(_portable_entries(base))


@dataclass(frozen=True)
class SkillBundle:
    """A skill folder packed for workers: a tar.gz of its files and their portable
    fingerprint. ``approved`` is the skill fingerprint the approval was given for."""

    name: str
    data: bytes
    portable: str
    approved: str
    entries: tuple[tuple[str, str], ...] = ()  # the portable entries packed (path, digest)
    folder: str = DEFAULT_FOLDER  # the skill folder's last component (the copy's folder)

    @classmethod
    def pack(cls, base: str | os.PathLike[str], name: str, approved: str | None) -> SkillBundle:
        """Pack the skill at ``base``; ``approved`` None: the caller decided (no approval)."""
        base = os.path.realpath(base)
        folder = os.path.basename(base)
        paths.check_skill_name(name, folder)  # refused here too, not only by the planner
        if paths.folder_name_problem(folder) is not None:
            folder = DEFAULT_FOLDER
        entries = fingerprint.skill_entries(base)
        if approved is not None and fingerprint.fingerprint_of(entries) != approved:
            raise ApprovalStale(
                f"{name}: the skill's files changed after the approval was asked; nothing "
                "ran. Run it again to review the new code"
            )
        bad = [
            rel
            for rel, value in entries.items()
            if rel == fingerprint.VENV_ENTRY or not (_is_digest(value) or value.startswith("stat:"))
        ]
        if bad:
            raise PathSecurityError(
                f"Cannot ship skill {name!r} to other machines: {', '.join(bad[:3])} is a "
                "venv, symlink or special file; replace symlinks with copies, or run the "
                "batch with the local pool (pool=None)"
            )
        buf = io.BytesIO()
        total = 0
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
            for rel in entries:
                path = os.path.join(base, rel)
                info = tar.gettarinfo(path, arcname=rel)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                total += info.size
                if total > MAX_BUNDLE_BYTES:
                    raise PathSecurityError(
                        f"Cannot ship skill {name!r}: its files exceed "
                        f"{MAX_BUNDLE_BYTES >> 20} MiB; move data out of the skill folder"
                    )
                if not info.isreg():  # it became a link or a special file since the listing
                    raise PathSecurityError(
                        f"Cannot ship skill {name!r}: {rel} is no longer a regular file; "
                        "run it again"
                    )
                with _open_regular(path) as fh:  # a file swapped for a link meanwhile: refused
                    tar.addfile(info, fh)
        # What was packed must still be what was approved (a write while packing: refused).
        now = _portable_entries(base)
        if approved is not None and fingerprint.skill_fingerprint(base) != approved:
            raise ApprovalStale(
                f"{name}: the skill's files changed while they were packed for the workers; "
                "nothing ran. Run it again to review the new code"
            )
        return cls(
            name,
            buf.getvalue(),
            fingerprint.fingerprint_of(now),
            approved or "",
            tuple(now.items()),
            folder,
        )

    @property
    def digest(self) -> str:
        """The copy's folder under the shipping root: the packed files and the folder name
        (never the skill's name, which its author chose)."""
        text = f"{self.portable}\0{self.folder}".encode("utf-8", "surrogateescape")
        return hashlib.sha256(text).hexdigest()[:24]

    def location(self) -> Path:
        """Where this process keeps its copy: ``<ship_root()>/<owner>/<digest>/<folder>``
        (``<owner>``: this process, ship_owner.current())."""
        folder = self.folder if paths.folder_name_problem(self.folder) is None else DEFAULT_FOLDER
        return ship_root() / ship_owner.current().name / self.digest / folder

    def unpack(self) -> Path:
        """This process's verified copy (unpacked on first use); raises ShippedSkillMismatch
        when the copy does not have the packed fingerprint, ShipAreaError when the shipping
        folder cannot be trusted."""
        target = self.location()
        with _UNPACK_LOCK:
            try:
                _private_parents(target)
            except OSError as exc:  # e.g. a temp folder this user may not write in
                raise ShipAreaError(
                    f"The shipping folder {target.parents[2]} cannot be made ({exc}): "
                    "nothing ran; point TMPDIR at a folder of this user"
                ) from exc
            if not _trusted_copy(target):
                _discard(target)  # another user's, loose, a symlink: never used
                self._extract(target)
                if not _trusted_copy(target):
                    raise ShipAreaError(
                        f"The copy of skill {self.name!r} at {target} is not a private folder "
                        "of this user and could not be replaced: nothing ran; remove it, or "
                        "point TMPDIR at a private folder"
                    )
        try:
            self.verify(target)
        except ShippedSkillMismatch:
            # Refused (the caller audits it); the bad copy goes, so a later item or batch
            # unpacks a fresh one and checks that instead.
            _discard(target)
            raise
        return target

    def verify(self, copy: Path) -> None:
        """Raise ShippedSkillMismatch unless ``copy`` has the packed code.

        Data files a run wrote into the copy (an output in its cwd) do not count, as for a
        local approval (gate.is_current): only a change to code (``fingerprint.is_code``: a
        script, a module, SKILL.md, a deleted file) is a copy that differs.
        """
        try:
            now = _portable_entries(copy)
            got = fingerprint.fingerprint_of(now)
        except OSError as exc:
            now, got = {}, f"unreadable ({exc})"
        if got != self.portable and now and self.entries:
            changed = fingerprint.changed_entries(dict(self.entries), now)
            if not any(fingerprint.is_code(copy, rel) for rel in changed):
                return
        if got != self.portable:
            raise ShippedSkillMismatch(
                f"The copy of skill {self.name!r} at {copy} on {socket.gethostname()} does not "
                f"have the approved fingerprint ({got[:12]} instead of {self.portable[:12]}): "
                "refused, and that copy was removed (the next item unpacks a fresh one)"
            )

    def _extract(self, target: Path) -> None:
        """Unpack into a fresh private folder next to ``target``, then rename it into place."""
        parent = target.parent
        try:
            staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=parent))
        except OSError as exc:
            raise SkillMagicsError(
                f"Could not unpack skill {self.name!r} into {parent}: {exc}; check the "
                "worker's temp directory"
            ) from exc
        try:
            os.chmod(staging, 0o700)  # whatever the umask
            _unpack_members(self.data, staging, self.name)
            try:
                os.rename(staging, target)  # atomic: the copy appears whole or not at all
            except OSError as exc:
                # Something is there already (only this process writes in its folder, so
                # never another's copy): the caller checks whatever is there before use.
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise SkillMagicsError(
                        f"Could not unpack skill {self.name!r} into {parent}: {exc}; check "
                        "the worker's temp directory"
                    ) from exc
            else:
                _remember_trusted(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


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


def _is_digest(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True)
class ShippedBatch:
    """What every item of a shipped batch shares (sent once per worker on Dask)."""

    batch_id: str
    bundle: SkillBundle
    script: str  # relative to the skill
    # The caller's run settings as they are (docs/architecture.md, *Batch runs*): workers
    # check and isolate items the same way, and refuse a run whose explicit sandbox mode
    # they cannot provide. run_cwd "skill" is the worker's copy, "workspace" the worker's own
    # folder, a path must exist there. Secret values never travel: a skill that declares
    # secrets is refused on a worker (nothing to give it). They are the batch's own (its
    # time limit, sandbox, cwd, start: RunSettings.for_run); one warm server per worker
    # process.
    settings: RunSettings
    cancel: CancelSignal


@dataclass
class ShippedOutcome:
    """What a worker sends back for one item: its end, and the audit records it made."""

    index: int
    status: RunStatus
    result: ScriptExecutionResult | None
    message: str
    records: list[AuditRecord]
    worker: str
    pid: int


# Per worker process: one executor and finder for the batch being run (rebuilt when the
# settings or the copy change), so items keep its caches; audit records go to the item's
# thread (_ThreadAudit) and travel back with its outcome.
_WORKER_STATE: dict[str, Any] = {}
_STATE_LOCK = threading.Lock()
# batch id -> this process's cancel event for it, set by one watcher thread per batch.
_CANCELS: dict[str, tuple[threading.Event, list[float]]] = {}
WATCH_IDLE_S = 60.0  # a watcher whose batch ran nothing here for this long ends


def _worker_name() -> str:
    try:
        from distributed import get_worker  # only present on Dask workers

        return str(get_worker().address)
    except Exception:  # noqa: BLE001 - not a Dask worker (a process pool)
        return f"{socket.gethostname()}:{os.getpid()}"


class _ThreadAudit(AuditLog):
    """The worker's audit log: logs there as usual, and hands each record to the item that
    the recording thread is running (``start`` / ``collected``)."""

    def __init__(self) -> None:
        super().__init__(keep=64)
        self._local = threading.local()

    def start(self) -> list[AuditRecord]:
        self._local.collected = []
        return self._local.collected

    def record(self, rec: AuditRecord) -> AuditRecord:
        collected = getattr(self._local, "collected", None)
        if collected is not None:
            collected.append(rec)
        return super().record(rec)


def _state(batch: ShippedBatch, copy: Path) -> tuple[Any, Any, _ThreadAudit]:
    from skill_magics.core.catalog.detect import ScriptDetector
    from skill_magics.core.catalog.requirements_cache import RequirementsCache
    from skill_magics.core.run.executor import ScriptExecutor
    from skill_magics.core.run.plan import Planner
    from skill_magics.core.run.warm.launch import preload_names

    key = (batch.settings, str(copy))
    with _STATE_LOCK:
        if _WORKER_STATE.get("key") != key:
            audit = _ThreadAudit()
            detector = ScriptDetector(allow_typescript=batch.settings.allow_typescript)
            finder = SkillFinder([copy.parent], detector=detector)
            requirements = RequirementsCache()

            def preload(prepared: Any) -> tuple[str, ...]:
                reqs = requirements.for_run(finder.get_skill(prepared.skill_name))
                return preload_names(reqs, prepared.script_rel.as_posix())

            executor = ScriptExecutor(audit=audit, preload=preload)
            planner = Planner(finder, executor.checks, executor.secrets)
            _WORKER_STATE.clear()
            _WORKER_STATE.update(key=key, state=(executor, planner, audit))
        state: tuple[Any, Any, _ThreadAudit] = _WORKER_STATE["state"]
        return state


def _cancel_event(batch: ShippedBatch) -> threading.Event:
    """This process's cancel event for ``batch``: ONE watcher thread per batch polls the
    caller's signal (a Dask Event: a scheduler round trip), not one per item."""
    with _STATE_LOCK:
        entry = _CANCELS.get(batch.batch_id)
        if entry is None:
            bind = getattr(batch.cancel, "bind", None)
            if bind is not None:
                bind()  # a Dask Event binds to the worker's client here, in the task's thread
            entry = (threading.Event(), [time.monotonic()])
            _CANCELS[batch.batch_id] = entry
            threading.Thread(
                target=_watch,
                args=(batch.batch_id, batch.cancel, entry),
                name="skill-magics-cancel",
                daemon=True,
            ).start()
        entry[1][0] = time.monotonic()
        return entry[0]


def _watch(batch_id: str, signal: CancelSignal, entry: tuple[threading.Event, list[float]]) -> None:
    event, last_used = entry
    wait: Callable[[float], object] = getattr(signal, "wait", None) or event.wait
    try:
        while not event.is_set():
            if signal.is_set():
                event.set()
                return
            if time.monotonic() - last_used[0] > WATCH_IDLE_S:
                return
            wait(0.2)
    finally:
        with _STATE_LOCK:
            if _CANCELS.get(batch_id) is entry and not event.is_set():
                del _CANCELS[batch_id]


def run_shipped_item(
    batch: ShippedBatch,
    index: int,
    arguments: Any,
    argv: tuple[str, ...] | None,
    traceparent: Mapping[str, str] | None = None,
) -> ShippedOutcome:
    """Run one item on a worker: verify the copy, plan through the core checks, execute.

    Never raises for a refusal: the outcome carries the status, the message and every
    audit record made here, for the caller's audit log. ``traceparent``: the W3C context
    of the item's span in the caller (``TRACEPARENT``, ``TRACESTATE``): the script gets it
    (its own spans join the batch's trace) and, when the worker traces too (its own
    OpenTelemetry variables), the worker's run span is that span's child.
    """
    worker = _worker_name()
    name = batch.bundle.name
    cancel = _cancel_event(batch)
    collected: list[AuditRecord] = []

    def outcome(status: RunStatus, result: Any = None, message: str = "") -> ShippedOutcome:
        return ShippedOutcome(index, status, result, message, collected, worker, os.getpid())

    if cancel.is_set():
        return outcome(RunStatus.CANCELLED, message="the batch was stopped before it started")
    started = time.monotonic()
    try:
        copy = batch.bundle.unpack()
    except SkillMagicsError as exc:
        audit = AuditLog(keep=1)
        collected.append(
            audit.refused(
                name,
                batch.script,
                arguments_preview(arguments, argv),
                exc,
                duration_ms=(time.monotonic() - started) * 1000,
            )
        )
        return outcome(RunStatus.REFUSED, message=str(exc))
    executor, planner, thread_audit = _state(batch, copy)
    collected = thread_audit.start()
    try:
        _, prepared = planner.check_script(batch.settings, name, batch.script, arguments, argv)
        prepared = replace(prepared, warm_start=warm_modes.in_batch(prepared.warm_start))
        carrier = {k: v for k, v in (traceparent or {}).items() if k in trace.RUN_VARS}
        if carrier and not trace.refresh():  # not tracing here: the script joins directly
            kept = {k: v for k, v in prepared.env.items() if k not in trace.RUN_VARS}
            prepared = replace(prepared, env={**kept, **carrier})
        with trace.joined(carrier):
            result = executor.run(prepared, cancel=cancel)
    except SkillMagicsError as exc:  # refused before spawning (audited)
        return outcome(RunStatus.REFUSED, message=str(exc))
    status = RunStatus.INTERRUPTED if cancel.is_set() and not result.success else result.status
    return outcome(status, result)


def new_file_flag() -> FileFlag:
    return FileFlag(os.path.join(tempfile.gettempdir(), f"skill-magics-cancel-{uuid.uuid4().hex}"))


__all__ = [
    "CancelSignal",
    "FileFlag",
    "ShippedBatch",
    "ShippedOutcome",
    "ShippedSkillMismatch",
    "SkillBundle",
    "new_file_flag",
    "portable_fingerprint",
    "run_shipped_item",
]
