"""The warm servers of this process: one per key (one skill at one state of its code, the
interpreter, flags, environment, sandbox), each started on its own thread (side by side: a
stuck import holds up no other skill), at most MAX_SERVERS of them, starting ones counted,
stopped when idle (by the idle watch's thread), stale, replaced, asked to, or when the
process ends.

Process-wide: every SkillManager (and every batch worker thread) of a process shares them; a
worker process of a pool or a Dask worker has its own (docs/architecture.md, *Warm start*).

Example (not run as a doctest: it starts warm servers)::

    server = POOL.server_for(key, make, preload=lambda: ["pandas"])
    [info.python for info in POOL.infos()]
"""

from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from skill_magics.core.run.launching.warm.server import (
    SERVING,
    ServerBusy,
    ServerKey,
    ServerState,
    WarmServer,
    stop_soon,
)
from skill_magics.core.trace import hooks as traced

FAILED_RETRY_S = 300.0  # a key whose server failed is tried again after this long
MAX_SERVERS = 8  # per process, starting ones counted: a new one stops the least recently used
# idle one; with none idle, no new server starts (the run starts cold and says why: FULL_NOTE)
FULL_NOTE = "warm servers are running or starting (the most there may be), none of them idle"


@dataclass(frozen=True)
class ServerInfo:
    """A running server as ``%skills warm`` lists it."""

    python: str
    python_version: str
    flags: tuple[str, ...]
    sandbox: str  # "off", or the mode and what is writable
    state: str
    preloaded: tuple[str, ...]
    failed: tuple[str, ...]
    rss_bytes: int
    idle_s: float
    runs: int
    in_flight: int
    pid: int
    problem: str = ""
    skill: str = ""  # the one skill it serves
    not_preloaded: tuple[str, ...] = ()  # "name: why" (it prints, starts threads, ...)

    def line(self) -> str:
        mib = self.rss_bytes / 2**20
        pre = ", ".join(self.preloaded) or "nothing"
        bits = [
            f"{self.skill}: {self.python} ({self.python_version or '?'})",
            f"sandbox {self.sandbox}",
            f"preloaded: {pre}",
            f"RSS {mib:.0f} MiB",
            f"idle {self.idle_s:.0f} s",
            f"{self.runs} runs",
            self.state,
        ]
        if self.problem:
            bits.append(self.problem)
        if self.not_preloaded:
            bits.append("not preloaded: " + "; ".join(self.not_preloaded))
        return " · ".join(bits)


