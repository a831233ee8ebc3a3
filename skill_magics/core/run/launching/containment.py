"""A run's processes killed as one unit, and killed with the kernel (Linux, unsandboxed runs).

**The kill** (:func:`kill_run`, the end of every unsandboxed run that left something behind:
timeout, Stop, interrupt, background children). Where the run has a cgroup of its own
(core/run/launching/cgroups.py: a writable cgroup v2 here), ``cgroup.kill`` first: every process in
it dies at once, forks in flight included. Then, and alone where there is no cgroup, the
look-and-kill: one look at the run's processes and one signal is not enough. A process may
fork between the look and the signal (a SIGTERM handler that forks a sleeper, a daemon that
changes pid every few milliseconds: fork, the parent exits), and its new child is in no
list. So the kill *stops* (SIGSTOP, which nothing can catch or ignore) the main process, its
group and every process a look finds, and the process group of every session a process of
the run made (such a session holds only the run's processes; one ``kill(-pgid)`` reaches a
pid-hopper whatever its pid is by then: it keeps its group as it hops), then looks again,
until a look finds nothing new (bounded by ``SWEEP_S``); a stopped process forks no more,
so the looks converge. Then everything found is SIGKILLed. What one look finds
(orphans.py): the kernel's children carrying the run's id (this process is a child
subreaper during runs, so every orphan of the run is one), and everything below them, below
the run's main process and below every process held already (each held by pidfd: a
recycled pid is never hit). Why a cgroup and not a PID namespace per unsandboxed run:
docs/security.md. Sandboxed runs have their namespace already.

A run that exited and left nothing costs what it did before: one read of the kernel's
children list tells that nothing of the run is left (``Orphans.settled``).

**The kernel's death** (:class:`Watch`): a SIGKILLed kernel runs no ``atexit``, and a cold
run's processes are the kernel's children, re-parented to init when it dies. A watcher
(warden.py, one per kernel, started at its first unsandboxed run, in a process group
of its own so a kill of the kernel's group misses it) holds a pidfd of the kernel; the
kernel tells it each run's process group as the run starts and ends (a line on a pipe, a few
microseconds). When the kernel dies, the watcher stops and kills every process in those
groups or carrying one of the kernel's run ids (``SKILL_MAGICS_RUN_ID``), looking again until
a look finds nothing new, then exits; the kernel's folder of run cgroups is killed whole
first. Warm runs are covered the same way (their server
dies with the kernel, and their daemons carry the run id too).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol

from skill_magics.core.run.launching.cgroups import RUN_CGROUPS, RunCgroup
from skill_magics.core.run.launching.orphans import OWN, Orphans, run_id_prefix

logger = logging.getLogger("skill_magics.executor")

SWEEP_S = 1.0  # how long the kill goes on finding what the run forks meanwhile
_LINUX = sys.platform.startswith("linux")


class _Run(Protocol):  # what kill_run needs of a process.Child
    pid: int

    def kill(self, sig: int) -> None: ...


def kill_run(
    child: _Run,
    held: Orphans,
    exited: bool,
    seen: Callable[[], list[int]] | None = None,
    kill_group: Callable[[int, int], None] | None = None,
    cgroup: RunCgroup | None = None,
) -> None:
    """SIGKILL the run as one unit (module docstring): its cgroup first when it has one,
    then stop what each look finds until a look finds nothing new, and kill it all.
    ``exited``: the main process has surely exited (a run that left nothing then costs one
    look). ``seen``: pids the process-tree snapshots saw (held too)."""
    pgid = child.pid
    group = kill_group or _kill_group
    if cgroup is not None:
        # What the run orphaned is held first: once killed, its environment is gone, it
        # could no longer be told from another child here and would stay a zombie.
        held.collect(pgid, exited=exited)
        cgroup.kill()  # everything still in it, forks in flight included
    if exited:
        if cgroup is None:
            held.collect(pgid, exited=True)
        if held.settled:
            group(pgid, signal.SIGKILL)  # members re-parented here would have unsettled it
            return
    if seen is not None:
        held.hold(pid for pid in seen() if pid != pgid)
    sessions = _stop_until_still(child, held, exited, group)
    if not exited:
        child.kill(signal.SIGKILL)
    group(pgid, signal.SIGKILL)
    for other in sessions:
        group(other, signal.SIGKILL)
    held.signal(signal.SIGKILL)


def _stop_until_still(
    child: _Run, held: Orphans, exited: bool, group: Callable[[int, int], None]
) -> set[int]:
    """SIGSTOP the run's main process, its group, what each look holds and the groups of the
    sessions it made, until a look finds nothing new (or SWEEP_S passed); those groups."""
    pgid = child.pid
    stopped: set[int] = set()
    sessions: set[int] = set()  # groups in sessions the run made: killed whole
    end = time.monotonic() + SWEEP_S
    before: frozenset[int] | None = None
    while True:
        if not exited:
            child.kill(signal.SIGSTOP)
        group(pgid, signal.SIGSTOP)
        for other in sessions:
            group(other, signal.SIGSTOP)
        held.collect(pgid)
        fresh = set(held.held) - stopped
        held.signal(signal.SIGSTOP, fresh)
        stopped |= fresh
        more = held.own_sessions(fresh) - sessions
        for other in more:  # one kill(-pgid) stops every member at once, hoppers included
            group(other, signal.SIGSTOP)
        sessions |= more
        # Nothing new, the kernel's children as the look before saw them, and none of them
        # half gone: a process that exits between the listing and the look at its
        # environment (a pid-hopper hopping) changes that list (it is a zombie then, its
        # child is here), or is caught exiting (its children come here once it is done).
        # And every process found stopped indeed: one sent SIGSTOP while it forked stops
        # once the fork is done, and its new child is then below it, for the next look.
        settled = not fresh and not more and held.last_look == before and not held.unsure
        if settled and not held.running(0 if exited else pgid):
            break
        if time.monotonic() > end:
            break
        if settled:
            time.sleep(0.001)
        before = held.last_look
    return sessions


def _kill_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_WARDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warden.py")


class Watch:
    """This process's watcher (core/run/launching/warden.py): started once, told each unsandboxed
    run's process group; kills what is left of the runs when this process dies."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._fd = -1
        self.enabled = _LINUX and hasattr(os, "pidfd_open") and bool(sys.executable)
        if hasattr(os, "register_at_fork"):  # a forked copy starts its own when it runs
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:
        self._lock = threading.Lock()
        self._proc = None
        self._fd = -1  # the copy's end: closed when the copy execs or exits

    def track(self, pgid: int) -> None:
        """A run's process group, from now until :meth:`untrack`."""
        self._send(f"+{pgid}\n")

    def untrack(self, pgid: int) -> None:
        self._send(f"-{pgid}\n")

    def _send(self, line: str) -> None:
        if not self.enabled:
            return
        fd = self._fd if self._proc is not None and self._proc.returncode is None else -1
        if fd < 0:
            fd = self._start()
            if fd < 0:
                return
        try:
            os.write(fd, line.encode())  # < PIPE_BUF: atomic, whatever thread writes
        except BlockingIOError:  # the watcher is not reading: a run goes untold
            logger.debug("the run watcher's pipe is full")
        except OSError:  # it died: the next run starts another
            with self._lock:
                self._proc = None

    def _start(self) -> int:
        with self._lock:
            if self._proc is not None and self._proc.poll() is None:
                return self._fd
            if self._proc is not None:
                OWN.discard(self._proc.pid)
                self._close()
            read, write = os.pipe()
            try:
                proc = subprocess.Popen(
                    [
                        sys.executable,
                        *("-I", "-S", _WARDEN, str(os.getpid()), run_id_prefix()),
                        RUN_CGROUPS.base() or "",  # the runs' cgroups: killed whole
                    ],
                    stdin=read,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    close_fds=True,
                    process_group=0,  # a kill of the kernel's group must not reach it
                )
            except OSError as exc:
                os.close(write)
                self.enabled = False
                logger.info("No run watcher (%s): runs do not die with a killed kernel", exc)
                return -1
            finally:
                os.close(read)
            os.set_blocking(write, False)
            OWN.add(proc.pid)
            self._proc, self._fd = proc, write
            return write

    def _close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    @property
    def pid(self) -> int | None:
        proc = self._proc
        return None if proc is None else proc.pid


WATCH = Watch()


__all__ = ["SWEEP_S", "WATCH", "Watch", "kill_run"]
