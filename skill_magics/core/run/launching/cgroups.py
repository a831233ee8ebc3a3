"""A cgroup (v2) per unsandboxed run, where this process may make one: the kill no fork escapes.

Why: a run's processes found by looking (orphans.py, containment.py) can
outrun the looks: a daemon that changes pid every 2 ms (fork, the parent exits) is gone
before a look at it is done. A cgroup holds every process forked inside it, whatever its
pid, group or session, and ``cgroup.kill`` (Linux 5.14) SIGKILLs all of them at once, forks
in flight included. The run's processes see nothing else of it but ``/proc/self/cgroup``:
pids, ``/proc``, signals, setuid programs and resource limits (the cgroup is below this
process's own, so its limits still apply) are as without it.

Where: below this process's own cgroup v2 (``/proc/self/cgroup``'s ``0::`` line, under the
``cgroup2`` mount), in a folder ``skill-magics-PID`` made on the first run; each run gets
``run-N`` in it, removed when the run is over. That works where the cgroup is writable: root
(a VM, a container with a writable cgroup), or a user session whose cgroup systemd delegates
(``user@UID.service``: a desktop's terminal, ``systemd-run --user``). Elsewhere (a read-only
``/sys/fs/cgroup``, an ``ssh`` session's ``session-N.scope``, cgroup v1 only, Linux < 5.14,
not Linux) :meth:`RunCgroups.new` gives None and the kill is the look-and-kill alone.
``SKILL_MAGICS_RUN_CGROUPS=0`` turns it off (what it costs per run: docs/security.md).

How a run gets in before it runs a line of its own: a cold run's child writes ``0`` (itself)
into the cgroup's ``cgroup.procs`` between fork and exec (a descriptor opened here, so
nothing is opened in the child); a warm run's child does the same first thing after the
server's fork (core/run/launching/warm/child.py). A process of the run may write itself out again
(the same user may write this process's own ``cgroup.procs``): it is then left to the
look-and-kill, as without a cgroup (docs/security.md says what holds where).

The kernel's death: the watcher (core/run/launching/warden.py) is given the ``skill-magics-PID``
folder and kills it whole (``cgroup.kill`` of a parent reaches every run below it).
"""

from __future__ import annotations

import atexit
import errno
import itertools
import logging
import os
import sys
import threading
import time

logger = logging.getLogger("skill_magics.executor")

OFF_VAR = "SKILL_MAGICS_RUN_CGROUPS"  # "0": no cgroup per run
REMOVE_WAIT_S = 0.5  # how long the end of a run waits for its killed processes to be gone
_LINUX = sys.platform.startswith("linux")


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def own_cgroup_dir() -> str | None:
    """This process's cgroup v2 folder, or None (no cgroup v2 mounted where it is seen)."""
    own = next(
        (line[3:] for line in _read("/proc/self/cgroup").splitlines() if line.startswith("0::")),
        None,
    )
    if own is None or not own.startswith("/"):
        return None
    for line in _read("/proc/self/mountinfo").splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if not right.startswith("cgroup2 ") or len(fields) < 5:
            continue
        root, mount = fields[3], fields[4]
        # The mount shows the hierarchy from ``root`` on (a container's cgroup namespace
        # shows ``/``); our cgroup must be at or below it.
        if own == root or own.startswith(root.rstrip("/") + "/"):
            rest = own[len(root.rstrip("/")) :].lstrip("/")
            path = os.path.join(mount, rest) if rest else mount
            return path if os.path.isdir(path) else None
    return None


