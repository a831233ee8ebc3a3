"""Which process owns a folder of shipped skill copies, and when it provably no longer runs.

docs/architecture.md, *Batch runs*: every process that unpacks shipped skills (a process
pool worker, a Dask worker) keeps its copies in a folder of its own under the per-user
shipping root, named ``<pid>-<start>-<host>``: its pid, its start time (``/proc/<pid>/stat``
field 22, clock ticks since boot; a random number where there is no /proc) and a digest of
the boot and PID namespace it runs in (pids are only comparable within one). Only the owner
creates, replaces or removes anything in its folder, so no process can pull a copy from
under another's running items; the owner removes its folder when it exits (``atexit`` and
``multiprocessing``'s finalizers: pool and Dask worker processes leave through those, not
through ``atexit``).

The folder of a process that could not clean up (killed, crashed) is swept by the next
process of this user that starts or stops using the root, and ONLY when its owner is
provably dead: same boot and namespace, and no process with that pid has that start time.
Anything else (another host sharing the folder, another container, a name we do not know)
is left alone. The sweep renames a folder aside in one step (``.gone-<sweeper>.<random>``)
and then removes it, so a half-removed folder is never mistaken for a copy, and an aside
folder whose remover died is swept the same way.

Example:
    >>> me = current()
    >>> Owner.parse(me.name) == me    # e.g. '4242-1234567-0123456789ab'
    True
    >>> is_dead(me)                   # True only if provably gone
    False
"""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import secrets
import shutil
import socket
import stat
import sys
import threading
import uuid
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from skill_magics.core.base.safefs import DIR_FLAGS, remove_aside

GONE_PREFIX = ".gone-"  # + the remover's name + "." + random: a folder being removed
_NAME = re.compile(r"([0-9]{1,10})-([0-9]{1,20})-([0-9a-f]{12})")
_GONE = re.compile(re.escape(GONE_PREFIX) + _NAME.pattern + r"\.[0-9a-f]{1,32}")


@dataclass(frozen=True)
class Owner:
    """A process as its folder names it."""

    pid: int
    start: int  # clock ticks since boot (/proc/<pid>/stat field 22), or a random number
    host: str  # 12 hex digits: the boot and PID namespace the pid belongs to

    @property
    def name(self) -> str:
        return f"{self.pid}-{self.start}-{self.host}"

    @classmethod
    def parse(cls, name: str) -> Owner | None:
        """The owner a folder name gives, or None when it is not an owner's name."""
        match = _NAME.fullmatch(name)
        if match is None:
            return None
        return cls(int(match[1]), int(match[2]), match[3])


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat`` (start time, clock ticks since boot); None when no
    such process exists. OSError when it cannot be told (no /proc, no permission)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    fields = data[data.rfind(b")") + 2 :].split()
    try:
        return int(fields[19])
    except (IndexError, ValueError) as exc:
        raise OSError(f"unreadable /proc/{pid}/stat") from exc


class Mode(StrEnum):
    """How a process tells whether another one still runs."""

    PROC = "proc"  # /proc shows this PID namespace: pid and start time
    KILL = "kill"  # macOS, BSD (no /proc): os.kill(pid, 0); the start is a random number
    NONE = "none"  # neither can be trusted (Windows, Linux without our /proc): never swept


def _identity() -> tuple[Mode, int, str]:
    """(mode, start, host tag) of this process."""
    pid = os.getpid()
    host = socket.gethostname()
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as fh:
            host = fh.read().strip()  # this machine since it booted
    except OSError:
        pass
    try:
        namespace = os.readlink("/proc/self/ns/pid")
        with open("/proc/self/stat", "rb") as fh:
            mine = int(fh.read().split(None, 1)[0]) == pid  # /proc of our namespace
        start = start_time(pid) if mine else None
    except (OSError, ValueError):
        namespace, start = "", None
    nonce = secrets.randbits(62) + 1  # a start no later process repeats
    if start is not None:
        mode, bits = Mode.PROC, [Mode.PROC, host, namespace]
    elif os.name == "posix" and sys.platform != "linux":  # macOS, BSD: one pid space
        mode, bits, start = Mode.KILL, [Mode.KILL, host], nonce
    else:
        mode, bits, start = Mode.NONE, [Mode.NONE, host, str(nonce)], nonce
    text = "\0".join(bits).encode("utf-8", "surrogateescape")
    return mode, start, hashlib.sha256(text).hexdigest()[:12]


