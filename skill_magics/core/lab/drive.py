"""The lab's loops are written once, as generators that *ask* for I/O; two drivers answer.

A loop (the agent's conversation, a trigger evaluation, an output evaluation) yields
:class:`ModelCall` (send a request: the answer is a :class:`~.clients.Reply`, or the
:class:`~skill_magics.core.base.errors.ModelCallError` is thrown into the loop) and
:class:`ToolCall` (run a tool call through ``core/prompt/tools.py``, hence the gate: the answer
is a ``tool_result`` block, never an exception) and :class:`Blocking` (blocking work such
as an approval that may wait for a person). :func:`drive` answers them in this thread with
synchronous clients (the entry points ``run_agent``, ``evaluate_triggers`` and ``run_evals``,
which refuse an async client: :func:`sync_provider`); :func:`drive_async` awaits them (an
async client's request, a sync client's request or blocking work in a worker thread, the
script in its own process group that a cancellation kills), so a notebook cell can await the
whole loop while approval clicks reach the kernel (the ``*_async`` entry points, for either
kind of client).
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from skill_magics.core.base import steps
from skill_magics.core.base.errors import ModelAuthError, ModelCallError
from skill_magics.core.lab.budget import Caps
from skill_magics.core.lab.clients import Provider, Reply, provider_for
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.tools import handle_tool_call, handle_tool_call_async
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.gating.approval import Approver
from skill_magics.core.run.planning.workdir import CwdArg

T = TypeVar("T")


@dataclass(frozen=True)
class ModelCall:
    """Send ``kwargs`` with ``provider``."""

    provider: Provider
    kwargs: dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """Run one tool call the model made (through the gate)."""

    manager: SkillManager
    name: str
    input: Any
    id: str
    approver: Approver
    skills: tuple[str, ...]
    cwd: CwdArg | None = None
    tools: tuple[str, ...] | None = None  # the names that request offered: nothing else runs


@dataclass(frozen=True)
class Blocking:
    """Blocking work that starts no process (an approval that may wait for a click)."""

    work: Callable[[], Any]


Action = ModelCall | ToolCall | Blocking
Loop = Generator[Action, Any, T]


RETRY_DELAY_S = 0.5  # doubled each retry


def model_call(provider: Provider, kwargs: dict[str, Any], caps: Caps | None) -> Loop[Reply]:
    """Send one request, counting every HTTP request against ``caps`` (the SDK's own
    retries are off: clients.py), and retry a retryable failure (no connection, timeout,
    408/409/429/5xx) as often as the client's ``max_retries`` says (``Provider.retries``)
    while the caps allow another request."""
    attempt = 0
    while True:
        if caps is not None:
            caps.sent()
        try:
            reply: Reply = yield ModelCall(provider, kwargs)
            return reply
        except ModelCallError as exc:
            spent = caps is not None and bool(caps.exhausted())
            if attempt >= provider.retries or not exc.retryable or spent:
                raise
            asked = exc.retry_after  # the wait the API asked for (429/503 with retry-after)
        attempt += 1
        delay = asked or RETRY_DELAY_S * 2 ** (attempt - 1)  # else a doubling back-off
        yield Blocking(functools.partial(time.sleep, delay))


def sync_provider(client: Any, what: str) -> Provider:
    """The provider of ``client`` for :func:`drive` (the synchronous entry point ``what``);
    an async client is refused, naming the coroutine that awaits it."""
    provider = provider_for(client)
    if provider.is_async:
        raise TypeError(
            f"{type(client).__name__} is an async client: use await {what}_async(...), "
            "or a sync client (anthropic.Anthropic / openai.OpenAI)"
        )
    return provider


def _retryable_in_loop(exc: BaseException) -> bool:
    """A failed request goes back into the loop (it counts it, retries it); a rejected key
    ends it (every further request would fail the same way), as does anything else."""
    return isinstance(exc, ModelCallError) and not isinstance(exc, ModelAuthError)


def drive(loop: Loop[T]) -> T:
    """Run ``loop`` in this thread (synchronous clients only)."""
    return steps.drive(loop, _answer, thrown=_retryable_in_loop)


async def drive_async(loop: Loop[T], cancel: threading.Event | None = None) -> T:
    """Await ``loop``: requests of async clients are awaited, blocking work (a sync client's
    request, an approval) runs in a worker thread, scripts run in their process groups. A
    cancellation sets ``cancel``: the running script is killed and the loop is closed."""
    stop = cancel if cancel is not None else threading.Event()
    return await steps.drive_async(
        loop, lambda action: _answer_async(action, stop), thrown=_retryable_in_loop
    )


def _answer(action: Action) -> Any:
    if isinstance(action, ModelCall):
        return action.provider.send(action.kwargs)
    if isinstance(action, ToolCall):
        return handle_tool_call(
            action.manager,
            action.name,
            action.input,
            action.id,
            approver=action.approver,
            skills=list(action.skills),
            cwd=action.cwd,
            tools=action.tools,
        )
    return action.work()


async def _answer_async(action: Action, cancel: threading.Event) -> Any:
    if isinstance(action, ModelCall):
        provider = action.provider
        if provider.is_async:
            reply: Reply = await provider.send_async(action.kwargs)
            return reply
        # The HTTP request starts no process: nothing to join when the cell is interrupted.
        return await await_in_thread(lambda: provider.send(action.kwargs), cancel, join=False)
    if isinstance(action, ToolCall):
        return await handle_tool_call_async(
            action.manager,
            action.name,
            action.input,
            action.id,
            approver=action.approver,
            skills=list(action.skills),
            cwd=action.cwd,
            cancel=cancel,
            tools=action.tools,
        )
    return await await_in_thread(action.work, cancel, join=False)


__all__ = [
    "Action",
    "Blocking",
    "Loop",
    "ModelCall",
    "ToolCall",
    "drive",
    "drive_async",
    "model_call",
    "sync_provider",
]
