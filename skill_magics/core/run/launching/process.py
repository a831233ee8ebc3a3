"""Run one command in its own process group, driven by one selector loop in the calling thread.

Example (not run as a doctest: it starts a process)::

    child = spawn(["bash", "x.sh"], b"{}", cwd="/skills/s", env={"PATH": "/usr/bin"})
    out = drive(child, Limits(timeout=30, max_output_size=10 * 2**20))
    out.returncode, out.stdout.text

:func:`spawn` is the cold launch; a warm one (core/run/launching/warm/launch.fork) returns another
kind of :class:`Child`; :func:`drive` drives either to its end (launchers/ chooses).
The kill reaches the main process by its own pid (a pidfd) as well as its group: a script
can move itself into another group (``setpgid``) or session, where the group kill misses it.

Why one loop and no reader threads: per-run threads measured ~1.27x raw ``subprocess.run`` on
a trivial bash script, one loop ~1.05x. Why a process group and not a new session: with
autogroup scheduling each new session costs a scheduler tick per spawn on a busy machine.

The loop writes stdin without blocking, reads stdout/stderr, and watches the main process
through a pidfd (Linux), so it notices the main process exiting even while a background child
keeps the pipes open. The group is always killed before the main process is reaped: an
unreaped (zombie) leader keeps the group id from being reused by an unrelated process.

A child that calls setsid()/setpgid() leaves the group, so killing the group misses it. Once
a run has lasted ``TREE_POLL_S`` (50 ms), the loop also snapshots the run's process tree every
``TREE_POLL_S`` during the first second, then every ``TREE_POLL_LATER_S`` (250 ms), and
remembers every descendant; when the run ends (exit, timeout, cancel, interrupt) those still
alive die with the group (checked by creation time, so a recycled pid is never hit). Runs
shorter than 50 ms pay no snapshot. A descendant born, detached and orphaned between two
snapshots (a double fork) is caught on Linux by orphans.py instead: during a run this
process is a child subreaper, so the orphan is re-parented here, and it carries the run's id
in its environment; the run's end kills and reaps it. What still escapes is said there.
That kill stops what it finds and looks again until nothing new turns up, so processes forked
during the kill die too, and a watcher kills the run when the kernel dies
(core/run/launching/containment.py).
"""

from __future__ import annotations

import atexit
import codecs
import errno
import logging
import math
import os
import select
import selectors
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skill_magics.core.base.secrets import Masks
from skill_magics.core.run.launching.cgroups import RUN_CGROUPS, RunCgroup
from skill_magics.core.run.launching.containment import WATCH, kill_run
from skill_magics.core.run.launching.orphans import RUN_ID_VAR, SUBREAPER, Orphans, new_run_id

logger = logging.getLogger("skill_magics.executor")

GRACE_S = 0.05  # SIGTERM -> SIGKILL: a script that ignores SIGTERM still dies within 100 ms
DRAIN_S = 0.1  # after the main process exits, how long background children may keep writing
CANCEL_POLL_S = 0.05  # how often a cancel Event is looked at (an Event cannot be selected on)
EXIT_POLL_S = 0.05  # without pidfd: how often the main process is polled while pipes are open
TREE_POLL_S = 0.05  # how often (and after how long) the run's process tree is snapshotted
TREE_POLL_LATER_S = 0.25  # ... once the run has lasted a second
READ_CHUNK = 1 << 16  # the default Linux pipe capacity: one read empties a full pipe
WRITE_CHUNK = 1 << 16

OnOutput = Callable[[str, str], object]

# What codecs' incremental UTF-8 decoder does, without a decoder object per stream: decode
# what is complete, keep the bytes of a character cut by the read for the next one.
_UTF8_DECODE = codecs.utf_8_decode
_HAS_PIDFD = hasattr(os, "pidfd_open")
_HAS_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")
# Linux with CONFIG_PROC_CHILDREN (every mainstream kernel): direct children per thread.
_PROC_CHILDREN = os.path.exists(f"/proc/{os.getpid()}/task/{os.getpid()}/children")


