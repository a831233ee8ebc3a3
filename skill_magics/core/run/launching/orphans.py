"""Daemons that leave an unsandboxed run's process group die with the run (Linux).

A script that daemonizes (``setsid`` and a double fork, ``nohup cmd &`` plus ``disown``,
python-daemon) leaves the run's process group, so the group kill misses it, and its parent
exits at once, so the process-tree snapshots (core/run/launching/process.py) may never see it. Two
things find it anyway:

- **A child subreaper.** While at least one run is in progress, the executor's process (the
  kernel) is a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``): a process whose parent
  dies is re-parented to it instead of to init, so every orphan of a run is a direct child of
  the kernel at the end of the run. The flag is on only during runs (counted across threads),
  so orphans of other code in the kernel outside runs still go to init as before.
- **The run's id.** Each run's environment carries ``SKILL_MAGICS_RUN_ID`` (random, per run),
  which every descendant inherits. At the end of the run, the kernel's direct children whose
  environment holds this run's id are the run's orphans: they and everything below them get
  the run's signals. Other children of the kernel (Jupyter's, a ``subprocess`` call of your
  own, another run's) never carry it and are never touched.

Cost: when a run's main process has exited and the kernel's main thread has no other child,
nothing of the run is left (its living descendants were re-parented here when it exited),
so the end of the run takes one read of ``/proc/self/task/PID/children`` and no zombie sweep.

Orphans are held by pidfd from the moment they are found, so a signal or a wait never hits a
recycled pid, and the ones that are the kernel's children are reaped (a subreaper must reap
what it inherits, or they stay zombies); the kernel's other children are never waited for, so
their owners (``Popen.wait``) still get their exit status.

What escapes: a descendant that clears its environment (``env -i``) *and* leaves the group
and loses its parent between two tree snapshots; and everything on systems without
``PR_SET_CHILD_SUBREAPER``/pidfd (macOS, Windows, Linux < 5.4), where only the snapshots
apply. Sandboxed runs need none of this: their PID namespace dies with them.

Zombies left: the middle process of a double fork whose daemon had already exited before the
run ended (nothing alive links it to the run, and it looks like a child the kernel started
in a session of its own, whose status its owner may still want) stays a zombie, holding one
process-table entry, until the kernel exits.
"""

from __future__ import annotations

import itertools
import logging
import os
import secrets
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable

logger = logging.getLogger("skill_magics.executor")

RUN_ID_VAR = "SKILL_MAGICS_RUN_ID"
PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h
REAP_WAIT_S = 0.5  # how long the end of a run waits for killed orphans to be reaped

_LINUX = sys.platform.startswith("linux")
_HAS_PIDFD = (
    _LINUX
    and hasattr(os, "pidfd_open")
    and hasattr(os, "P_PIDFD")
    and hasattr(signal, "pidfd_send_signal")
)


