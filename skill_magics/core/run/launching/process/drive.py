"""The drive loop: one poll(2) loop in the calling thread feeds a run's stdin, reads both
pipes, times out, cancels, kills the run's whole tree and reaps it, whichever way it started
(see the package docstring); :func:`run_process` is :func:`~.spawn.spawn` then :func:`drive`."""

from __future__ import annotations

import atexit
import errno
import logging
import math
import os
import select
import selectors
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.secrets import Masks
from skill_magics.core.run.launching.containment import WATCH
from skill_magics.core.run.launching.process.capture import OnOutput, StreamCapture
from skill_magics.core.run.launching.process.spawn import Child, Pipe, spawn
from skill_magics.core.run.launching.process.tree import (
    _TREE_WATCH,
    TREE_POLL_S,
    _Descendants,
    _kill_all,
)

logger = logging.getLogger("skill_magics.executor")


GRACE_S = 0.05  # SIGTERM -> SIGKILL: a script that ignores SIGTERM still dies within 100 ms
DRAIN_S = 0.1  # after the main process exits, how long background children may keep writing
CANCEL_POLL_S = 0.05  # how often a cancel Event is looked at (an Event cannot be selected on)
EXIT_POLL_S = 0.05  # without pidfd: how often the main process is polled while pipes are open


READ_CHUNK = 1 << 16  # the default Linux pipe capacity: one read empties a full pipe
WRITE_CHUNK = 1 << 16


@dataclass
class ProcessOutcome:
    """What the loop saw. ``returncode`` is the main process's real status (-N for signal N)."""

    pid: int
    returncode: int
    stdout: StreamCapture
    stderr: StreamCapture
    duration_s: float
    timed_out: bool = False
    cancelled: bool = False
    server_stopped: str = ""  # a warm run's server ended while it ran: how ("signal 9")


class _Selector:
    """select.poll's interface (register, unregister, poll in ms) over a selector, where
    there is no poll(2) (Windows). It never reports a hang-up."""

    def __init__(self) -> None:
        self._sel = selectors.DefaultSelector()

    def register(self, fd: int, events: int) -> None:
        self._sel.register(fd, selectors.EVENT_WRITE if events == _OUT else selectors.EVENT_READ)

    def unregister(self, fd: int) -> None:
        self._sel.unregister(fd)

    def poll(self, ms: int) -> list[tuple[int, int]]:
        return [(key.fd, 0) for key, _ in self._sel.select(ms / 1000)]

    def close(self) -> None:
        self._sel.close()


_POLL = getattr(select, "poll", None)
_IN = getattr(select, "POLLIN", 1)
_OUT = getattr(select, "POLLOUT", 4)
_HUP = getattr(select, "POLLHUP", 0) | getattr(select, "POLLERR", 0)


