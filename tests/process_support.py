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


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process: a zombie has already died, so it does not count."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
