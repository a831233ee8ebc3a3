"""A guard that makes a whole process tree die with the kernel (Linux): run as a program.

Usage (by path, stdlib only, so ``python -I -S`` starts it in ~10 ms):
    python -I -S treeguard.py KERNEL_PID -- uv pip install ...

Why: ``PR_SET_PDEATHSIG`` reaches only the process it is set on and is cleared for its
children, so an installer's own children (a build backend running an sdist's ``setup.py``)
outlived a SIGKILLed kernel, writing into a folder nothing would use. The guard sits between
the kernel and the command (core/run/launching/process.py starts it when ``die_with_parent``):

- it gets SIGTERM when the kernel dies (``PR_SET_PDEATHSIG``), and exits at once when the
  kernel died before that was set;
- it is a child subreaper (``PR_SET_CHILD_SUBREAPER``), so every descendant whose parent dies
  (a double fork, ``setsid``) is re-parented to it, never to init;
- on that SIGTERM (or SIGINT/SIGHUP, or the kernel's own group kill), and when the command
  ends, it SIGKILLs every descendant it has, repeatedly until none is left, reaps them, and
  exits with the command's status (a command killed by signal N: the guard dies of N too).

What escapes: a descendant started by another subreaper below the guard, and processes that
leave through a setuid program (neither is what an installer does).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
PR_SET_CHILD_SUBREAPER = 36
SWEEP_S = 2.0  # how long the guard keeps killing what its descendants fork meanwhile


def _descendants() -> list[int]:
    """Every descendant of this process, from /proc/PID/task/*/children, parents first."""
    found: list[int] = []
    stack = [os.getpid()]
    while stack:
        pid = stack.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                    kids = [int(x) for x in fh.read().split()]
            except (OSError, ValueError):
                continue
            found.extend(kids)
            stack.extend(kids)
    return found


def _kill_tree() -> None:
    """SIGKILL every descendant until none is left (bounded by SWEEP_S), reaping them.

    A pid signalled here is a descendant's: unreaped children of ours cannot be recycled,
    and one deeper down is only recycled after its parent reaps it, which a SIGKILLed parent
    no longer does (its children come to us)."""
    end = time.monotonic() + SWEEP_S
    while time.monotonic() < end:
        pids = _descendants()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        while True:  # reap what is dead already (zombies re-parented here included)
            try:
                pid, _status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return  # no child left: the whole tree is gone
            if pid == 0:
                break
        time.sleep(0.005)


def _die(sig: int, _frame: object = None) -> None:
    _kill_tree()
    os._exit(128 + sig)


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: treeguard.py KERNEL_PID -- COMMAND...\n")
        return 2
    kernel = int(argv[1])
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _die)
    if sys.platform.startswith("linux"):
        import ctypes

        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != kernel:  # the kernel died before the prctl: nobody wants the command
        return 1
    try:
        proc = subprocess.Popen(argv[3:])  # inherits stdin/stdout/stderr, env, cwd, group
    except OSError as exc:
        sys.stderr.write(f"could not start {argv[3]}: {exc.strerror or exc}\n")
        return 127
    while True:
        try:
            code = proc.wait()
            break
        except ChildProcessError:  # pragma: no cover - reaped by a sweep: it was killed
            code = -signal.SIGKILL
            break
    _kill_tree()  # what the command left behind (a daemon of a build backend)
    if code < 0:  # killed by a signal: say so the same way
        if -code != signal.SIGKILL:
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