class Pool:
    """Servers by key. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[ServerKey, WarmServer] = {}
        self._failed: dict[ServerKey, tuple[float, WarmServer]] = {}
        self._asked: dict[ServerKey, set[str]] = {}
        # Packages that print or start threads when imported: never preloaded for a key.
        self._excluded: dict[ServerKey, dict[str, str]] = {}

    def server_for(
        self,
        key: ServerKey,
        make: Callable[[], WarmServer] | None = None,
        preload: Callable[[], Sequence[str]] = tuple,
        *,
        idle_timeout: float | None = None,
    ) -> WarmServer | None:
        """The server for ``key``: the running (or starting) one; else, with ``make``, a
        new one started on its own thread with ``preload()``, unless MAX_SERVERS are running
        or starting and none is idle (then None: the run starts cold, :data:`FULL_NOTE` says
        why); else None. A stale
        server (its packages changed) is retired and a dead one forgotten first. A key whose
        server failed recently gives that failed server (its ``problem`` says why)."""
        stops: list[WarmServer] = []
        begin: tuple[WarmServer, list[str]] | None = None
        with self._lock:
            stops.extend(self._dead_elsewhere(key))
            server, stop = self._current(key)
            stops.extend([stop] if stop is not None else [])
            if server is None:
                server = self._recent_failure(key)
            if server is None and make is not None:
                stops.extend(self._replaced_by(key))
                room = self._evict()
                if room is not None:
                    stops.extend(room)
                    server = make()
                    server.excluded.update(self._excluded.get(key, {}))
                    server.on_idle = functools.partial(self._load_pending, key, server)
                    begin = (server, list(dict.fromkeys(preload())))
                    self._servers[key] = server
                    self._asked[key] = set(begin[1])
            wake = begin is not None
            if server is not None and idle_timeout is not None:
                wake = wake or idle_timeout < server.idle_timeout
                server.idle_timeout = idle_timeout
        if begin is not None:
            server, names = begin
            # The start as a span under the launch that asked for it (bound here, in the
            # caller's thread; it runs on the server's keeper thread).
            server.begin(names, traced.warm_start(functools.partial(server.start, names), names))
        if wake:
            WATCH.wake()  # its idle timeout may be due before the watch's next look
        for old in stops:
            if old.alive():
                stop_soon(old)  # asked to quit, killed past STOP_S: not here
            else:
                old.stop()  # dead already: reaped and closed now, never behind a start
        return server

    def _current(self, key: ServerKey) -> tuple[WarmServer | None, WarmServer | None]:
        """``key``'s server if runs may still use it (starting or serving), and a server to
        stop (the lock is held). One that died, failed, stopped, was retired (stale, or an
        unsafe import) or whose packages changed is dropped first; an idle retired one is
        given to be stopped (a busy one stops with its last run: WarmServer.finished)."""
        server = self._servers.get(key)
        if server is None or server.state is ServerState.STARTING:
            return server, None
        if server.state in SERVING and server.alive() and not server.stale():
            return server, None
        self._drop(key, server)
        if server.state is ServerState.FAILED:
            self._failed[key] = (time.monotonic(), server)
        if server.state is ServerState.RETIRED:  # what made it unsafe stays out of the next
            self._excluded.setdefault(key, {}).update(server.excluded)
        if server.state in (ServerState.FAILED, ServerState.STOPPED):
            return None, None  # already killed and closed (WarmServer.start, stop)
        if not server.alive():
            return None, server  # died: stopping it reaps it and closes its socket and log
        return None, server if server.retire() else None

    def _dead_elsewhere(self, key: ServerKey) -> list[WarmServer]:
        """The servers of other keys whose process died (killed from outside: the OOM
        killer, a person), dropped now and given to be stopped, which reaps them and closes
        their socket and log (the lock is held). ``key``'s own is :meth:`_current`'s."""
        dead = [
            (other, server)
            for other, server in self._servers.items()
            if other != key and server.state in SERVING and not server.alive()
        ]
        for other, server in dead:
            self._drop(other, server)
        return [server for _other, server in dead]

    def _recent_failure(self, key: ServerKey) -> WarmServer | None:
        """The server of ``key`` that failed less than FAILED_RETRY_S ago with the same
        packages (its ``problem`` says why runs are cold), else None (the lock is held)."""
        failed = self._failed.get(key)
        if failed is None:
            return None
        when, old = failed
        if time.monotonic() - when < FAILED_RETRY_S and not old.stale():
            return old
        del self._failed[key]
        return None

    def _replaced_by(self, key: ServerKey) -> list[WarmServer]:
        """The servers of ``key``'s skill at another state of its code or environment
        (the lock is held): dropped now; the idle ones returned to be stopped, the others
        stop when their last run ends (WarmServer.finished)."""
        out = []
        for other, server in list(self._servers.items()):
            if not key.replaces(other):
                continue
            self._drop(other, server)
            if not server.retire():
                continue
            out.append(server)
        return out

    def _evict(self) -> list[WarmServer] | None:
        """Room for one more server: the least recently used idle ones to stop while
        MAX_SERVERS are running or starting (dropped here, stopped by the caller: memory
        stays bounded however many skills and environments start at once), or None when
        too few are idle (the lock is held)."""
        over = len(self._servers) - MAX_SERVERS + 1
        if over <= 0:
            return []
        idle = sorted(self._idle(), key=lambda t: t[0])
        if len(idle) < over:
            return None
        for _, key, server in idle[:over]:
            self._drop(key, server)
        return [server for _, _, server in idle[:over]]

    def _idle(self) -> list[tuple[float, ServerKey, WarmServer]]:
        """The servers that serve and have no run in flight (the lock is held); a starting
        one or one that imports is not idle (it is about to be used)."""
        return [
            (s.last_used, k, s)
            for k, s in self._servers.items()
            if s.in_flight == 0 and s.state is ServerState.READY
        ]

    def _drop(self, key: ServerKey, server: WarmServer) -> WarmServer | None:
        """Forget ``server`` (the lock is held); None, for ``server = self._drop(...)``."""
        if self._servers.get(key) is server:
            del self._servers[key]
        self._asked.pop(key, None)
        return None

    def extend(
        self, key: ServerKey, server: WarmServer, names: Sequence[str], *, drain: bool = False
    ) -> None:
        """Import ``names`` too (another script's packages) once no run of ``server`` is in
        flight (an import blocks the server). Without ``drain`` runs go on meanwhile (a
        package not preloaded yet is imported by the run itself); with it no new run forks
        until the import is done (:meth:`WarmServer.want`)."""
        with self._lock:
            asked = self._asked.setdefault(key, set())
            new = [n for n in names if n not in asked and n not in server.excluded]
            if not new:
                return
            asked.update(new)
        if server.want(new, drain=drain) and drain and server.on_idle is not None:
            server.submit(server.on_idle)  # idle already: no run's end would start it

    def _load_pending(self, key: ServerKey, server: WarmServer) -> None:
        """On ``server``'s keeper thread, when its last run ended: import what was asked."""
        names = server.take_pending()
        if not names or not server.usable:
            server.end_drain()
            return
        try:
            server.load(names)
        except ServerBusy:  # a run started meanwhile (still draining or not): its end tries again
            server.want(names)
            return
        except OSError:
            server.end_drain()
            return
        if server.state is ServerState.RETIRED:  # unsafe: the next run gets a new server
            self.server_for(key)

    def servers(self) -> list[WarmServer]:
        with self._lock:
            return list(self._servers.values())

    def stop(
        self, servers: Sequence[WarmServer] | None = None, *, wait_for_runs: bool = False
    ) -> int:
        """Stop ``servers`` (None: all of them); returns how many were running. With
        ``wait_for_runs`` a server with runs in flight only takes no new one and stops when
        its last run ends (``%skills reload`` must not kill a run a cold start would let
        finish); else they are killed with it (the kernel is going away)."""
        with self._lock:
            chosen = list(self._servers.values()) if servers is None else list(servers)
            for key, server in list(self._servers.items()):
                if server in chosen:
                    del self._servers[key]
                    self._asked.pop(key, None)
            if servers is None:
                self._failed.clear()
        count = 0
        for server in chosen:
            if server.state is not ServerState.STOPPED:
                count += 1
            if wait_for_runs and not server.retire():
                continue  # the end of its last run stops it (WarmServer.finished)
            server.stop()
        return count

    def idle_check(self) -> float:
        """Stop servers idle past their timeout; seconds until the next one may be due."""
        now = time.monotonic()
        due: list[WarmServer] = []
        wait = 60.0
        with self._lock:
            for key, server in list(self._servers.items()):
                if server.state is ServerState.STARTING or server.in_flight:
                    # Its idle time starts when it is ready or its runs end: check again
                    # no later than one idle timeout from now (nothing else wakes us).
                    wait = min(wait, server.idle_timeout)
                    continue
                left = server.last_used + server.idle_timeout - now
                if left <= 0 or server.state not in SERVING:
                    del self._servers[key]
                    self._asked.pop(key, None)
                    if server.state is ServerState.FAILED:
                        self._failed[key] = (now, server)
                    else:
                        due.append(server)
                else:
                    wait = min(wait, left)
        for server in due:
            server.stop()
        return wait

    def infos(self) -> list[ServerInfo]:
        """The servers of this process, for ``%skills warm``."""
        out = []
        now = time.monotonic()
        for server in self.servers():
            key = server.key
            sandbox = "off" if key.sandbox is None else str(key.sandbox[0])
            out.append(
                ServerInfo(
                    python=key.python,
                    python_version=server.python_version,
                    flags=key.flags,
                    sandbox=sandbox,
                    state=server.state.value,
                    preloaded=tuple(server.report.loaded),
                    failed=tuple(server.report.failed),
                    rss_bytes=rss(server.pid),
                    idle_s=0.0 if server.in_flight else max(now - server.last_used, 0.0),
                    runs=server.runs,
                    in_flight=server.in_flight,
                    pid=server.pid,
                    problem=server.problem,
                    skill=key.skill[0],
                    not_preloaded=tuple(f"{n}: {why}" for n, why in server.excluded.items()),
                )
            )
        return out

    def reset_after_fork(self) -> None:
        """In a forked child: these servers are the parent's; forget them quietly."""
        self._lock = threading.Lock()
        for server in self._servers.values():
            server.forget()
        self._servers = {}
        self._failed = {}
        self._asked = {}
        self._excluded = {}


def rss(pid: int) -> int:
    """Resident memory of ``pid`` in bytes (0 when unknown)."""
    try:
        with open(f"/proc/{pid}/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"VmRSS:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


class _IdleWatch:
    """The thread that stops idle servers (:meth:`Pool.idle_check`): its own, so an idle
    stop never waits behind a start; it starts nothing (a server's parent-death signal is
    tied to the thread that started it: its keeper)."""

    def __init__(self, check: Callable[[], float]) -> None:
        self._check = check
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def wake(self) -> None:
        """Look now (a new server, or a changed idle timeout), starting the thread first."""
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, name="skill-magics-warm-idle")
                self._thread.daemon = True
                self._thread.start()
        self._wake.set()

    def _loop(self) -> None:
        while True:
            self._wake.clear()
            try:
                wait = max(0.05, self._check())
            except Exception:  # noqa: BLE001 - looked at again later
                wait = 60.0
            self._wake.wait(wait)

    def reset_after_fork(self) -> None:
        self._thread = None
        self._wake = threading.Event()
        self._lock = threading.Lock()


POOL = Pool()
WATCH = _IdleWatch(POOL.idle_check)
atexit.register(POOL.stop)
if sys.platform.startswith("linux"):  # pragma: no branch
    os.register_at_fork(after_in_child=POOL.reset_after_fork)
    os.register_at_fork(after_in_child=WATCH.reset_after_fork)


__all__ = ["FAILED_RETRY_S", "FULL_NOTE", "MAX_SERVERS", "POOL", "Pool", "ServerInfo", "rss"]
