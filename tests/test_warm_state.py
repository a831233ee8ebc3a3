"""A warm server's life is one state, changed in one place under one lock (issue 28): the
edges no event links raise, waiters wake on every change, and a forked copy of this process
forgets its servers even when another thread held a server's lock at the fork.

Real WarmServer objects and real processes (a fork); the servers' runs are tested in
test_warm*.py."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

import pytest

from skill_magics.core.base.errors import WarmStateError
from skill_magics.core.run.launching.warm.server import ServerKey, ServerState, WarmServer

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm is Linux's")


def _server() -> WarmServer:
    key = ServerKey(("s", "/nowhere"), "code", sys.executable, (), ())
    return WarmServer(key, [sys.executable, "-c", "pass"], dict(os.environ))


def test_a_stopped_or_failed_server_never_serves_again() -> None:
    server = _server()
    assert server.state is ServerState.STARTING
    server._fail("no hello")
    assert (server.state, server.problem) == (ServerState.FAILED, "no hello")
    with pytest.raises(WarmStateError, match="failed -> ready"):
        server._to(ServerState.READY)
    server.stop()
    assert server.state is ServerState.STOPPED
    for state in (ServerState.READY, ServerState.LOADING, ServerState.RETIRED):
        with pytest.raises(WarmStateError):
            server._to(state)
    server.stop()  # again: nothing to do
    assert server.state is ServerState.STOPPED


def test_a_retired_server_takes_no_run_and_no_import() -> None:
    server = _server()
    assert server.retire() is True  # nothing in flight: the caller stops it now
    assert server.state is ServerState.RETIRED
    assert server.want(["json"], drain=True) is True
    assert server.state is ServerState.RETIRED, "a retired server does not drain"
    with pytest.raises(WarmStateError, match="retired -> ready"):
        server._to(ServerState.READY)
    with pytest.raises(OSError):
        server.fork(b"{}", 0, 1, 2, timeout=1)
    with pytest.raises(OSError):
        server.load(["json"])
    assert (server.in_flight, server.runs) == (0, 0)
    server._fail("it was retired while it started, and that failed")
    assert server.state is ServerState.FAILED


def test_waiters_wake_on_the_change_and_a_cancel_ends_a_wait() -> None:
    server = _server()
    woke: list[tuple[bool, float]] = []

    def waiter() -> None:
        start = time.monotonic()
        got = server.wait(lambda s: s is not ServerState.STARTING, 60)
        woke.append((got, time.monotonic() - start))

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.2)
    assert not woke, "the server is still starting"
    server.stop()
    thread.join(10)
    assert woke and woke[0][0] is True and woke[0][1] < 10
    cancel = threading.Event()
    cancel.set()
    started = time.monotonic()
    assert server.wait(lambda s: s is ServerState.READY, 60, cancel) is False
    assert time.monotonic() - started < 5


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_copy_forgets_a_server_whose_lock_another_thread_holds() -> None:
    """forget() changes the state under the lock: a fresh one (the thread that held the
    parent's is not in the forked copy; waiting for it would hang the child forever)."""
    server = _server()
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with server._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            server.forget()
            os._exit(0 if server.state is ServerState.STOPPED else 1)
        deadline = time.monotonic() + 15
        status = None
        while time.monotonic() < deadline:
            got, status = os.waitpid(pid, os.WNOHANG)
            if got:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail("the forked copy hung on the parent's lock")
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
        holder.join(10)
    assert server.state is ServerState.STARTING, "the parent's server is untouched"


def test_two_imports_at_once_run_one_after_the_other(tmp_path, make_skill) -> None:
    """``%skills warm`` loads from the kernel's thread while the pool's starter thread may
    load too: the second import waits for the first (LOADING), it never fails for it."""
    from manager_support import manager_for

    from skill_magics.core.run.launching import warm

    make_skill(tmp_path / "skills", "twice", scripts={"scripts/one.py": "import json\n"})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    res = manager.execute_skill_script("twice", "one", approver=None)
    assert res.start == "warm", res.start_note
    (server,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "twice"]
    got: list[object] = []

    def load(names: list[str]) -> None:
        try:
            got.append(server.load(names).loaded)
        except OSError as exc:  # pragma: no cover - the failure this test is about
            got.append(exc)

    threads = [threading.Thread(target=load, args=([n],)) for n in ("csv", "difflib")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(got) == 2 and all(isinstance(g, list) for g in got), got
    assert server.state is ServerState.READY
    assert {"csv", "difflib"} <= set(server.report.loaded)