@dataclass
class StreamCapture:
    """Keeps the first ``cap`` bytes of a stream as text, counts the rest.

    An incremental decoder carries a multibyte character split across reads over to the next
    read; invalid bytes become U+FFFD; ``\\r\\n`` is kept as written.

    With ``masks`` (the run's secret values), the text is redacted BEFORE the cap cuts it:
    decoded text goes through a :class:`StreamRedactor`, and the cap applies to what comes
    out, so a value straddling the cap is masked whole, never kept as a head. Past the cap,
    decoding goes on only until the redactor has settled the text up to it.
    """

    name: str
    cap: int
    kept_bytes: int = 0
    total_bytes: int = 0
    truncated: bool = False
    pieces: list[str] = field(default_factory=list)
    masks: Masks | None = None

    def __post_init__(self) -> None:
        self._pending = b""  # the start of a character the last read cut
        self._redactor = self.masks.stream() if self.masks else None

    def feed(self, data: bytes) -> str:
        """Account for ``data``; return the newly decoded text that was kept ('' past the cap)."""
        self.total_bytes += len(data)
        if self.truncated:
            return ""
        if self._redactor is not None:
            return self._keep(self._redactor.feed(self._decode(data)))
        room = self.cap - self.kept_bytes
        if len(data) > room:
            # Cut at the cap. Bytes of a character straddling the cut stay in the decoder and
            # are dropped, so the kept text re-encodes to an exact prefix of what was written.
            data = data[:room]
            self.truncated = True
        self.kept_bytes += len(data)
        text = self._decode(data)
        if text:
            self.pieces.append(text)
        return text

    def _decode(self, data: bytes, final: bool = False) -> str:
        """UTF-8 text of ``data`` after what was pending; invalid bytes become U+FFFD."""
        if self._pending:
            data = self._pending + data
        text, used = _UTF8_DECODE(data, "replace", final)
        self._pending = data[used:] if used < len(data) else b""
        return text

    def _keep(self, text: str) -> str:
        """Keep redacted ``text`` up to the cap (cut at a character boundary)."""
        if not text:
            return ""
        data = text.encode("utf-8", "surrogatepass")
        room = self.cap - self.kept_bytes
        if len(data) > room:
            text = data[:room].decode("utf-8", "ignore")
            data = text.encode("utf-8", "surrogatepass")
            self.truncated = True
        self.kept_bytes += len(data)
        if text:
            self.pieces.append(text)
        return text

    def finish(self) -> str:
        """End of stream: an incomplete trailing character becomes U+FFFD (unless truncated)."""
        if self.truncated:
            return ""
        if not self._pending and self._redactor is None:
            return ""  # nothing cut by the last read: nothing left to decode
        text = self._decode(b"", final=True)
        if self._redactor is not None:
            return self._keep(self._redactor.feed(text) + self._redactor.flush())
        if text:
            self.pieces.append(text)
        return text

    @property
    def text(self) -> str:
        if len(self.pieces) > 1:  # join once, keep one copy
            self.pieces[:] = ["".join(self.pieces)]
        return self.pieces[0] if self.pieces else ""


class SpawnError(OSError):
    """The program could not be started at all (nothing ran)."""


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


def group_kwargs() -> dict:
    """Popen keywords that start the child in a process group of its own."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"process_group": 0}  # setpgid in the child; keeps the fast vfork path


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


class Pipe:
    """Our end of one of a run's pipes: a bare descriptor. The loop reads and writes it with
    os.read/os.write, so it needs no file object (whose creation costs an fstat)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


class Child:
    """A started run as the loop drives it: the main process (its pid is its group id), our
    ends of its pipes, how to notice its exit without reaping it, and how to reap it.

    :class:`_PopenChild` is a process this one spawned; a warm server's fork
    (core/run/launching/warm/server.py) is another kind, whose exit a message on a socket announces.
    """

    pid: int
    stdin: Pipe | None  # None: stdin was /dev/null, or the payload was written already
    stdout: Pipe
    stderr: Pipe
    reaped = False
    start = 0.0  # time.monotonic() when it was spawned: the timeout counts from there
    payload: bytes | None = None  # what is left to write to its stdin (the loop writes it)
    held: Orphans | None = (
        None  # its orphans (core/run/launching/orphans.py), the subreaper entered
    )
    cgroup: RunCgroup | None = None  # the run's own cgroup (core/run/launching/cgroups.py), if any
    failure: SpawnError | None = None  # it could not start after all (a warm child's cwd)
    # A warm run's server ended while it ran ("signal 9", "exit 1"): its status is not the
    # script's own doing (ProcessOutcome.server_stopped).
    server_stopped = ""

    def exit_fd(self) -> int | None:
        """A descriptor that becomes readable when the main process exits (None: poll)."""
        return None

    def on_exit_fd(self) -> bool:
        """``exit_fd`` is readable: has the main process exited?"""
        return True

    def poll_exit(self) -> bool:
        """Has the main process exited? Never reaps it."""
        raise NotImplementedError

    def reap(self, exited: bool = False) -> int:
        """Wait for the exited (or killed) main process; its status, -N for signal N.
        ``exited``: it surely has exited already (:meth:`has_exited`)."""
        raise NotImplementedError

    def kill(self, sig: int) -> None:
        """Signal the main process itself, by pid (a pidfd where there is one): it may have
        left its group (``setpgid`` into its parent's, ``setsid``), where the group kill
        misses it. Never reaps it, so its pid cannot be recycled meanwhile."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the child holds beyond its pipes (the loop closes those)."""

    def release(self) -> None:
        """The run is over: let its orphans go (the subreaper is left)."""
        held, self.held = self.held, None
        if held is not None:
            if held.held:
                held.close()
            SUBREAPER.leave()
        group, self.cgroup = self.cgroup, None
        if group is not None:
            RUN_CGROUPS.release(group)

    def has_exited(self) -> bool:
        """After the loop saw the exit: has the main process surely exited (it is a zombie
        or reaped, so its children were re-parented already)? False when unsure."""
        return False