class RunCgroup:
    """One run's cgroup: join it from the child, kill everything in it, remove it."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    @property
    def procs(self) -> str:
        """The file a process writes ``0`` into to join."""
        return os.path.join(self.path, "cgroup.procs")

    def join_fd(self) -> int:
        """A descriptor of ``cgroup.procs`` (close-on-exec) a child writes ``0`` into; -1
        when it cannot be opened."""
        try:
            return os.open(self.procs, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return -1

    def kill(self) -> None:
        """SIGKILL every process in the cgroup, forks in flight included (cgroup.kill)."""
        try:
            fd = os.open(os.path.join(self.path, "cgroup.kill"), os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return
        try:
            os.write(fd, b"1")
        except OSError:
            pass
        finally:
            os.close(fd)

    def populated(self) -> bool:
        """Is a process (not a zombie) still in it?"""
        return "populated 1" in _read(os.path.join(self.path, "cgroup.events"))

    def remove(self, wait: float = REMOVE_WAIT_S) -> bool:
        """Remove the cgroup once its killed processes are gone (zombies do not count);
        False when something still lives in it after ``wait`` (RUN_CGROUPS retries later)."""
        end = time.monotonic() + wait
        while True:
            try:
                os.rmdir(self.path)
                return True
            except FileNotFoundError:
                return True
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > end:
                    return False
            self.kill()  # something got in after the kill (a fork that was in flight)
            time.sleep(0.002)


class RunCgroups:
    """This process's folder of run cgroups (made on first use) and the runs' cgroups."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._base: str | None = None
        self._probed = False
        self.why_not = ""
        self.enabled = True  # False: no cgroup for the next runs (the look-and-kill alone)
        self._count = itertools.count(1)
        self._left: list[RunCgroup] = []  # not removable at their run's end: retried
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self._forget)

    def _forget(self) -> None:  # a forked copy makes its own folder if it runs anything
        self._lock = threading.Lock()
        self._base, self._probed, self._left = None, False, []

    def base(self) -> str | None:
        """The ``skill-magics-PID`` folder (made now if need be), or None (``why_not``)."""
        if self._probed:
            return self._base
        with self._lock:
            if not self._probed:
                self._base, self.why_not = self._make_base()
                self._probed = True
                if self._base is None:
                    logger.debug("No cgroup per run: %s", self.why_not)
        return self._base

    def _make_base(self) -> tuple[str | None, str]:
        if not _LINUX:
            return None, "not Linux"
        if os.environ.get(OFF_VAR, "").strip().lower() in ("0", "off", "no", "false"):
            return None, f"{OFF_VAR} is off"
        own = own_cgroup_dir()
        if own is None:
            return None, "no cgroup v2 here"
        # A move between two cgroups needs their common ancestor's cgroup.procs writable:
        # here, our own (else every run would pay for a cgroup it never gets into).
        if not os.access(os.path.join(own, "cgroup.procs"), os.W_OK):
            return None, f"the cgroup {own} is not writable"
        base = os.path.join(own, f"skill-magics-{os.getpid()}")
        try:
            os.mkdir(base, 0o755)
        except FileExistsError:
            pass
        except OSError as exc:
            return None, f"cannot make a cgroup in {own} ({exc.strerror})"
        if not os.path.exists(os.path.join(base, "cgroup.kill")):
            _rmdir(base)
            return None, "cgroup.kill is missing (Linux < 5.14)"
        if not os.access(os.path.join(base, "cgroup.procs"), os.W_OK):
            _rmdir(base)
            return None, f"the cgroups in {own} are not writable"
        atexit.register(self._remove_base, base, os.getpid())
        return base, ""

    def new(self) -> RunCgroup | None:
        """A new, empty cgroup for one run, or None (none can be made here)."""
        base = self.base() if self.enabled else None
        if base is None:
            return None
        if self._left:
            self._retry()
        for _ in range(3):  # a folder left by an earlier process of this pid: the next
            path = os.path.join(base, f"run-{next(self._count)}")
            try:
                os.mkdir(path, 0o755)
            except FileExistsError:
                continue
            except OSError as exc:
                logger.debug("No cgroup for this run (%s)", exc)
                return None
            return RunCgroup(path)
        return None

    def release(self, group: RunCgroup) -> None:
        """The run is over (its processes killed): remove its cgroup, now or later."""
        if not group.remove():
            with self._lock:
                self._left.append(group)

    def _retry(self) -> None:
        with self._lock:
            left, self._left = self._left, []
        for group in left:
            if not group.remove(wait=0):
                with self._lock:
                    self._left.append(group)

    def _remove_base(self, base: str, pid: int) -> None:
        if pid != os.getpid():  # a forked copy exiting: not its folder
            return
        RunCgroup(base).kill()
        for name in _subfolders(base):
            RunCgroup(os.path.join(base, name)).remove(wait=0.1)
        _rmdir(base)


def _subfolders(path: str) -> list[str]:
    try:
        return [entry.name for entry in os.scandir(path) if entry.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _rmdir(path: str) -> None:
    try:
        os.rmdir(path)
    except OSError:
        pass


RUN_CGROUPS = RunCgroups()

__all__ = ["OFF_VAR", "RUN_CGROUPS", "RunCgroup", "RunCgroups", "own_cgroup_dir"]
