"""The kernel's run watcher (Linux): run as a program, it kills what is left of the kernel's
runs when the kernel dies (core/run/launching/containment.py says why and when it is started).

Usage (by path, stdlib only, so ``python -I -S`` starts it in ~10 ms):
    python -I -S warden.py KERNEL_PID RUN_ID_PREFIX [CGROUP]  # stdin: "+PGID" / "-PGID"

It holds a pidfd of the kernel (exits at once to a sweep when the kernel is gone already)
and reads, from its stdin, the process groups of the runs in progress. When the pidfd says
the kernel exited (whatever killed it), it sweeps: every process in one of those groups or
whose environment holds ``SKILL_MAGICS_RUN_ID=<the kernel's prefix>...`` is stopped
(SIGSTOP), with the process groups of the sessions they made, and /proc is read again
(newest pids first) until QUIET_LOOKS reads in a row find nothing new (bounded by SWEEP_S:
one read may miss a pid-hopper's pid), then all of them are SIGKILLed. A run that clears
its environment *and* leaves its group escapes this (as it escapes nothing else: the
kernel's own end-of-run kill finds it through the process tree while the kernel lives).
``CGROUP``: the folder of the kernel's run cgroups (core/run/launching/cgroups.py): killed whole
first (``cgroup.kill`` reaches every run below it, forks in flight included), then removed
once empty.
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

SWEEP_S = 2.0
QUIET_LOOKS = 5  # the sweep ends after this many looks in a row find nothing new
RUN_ID_VAR = b"SKILL_MAGICS_RUN_ID="


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _look(groups: set[int], marker: bytes, me: int) -> list[tuple[int, int, int]]:
    """Processes of the kernel's runs now, in a run's group or carrying a run id: (pid,
    process group, session) each."""
    found = []
    # Newest first: a pid-hopper's live pid is among the newest, and is read before it hops.
    for pid in sorted((int(n) for n in os.listdir("/proc") if n.isdigit()), reverse=True):
        if pid == me:
            continue
        stat = _read(f"/proc/{pid}/stat")
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 4 or fields[0] == b"Z":
            continue
        if int(fields[2]) in groups or any(
            entry.startswith(marker) for entry in _read(f"/proc/{pid}/environ").split(b"\0")
        ):
            found.append((pid, int(fields[2]), int(fields[3])))
    return found


def _signal_groups(pgids: set[int], sig: int) -> None:
    for pgid in pgids:
        try:
            os.killpg(pgid, sig)
        except OSError:
            pass


def sweep(groups: set[int], prefix: str) -> int:
    """Stop, look again until nothing new, kill. Returns how many processes were killed.
    The groups of sessions a run's process made are stopped and killed whole too (only the
    run's processes are in them; a pid-hopper keeps its group as it hops, and one
    ``kill(-pgid)`` reaches it whatever its pid is by then)."""
    marker = RUN_ID_VAR + prefix.encode()
    me = os.getpid()
    mine = os.getsid(0)  # the kernel's session: its groups are never killed whole
    held: dict[int, int] = {}
    sessions: set[int] = set()
    end = time.monotonic() + SWEEP_S
    quiet = 0  # looks in a row that found nothing new: one may miss a pid that hopped
    while True:
        _signal_groups(groups | sessions, signal.SIGSTOP)
        fresh = 0
        for pid, pgid, sid in _look(groups, marker, me):
            if pid in held:
                continue
            try:
                fd = os.pidfd_open(pid)
                signal.pidfd_send_signal(fd, signal.SIGSTOP)
            except OSError:
                continue
            held[pid] = fd
            fresh += 1
            if sid not in (mine, 0) and pgid not in sessions:
                sessions.update((pgid, sid))
                _signal_groups({pgid, sid}, signal.SIGSTOP)
        quiet = 0 if fresh else quiet + 1
        if quiet >= QUIET_LOOKS or time.monotonic() > end:
            break
    _signal_groups(groups | sessions, signal.SIGKILL)
    for fd in held.values():
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
    return len(held)


def kill_cgroup(path: str) -> None:
    """Kill every process in the cgroup ``path`` and below (forks in flight included)."""
    if not path:
        return
    try:
        with open(os.path.join(path, "cgroup.kill"), "w") as fh:
            fh.write("1")
    except OSError:
        pass


def remove_cgroup(path: str) -> None:
    """Remove the cgroup ``path`` and the runs' below it once they are empty (bounded)."""
    if not path:
        return
    end = time.monotonic() + SWEEP_S
    while True:
        try:
            below = [e.path for e in os.scandir(path) if e.is_dir(follow_symlinks=False)]
        except OSError:
            return
        for folder in [*below, path]:
            try:
                os.rmdir(folder)
            except OSError:
                pass
        if not os.path.isdir(path) or time.monotonic() > end:
            return
        time.sleep(0.005)


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4):
        sys.stderr.write("usage: warden.py KERNEL_PID RUN_ID_PREFIX [CGROUP]\n")
        return 2
    kernel, prefix = int(argv[1]), argv[2]
    cgroup = argv[3] if len(argv) == 4 else ""
    for sig in (signal.SIGINT, signal.SIGHUP):  # a kernel interrupt, a closed terminal
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    try:
        watched = os.pidfd_open(kernel)
    except OSError:
        watched = -1
    if watched < 0 or os.getppid() != kernel:  # the kernel is gone already
        kill_cgroup(cgroup)
        sweep(groups, prefix)
        remove_cgroup(cgroup)
        return 0
    poll = select.poll()
    poll.register(watched, select.POLLIN)
    poll.register(0, select.POLLIN)
    pending = b""
    while True:
        for fd, _events in poll.poll():
            if fd == watched:
                kill_cgroup(cgroup)
                sweep(groups, prefix)
                remove_cgroup(cgroup)
                return 0
            data = os.read(0, 65536)
            if not data:  # the kernel closed its end (or died: the pidfd says so next)
                poll.unregister(0)
                continue
            *lines, pending = (pending + data).split(b"\n")
            for line in lines:
                try:
                    pgid = int(line[1:])
                except ValueError:
                    continue
                if line[:1] == b"+":
                    groups.add(pgid)
                else:
                    groups.discard(pgid)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