class _PopenChild(Child):
    """A process started here with subprocess.Popen."""

    def __init__(
        self,
        proc: subprocess.Popen,
        stdin: Pipe | None,
        stdout: Pipe,
        stderr: Pipe,
        *,
        start: float,
        payload: bytes | None,
        held: Orphans | None,
    ) -> None:
        self.start = start
        self.payload = payload
        self.held = held
        self.proc = proc
        self.pid = proc.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pidfd: int | None = None

    def exit_fd(self) -> int | None:
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(self.pid)
            except OSError:  # old kernel (< 5.3) or seccomp: poll the pid instead
                self.pidfd = None
        return self.pidfd

    def kill(self, sig: int) -> None:
        if self.reaped:
            return
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:  # unreaped: the pid is still this child's (a zombie at worst)
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def poll_exit(self) -> bool:
        if _HAS_WAITID:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # already reaped: it has exited
                return True
            return info is not None
        return self.proc.poll() is not None  # pragma: no cover - no waitid(): reaps

    def has_exited(self) -> bool:
        return True  # the loop saw its pidfd readable or waitid(WNOWAIT) report it

    def reap(self, exited: bool = False) -> int:
        if exited and self.proc.returncode is None:
            # A zombie already (``has_exited``): one waitpid, not Popen.wait's timed loop.
            try:
                _pid, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere: Popen knows how to say so
                pass
            else:
                self.proc.returncode = code = os.waitstatus_to_exitcode(status)
                self.reaped = True
                return code
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - uninterruptible sleep
            logger.error("Process %s did not exit after SIGKILL; leaving it", self.pid)
            code = -signal.SIGKILL
        self.reaped = True
        return code

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


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


def spawn(
    command: Sequence[str],
    payload: bytes | None,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    orphans: bool = True,
    die_with_parent: bool = False,
) -> Child:
    """Start ``command`` (list form, never a shell) in a process group of its own: the cold
    launch (a sandboxed run is the same, its command wrapped in bwrap). payload None means
    stdin reads as empty. ``orphans``: also find and kill the run's daemons that left the
    group (core/run/launching/orphans.py; a sandboxed run's PID namespace does that already).
    ``die_with_parent``: see :func:`run_process`. Raises SpawnError when the program cannot
    be started (nothing ran)."""
    held: Orphans | None = None
    group: RunCgroup | None = None
    join = -1
    if die_with_parent:
        command = _guarded(command, env)
    if orphans and SUBREAPER.enter():
        held = Orphans(run_id := new_run_id())
        env = {**(os.environ if env is None else env), RUN_ID_VAR: run_id}
    try:
        if held is not None and (group := RUN_CGROUPS.new()) is not None:
            join = group.join_fd()  # the child joins its cgroup before it execs
            if join < 0:
                RUN_CGROUPS.release(group)
                group = None
        start = time.monotonic()
        try:
            proc, stdin, out_r, err_r, rest = _popen(
                command, payload, cwd, env, die_with_parent, join
            )
        finally:
            if join >= 0:
                os.close(join)
    except BaseException:
        if held is not None:
            SUBREAPER.leave()
        if group is not None:
            RUN_CGROUPS.release(group)
        raise
    child = _PopenChild(proc, stdin, Pipe(out_r), Pipe(err_r), start=start, payload=rest, held=held)
    child.cgroup = group
    return child


