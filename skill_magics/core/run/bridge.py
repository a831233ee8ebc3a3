"""The one bridge from blocking work to a coroutine: ``await_in_thread``.

A notebook cell on ipykernel >= 7.4 must *await* (so the kernel keeps dispatching widget
messages and a Kernel > Interrupt arrives as a cancellation), while approval waits, file
scans and the process loop block. Every async path (``ScriptExecutor.run_async``, the async
tool call, ``build_skill_context_async``, the magics' await path) goes through this function.

Example (not run as a doctest: it starts a process)::

    cancel = threading.Event()
    result = await await_in_thread(lambda: executor.run(prepared, cancel=cancel), cancel)
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def await_in_thread(
    work: Callable[[], T], cancel: threading.Event, *, poll: float = 0.25, join: bool = True
) -> T:
    """Run ``work()`` in a worker thread and await it in ``poll``-second slices.

    The slices let a kernel interrupt (an asyncio cancellation on the await path) arrive. On
    cancellation (or KeyboardInterrupt) ``cancel`` is set, so ``work`` must watch it and
    stop its process group; the worker is joined before re-raising, so nothing it started
    outlives the awaiting task. ``join=False`` is for work that starts nothing (an approval
    that may not watch ``cancel``): the task ends at once and the worker's result is
    dropped. The worker runs in a copy of the caller's context (a notebook's display() calls
    then still reach the calling cell).
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    abandoned = threading.Event()  # the awaiting task is gone: nobody reads the outcome

    def deliver(setter: Callable[[Any], None], value: Any) -> None:
        if not done.done() and not abandoned.is_set():
            setter(value)

    def hand_over(setter: Callable[[Any], None], value: Any) -> None:
        try:
            loop.call_soon_threadsafe(deliver, setter, value)
        except RuntimeError:  # the loop closed: the task was abandoned (join=False)
            pass

    def target() -> None:
        try:
            result = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            hand_over(done.set_exception, exc)
        else:
            hand_over(done.set_result, result)

    context = contextvars.copy_context()
    worker = threading.Thread(
        target=context.run, args=(target,), name="skill-magics-run", daemon=True
    )
    worker.start()
    try:
        while not done.done():
            await asyncio.wait({done}, timeout=poll)
        return done.result()
    except BaseException:
        cancel.set()
        abandoned.set()
        if join:  # work that started processes: they are dead before the task ends
            worker.join()
        raise


__all__ = ["await_in_thread"]