_CURRENT: dict[int, tuple[Owner, Mode]] = {}  # pid -> (this process, its Mode)
_LOCK = threading.Lock()


def _me() -> tuple[Owner, Mode]:
    pid = os.getpid()
    found = _CURRENT.get(pid)
    if found is None:
        with _LOCK:  # once per process (a forked child gets its own): one random start
            found = _CURRENT.get(pid)
            if found is None:
                mode, start, host = _identity()
                found = (Owner(pid, start, host), mode)
                _CURRENT.clear()
                _CURRENT[pid] = found
    return found


def _after_fork() -> None:
    global _LOCK
    _LOCK = threading.Lock()  # a thread of the parent may have held it at the fork


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def current() -> Owner:
    """This process, as its folder is named."""
    return _me()[0]


def is_dead(owner: Owner) -> bool:
    """True only when ``owner`` provably no longer runs: it belongs to this boot and PID
    namespace (the host tag says so, and how it is told), and no process with its pid has
    its start time (without /proc: no process has its pid). Anything else is alive."""
    me, mode = _me()
    if owner.host != me.host or owner == me or mode == Mode.NONE:
        return False
    if mode == Mode.PROC:
        try:
            return start_time(owner.pid) != owner.start
        except OSError:
            return False
    try:
        os.kill(owner.pid, 0)
    except ProcessLookupError:
        return True
    except OSError:
        return False  # EPERM: it exists (another user's now)
    return False


def remove(path: Path) -> None:
    """Move ``path`` aside (one rename inside its folder, named after this process) and
    remove it; a symlink or file is unlinked, never followed."""
    try:
        parent = os.open(path.parent, DIR_FLAGS)
    except OSError:
        return
    try:
        remove_aside(parent, path.name, f"{GONE_PREFIX}{current().name}.{uuid.uuid4().hex}")
    except OSError:
        pass
    finally:
        os.close(parent)


def sweep(root: Path) -> list[str]:
    """Remove the folders under ``root`` whose owner (or, for an aside folder, remover) is
    provably dead; returns their names. Everything else is left alone."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    removed = []
    for name in names:
        aside = _GONE.fullmatch(name) is not None
        owner = Owner.parse(name[len(GONE_PREFIX) :].partition(".")[0] if aside else name)
        if owner is None or not is_dead(owner):
            continue
        path = root / name
        if aside:
            try:
                if stat.S_ISDIR(os.lstat(path).st_mode):
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    os.unlink(path)
            except OSError:
                continue
        else:
            remove(path)
        removed.append(name)
    return removed


_ADOPTED: dict[int, set[Path]] = {}  # pid -> the folders it removes at exit


def adopt(folder: Path) -> bool:
    """Note that this process owns ``folder`` (``<root>/<current().name>``): it is removed
    when the process exits, and the folders of dead owners next to it are swept now and
    then. True the first time for this folder in this process."""
    pid = os.getpid()
    with _LOCK:
        mine = _ADOPTED.get(pid)
        if mine is None:  # first in this process (a forked child inherits its parent's)
            _ADOPTED.clear()
            mine = _ADOPTED[pid] = set()
        if folder in mine:
            return False
        mine.add(folder)
    atexit.register(_release, pid, folder)
    try:
        from multiprocessing import util

        # Pool and Dask worker processes end with os._exit after these, never atexit.
        util.Finalize(None, _release, args=(pid, folder), exitpriority=0)
    except Exception:  # noqa: BLE001 - no multiprocessing here: atexit only
        pass
    sweep(folder.parent)
    return True


def _release(pid: int, folder: Path) -> None:
    """At exit: this process's folder goes (never a parent's: a forked child inherits the
    registration), and so do the folders of owners that died."""
    with _LOCK:
        mine = _ADOPTED.get(pid)
        if os.getpid() != pid or mine is None or folder not in mine:
            return
        mine.discard(folder)
    remove(folder)
    sweep(folder.parent)


__all__ = [
    "GONE_PREFIX",
    "Mode",
    "Owner",
    "adopt",
    "current",
    "is_dead",
    "remove",
    "start_time",
    "sweep",
]