def _popen(
    command: Sequence[str],
    payload: bytes | None,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    die_with_parent: bool = False,
    join: int = -1,
) -> tuple[subprocess.Popen, Pipe | None, int, int, bytes | None]:
    """Popen with pipes made here, not by Popen: it would wrap its ends in file objects (an
    fstat each) that the loop never uses. A payload that fits the pipe is written before the
    spawn and its write end closed: the script reads it, then EOF. Returns the process, our
    stdin end (None: nothing left to write), stdout and stderr read ends, the unwritten
    payload. ``join``: a cgroup's ``cgroup.procs`` the child writes itself into."""
    theirs: list[int] = []  # the child's ends: closed here once it has them
    ours: list[int] = []
    stdin: Pipe | None = None
    try:
        if payload is None:
            child_in: int = subprocess.DEVNULL
        else:
            child_in, in_w = os.pipe2(os.O_CLOEXEC) if _PIPE2 else os.pipe()
            theirs.append(child_in)
            ours.append(in_w)
            written = os.write(in_w, payload) if len(payload) <= _PREFILL else 0
            if written == len(payload):
                os.close(ours.pop())
                payload = None
            else:  # the loop writes it (or the rest: never, a small write is atomic)
                payload = payload[written:]
                stdin = Pipe(in_w)
        out_r, out_w = os.pipe2(os.O_CLOEXEC) if _PIPE2 else os.pipe()
        ours.append(out_r)
        theirs.append(out_w)
        err_r, err_w = os.pipe2(os.O_CLOEXEC) if _PIPE2 else os.pipe()
        ours.append(err_r)
        theirs.append(err_w)
        try:
            proc = subprocess.Popen(
                command,
                stdin=child_in,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=env,
                shell=False,
                bufsize=0,
                preexec_fn=_child_setup(die_with_parent, join),
                **_GROUP,
            )
        except OSError as exc:
            raise SpawnError(exc.errno, exc.strerror or str(exc), exc.filename) from exc
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    return proc, stdin, out_r, err_r, payload


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


# A write of at most PIPE_BUF bytes to a new, empty pipe never blocks: every pipe holds at
# least one page (even past the per-user pipe buffer limits), and PIPE_BUF is at most that.
_PREFILL = getattr(select, "PIPE_BUF", 512)


_GROUP = group_kwargs()  # the same for every run
PR_SET_PDEATHSIG = 1  # linux/prctl.h


_GUARD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "treeguard.py")


def _guarded(command: Sequence[str], env: Mapping[str, str] | None) -> Sequence[str]:
    """``command`` under core/run/launching/treeguard.py (Linux), so its children die with this
    process too: the parent-death signal reaches only the process it is set on. A program
    that is not there is still a SpawnError here, as without the guard."""
    if not sys.platform.startswith("linux") or not sys.executable or not command:
        return command
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    if shutil.which(command[0], path=path) is None:
        raise SpawnError(errno.ENOENT, "No such file or directory", command[0])
    return [sys.executable, "-I", "-S", _GUARD, str(os.getpid()), "--", *command]


def _child_setup(die_with_parent: bool, join: int = -1) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a spawn, or None (Popen's fast path).

    A script starts with SIGINT at its default whatever this process does with it: a kernel
    ignores SIGINT between cells (ipykernel), and ``nohup``/``&`` start a process with it
    ignored; an ignored signal survives exec, so the script's Ctrl-C, Interrupt and Stop
    would find it deaf (KeyboardInterrupt never raised). ``join``: the child writes itself
    into its run's cgroup (core/run/launching/cgroups.py) before it execs, so nothing it forks is
    outside; a failed write leaves it to the look-and-kill, as without a cgroup."""
    arm = _death_signal() if die_with_parent else None
    deaf = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not deaf and join < 0:
        return arm

    def setup() -> None:
        if join >= 0:
            try:
                os.write(join, b"0")
            except OSError:
                pass
        if deaf:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        if arm is not None:
            arm()

    return setup


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child die (SIGKILL) with the thread that spawned it;
    None where prctl is not there. libc is loaded here, in the parent: nothing is loaded
    between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl: nobody will wait
            os._exit(1)

    return arm


_PIPE2 = hasattr(os, "pipe2")  # both ends close-on-exec at once (os.pipe's are too, later)


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
    "Child",
    "Limits",
    "Pipe",
    "drive",
    "group_kwargs",
    "GRACE_S",
    "DRAIN_S",
    "TREE_POLL_S",
    "StreamCapture",
    "ProcessOutcome",
    "SpawnError",
    "run_process",
    "spawn",
    "kill_group",
]