class _Subreaper:
    """The kernel process as a child subreaper while runs are in progress (counted)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._count = 0
        self._prctl: Callable[..., int] | None = None
        self.broken = not _HAS_PIDFD  # no prctl or no pidfd: nothing to do here

    def _set(self, on: bool) -> bool:
        if self._prctl is None:
            try:
                import ctypes

                libc = ctypes.CDLL(None, use_errno=True)
                self._prctl = libc.prctl
            except (OSError, AttributeError):
                self.broken = True
                return False
        if self._prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0) != 0:  # seccomp, old kernel
            self.broken = True
            logger.info("Cannot make this process a child subreaper: orphans go to init")
            return False
        return True

    def enter(self) -> bool:
        """One more run in progress; True when orphans now come to this process."""
        with self._lock:
            if self.broken:
                return False
            if self._count == 0 and not self._set(True):
                return False
            self._count += 1
            return True

    def leave(self) -> None:
        with self._lock:
            if self._count == 0:
                return
            self._count -= 1
            if self._count == 0:
                self._set(False)

    @property
    def active(self) -> bool:
        with self._lock:
            return self._count > 0


SUBREAPER = _Subreaper()


class _RunIds:
    """Run ids: a random prefix per process, then a counter. Unique is what matters (a
    process carrying another run's id only gets itself killed by that run, and one that
    wants to escape can clear its environment anyway), so one random draw per process
    instead of one per run (a system call)."""

    def __init__(self) -> None:
        self._reset()
        if hasattr(os, "register_at_fork"):  # a forked copy of this process draws anew
            os.register_at_fork(after_in_child=self._reset)

    def _reset(self) -> None:
        self.prefix = secrets.token_hex(5)
        self.count = itertools.count(1)  # next() is atomic under the GIL
        self.pid = os.getpid()  # this process, without a system call per run
        self.children = f"/proc/{self.pid}/task/{self.pid}/children"  # its main thread's

    def new(self) -> str:
        return f"{self.prefix}{next(self.count):06x}"


_IDS = _RunIds()


def new_run_id() -> str:
    return _IDS.new()


def run_id_prefix() -> str:
    """What every run id of this process starts with (a watcher looks for it)."""
    return _IDS.prefix


_SHORT_READ = 2048

# This process's own helpers that are its children but never a run's (core/run/launching/warden.py):
# a look for a run's orphans skips them, so the end of a run still settles in one look.
OWN: set[int] = set()


def _read_proc(path: str, seq_file: bool = False) -> bytes:
    """A small /proc file whole: open, read to EOF, close (no buffered file object: this
    runs at the end of every run).

    ``seq_file``: the file is a list of small records (``task/TID/children``). Such a read
    stops short of the request only at the end of the list or when the next record does
    not fit the kernel's buffer (a page at least, fs/seq_file.c); so a read of less than
    ``_SHORT_READ`` bytes, with records of a few bytes, was the end: no second read."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunk = os.read(fd, 65536)
        if seq_file and len(chunk) < _SHORT_READ:
            return chunk
        chunks = [chunk]
        while chunk:
            chunk = os.read(fd, 65536)
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


def _children(pid: int) -> list[int]:
    """Direct children of every thread of ``pid``."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        try:
            found = _read_proc(f"/proc/{pid}/task/{tid}/children", seq_file=True)
            out.extend(int(x) for x in found.split())
        except (OSError, ValueError):
            continue
    return out


WARM_GUARD = "skm-warm-guard"  # warm/zygote.py GUARD_NAME (this rank cannot import it)


def _comm(pid: int) -> str:
    """A process's name (a zombie keeps it), "" when it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return ""


def _adopted() -> list[int]:
    """This process's children that an orphan can be among: those of its main thread.

    An orphan goes to the first live thread of its subreaper (kernel/exit.c,
    find_new_reaper: find_alive_thread walks the thread list from the group leader; so
    since Linux 3.19, and pidfd, which this needs, came in 5.3), so while the main thread
    lives one read of its children file finds every orphan, where a kernel's 5-10 threads
    cost a read each. The other threads' children are processes this process forked itself
    (a run's main process, a Popen elsewhere), never a run's orphans. CPython's main thread
    lives as long as the process (it returns into exit(), never pthread_exit()); while the
    interpreter shuts down, every thread's list is read anyway.
    """
    me = _IDS.pid
    if sys.is_finalizing():
        return _children(me)
    try:
        return list(map(int, _read_proc(_IDS.children, True).split()))
    except (OSError, ValueError):
        return _children(me)


def _stat(pid: int) -> tuple[str, int, int] | None:
    """(state, process group, session) of ``pid`` from /proc/PID/stat; None when gone."""
    try:
        data = _read_proc(f"/proc/{pid}/stat")
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2 :].split()  # after "pid (comm) ": comm may hold ")"
    try:
        return fields[0].decode(), int(fields[2]), int(fields[3])
    except (IndexError, ValueError):
        return None


def _carries(pid: int, marker: bytes) -> bool:
    try:
        return marker in _read_proc(f"/proc/{pid}/environ").split(b"\0")
    except OSError:  # gone, or a zombie (no environment left)
        return False