class _Loop:
    """State of one run; lives only inside _drive."""

    def __init__(
        self,
        child: Child,
        payload: bytes | None,
        max_output_size: int,
        on_output: OnOutput | None,
        masks: Masks | None = None,
    ) -> None:
        self.child = child
        # poll(2) when there is one (select() is limited to fds < 1024): called straight, its
        # events say which pipes hung up; else a selector with the same interface.
        self.sel: Any = _POLL() if _POLL is not None else _Selector()
        self.stdout = StreamCapture("stdout", max_output_size, masks=masks)
        self.stderr = StreamCapture("stderr", max_output_size, masks=masks)
        self.readers: dict[int, tuple[StreamCapture, Pipe]] = {}
        self.on_output = on_output
        self.exited = False
        self.exit_fd: int | None = None
        self.stdin_fd: int | None = None
        self.payload = memoryview(payload) if payload else None
        self.offset = 0

        for capture, pipe in ((self.stdout, child.stdout), (self.stderr, child.stderr)):
            fd = pipe.fd
            self.readers[fd] = (capture, pipe)
            self.sel.register(fd, _IN)
        self.exit_fd = child.exit_fd()
        if self.exit_fd is not None:
            self.sel.register(self.exit_fd, _IN)
        if child.stdin is not None:
            self.stdin_fd = child.stdin.fileno()
            os.set_blocking(self.stdin_fd, False)
            # Most payloads fit the pipe: write now and skip a loop iteration.
            if self._write_stdin():
                self.sel.register(self.stdin_fd, _OUT)

    # -- stdin -------------------------------------------------------------------------------
    def _write_stdin(self) -> bool:
        """Write what the pipe takes; True while more is left to write."""
        payload, fd = self.payload, self.stdin_fd
        try:
            while payload is not None and fd is not None and self.offset < len(payload):
                self.offset += os.write(fd, payload[self.offset : self.offset + WRITE_CHUNK])
        except BlockingIOError:
            return True
        except OSError as exc:
            # EPIPE: the script closed stdin or never reads it and exited. That is its choice.
            if exc.errno not in (errno.EPIPE, errno.EINVAL):
                raise
        self._close_stdin()
        return False

    def _close_stdin(self) -> None:
        stdin = self.child.stdin
        if stdin is not None and not stdin.closed:
            try:
                stdin.close()
            except OSError:  # EPIPE on close of an unflushed raw pipe: nothing buffered
                pass
        self.stdin_fd = None

    # -- stdout / stderr ---------------------------------------------------------------------
    def _read(self, fd: int, hung_up: bool = False) -> None:
        """Read what is there. ``hung_up``: poll saw no writer left, so what the pipe held
        then is all it will ever hold; a read shorter than asked emptied it, which is its
        end (no further poll and read per stream). A writer that opens the pipe anew after
        the poll (through /proc/PID/fd) is not the run's: it is not waited for, and never
        blocks this loop (a read here follows a poll, or ends the stream)."""
        capture, pipe = self.readers[fd]
        try:
            data = os.read(fd, READ_CHUNK)
        except BlockingIOError:
            return
        if data:
            text = capture.feed(data)
            if text and self.on_output is not None:
                self._emit(capture.name, text)
            if not hung_up or len(data) >= READ_CHUNK:
                return
        self.sel.unregister(fd)
        del self.readers[fd]
        pipe.fd = -1
        os.close(fd)
        text = capture.finish()
        if text and self.on_output is not None:
            self._emit(capture.name, text)

    def _emit(self, name: str, text: str) -> None:
        if text and self.on_output is not None:
            try:
                self.on_output(name, text)
            except Exception:  # a broken live view must not break the run or hide its result
                logger.warning("on_output callback failed; live output disabled", exc_info=True)
                self.on_output = None

    # -- main process --------------------------------------------------------------------------
    def _poll_exit(self) -> bool:
        """Has the main process exited? Never reaps it (see module docstring)."""
        if not self.exited:
            self.exited = self.child.poll_exit()
        return self.exited

    def step(self, wait: float) -> None:
        """One select(): handle every ready fd."""
        # In ms, rounded up as selectors does: a wait rounded down to 0 ms would spin.
        for fd, events in self.sel.poll(math.ceil(wait * 1000) if wait > 0 else 0):
            if fd == self.exit_fd:
                if self.child.on_exit_fd():
                    self.exited = True
                    self.sel.unregister(fd)
                    self.exit_fd = None
            elif fd == self.stdin_fd:
                if not self._write_stdin():
                    self.sel.unregister(fd)
            elif fd in self.readers:
                self._read(fd, bool(events & _HUP))
        if self.exit_fd is None and not self.exited and self.readers:
            self._poll_exit()

    @property
    def watching(self) -> bool:
        """Does a descriptor tell us of the exit (else the pid is polled)?"""
        return self.exit_fd is not None or self.exited

    def wait_exit(self, timeout: float) -> bool:
        """Wait up to ``timeout`` for the main process to exit, still draining the pipes."""
        end = time.monotonic() + timeout
        while not (self.exited or (not self.watching and self._poll_exit())):
            left = end - time.monotonic()
            if left <= 0:
                return False
            self.step(left if self.watching else min(left, 0.005))
        return True

    def drain(self, end: float) -> None:
        """Read what background children still write, until they close the pipes or
        ``end`` (time.monotonic())."""
        while self.readers and time.monotonic() < end:
            self.step(end - time.monotonic())

    def final_drain(self) -> None:
        """After the group is dead, read what is still buffered without waiting for writers
        outside the group (a daemon that escaped with setsid) to close the pipes."""
        for fd in list(self.readers):
            capture, pipe = self.readers[fd]
            os.set_blocking(fd, False)
            for _ in range(64):  # bounded: an escaped writer must not keep us here
                try:
                    data = os.read(fd, READ_CHUNK)
                except (BlockingIOError, OSError):
                    break
                if not data:
                    break
                self._emit(capture.name, capture.feed(data))
            self._emit(capture.name, capture.finish())
            self.sel.unregister(fd)
            del self.readers[fd]
            pipe.close()

    def close(self) -> None:
        self._close_stdin()
        for fd, (_capture, pipe) in list(self.readers.items()):
            pipe.close()
            self.readers.pop(fd, None)
        self.child.close()
        if _POLL is None:  # pragma: no cover - Windows
            self.sel.close()


