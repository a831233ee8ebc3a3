"""Written once, driven twice: a generator yields each step that blocks; a driver answers it.

The magics (``notebook/magics/drive.py``), a model's tool call (``core/prompt/tools.py``) and
the lab's loops (``core/lab/drive.py``) are each one generator: it yields what it needs done
(run a blocking call, send a request) and gets the answer back, or the exception thrown into
it. :func:`drive` answers in this thread, :func:`drive_async` awaits; ``thrown`` says which
exceptions go back into the generator (the others end it: it is closed, then they propagate).

Example:
    >>> def twice():
    ...     a = yield 2
    ...     try:
    ...         yield "boom"
    ...     except ValueError as exc:
    ...         return a, str(exc)
    >>> def answer(step):
    ...     if step == "boom":
    ...         raise ValueError("thrown back")
    ...     return step * 2
    >>> drive(twice(), answer)
    (4, 'thrown back')
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

S = TypeVar("S")
T = TypeVar("T")
Thrown = Callable[[BaseException], bool]


def _every(exc: BaseException) -> bool:
    return True


def drive(steps: Generator[S, Any, T], answer: Callable[[S], Any], *, thrown: Thrown = _every) -> T:
    """Run ``steps`` to its end in this thread, answering each step with ``answer``."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value
        value, error = None, None
        try:
            value = answer(step)
        except BaseException as exc:  # noqa: BLE001 - Ctrl-C too: the generator decides
            if not thrown(exc):
                steps.close()
                raise
            error = exc


async def drive_async(
    steps: Generator[S, Any, T],
    answer: Callable[[S], Awaitable[Any]],
    *,
    thrown: Thrown = _every,
) -> T:
    """Await ``steps`` to its end, awaiting ``answer(step)`` for each step (a cancellation
    of the awaiting task is thrown into the generator like any exception ``thrown`` takes)."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = steps.throw(error) if error is not None else steps.send(value)
        except StopIteration as stop:
            return stop.value
        value, error = None, None
        try:
            value = await answer(step)
        except BaseException as exc:  # noqa: BLE001 - cancellation too: the generator decides
            if not thrown(exc):
                steps.close()
                raise
            error = exc


__all__ = ["drive", "drive_async"]
