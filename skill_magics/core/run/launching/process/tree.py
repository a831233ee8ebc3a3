"""The run's process tree: its group, the descendants the snapshots saw (one that left the
group dies too) and the one kill of all of it with the run's orphans (orphans.py,
containment.py); see the package docstring."""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skill_magics.core.run.launching.containment import kill_run
from skill_magics.core.run.launching.orphans import Orphans

if TYPE_CHECKING:
    from skill_magics.core.run.launching.process.spawn import Child


TREE_POLL_S = 0.05  # how often (and after how long) the run's process tree is snapshotted
TREE_POLL_LATER_S = 0.25  # ... once the run has lasted a second


# Linux with CONFIG_PROC_CHILDREN (every mainstream kernel): direct children per thread.
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


def kill_group(pgid: int, sig: int) -> None:
    """Signal every process of the group; a group that is already gone is fine."""
    if sys.platform == "win32":  # pragma: no cover
        return
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


_TREE_WATCH = sys.platform != "win32"  # elsewhere the group kill is all there is


class _Descendants:
    """Every process the run started, remembered so one that leaves the group dies too.

    A snapshot reads /proc/PID/task/*/children for each process of the run's tree (Linux;
    ~20 us per process; elsewhere one psutil pass over all processes), starts only once the
    run has lasted TREE_POLL_S and repeats at most every TREE_POLL_S (TREE_POLL_LATER_S
    after the first second).
    """

    def __init__(self, pid: int, pgid: int, start: float) -> None:
        self.pid = pid
        self.pgid = pgid
        self.start = start
        self.next_at = start + TREE_POLL_S
        self.known: dict[int, object] = {}  # pid -> psutil.Process (carries its create time)
        self._psutil: object | None = None
        self.enabled = sys.platform != "win32"

    def due(self, now: float) -> float:
        """Seconds until the next snapshot is due (inf when disabled)."""
        return max(self.next_at - now, 0.0) if self.enabled else float("inf")

    def maybe_snapshot(self, now: float) -> None:
        if self.enabled and now >= self.next_at:
            self.snapshot()
            # Every 50 ms during the first second (when a script typically forks its
            # helpers), then every 250 ms: a long run costs ~0.5% of a core, not ~2.5%.
            later = now - self.start > 1.0
            self.next_at = time.monotonic() + (TREE_POLL_LATER_S if later else TREE_POLL_S)

    def snapshot(self) -> None:
        """Remember the main process's descendants, and those of remembered escapees."""
        psutil = self._load()
        if psutil is None:
            return
        children = _children_reader(psutil)
        seen: set[int] = set()
        self._walk(psutil, children, self.pid, seen)
        for pid, proc in list(self.known.items()):
            if pid in seen:
                continue
            try:
                alive = proc.is_running()  # type: ignore[attr-defined]  # same creation time
            except psutil.Error:
                alive = False
            if alive:
                self._walk(psutil, children, pid, seen)  # an escapee re-parented away
            else:
                del self.known[pid]  # gone: never followed again (its pid may be reused)

    def _walk(
        self, psutil: Any, children: Callable[[int], list[int]], root: int, seen: set[int]
    ) -> None:
        stack = [root]
        while stack:
            for child in children(stack.pop()):
                if child in seen or child == self.pid:
                    continue
                seen.add(child)
                if child not in self.known:
                    try:
                        self.known[child] = psutil.Process(child)  # records its creation time
                    except psutil.Error:
                        continue
                stack.append(child)

    def saw(self, pid: int) -> bool:
        """Did a snapshot see ``pid`` (this very process: same creation time)?"""
        proc = self.known.get(pid)
        if proc is None:
            return False
        try:
            return bool(proc.is_running())  # type: ignore[attr-defined]  # a zombie counts
        except Exception:  # noqa: BLE001 - psutil.Error: gone
            return False

    def seen(self) -> list[int]:
        """The remembered descendants still alive (same creation time)."""
        return [pid for pid in list(self.known) if self.saw(pid)]

    def signal_escaped(self, sig: int) -> None:
        """Send ``sig`` to remembered descendants that are alive and outside the group."""
        if not self.known:
            return
        psutil = self._load()
        for proc in list(self.known.values()):
            try:
                # is_running() compares the creation time: a recycled pid is left alone.
                if not proc.is_running():  # type: ignore[attr-defined]
                    continue
                try:
                    if os.getpgid(proc.pid) == self.pgid:  # type: ignore[attr-defined]
                        continue  # the group kill covers it
                except ProcessLookupError:
                    continue
                proc.send_signal(sig)  # type: ignore[attr-defined]
            except (psutil.Error, OSError):
                continue

    def _load(self):  # noqa: ANN202 - the psutil module, imported on first use
        if self._psutil is None:
            try:
                import psutil
            except ImportError:  # pragma: no cover - a dependency; degrade to group kill
                self.enabled = False
                return None
            self._psutil = psutil
        return self._psutil


def _proc_children(pid: int) -> list[int]:
    """Direct children of ``pid`` from /proc/PID/task/*/children (Linux): costs a few reads
    per process of the run's tree, not a scan of every process on the machine."""
    out: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out  # gone
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as fh:
                out.extend(int(x) for x in fh.read().split())
        except (OSError, ValueError):
            continue
    return out


def _children_reader(psutil: Any) -> Callable[[int], list[int]]:
    """How to list a process's direct children on this system."""
    if _PROC_CHILDREN:
        return _proc_children
    parents: dict[int, list[int]] = {}
    try:  # elsewhere: one pass over every process (psutil), then lookups
        for proc in psutil.process_iter(["ppid"]):
            ppid = proc.info.get("ppid")
            if ppid is not None:
                parents.setdefault(ppid, []).append(proc.pid)
    except psutil.Error:
        pass
    return lambda pid: parents.get(pid, [])


def _kill_all(
    child: Child,
    tree: _Descendants | None,
    sig: int,
    orphans: Orphans | None = None,
    exited: bool = False,
) -> None:
    """Signal the main process (by its own pid: it may have left its group), the group,
    the escapees the snapshots saw and the run's orphans. ``exited``: the main process has
    surely exited (Child.has_exited), which lets the orphan search settle in one look when
    nothing is left (core/run/launching/orphans.py). SIGKILL with the run's orphans held is the
    whole-run kill of containment.py: stop, look again until nothing new, kill."""
    pgid = child.pid
    if sig == signal.SIGKILL and orphans is not None:
        seen = None if tree is None or not tree.known else tree.seen
        kill_run(child, orphans, exited, seen, kill_group, child.cgroup)
        return
    if not exited:
        child.kill(sig)
    if orphans is not None:
        # Before the kill: what it orphans is held already.
        orphans.collect(exclude=pgid, exited=exited)
        if tree is not None and tree.known:  # and what the snapshots saw, reaped once adopted
            orphans.hold(pid for pid in list(tree.known) if pid != pgid and tree.saw(pid))
    kill_group(pgid, sig)
    if tree is not None and tree.known:
        tree.signal_escaped(sig)
    if orphans is not None and orphans.held:
        orphans.signal(sig)


__all__ = ["TREE_POLL_LATER_S", "TREE_POLL_S", "kill_group"]
