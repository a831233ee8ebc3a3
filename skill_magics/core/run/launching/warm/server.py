"""One warm server as this process sees it: start it, preload packages into it, fork a run
from it, stop it. The server itself is zygote.py (it runs in the skill's Python).

docs/architecture.md, *Warm start*. Every server has a thread of its own, its keeper
(:meth:`WarmServer.begin`): it starts the server, runs its imports and lives as long as the
server's process, so bwrap's ``--die-with-parent`` and the server's own parent-death signal
(tied to the thread that started it) fire only when this process ends, never when a batch's
worker thread does. Servers start side by side: an import that never ends holds up only its
own server; stops run on threads of their own (:func:`stop_soon`), never behind a start.

Example (not run as a doctest: it starts a warm server)::

    server = WarmServer(key, argv, env)
    server.begin(["pandas"])  # on its keeper thread; server.wait(...) for READY
    child = server.fork(spec, stdin_fd, stdout_fd, stderr_fd)  # a process.Child
"""

from __future__ import annotations

import enum
import functools
import json
import logging
import os
import queue
import signal
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import IO, Any

from skill_magics.core.base.errors import WarmStateError
from skill_magics.core.run.launching.process import group_kwargs
from skill_magics.core.run.launching.warm import wire
from skill_magics.core.run.launching.warm.forked import WarmChild, recv_creds

logger = logging.getLogger("skill_magics.warm")

# zygote.py, started through the file that marks its frames as the interpreter's own (a
# warnings stack level past the script reaches no frame, as in a cold run).
ZYGOTE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "importlib_bootstrap_zygote.py")
HELLO_S = 30.0  # the server says hello this soon after it was started, or it failed
FORK_S = 10.0  # a run's child announces itself this soon after the request (a load may run)
STOP_S = 2.0  # after the request to stop, the server is killed
LOAD_S = 600.0  # importing a skill's packages takes at most this long
WATCH_S = 1.0  # an idle keeper looks this often whether its server was killed (to reap it)


class ServerState(enum.StrEnum):
    """Where a server is in its life (one value, changed only by ``WarmServer._to``)."""

    STARTING = "starting"  # spawned, saying hello, importing its first packages
    READY = "ready"  # runs fork from it
    DRAINING = "draining"  # a waiting run asked for an import: no new run forks meanwhile
    LOADING = "loading"  # importing more packages (no run in flight): no run forks
    RETIRED = "retired"  # stale, replaced or tainted: no new run; stops with its last run
    FAILED = "failed"  # it could not start (``problem`` says why)
    STOPPED = "stopped"


_S = ServerState
# What may follow what; anything else is a bug (WarmStateError). STOPPED follows anything.
_NEXT: dict[ServerState, frozenset[ServerState]] = {
    _S.STARTING: frozenset({_S.READY, _S.RETIRED, _S.FAILED}),
    _S.READY: frozenset({_S.DRAINING, _S.LOADING, _S.RETIRED}),
    _S.DRAINING: frozenset({_S.READY, _S.LOADING, _S.RETIRED}),
    _S.LOADING: frozenset({_S.READY, _S.RETIRED}),
    _S.RETIRED: frozenset({_S.FAILED}),  # it was retired while it started, and that failed
    _S.FAILED: frozenset(),
    _S.STOPPED: frozenset(),
}
# A server in these states holds a process that serves runs now or once its import is done.
SERVING = frozenset({_S.READY, _S.DRAINING, _S.LOADING})


@dataclass(frozen=True)
class ServerKey:
    """What makes two runs able to share a server: one skill (its name and real folder) at
    one state of its code (``code``: skillcode.SkillCode.fingerprint), the interpreter and
    its flags, the environment the server starts with (secrets and per-skill variables left
    out), and the sandbox (None: unsandboxed). Two skills never share a server: a package
    one imports must never be in the other's runs (its atexit callbacks, its threads)."""

    skill: tuple[str, str]
    code: str
    python: str
    flags: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = field(repr=False)
    sandbox: tuple[Any, ...] | None = None

    def replaces(self, other: ServerKey) -> bool:
        """Is a server of ``other`` the same skill's at another state of its code or
        environment, started the same way (interpreter, flags, sandbox)? Then a server of
        this key replaces it (warm/pool.py)."""
        same_start = (other.python, other.flags, other.sandbox) == (
            self.python,
            self.flags,
            self.sandbox,
        )
        return other.skill == self.skill and other != self and same_start


