"""The agent loop: a model works on a prompt with the skills, every script through the gate.

Per turn: send the conversation (the system prompt with the ``<available_skills>`` block,
the ``activate_skill`` tool and the skills' script tools: core/lab/offer.py); if the reply
calls tools, run each through ``core/prompt/tools.py`` (the activation returns
``<skill_content>``; a script runs only after the gate approved it: the approver, never
unasked) and send the results back, a declined, refused or failed call as an error result;
stop when a reply calls no tool, after ``max_turns`` replies, on an API error, or when a
cap is reached. Everything is recorded in a :class:`~.transcript.Transcript`.

Example (not run as a doctest: it calls a model API)::

    import anthropic
    t = run_agent(anthropic.Anthropic(), manager, "How far is a marathon in miles?",
                  model="claude-sonnet-4-5", approver=lambda request: "yes_once")
    t.activated, t.final_text
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Any

from skill_magics.core.base.errors import ModelCallError
from skill_magics.core.lab.approvals import Watcher, approver_for_model
from skill_magics.core.lab.budget import Caps
from skill_magics.core.lab.clients import Provider, Reply, provider_for
from skill_magics.core.lab.drive import (
    Loop,
    ToolCall,
    drive,
    drive_async,
    model_call,
    sync_provider,
)
from skill_magics.core.lab.offer import Offer, make_offer
from skill_magics.core.lab.options import MAX_TOKENS, MAX_TURNS, AgentOptions, chosen
from skill_magics.core.lab.transcript import ErrorStep, ModelStep, ToolStep, Transcript
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, Approver, ApproverArg
from skill_magics.core.run.planning.workdir import CwdArg
from skill_magics.core.trace import hooks as traced


def run_agent(
    client: Any,
    manager: SkillManager,
    prompt: str,
    options: AgentOptions | None = None,
    *,
    approver: ApproverArg = MANAGER_APPROVER,
    **choices: Any,
) -> Transcript:
    """Let the model behind ``client`` work on ``prompt`` with the skills; see the module doc.

    ``client``: an ``anthropic.Anthropic`` or ``openai.OpenAI`` client (an async client:
    ``await run_agent_async(...)``). ``options``: an :class:`~.options.AgentOptions` (the
    model, the skills offered, the limits); keywords such as ``model=`` fill or replace its
    fields. ``approver`` decides each script call (default: the manager's; with none, script
    calls are refused and the model is told).
    """
    provider = sync_provider(client, "run_agent")
    opts = chosen(AgentOptions, options, choices)
    with traced.agent(opts.skills or (), opts.model):  # the root of its spans (core/trace/)
        return drive(_agent(provider, manager, prompt, opts, approver))


async def run_agent_async(
    client: Any,
    manager: SkillManager,
    prompt: str,
    options: AgentOptions | None = None,
    *,
    approver: ApproverArg = MANAGER_APPROVER,
    cancel: threading.Event | None = None,
    **choices: Any,
) -> Transcript:
    """:func:`run_agent` as a coroutine, for sync and async clients alike: a sync client's
    requests and every approval wait run in worker threads, so the event loop (a notebook
    cell's await) keeps going. A cancellation kills a running script and ends the loop."""
    opts = chosen(AgentOptions, options, choices)
    loop = _agent(provider_for(client), manager, prompt, opts, approver)
    with traced.agent(opts.skills or (), opts.model):
        return await drive_async(loop, cancel)


def _agent(
    provider: Provider,
    manager: SkillManager,
    prompt: str,
    options: AgentOptions,
    approver: ApproverArg,
) -> Loop[Transcript]:
    offer = make_offer(manager, options.skills, system=options.system)
    return conversation_loop(
        provider, manager, prompt, options, offer, approver_for_model(manager, approver)
    )


def conversation_loop(
    provider: Provider,
    manager: SkillManager,
    prompt: str,
    options: AgentOptions,
    offer: Offer,
    approver: Approver,
    *,
    cwd: CwdArg | None = None,
    caps: Caps | None = None,
) -> Loop[Transcript]:
    """The loop itself, as a generator of I/O requests (core/lab/drive.py runs it): the model
    and limits of ``options``, the tools of ``offer`` (what was made of ``options.skills``,
    or the caller's own), scripts started in ``cwd``, requests counted against ``caps``. A
    bad prompt raises here, before anything is sent."""
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError("The prompt is empty: give the task for the model as text")
    return _conversation(provider, manager, prompt, options, offer, approver, cwd, caps)


def _conversation(
    provider: Provider,
    manager: SkillManager,
    prompt: str,
    options: AgentOptions,
    offer: Offer,
    approver: Approver,
    cwd: CwdArg | None,
    caps: Caps | None,
) -> Loop[Transcript]:
    model, max_turns, max_tokens = options.model, options.max_turns, options.max_tokens
    watcher = Watcher(approver)
    transcript = Transcript(
        prompt=prompt,
        provider=provider.name,
        model=model,
        system=offer.system,
        skills=offer.skills,
        started_at=now_iso(),
    )
    began = time.monotonic()
    messages: list[dict[str, Any]] = [provider.user_message(prompt)]
    tools = offer.tools(provider)
    offered = tuple(spec.name for spec in offer.specs)  # what every request offers
    kwargs: dict[str, Any] = {}
    for turn in range(1, max_turns + 1):
        if caps is not None and caps.exhausted():
            transcript.stop_reason, transcript.error = "budget", caps.exhausted()
            break
        limit = caps.clamp(max_tokens) if caps is not None else max_tokens
        kwargs = provider.request(
            model=model, system=offer.system, messages=messages, tools=tools, max_tokens=limit
        )
        started, t0 = now_iso(), time.monotonic()
        try:
            reply: Reply = yield from model_call(provider, kwargs, caps)
        except ModelCallError as exc:
            transcript.steps.append(
                ErrorStep(turn, str(exc), exc.kind, started, time.monotonic() - t0)
            )
            transcript.stop_reason, transcript.error = "error", str(exc)
            break
        if caps is not None:
            caps.used(reply.input_tokens, reply.output_tokens)
        transcript.steps.append(
            ModelStep(
                turn,
                reply.text,
                reply.tool_uses,
                reply.stop_reason,
                reply.input_tokens,
                reply.output_tokens,
                started,
                time.monotonic() - t0,
                answered_by=reply.model,
            )
        )
        messages.append(reply.message)
        transcript.stop_reason = reply.stop_reason
        if not reply.tool_uses:
            break
        blocks = []
        for use in reply.tool_uses:
            target, skill, script = offer.target(use.name, use.input)
            started, t0 = now_iso(), time.monotonic()
            block = yield ToolCall(
                manager, use.name, use.input, use.id, watcher, offer.skills, cwd, offered
            )
            blocks.append(block)
            transcript.steps.append(
                ToolStep(
                    turn=turn,
                    id=use.id,
                    name=use.name,
                    input=use.input,
                    target=target,
                    skill=skill,
                    script=script,
                    result=str(block.get("content", "")),
                    is_error=bool(block.get("is_error")),
                    approvals=tuple(watcher.take()),
                    started_at=started,
                    seconds=time.monotonic() - t0,
                )
            )
        messages.extend(provider.tool_messages(blocks))
        if turn == max_turns:
            transcript.stop_reason = "max_turns"
    head = [m for m in kwargs.get("messages", []) if m.get("role") == "system"][:1]
    transcript.messages = head + messages  # OpenAI: the system message is resent too
    transcript.seconds = time.monotonic() - began
    return transcript


def now_iso() -> str:
    """UTC now as skill-creator writes timestamps: ``2026-01-15T10:30:00Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


__all__ = [
    "MAX_TOKENS",
    "MAX_TURNS",
    "AgentOptions",
    "conversation_loop",
    "run_agent",
    "run_agent_async",
]