@dataclass(frozen=True)
class Limits:
    """What :func:`drive` holds a run to, whichever way it started.

    ``timeout`` counts from when the child was spawned; ``max_output_size`` caps each
    stream; ``on_output(stream, text)`` gets decoded chunks as they arrive, in the driving
    thread; setting ``cancel`` stops the run; ``masks``: secret values redacted from both
    streams before the cap cuts them; ``started``: called once in that thread, before the
    loop first waits (work that may as well be done while the script runs; what it raises
    stops the run like a KeyboardInterrupt does)."""

    timeout: float
    max_output_size: int
    on_output: OnOutput | None = None
    cancel: threading.Event | None = None
    masks: Masks | None = None
    started: Callable[[], object] | None = None


def run_process(
    command: Sequence[str],
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    payload: bytes | None,
    timeout: float,
    max_output_size: int,
    on_output: OnOutput | None = None,
    cancel: threading.Event | None = None,
    masks: Masks | None = None,
    orphans: bool = True,
    started: Callable[[], object] | None = None,
    die_with_parent: bool = False,
) -> ProcessOutcome:
    """:func:`spawn` then :func:`drive` (installers, git: one call). KeyboardInterrupt (and
    any other BaseException) kills the whole group before it propagates.
    ``die_with_parent``: the child and every process it starts die when this thread's
    process dies (Linux: ``PR_SET_PDEATHSIG`` on core/run/launching/treeguard.py, which kills its
    whole tree: an installer and its build backends must not outlive a killed kernel)."""
    child = spawn(
        command, payload, cwd=cwd, env=env, orphans=orphans, die_with_parent=die_with_parent
    )
    return drive(child, Limits(timeout, max_output_size, on_output, cancel, masks, started))


# Runs being driven, in any thread: if this process exits meanwhile (a kernel shut down with
# a run in flight in a worker thread), atexit kills them; nothing else would (a cold run has
# no parent-death signal).
_LIVE: set[Child] = set()
_LIVE_LOCK = threading.Lock()


def _kill_live() -> None:
    with _LIVE_LOCK:
        live = list(_LIVE)
    for child in live:
        try:
            _kill_all(child, None, signal.SIGKILL, child.held)
        except Exception:  # noqa: BLE001 - at exit: kill the others anyway
            continue


def _forget_live() -> None:  # a forked copy of this process owns none of these runs
    global _LIVE_LOCK
    _LIVE.clear()
    _LIVE_LOCK = threading.Lock()


atexit.register(_kill_live)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_live)


@dataclass
class _Run:
    """What :func:`drive` knows of a run while it goes: the loop, the process tree once it
    was looked at, and why it stopped."""

    child: Child
    loop: _Loop
    limits: Limits
    tree: _Descendants | None = None
    timed_out: bool = False
    cancelled: bool = False

    def look(self, now: float) -> None:
        """Snapshot the run's process tree (the main process is alive: it is complete)."""
        if now - self.child.start >= TREE_POLL_S:
            self.tree = self.tree or _Descendants(self.child.pid, self.child.pid, self.child.start)
            self.tree.snapshot()

    def kill(self, sig: int, exited: bool = False) -> None:
        _kill_all(self.child, self.tree, sig, self.child.held, exited)

    def reap_orphans(self) -> None:
        held = self.child.held
        if held is not None and not held.settled:
            held.reap()
            # Before the leader is reaped: its group id.
            held.reap_zombies(self.child.pid, self.tree.saw if self.tree is not None else None)