class ServerBusy(OSError):
    """The server cannot import now: runs of it are in flight (an import blocks the server,
    and with it the news of their ends)."""


@dataclass
class LoadReport:
    """What the server imported (``loaded``), what failed and why, what must not be
    preloaded (``unsafe``: it prints while imported, starts a Python thread or keeps a file
    open), its OS threads, every top-level module it holds (a skill's own module of the same
    name would not be imported fresh) and the module files outside its installation's
    folders (``sources``: watched, an in-place edit makes the server stale)."""

    loaded: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    unsafe: dict[str, str] = field(default_factory=dict)  # name -> why it must not be
    os_threads: int = 0
    modules: frozenset[str] = frozenset()
    fds: list[int] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    seconds: float = 0.0


class WarmServer:
    """A server process (see the module docstring). Thread-safe: its state, its runs in
    flight and the packages asked of it change under one lock (``_lock``, a Condition that
    :meth:`wait` waits on), the state only in :meth:`_to`."""

    def __init__(
        self,
        key: ServerKey,
        argv: Sequence[str],
        env: dict[str, str],
        *,
        label: str = "",
    ) -> None:
        self.key = key
        self.argv = list(argv)
        self.env = env
        self.label = label or key.python
        self.problem = ""  # why it failed, or why runs cannot be warm in it
        self.proc: subprocess.Popen | None = None
        self.pid = 0  # the server's pid here (inside bwrap: its host pid)
        self.python_version = ""
        self.path: list[str] = []  # folders on its sys.path (their mtimes: staleness)
        self.stamp: tuple[int, ...] = ()
        self.sources: dict[str, int] = {}  # module files outside site-packages: their stamps
        self.report = LoadReport()
        self.started_at = 0.0
        self.last_used = time.monotonic()
        self.runs = 0  # runs started
        self.in_flight = 0
        self.idle_timeout = 600.0
        self.excluded: dict[str, str] = {}  # packages never preloaded here, and why
        self.pending: list[str] = []  # packages to import once no run is in flight
        self.on_idle: Callable[[], object] | None = None  # imports ``pending`` (the pool's)
        self._ctl: socket.socket | None = None
        self._log: IO[bytes] | None = None
        # The one lock: the state, in_flight and pending, and every message sent on _ctl
        # (a fork's request and an import's never cross the check that allowed them).
        self._lock = threading.Condition()
        self._state = ServerState.STARTING
        # Jobs for the keeper thread (imports); None only wakes it to see if it may end.
        self._jobs: queue.SimpleQueue[Callable[[], object] | None] = queue.SimpleQueue()
        self._keeper: threading.Thread | None = None

    # -- state -------------------------------------------------------------------------------

    @property
    def state(self) -> ServerState:
        return self._state

    def _to(self, new: ServerState) -> None:
        """The one place the state changes: under the lock, along an edge of ``_NEXT`` (any
        other is a bug: WarmStateError); whoever waits (:meth:`wait`) wakes."""
        with self._lock:
            old = self._state
            if new is old:
                return
            if new is not ServerState.STOPPED and new not in _NEXT[old]:
                raise WarmStateError(f"warm server {self.label}: {old} -> {new} is not a move")
            self._state = new
            if new is ServerState.READY:
                # Idle time counts from when it can serve: a start or an import longer than
                # the idle timeout must not stop it the moment it is ready, unused.
                self.last_used = time.monotonic()
            self._lock.notify_all()

    def wait(
        self,
        done: Callable[[ServerState], bool],
        seconds: float,
        cancel: threading.Event | None = None,
    ) -> bool:
        """The one wait on a server: True once ``done(state)``, False after ``seconds`` or
        once ``cancel`` is set (another object's event: looked at every 50 ms)."""
        end = time.monotonic() + seconds
        with self._lock:
            while not done(self._state):
                left = end - time.monotonic()
                if left <= 0 or (cancel is not None and cancel.is_set()):
                    return False
                self._lock.wait(left if cancel is None else min(left, 0.05))
            return True

    # -- life --------------------------------------------------------------------------------

    def begin(self, preload: Sequence[str], start: Callable[[], object] | None = None) -> None:
        """Start the server on its keeper thread (see the module docstring) and return.
        ``start``: what starts it there (default ``self.start(preload)``; the pool passes it
        wrapped in the start's trace span)."""
        start = start or functools.partial(self.start, list(preload))
        thread = threading.Thread(
            target=self._keep, args=(start,), name=f"skill-magics-warm {self.label}"
        )
        thread.daemon = True
        self._keeper = thread
        thread.start()

    def submit(self, job: Callable[[], object]) -> None:
        """Run ``job`` (an import) on this server's keeper thread, after what it does now."""
        self._jobs.put(job)

    def _keep(self, start: Callable[[], object]) -> None:
        """The keeper: start, then run the jobs given, until the process is gone (it must
        not end before: the server's parent-death signal is tied to this thread)."""
        start()
        while not self._ended():
            try:
                job = self._jobs.get(timeout=WATCH_S)
            except queue.Empty:
                self._look()
                continue
            if job is None:
                continue
            try:
                job()
            except Exception:  # noqa: BLE001 - a failed import is the server's state
                logger.warning("warm server job failed", exc_info=True)

    def _look(self) -> None:
        """An idle look: a server killed from outside (the OOM killer, a person) is reaped
        now and stops serving, rather than staying a zombie until its idle timeout."""
        if self.proc is None or self.alive():
            return
        with self._lock:
            serving = self._state in SERVING
        if serving:
            logger.info("warm server for %s: %s", self.label, self._exit_reason("it stopped"))
            self.stop()

    def _ended(self) -> bool:
        return self._state in (ServerState.FAILED, ServerState.STOPPED) and not self.alive()

    def start(self, preload: Sequence[str], timeout: float = HELLO_S) -> None:
        """Start the process, wait for its hello, import ``preload``. Never raises: the
        state becomes READY or FAILED (``problem`` says why), unless it was stopped or
        retired meanwhile. Runs on the keeper thread (:meth:`begin`)."""
        try:
            for _attempt in range(2):  # the second one without the unsafe packages
                with self._lock:
                    if self._state is not ServerState.STARTING:  # stopped before it started
                        return
                    self._spawn()  # under the lock: a stop never crosses it
                self._hello(timeout)
                if self.problem:
                    break
                if not self.load([n for n in preload if n not in self.excluded]).unsafe:
                    break
                self._kill()
            else:
                self._fail("its packages print or start threads when imported")
        except Exception as exc:  # noqa: BLE001 - any failure means: runs stay cold
            self._fail(f"{type(exc).__name__}: {exc}")
        with self._lock:
            if self._state is ServerState.STARTING:
                self._to(ServerState.READY)
            keep = self._state in (ServerState.READY, ServerState.RETIRED)
        if not keep:  # failed or stopped: a retired one is stopped by whoever retired it
            self._kill()

    def _spawn(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # hello tells its host pid
        self._log = tempfile.TemporaryFile(prefix="skill-magics-warm-")
        argv = [a.replace("{fd}", str(theirs.fileno())) for a in self.argv]
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=self._log,  # what an import prints shows there (zygote.load)
                stderr=self._log,
                pass_fds=(theirs.fileno(),),
                env=self.env,
                cwd="/",
                **group_kwargs(),  # never in the kernel's group: a Ctrl-C there is not ours
            )
        finally:
            theirs.close()
        self._ctl = ours
        self.pid = self.proc.pid
        self.started_at = time.monotonic()

    def _hello(self, timeout: float) -> None:
        assert self._ctl is not None
        data, pid = recv_creds(self._ctl, timeout)
        if not data.startswith(wire.HELLO):
            raise RuntimeError(self._exit_reason("the server did not start"))
        info = json.loads(data[1:])
        self.pid = pid or self.pid
        self.python_version = info.get("python", "")
        self.path = list(info.get("path", []))
        self.stamp = env_stamp(self.key.python, self.path)
        if info.get("problem"):
            self._fail(info["problem"])

    def load(self, names: Sequence[str]) -> LoadReport:
        """Import ``names`` in the server (those it has are skipped); the report says what
        it holds now. Raises ServerBusy while runs of it are in flight (the server answers
        nothing while it imports: their ends would wait, a timeout could fire on a run that
        had finished), OSError when the server is gone or not serving. A package that turned
        out unsafe (``report.unsafe``) retires a serving server: no run forks from it again."""
        with self._lock:
            # Another thread's import first (warm_up's and the pool's may cross).
            self._lock.wait_for(lambda: self._state is not ServerState.LOADING, LOAD_S)
            ctl = self._ctl
            if ctl is None or self._state not in _LOADS_FROM:
                raise OSError(f"the warm server is not running ({self._state})")
            if self.in_flight:
                raise ServerBusy("runs of the warm server are in progress")
            if self._state is not ServerState.STARTING:  # its first import is part of starting
                self._to(ServerState.LOADING)
            report: LoadReport | None = None
            try:
                ctl.send(wire.LOAD + json.dumps(list(names)).encode())
            except BaseException:
                self._loaded(report)
                raise
        try:
            data, _pid = recv_creds(ctl, LOAD_S)
            if not data.startswith(wire.LOAD):
                raise OSError(self._exit_reason("the server went away while importing"))
            report = _load_report(json.loads(data[1:]))
            self._apply(report)
        finally:
            self._loaded(report)
        return report

    def _loaded(self, report: LoadReport | None) -> None:
        """An import ended (``report``: None when it failed): runs fork again, unless it
        brought in an unsafe package (then none ever does)."""
        with self._lock:
            if self._state is ServerState.LOADING:
                unsafe = report is not None and bool(report.unsafe)
                self._to(ServerState.RETIRED if unsafe else ServerState.READY)

    def _apply(self, report: LoadReport) -> None:
        self.report = report
        for path in report.sources:
            # Stamped when first seen: a later import must not hide an edit made since.
            if path not in self.sources:
                self.sources[path] = file_stamp(path)
        # Its output would be missing from every run, or its thread (maybe holding a lock):
        # no run may start from this process. A new one leaves these out.
        self.excluded.update(report.unsafe)

    def _fail(self, why: str) -> None:
        with self._lock:
            first = not self.problem
            if first:
                self.problem = why
            if self._state in (ServerState.STARTING, ServerState.RETIRED):
                self._to(ServerState.FAILED)
        if first:
            logger.info("warm server for %s: %s", self.label, why)

    def _exit_reason(self, what: str) -> str:
        code = None if self.proc is None else self.proc.poll()
        tail = self.log_tail()
        bits = [what]
        if code is not None:
            bits.append(f"exit {code}")
        if tail:
            bits.append(tail)
        return ": ".join(bits)

    def log_tail(self, lines: int = 3) -> str:
        """The last lines the server wrote to its stderr (why it failed)."""
        log = self._log
        if log is None:
            return ""
        try:
            with open(log.fileno(), "rb", closefd=False) as fh:
                fh.seek(0, os.SEEK_END)
                fh.seek(max(0, fh.tell() - 4096))
                text = fh.read().decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])

    def alive(self) -> bool:
        """Its process runs: not reaped, and not dying. A killed server's main thread is a
        zombie at once, but the process can be reaped (and ``poll()`` says so) only once
        its other threads are gone too, which on a busy machine takes a while: until then
        it serves nothing, and a run or the pool taking it for alive kept it READY."""
        proc = self.proc
        return proc is not None and proc.poll() is None and not _dying(proc.pid)

    @property
    def usable(self) -> bool:
        """Serving (READY, or importing: ready again soon) and still running."""
        return self._state in SERVING and self.alive()

    def stale(self) -> bool:
        """Have its packages changed since it started (an install, a rebuilt environment, a
        module's source outside site-packages edited in place)?"""
        if self.stamp and env_stamp(self.key.python, self.path) != self.stamp:
            return True
        return any(file_stamp(path) != stamp for path, stamp in list(self.sources.items()))

    def retire(self) -> bool:
        """Take no new run; True when none is in flight (stop it now), else the end of the
        last one stops it."""
        with self._lock:
            if self._state is ServerState.STARTING or self._state in SERVING:
                self._to(ServerState.RETIRED)
            return self.in_flight == 0

    def want(self, names: Sequence[str], *, drain: bool = False) -> bool:
        """Import ``names`` too, once no run of this server is in flight: the end of the
        last run submits ``on_idle``. ``drain``: the asking run waits for them (a batch
        item: else every item of a busy batch would import them itself, and the server,
        never idle, would never load them), so no new run forks until they are loaded.
        Returns True when nothing is in flight (the caller starts the import now)."""
        with self._lock:
            self.pending.extend(n for n in names if n not in self.pending)
            if drain and self.pending and self._state is ServerState.READY:
                self._to(ServerState.DRAINING)
            return self.in_flight == 0

    def end_drain(self) -> None:
        """Nothing (more) to import: runs fork again."""
        with self._lock:
            if self._state is ServerState.DRAINING:
                self._to(ServerState.READY)

    def take_pending(self) -> list[str]:
        with self._lock:
            names, self.pending = self.pending, []
        return [n for n in names if n not in self.excluded]

    def stop(self) -> None:
        """Stop the server (its running children are killed with it)."""
        with self._lock:
            if self._state is ServerState.STOPPED:
                return
            self._to(ServerState.STOPPED)
            if self._ctl is not None:
                try:
                    self._ctl.send(wire.QUIT)
                except OSError:
                    pass
        proc = self.proc
        if proc is not None:
            try:
                proc.wait(STOP_S)
            except subprocess.TimeoutExpired:
                self._kill()
        self._close()

    def _kill(self) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:  # reaped: its numbers may be reused
            self._close()
            return
        for pid in {self.pid, proc.pid}:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            proc.wait(STOP_S)
        except subprocess.TimeoutExpired:  # pragma: no cover - stuck in the kernel
            logger.error("warm server %s did not exit after SIGKILL", proc.pid)
        self._close()

    def _close(self) -> None:
        ctl, self._ctl = self._ctl, None
        if ctl is not None:
            ctl.close()
        log, self._log = self._log, None
        if log is not None:
            log.close()
        self._jobs.put(None)  # the keeper looks whether its server is gone, and ends then

    def forget(self) -> None:
        """In a forked copy of this process: drop the descriptors without stopping the
        server (it belongs to the parent)."""
        # A new lock: the parent's may have been held by a thread this copy does not have.
        self._lock = threading.Condition()
        ctl, self._ctl = self._ctl, None
        if ctl is not None:
            # Closed here (the parent's copy stays open): a copy left open in a long-lived
            # child would keep the server from seeing its client go away (EOF).
            ctl.close()
        self._to(ServerState.STOPPED)

    # -- runs --------------------------------------------------------------------------------

    def fork(
        self, spec: bytes, stdin_fd: int, stdout_fd: int, stderr_fd: int, *, timeout: float
    ) -> WarmChild:
        """Ask for a run: its spec (in a memfd only the child reads) and stdio descriptors.
        Returns once the child announced itself (its pid is the group to kill); raises
        OSError when the server cannot fork now (the caller runs it cold instead)."""
        with self._lock:
            ctl = self._ctl
            if ctl is None or self._state is not ServerState.READY:
                raise OSError(_NO_FORK.get(self._state, "the warm server is not running"))
            self.in_flight += 1  # before the request: no import starts behind it
            self.runs += 1
        try:
            ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        except BaseException:
            self.finished()
            raise
        memfd = -1
        try:
            ours.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
            memfd = os.memfd_create("skill-magics-run", os.MFD_CLOEXEC)
            view = memoryview(spec)
            while view:
                view = view[os.write(memfd, view) :]
            fds = [theirs.fileno(), stdin_fd, stdout_fd, stderr_fd, memfd]
            with self._lock:
                socket.send_fds(ctl, [wire.RUN], fds)
        except BaseException:
            ours.close()
            self.finished()
            raise
        finally:
            theirs.close()
            if memfd >= 0:
                os.close(memfd)
        child = WarmChild(self, ours)
        try:
            child.wait_started(timeout)
        except BaseException:
            child.abandon()
            raise
        return child

    def ended(self, wait: float) -> str:
        """How the server process ended ("signal 9", "exit 1"), waiting up to ``wait`` for
        it ("" if it still runs)."""
        proc = self.proc
        if proc is None:
            return "exit ?"
        try:
            code = proc.wait(wait)
        except subprocess.TimeoutExpired:
            return ""
        return f"signal {-code}" if code < 0 else f"exit {code}"

    def finished(self) -> None:
        """A run of this server ended: a retired server stops with its last run; an idle
        one imports what was asked meanwhile."""
        with self._lock:
            self.in_flight -= 1
            self.last_used = time.monotonic()
            idle = self.in_flight == 0
            last = idle and self._state is ServerState.RETIRED
            load = idle and bool(self.pending) and self._state in _LOADS_FROM
        if last:
            stop_soon(self)
        elif load and self.on_idle is not None:
            self.submit(self.on_idle)


