"""Each waiting magic is written once, as a generator that yields its blocking step; two drivers.

Magics that wait (for an approval click, a process, a model) run two ways: *blocking*, in the
cell's thread (terminal IPython, ipykernel < 7.4, the body of another magic), and *awaited*
(ipykernel >= 7.4, magics/rewrite.py): the waiting happens in worker threads while the cell
awaits, so the click, the Stop button and Kernel > Interrupt reach the kernel.

A magic is a generator function ``magic(mode, ...)`` (a :data:`Magic`): it parses and checks,
takes its approver from ``mode`` (:meth:`Mode.approver`), yields a :class:`Step` and gets the
step's value back, or the step's exception thrown in (so its ``except`` clauses serve both
paths), and returns the cell's value. :func:`blocking` answers the step in this thread;
:func:`awaited` awaits it. The same pattern as core/lab/drive.py and the pipeline's ``_steps``
(core/run/pipeline.py).
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from skill_magics.core.base import steps

T = TypeVar("T")


@dataclass(frozen=True)
class Step(Generic[T]):
    """The blocking part of a magic: ``call()`` in this thread, or ``awaited()`` on the await
    path (None: ``call`` in a worker thread that the mode's ``cancel`` stops)."""

    call: Callable[[], T]
    awaited: Callable[[], Awaitable[T]] | None = None


Magic = Generator[Step[Any], Any, T]


@dataclass(frozen=True)
class Mode:
    """Which path this cell takes: ``cancel`` is set on the await path (an interrupt sets it:
    a wait for a click ends, a running process group is killed), None on the blocking one."""

    host: Any  # the shared SkillMagics (or another object with ``approver``)
    cancel: threading.Event | None = None

    @property
    def is_awaited(self) -> bool:
        return self.cancel is not None

    def approver(self, fallback: Any = None, **asks: Any) -> Any:
        """The notebook approver for this path (``asks``: SkillMagics.approver's keywords);
        ``fallback`` where the host has none."""
        if self.cancel is not None:
            return self.host.approver(in_worker=True, cancel=self.cancel, **asks)
        approver_of = getattr(self.host, "approver", None)
        return approver_of(**asks) if callable(approver_of) else fallback


def blocking(host: Any, magic: Callable[..., Magic[T]], *args: Any) -> T:
    """Run ``magic(mode, *args)`` in this thread (Ctrl-C is thrown into the magic too)."""
    return steps.drive(magic(Mode(host), *args), lambda step: step.call())


async def awaited(host: Any, magic: Callable[..., Magic[T]], *args: Any) -> T:
    """Await ``magic(mode, *args)``: each step in a worker thread or as its coroutine (a
    cancellation is thrown into the magic too)."""
    from skill_magics.core.run.bridge import await_in_thread

    cancel = threading.Event()

    def answer(step: Step[Any]) -> Awaitable[Any]:
        if step.awaited is not None:
            return step.awaited()
        return await_in_thread(step.call, cancel)

    return await steps.drive_async(magic(Mode(host, cancel), *args), answer)


__all__ = ["Magic", "Mode", "Step", "awaited", "blocking"]
