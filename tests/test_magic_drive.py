"""notebook/magics/drive.py: one generator per waiting magic, answered blocking or awaited.

The magics themselves are tested on both paths in real kernels (test_kernel_magics.py,
test_vscode_kernel.py, the kernel matrix); these pin the drivers' contract: where the step
runs, which approver and cancel event the magic sees, and that a step's exception (Ctrl-C, a
cancellation) reaches the magic's own ``except`` on either path.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from skill_magics.notebook.magics import drive


class Host:
    """Stands in for SkillMagics: records what each approver was made with."""

    def __init__(self) -> None:
        self.asked: list[dict[str, Any]] = []

    def approver(self, **kwargs: Any) -> dict[str, Any]:
        self.asked.append(kwargs)
        return kwargs


def where(mode: drive.Mode, fail: BaseException | None = None) -> drive.Magic[dict[str, Any]]:
    """A magic: its step reports the thread it ran in, or raises ``fail``."""
    approver = mode.approver(pending_ok=True)

    def step() -> str:
        if fail is not None:
            raise fail
        return threading.current_thread().name

    try:
        thread = yield drive.Step(step)
    except (KeyboardInterrupt, ValueError) as exc:
        return {"caught": type(exc).__name__, "cancel": mode.cancel}
    return {"thread": thread, "approver": approver, "cancel": mode.cancel}


def test_blocking_runs_the_step_here_without_a_cancel_event() -> None:
    host = Host()
    got = drive.blocking(host, where)
    assert got == {"thread": threading.current_thread().name, "approver": {"pending_ok": True},
                   "cancel": None}  # fmt: skip
    assert host.asked == [{"pending_ok": True}]


def test_awaited_runs_the_step_in_a_worker_with_the_paths_cancel_event() -> None:
    host = Host()
    got = asyncio.run(drive.awaited(host, where))
    assert got["thread"] == "skill-magics-run"  # core/run/bridge.py's worker
    assert isinstance(got["cancel"], threading.Event) and not got["cancel"].is_set()
    assert host.asked == [{"in_worker": True, "cancel": got["cancel"], "pending_ok": True}]


@pytest.mark.parametrize("fail", [KeyboardInterrupt(), ValueError("bad")])
def test_a_steps_exception_reaches_the_magics_except_on_both_paths(fail: BaseException) -> None:
    assert drive.blocking(Host(), where, fail)["caught"] == type(fail).__name__
    assert asyncio.run(drive.awaited(Host(), where, fail))["caught"] == type(fail).__name__


def test_an_exception_the_magic_does_not_catch_propagates() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        drive.blocking(Host(), where, RuntimeError("boom"))
    with pytest.raises(RuntimeError, match="boom"):
        asyncio.run(drive.awaited(Host(), where, RuntimeError("boom")))


def test_a_host_without_an_approver_gives_the_fallback_on_the_blocking_path() -> None:
    def magic(mode: drive.Mode) -> drive.Magic[Any]:
        return (yield drive.Step(lambda: mode.approver(fallback="manager's")))

    assert drive.blocking(object(), magic) == "manager's"


def test_an_awaited_step_uses_its_coroutine() -> None:
    def magic(mode: drive.Mode) -> drive.Magic[str]:
        async def value() -> str:
            return "awaited"

        return (yield drive.Step(lambda: "blocking", value))

    assert drive.blocking(Host(), magic) == "blocking"
    assert asyncio.run(drive.awaited(Host(), magic)) == "awaited"


def test_a_cancellation_is_thrown_into_the_magic() -> None:
    started, seen = threading.Event(), []

    def magic(mode: drive.Mode) -> drive.Magic[str]:
        async def forever() -> str:
            started.set()
            await asyncio.sleep(60)
            return "never"

        try:
            return (yield drive.Step(lambda: "blocking", forever))
        except asyncio.CancelledError:
            seen.append(mode.cancel)
            raise

    async def interrupt() -> None:
        task = asyncio.ensure_future(drive.awaited(Host(), magic))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()  # Kernel > Interrupt on the await path
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    assert len(seen) == 1 and isinstance(seen[0], threading.Event)


def test_a_cancelled_worker_step_sets_the_paths_cancel_event() -> None:
    running, seen = threading.Event(), []

    def magic(mode: drive.Mode) -> drive.Magic[None]:
        assert mode.cancel is not None
        cancel = mode.cancel
        seen.append(cancel)

        def work() -> None:  # a step that watches cancel, as the executor does
            running.set()
            cancel.wait(30)

        yield drive.Step(work)

    async def interrupt() -> None:
        task = asyncio.ensure_future(drive.awaited(Host(), magic))
        while not running.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupt())
    assert seen[0].is_set()  # core/run/bridge.py set it, then joined the worker


def test_an_interrupted_await_whose_run_outlives_the_wait_gives_no_result(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Kernel > Interrupt while the run ignores the cancel event past the wait: the run is
    cancelled and nothing is read from it (asking an undone task for its exception raised
    InvalidStateError, which surfaced as a traceback instead of "Stopped")."""
    from skill_magics.notebook.magics import skillrun

    monkeypatch.setattr(skillrun, "STOP_WAIT_S", 0.05)
    cancel = threading.Event()
    finished = []

    async def run_that_ignores_cancel() -> Any:
        try:
            await asyncio.sleep(30)
        finally:
            finished.append("cancelled")

    async def main() -> Any:
        waiting = asyncio.ensure_future(skillrun._until_stopped(run_that_ignores_cancel(), cancel))
        await asyncio.sleep(0.05)
        waiting.cancel()  # what Kernel > Interrupt does to an awaited cell
        return await waiting

    stopped = asyncio.run(main())
    assert stopped == skillrun._Stopped(None)
    assert cancel.is_set()
    assert finished == ["cancelled"]
