"""Helpers for tests that check a script's process group really died (no tests in here)."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path

import psutil


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except ProcessLookupError:
        return None


def group_alive(pgid: int) -> bool:
    """Whether any process (zombies included) is left in the group."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def assert_group_gone(pgid: int, pids: Sequence[int] = (), within: float = 5.0) -> None:
    """No live process of the group is left. Killed processes may stay zombies until their
    new parent (init) reaps them, which some container inits do only every few seconds: a
    zombie has already died, so it does not count as surviving."""
    deadline = time.monotonic() + within
    while True:
        if not group_alive(pgid):
            return
        alive = []
        for proc in psutil.process_iter(["pid", "status"]):
            if _pgid(proc.info["pid"]) == pgid and proc.info["status"] != psutil.STATUS_ZOMBIE:
                alive.append(proc.info["pid"])
        for pid in pids:
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"processes of group {pgid} survived: {sorted(set(alive))}")
        time.sleep(0.02)


def wait_for_text(path: Path, timeout: float = 60) -> str:
    """The stripped text of ``path`` once a script has written it (e.g. its pgid)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.05)
    raise AssertionError(f"{path} never appeared: the script did not start")


def start_time(pid: int) -> int | None:
    """Field 22 of ``/proc/<pid>/stat``: when the process started (clock ticks since boot),
    which tells it from a later process given the same pid. None when there is no such
    process (or no /proc)."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: count from the last ")".
    return int(data[data.rfind(b")") + 2 :].split()[19])


def pid_alive(pid: int, start: int | None = None) -> bool:
    """Whether ``pid`` is a live process: a zombie has already died, so it does not count.

    ``start``: the process's start time (``start_time(pid)``, taken while it surely ran).
    Given, a process that now holds ``pid`` but started at another time is a different
    one (the pid was reused), so the one asked about is not alive."""
    try:
        alive = psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    if alive and start is not None and os.path.exists("/proc/self/stat"):
        return start_time(pid) == start
    return alive


def start_times(pids: Sequence[int]) -> dict[int, int | None]:
    """pid -> start time, for ``pid_alive(pid, starts[pid])`` later."""
    return {pid: start_time(pid) for pid in pids}