def drive(child: Child, limits: Limits) -> ProcessOutcome:
    """Drive a started ``child`` (cold, sandboxed or warm: the same) to its end (see the
    module docstring): feed stdin, read both pipes, kill the main process, its group and
    every descendant on timeout, cancel or any exception, reap. Raises the child's
    ``failure`` (SpawnError: a warm child that could not start) after its end."""
    loop: _Loop | None = None
    run: _Run | None = None
    try:
        loop = _Loop(child, child.payload, limits.max_output_size, limits.on_output, limits.masks)
        run = _Run(child, loop, limits)
        with _LIVE_LOCK:
            _LIVE.add(child)
        if child.held is not None:  # unsandboxed: its processes die with this one too
            WATCH.track(child.pid)
        if limits.started is not None:
            limits.started()
        _wait(run)
        # Whatever is left of the group (background children, a script ignoring SIGTERM) dies
        # now, while the unreaped leader still pins the group id; so do remembered escapees
        # and the run's orphans (which are then reaped: they are this process's children).
        exited = loop.exited and child.has_exited()
        run.kill(signal.SIGKILL, exited)
        run.reap_orphans()
        returncode = child.reap(exited)
        loop.final_drain()
    except BaseException:
        # KeyboardInterrupt from a kernel interrupt, or a callback raising: never leave the
        # run's processes behind the exception.
        if not child.reaped:
            _abort(child, loop, run)
        raise
    finally:
        with _LIVE_LOCK:
            _LIVE.discard(child)
        if child.held is not None:
            WATCH.untrack(child.pid)
        _close(child, loop)
    if child.failure is not None:
        raise child.failure
    return ProcessOutcome(
        pid=child.pid,
        returncode=returncode,
        stdout=loop.stdout,
        stderr=loop.stderr,
        duration_s=time.monotonic() - child.start,
        timed_out=run.timed_out,
        cancelled=run.cancelled,
        server_stopped=child.server_stopped,
    )


def _wait(run: _Run) -> None:
    """The loop: until the main process exits and its pipes close, the deadline passes or
    ``cancel`` is set (then SIGTERM to all, a grace to exit)."""
    child, loop, cancel = run.child, run.loop, run.limits.cancel
    deadline = child.start + run.limits.timeout
    # The run's process tree is first looked at once it has lasted TREE_POLL_S: most runs
    # end before, and never make one.
    tree_at = child.start + TREE_POLL_S if _TREE_WATCH else float("inf")
    while loop.readers or not loop.exited:
        now = time.monotonic()
        stop = cancel is not None and cancel.is_set()
        if stop or now >= deadline:
            run.cancelled, run.timed_out = stop, not stop
            run.look(now)
            # SIGTERM lets the script clean up; grandchildren get it too.
            run.kill(signal.SIGTERM)
            loop.wait_exit(GRACE_S)
            return
        if loop.exited:
            # The main process is done but something (a background child) holds the pipes:
            # give it a moment to finish writing, then the group is killed.
            loop.drain(now + DRAIN_S)
            return
        if now >= tree_at:
            run.tree = run.tree or _Descendants(child.pid, child.pid, child.start)
            run.tree.maybe_snapshot(now)
            tree_at = run.tree.next_at if run.tree.enabled else float("inf")
            if child.held is not None:  # a pid-hopper's exited hops are zombies here (the
                # subreaper): left to the run's end, 500 a second would fill the pid table
                child.held.reap_zombies(child.pid, run.tree.saw)
        wait = min(deadline - now, max(tree_at - now, 0.0))
        if cancel is not None:
            wait = min(wait, CANCEL_POLL_S)
        if loop.exit_fd is None and not loop.exited:  # nothing tells us: poll the pid
            if loop._poll_exit():
                continue
            wait = min(wait, EXIT_POLL_S)
        loop.step(wait)


def _abort(child: Child, loop: _Loop | None, run: _Run | None) -> None:
    """Kill everything of the run (SIGTERM, a grace, SIGKILL) and reap it."""
    tree = run.tree if run is not None else None
    _kill_all(child, tree, signal.SIGTERM, child.held)
    try:
        if loop is not None:
            loop.wait_exit(GRACE_S)
    finally:
        _kill_all(child, tree, signal.SIGKILL, child.held)
        if child.held is not None:
            child.held.reap()
            child.held.reap_zombies(child.pid, tree.saw if tree is not None else None)
        child.reap()


def _close(child: Child, loop: _Loop | None) -> None:
    if loop is not None:
        loop.close()
    else:
        child.close()
        for pipe in (child.stdin, child.stdout, child.stderr):
            if pipe is not None:
                pipe.close()
    child.release()


__all__ = [
    "CANCEL_POLL_S",
    "DRAIN_S",
    "EXIT_POLL_S",
    "GRACE_S",
    "Limits",
    "ProcessOutcome",
    "drive",
    "run_process",
]