def _readable(pid: int) -> bool:
    try:
        _read_proc(f"/proc/{pid}/environ")
    except OSError:
        return False
    return True


class Orphans:
    """The run's processes outside its group, held by pidfd (see the module docstring)."""

    def __init__(self, run_id: str) -> None:
        self.marker = f"{RUN_ID_VAR}={run_id}".encode()
        self.held: dict[int, int] = {}  # pid -> pidfd
        self.leaders: set[int] = set()  # the held processes' session and group leaders
        # A look found nothing of the run left: its main process had exited and no orphan
        # (alive or a zombie) was there. Nothing can be re-parented here after that.
        self.settled = False
        self.last_look: frozenset[int] = frozenset()  # the kernel's children the last look saw
        # The last look found a child of this process alive whose environment it could not
        # read: one exiting (its mm gone), whose children come here only once it is done.
        self.unsure = False

    def collect(self, exclude: int, exited: bool = False) -> set[int]:
        """Find the kernel's children carrying this run's id, and everything below them,
        below the processes held already and below the run's main process (``exclude``,
        never held itself: its own Popen reaps it). Returns the pids newly held.

        Called before each kill and again after it (core/run/launching/containment.py), so a process
        forked meanwhile (in a SIGTERM handler, by a pid-hopper) is found by a later look:
        what a held process forks is its child until it dies, then this process's.

        ``exited``: the run's main process (``exclude``) has exited. Its living descendants
        were then re-parented here at its exit (before it became a zombie, which is what
        told us it exited), and theirs are below them; so when this look finds no child but
        it, nothing of the run is left anywhere, nor can become this process's child later:
        :meth:`reap_zombies` has nothing to look for (``settled``)."""
        me = _IDS.pid
        adopted = _adopted()
        if exclude in adopted:
            adopted.remove(exclude)
        if OWN:
            adopted = [pid for pid in adopted if pid not in OWN]
        self.last_look = frozenset(adopted)
        if exited and not adopted and not self.held:
            self.settled = True
            return set()
        stack = self._marked(adopted)
        stack.extend(self.held)
        stack.append(exclude)  # the main process's descendants (none once it has exited)
        return self._hold_below(stack, exclude, me)

    def _marked(self, adopted: list[int]) -> list[int]:
        """The adopted children not held yet that carry the run's id; ``unsure`` says whether
        one could not be read while it was still alive."""
        marked = []
        self.unsure = False
        for pid in adopted:
            if pid in self.held:
                continue
            if _carries(pid, self.marker):
                marked.append(pid)
            elif not self.unsure:  # unreadable and not a zombie: exiting (a hopper hopping)
                found = _stat(pid)
                self.unsure = found is not None and found[0] not in "ZX" and not _readable(pid)
        return marked

    def _hold_below(self, stack: list[int], exclude: int, me: int) -> set[int]:
        """Hold every process in ``stack`` and below it (never ``exclude`` or ``me``
        themselves); the pids newly held."""
        walked: set[int] = set()
        new: set[int] = set()
        while stack:
            pid = stack.pop()
            if pid in walked or pid == me:
                continue
            walked.add(pid)
            if pid != exclude and pid not in self.held:
                try:
                    self.held[pid] = os.pidfd_open(pid)
                except OSError:  # already gone
                    continue
                new.add(pid)
                found = _stat(pid)
                if found is not None:
                    self.leaders.update(found[1:])
            stack.extend(_children(pid))
        return new

    def hold(self, pids: Iterable[int]) -> None:
        """Hold these processes too (the run's descendants the tree snapshots saw), so they
        are signalled and, once they are this process's children, reaped."""
        for pid in pids:
            if pid not in self.held:
                try:
                    self.held[pid] = os.pidfd_open(pid)
                except OSError:  # gone since
                    continue

    def running(self, also: int = 0) -> bool:
        """Is a held process (or ``also``) neither stopped nor dead yet? A SIGSTOP sent to
        a process in the middle of a fork stops it only once the fork is done."""
        for pid in (*self.held, also) if also else self.held:
            found = _stat(pid)
            if found is not None and found[0] not in "TtZXx":
                return True
        return False

    def own_sessions(self, pids: Iterable[int]) -> set[int]:
        """The process groups of these held processes that sit in a session other than
        this process's: such a session was made by a process of the run (``setsid``), so
        every member descends from the run, and one ``killpg`` reaches a member whatever
        its pid is by then (a pid-hopper keeps its group as it hops)."""
        mine = os.getsid(0)
        groups: set[int] = set()
        for pid in pids:
            found = _stat(pid)
            fd = self.held.get(pid)
            if found is None or fd is None or found[2] in (mine, 0):
                continue
            try:  # still the held process (a pid read after it was gone could be reused)
                signal.pidfd_send_signal(fd, 0)
            except OSError:
                continue
            groups.update(found[1:])
        return groups

    def signal(self, sig: int, pids: Iterable[int] | None = None) -> None:
        """Send ``sig`` to the held processes (only ``pids`` among them, when given)."""
        fds = self.held.values() if pids is None else [self.held[p] for p in pids]
        for fd in fds:
            try:
                signal.pidfd_send_signal(fd, sig)
            except OSError:  # exited already
                continue

    def reap(self, wait: float = REAP_WAIT_S) -> list[int]:
        """Wait (bounded) for the held processes to exit; reap those that are this
        process's children. Returns the pids still alive at the deadline."""
        if not self.held:
            return []
        deadline = time.monotonic() + wait
        pending = dict(self.held)
        while pending:
            for pid, fd in list(pending.items()):
                try:
                    done = os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG)
                except ChildProcessError:
                    # Not (or no longer) our child: once it has exited its parent reaps it;
                    # if that parent dies first, it is re-parented here, so look again.
                    try:
                        signal.pidfd_send_signal(fd, 0)
                    except ProcessLookupError:
                        del pending[pid]  # reaped by its parent
                    continue
                except OSError:
                    del pending[pid]
                    continue
                if done is not None:
                    del pending[pid]
            left = deadline - time.monotonic()
            if not pending or left <= 0:
                break
            # Wakes when one exits; a zombie that is not ours keeps its pidfd readable, so
            # never spin faster than every 2 ms.
            select.select(list(pending.values()), [], [], min(left, 0.01))
            time.sleep(min(0.002, max(deadline - time.monotonic(), 0)))
        return list(pending)

    def reap_zombies(self, run_pgid: int, seen: Callable[[int], bool] | None = None) -> int:
        """Reap this process's zombie children that exited before they could be seen (a
        zombie has no environment left to read) when they surely are no one else's to wait
        for: a session or group leader of the run's held processes (the middle process of a
        double fork), a member of the run's group, one the run's process-tree snapshots saw
        (``seen``: same pid and creation time), or one whose session is neither this
        process's nor its own (it was re-parented here: nothing here forked it). A child
        this process forked itself (a ``Popen`` elsewhere in the kernel, the run's main
        process) never matches, so its owner still gets its exit status. Returns how many
        were reaped."""
        if self.settled:
            return 0
        mine = os.getsid(0)
        reaped = 0
        for pid in _adopted():
            if pid == run_pgid:
                continue  # the run's main process: its Popen reaps it, with its status
            found = _stat(pid)
            if found is None or found[0] != "Z":
                continue
            _state, pgid, sid = found
            ours = pid in self.leaders or pgid == run_pgid or sid not in (mine, pid)
            # A warm server's guard whose server died was re-parented here (warm/zygote.py).
            ours = ours or _comm(pid) == WARM_GUARD
            if not ours and seen is not None:
                ours = seen(pid)
            if not ours:
                continue
            try:
                if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG) is not None:
                    reaped += 1
            except ChildProcessError:
                continue
        return reaped

    def close(self) -> None:
        for fd in self.held.values():
            os.close(fd)
        self.held.clear()


__all__ = ["OWN", "Orphans", "RUN_ID_VAR", "SUBREAPER", "new_run_id", "run_id_prefix"]
