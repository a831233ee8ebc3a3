"""The kernel's run watcher (Linux): run as a program, it kills what is left of the kernel's
runs when the kernel dies (core/run/containment.py says why and when it is started).

Usage (by path, stdlib only, so ``python -I -S`` starts it in ~10 ms):
    python -I -S warden.py KERNEL_PID RUN_ID_PREFIX   # stdin: "+PGID" / "-PGID" lines

It holds a pidfd of the kernel (exits at once to a sweep when the kernel is gone already)
and reads, from its stdin, the process groups of the runs in progress. When the pidfd says
the kernel exited (whatever killed it), it sweeps: every process in one of those groups or
whose environment holds ``SKILL_MAGICS_RUN_ID=<the kernel's prefix>...`` is stopped
(SIGSTOP), /proc is read again until a read finds nothing new (bounded by SWEEP_S), then
all of them are SIGKILLed. A run that clears its environment *and* leaves its group escapes
this (as it escapes nothing else: the kernel's own end-of-run kill finds it through the
process tree while the kernel lives).
"""

from __future__ import annotations

import os
import select
import signal
import sys
import time

SWEEP_S = 2.0
RUN_ID_VAR = b"SKILL_MAGICS_RUN_ID="


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read()
    except OSError:
        return b""


def _look(groups: set[int], marker: bytes, me: int) -> list[int]:
    """Processes of the kernel's runs now: in a run's group, or carrying a run id."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        pid = int(name)
        stat = _read(f"/proc/{pid}/stat")
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) < 3 or fields[0] == b"Z":
            continue
        if int(fields[2]) in groups or any(
            entry.startswith(marker) for entry in _read(f"/proc/{pid}/environ").split(b"\0")
        ):
            found.append(pid)
    return found


def sweep(groups: set[int], prefix: str) -> int:
    """Stop, look again until nothing new, kill. Returns how many processes were killed."""
    marker = RUN_ID_VAR + prefix.encode()
    me = os.getpid()
    held: dict[int, int] = {}
    end = time.monotonic() + SWEEP_S
    while True:
        for pgid in groups:
            try:
                os.killpg(pgid, signal.SIGSTOP)
            except OSError:
                pass
        fresh = 0
        for pid in _look(groups, marker, me):
            if pid in held:
                continue
            try:
                fd = os.pidfd_open(pid)
                signal.pidfd_send_signal(fd, signal.SIGSTOP)
            except OSError:
                continue
            held[pid] = fd
            fresh += 1
        if not fresh or time.monotonic() > end:
            break
    for pgid in groups:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
    for fd in held.values():
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except OSError:
            pass
    return len(held)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        sys.stderr.write("usage: warden.py KERNEL_PID RUN_ID_PREFIX\n")
        return 2
    kernel, prefix = int(argv[1]), argv[2]
    for sig in (signal.SIGINT, signal.SIGHUP):  # a kernel interrupt, a closed terminal
        signal.signal(sig, signal.SIG_IGN)
    groups: set[int] = set()
    try:
        watched = os.pidfd_open(kernel)
    except OSError:
        watched = -1
    if watched < 0 or os.getppid() != kernel:  # the kernel is gone already
        sweep(groups, prefix)
        return 0
    poll = select.poll()
    poll.register(watched, select.POLLIN)
    poll.register(0, select.POLLIN)
    pending = b""
    while True:
        for fd, _events in poll.poll():
            if fd == watched:
                sweep(groups, prefix)
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