# An import may start from these (STARTING: its first one, part of starting).
_LOADS_FROM = frozenset({ServerState.STARTING, ServerState.READY, ServerState.DRAINING})
_NO_FORK = {
    ServerState.STARTING: "the warm server is starting",
    ServerState.DRAINING: "the warm server is importing packages",
    ServerState.LOADING: "the warm server is importing packages",
    ServerState.RETIRED: "the warm server takes no new run (it is being replaced)",
}


def _load_report(raw: dict[str, Any]) -> LoadReport:
    """The server's answer to an import, as a LoadReport."""
    return LoadReport(
        loaded=list(raw.get("loaded", [])),
        failed=dict(raw.get("failed", {})),
        unsafe=dict(raw.get("unsafe", {})),
        os_threads=int(raw.get("os_threads", 0)),
        modules=frozenset(raw.get("modules", [])),
        fds=list(raw.get("fds", [])),
        sources=[str(p) for p in raw.get("sources", [])],
        seconds=float(raw.get("seconds", 0.0)),
    )


def _dying(pid: int) -> bool:
    """Is the unreaped child ``pid``'s main thread a zombie (its other threads still going
    away)? Its pid is still ours: an unreaped child's number is never reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            stat = fh.read()
    except OSError:  # no /proc (not Linux): poll() alone says
        return False
    return stat[stat.rfind(b")") + 2 : stat.rfind(b")") + 3] in (b"Z", b"X")


def file_stamp(path: str) -> int:
    """A file as it is now (0: gone): a write changes its mtime, a replacement its inode."""
    try:
        st = os.stat(path)
    except OSError:
        return 0
    return st.st_mtime_ns ^ st.st_ino ^ st.st_size


def env_stamp(python: str, folders: Sequence[str]) -> tuple[int, ...]:
    """The interpreter file and its import folders as they are now: an install, an upgrade
    or a rebuilt environment changes one of these mtimes."""
    out = []
    for path in (python, *folders):
        try:
            st = os.stat(path)
        except OSError:
            out.append(0)
            continue
        out.append(st.st_mtime_ns ^ st.st_ino)
    return tuple(out)


def stop_soon(server: WarmServer) -> None:
    """Stop ``server`` on a thread of its own (asked to quit, killed past STOP_S): the caller
    never waits for it, and no stop waits behind another server's start or import."""
    thread = threading.Thread(target=server.stop, name=f"skill-magics-warm-stop {server.label}")
    thread.daemon = True
    thread.start()


__all__ = [
    "HELLO_S",
    "LoadReport",
    "ServerBusy",
    "ServerKey",
    "ServerState",
    "SERVING",
    "WarmChild",
    "WarmServer",
    "ZYGOTE",
    "env_stamp",
    "file_stamp",
    "stop_soon",
]
