"""The spans of the run machinery: what each traced call site records, kept here so every
call site is one line (``return hooks.script_run(prepared, lambda: ...)``).

Every function is a pass-through while tracing is off (one check, no span made). The
objects come from the run machinery (a Plan, a PreparedRun, a Launch, a result); they are
read by attribute, never imported, so this module stays below everything it traces.
Attribute names: :mod:`.names`. Nothing a script was given or printed is recorded: names,
digests, codes, sizes and times only.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, TypeVar

from skill_magics.core import trace
from skill_magics.core.trace import names as n
from skill_magics.core.trace.noop import NOOP

T = TypeVar("T")

# A plan's kind (its class) -> what its root span calls it (docs/tracing.md).
CALLS = {
    "PlannedRun": "skillrun",
    "BatchPlan": "skillrun --map",
    "PlanGroup": "skill_context",
    "ActionPlan": "install",
    "InstallPlan": "env install",
    "ScopePlan": "approve scope",
}


def _requests(plan: Any) -> tuple[Any, ...]:
    try:
        return tuple(part for request in plan.requests() for part in request.requests)
    except Exception:  # noqa: BLE001 - a span must never be what fails a run
        return ()


def _skills(parts: Sequence[Any]) -> list[str]:
    return sorted({str(part.skill_name) for part in parts})


def _skills_of(plan: Any) -> list[str]:
    """The skills a plan runs: its requests', else (nobody will be asked: no request was
    built) its runs' and its sub-plans'."""
    parts = _requests(plan)
    if parts:
        return _skills(parts)
    found: set[str] = set()
    for run in getattr(plan, "runs", ()) or ():
        found.add(str(getattr(run, "skill_name", "")))
    for sub in getattr(plan, "plans", ()) or ():
        found.update(_skills_of(sub))
    found.discard("")
    return sorted(found)


def root(plan: Any, content: bool = False) -> Any:
    """The span of one call through the call site (a run, a batch, a context, an install);
    the no-op span while off. ``content``: this call opted into argument values and output
    in its runs' spans (redacted first; never by default)."""
    if trace._mode is False or not trace.refresh():
        return NOOP
    call = CALLS.get(type(plan).__name__, type(plan).__name__)
    skills = _skills_of(plan)
    attributes: dict[str, Any] = {n.CALL: call, n.SKILLS: skills}
    if len(skills) == 1:
        attributes[n.SKILL_NAME] = skills[0]
    if call == "skillrun --map":
        attributes[n.BATCH_ITEMS] = len(plan)
    label = f"{call} {skills[0]}" if len(skills) == 1 else call
    if content:
        attributes[n.CONTENT] = True
    span = trace.span(label, attributes)
    if content and trace._backend is not None and span.recording:
        trace._backend.want_content(span)
    return span


def outcome(span: Any, result: Any) -> None:
    """A root's end state: the RunOutcome's status, failed when nothing ran for a refusal."""
    if not span.recording:
        return
    verdict = getattr(result, "verdict", None)
    status = getattr(verdict, "status", None)
    if status is not None:
        span.set(n.STATUS, str(status))
        if str(status) in ("refused", "approval_unavailable"):
            span.fail(f"{status}: {getattr(verdict, 'message', '')}")


def approval(plan: Any, decide: Callable[[], T]) -> T:
    """Step 2, in a span: the decision, who made it, how long it took, the digests."""
    if trace._backend is None:
        return decide()
    parts = _requests(plan)
    attributes: dict[str, Any] = {
        n.SKILLS: _skills(parts) or _skills_of(plan),
        n.DIGESTS: sorted({str(p.content_hash) for p in parts if getattr(p, "content_hash", "")}),
    }
    with trace.span("approval", attributes) as span:
        started = time.monotonic()
        decided = decide()
        span.set(n.WAIT_MS, round((time.monotonic() - started) * 1000, 3))
        verdicts = getattr(decided, "verdicts", ())
        if not verdicts:
            span.update({n.DECISION: "unasked", n.DECIDED_BY: "the caller"})
            return decided
        blocked = getattr(decided, "blocked", None)
        if blocked is not None:
            decision = blocked.decision.value if blocked.decision else str(blocked.status)
            span.update({n.DECISION: decision, n.DECIDED_BY: blocked.by or None})
            if str(blocked.status) not in ("declined", "pending"):
                span.fail(f"{blocked.status}: {blocked.message}")
            return decided
        # Several requests under one question: each allowed part carries the one answer
        # and who gave it (gate.decide_each); parts a "Yes in session" covered carry theirs.
        answers = sorted({(v.decision.value, v.by) for v in verdicts if v.decision is not None})
        if not answers:
            span.update({n.DECISION: "allowed"})
        else:
            span.update(
                {
                    n.DECISION: ", ".join(sorted({d for d, _ in answers})),
                    n.DECIDED_BY: ", ".join(sorted({b for _, b in answers if b})) or None,
                }
            )
        return decided


def script_run(prepared: Any, work: Callable[[], T]) -> T:
    """One script's process, in a span: what ran, how it started and how it ended. The
    script's environment gets this span's TRACEPARENT (executor: ``trace.child_env``)."""
    if trace._backend is None:
        return work()
    profile = getattr(prepared, "sandbox_profile", None)
    attributes = {
        n.SKILL_NAME: prepared.skill_name,
        n.SCRIPT_PATH: prepared.script_rel.as_posix(),
        n.ORIGIN: _origin(prepared.skill_name),
        n.SANDBOX: getattr(profile, "mode", None) or "off",
        n.INTERPRETER: _interpreter(prepared),
    }
    with trace.span(f"run {prepared.skill_name}", attributes) as span:
        wanted = trace.content_wanted()
        if wanted:
            run_input(span, prepared.payload, prepared.argv)
        result = work()
        script_result(span, result, content=wanted)
        return result


def run_input(span: Any, payload: bytes | None, argv: Sequence[str]) -> None:
    """What a run was given, for a call that opted into content (redacted, then cut)."""
    if payload:
        span.set_content(n.RUN_INPUT, payload.decode("utf-8", "replace"))
    if argv:
        span.set_content(n.RUN_ARGV, " ".join(str(a) for a in argv))


def script_result(span: Any, result: Any, content: bool = False) -> None:
    """A run's end on its span; ``content``: its output too (the call opted in)."""
    if not span.recording:
        return
    if content:
        span.set_content(n.RUN_STDOUT, str(result.stdout or ""))
        span.set_content(n.RUN_STDERR, str(result.stderr or ""))
    code = result.exit_code
    span.update(
        {
            n.SCRIPT_EXIT_CODE: code,
            n.SCRIPT_EXITED_WITH_ERROR: code != 0,
            n.STATUS: str(result.status),
            n.SIGNAL: result.signal,
            n.TIMED_OUT: bool(result.timed_out),
            n.DURATION_MS: round(float(result.execution_time_ms), 3),
            n.STDOUT_BYTES: result.stdout_bytes,
            n.STDERR_BYTES: result.stderr_bytes,
            n.START: result.start,
            n.START_NOTE: result.start_note or None,
        }
    )
    if code != 0:
        why = "timed out" if result.timed_out else (result.signal or f"exit code {code}")
        span.fail(f"{result.script_path} {result.status}: {why}")


def launch(prepared: Any, choose: Callable[[], T]) -> T:
    """Choosing how a run starts, in a span: a warm server's start or the wait for it,
    the sandbox's set-up (bwrap's command, its private TMPDIR)."""
    if trace._backend is None:
        return choose()
    profile = getattr(prepared, "sandbox_profile", None)
    attributes = {
        n.SKILL_NAME: prepared.skill_name,
        n.SANDBOX: getattr(profile, "mode", None) or "off",
    }
    with trace.span("launch", attributes) as span:
        how = choose()
        boxed = getattr(how, "boxed", None)
        span.update(
            {
                n.START: getattr(how, "name", None),
                n.START_NOTE: getattr(how, "note", "") or None,
                n.NETWORK: getattr(boxed, "network", None) if boxed is not None else None,
            }
        )
        return how


def warm_start(start: Callable[[], T], preload: Sequence[str]) -> Callable[[], T]:
    """A warm server's start (on the starter thread), as a span under the launch that asked
    for it: how many packages it preloads (their names are the skill's requirements, shown)."""
    if trace._backend is None:
        return start
    return trace.bind(start, "warm server start", {n.PRELOAD: sorted(preload)})


def env_build(skill: str, packages: Sequence[str], installer: str, work: Callable[[], T]) -> T:
    """A managed environment's build, in a span (how many packages, which installer)."""
    if trace._backend is None:
        return work()
    attributes = {n.SKILL_NAME: skill or None, n.PACKAGES: len(packages), n.INSTALLER: installer}
    with trace.span("env build", attributes):
        return work()


def mcp_call(label: str, method: str, work: Callable[[], T], verified: bool = False) -> T:
    """A call of the host to an MCP server, in a client span (server, method, bytes read);
    a refusal (a lie about a digest or a size, a timeout) sets the status with its one line
    and ``skill_magics.mcp.refused``; ``verified``: ``work`` checks what it read against the
    listing (``skill_magics.mcp.verified`` when it passed)."""
    if trace._backend is None:
        return work()
    attributes = {n.MCP_SERVER: label, n.MCP_METHOD: method}
    with trace.span(f"{method} {label}", attributes, client=True) as span:
        try:
            result = work()
        except Exception as exc:
            span.update({n.MCP_REFUSED: True, n.ERROR_TYPE: type(exc).__name__})
            raise
        if isinstance(result, (bytes, bytearray)):
            span.set(n.MCP_BYTES, len(result))
            if verified:
                span.set(n.MCP_VERIFIED, True)
        return result


def model_call(provider: str, request: dict[str, Any], work: Callable[[], T]) -> T:
    """A request to a model API, as a GenAI client span (``chat {model}``)."""
    if trace._backend is None:
        return work()
    with _model_span(provider, request) as span:
        reply = work()
        model_reply(span, reply)
        return reply


async def model_call_async(
    provider: str, request: dict[str, Any], work: Callable[[], Awaitable[T]]
) -> T:
    """:func:`model_call` for an async client."""
    if trace._backend is None:
        return await work()
    with _model_span(provider, request) as span:
        reply = await work()
        model_reply(span, reply)
        return reply


def _model_span(provider: str, request: dict[str, Any]) -> Any:
    model = str(request.get("model", ""))
    attributes = {
        n.OPERATION: "chat",
        n.PROVIDER: provider,
        n.REQUEST_MODEL: model or None,
        n.REQUEST_MAX_TOKENS: request.get("max_tokens") or request.get("max_completion_tokens"),
    }
    return trace.span(f"chat {model}".strip(), attributes, client=True)


def model_reply(span: Any, reply: Any) -> None:
    if not span.recording:
        return
    uses = getattr(reply, "tool_uses", ())
    stop = getattr(reply, "stop_reason", "")
    span.update(
        {
            n.RESPONSE_MODEL: getattr(reply, "model", "") or None,
            n.FINISH_REASONS: [str(stop)] if stop else None,
            n.INPUT_TOKENS: getattr(reply, "input_tokens", None),
            n.OUTPUT_TOKENS: getattr(reply, "output_tokens", None),
            n.TOOL_CALLS: len(uses),
            n.TOOL_NAMES: sorted({str(u.name) for u in uses}) or None,
        }
    )


def agent(skills: Sequence[str], model: str) -> Any:
    """The root of an agent's loop (``run_agent``, ``%%skillagent``): its model calls and
    tool runs are children."""
    return lab("skillagent", skills, model)


def lab(call: str, skills: Sequence[str], model: str, label: str = "") -> Any:
    """The root of one of the lab's calls (``skillagent``, ``run_evals``,
    ``evaluate_triggers``): its model calls, approval and script runs are children. A
    failure (an exception out of the ``with``) sets its status with the one line."""
    if trace._mode is False or not trace.refresh():
        return NOOP
    names = sorted(skills)
    attributes: dict[str, Any] = {n.CALL: call, n.SKILLS: names, n.REQUEST_MODEL: model}
    if len(names) == 1:
        attributes[n.SKILL_NAME] = names[0]
    return trace.span(label or call, attributes)


def refusal(skill: str, script: str, error: BaseException) -> None:
    """A refusal before anything ran (the policy, the sandbox, a name, a path, a time
    limit: whatever the audit records as ``refused``), as a span of its own, ended at once:
    error status with the refusal's one line. A child of the current span (a call, an
    agent's turn, an install), else a root of its own: refusals at plan time come before
    the call site."""
    if trace._mode is False or not trace.refresh():
        return
    attributes = {
        n.CALL: "refused",
        n.SKILL_NAME: skill,
        n.SCRIPT_PATH: script or None,
        n.STATUS: "refused",
        n.ERROR_TYPE: type(error).__name__,
    }
    with trace.span(f"refused {skill}", attributes) as span:
        span.fail(failure_line(error))


def failure_line(error: BaseException) -> str:
    """``Type: message`` (the status message; one line, redacted when recorded)."""
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _origin(skill: str) -> str:
    """``local``, or the MCP server's label (MCP skills are ``LABEL/NAME``)."""
    return skill.split("/", 1)[0] if "/" in skill else "local"


def _interpreter(prepared: Any) -> str | None:
    command = getattr(prepared, "command", ())
    if not command:
        return None
    return str(command[0]).rsplit("/", 1)[-1]


__all__ = [
    "CALLS",
    "agent",
    "approval",
    "env_build",
    "lab",
    "warm_start",
    "launch",
    "mcp_call",
    "model_call",
    "model_call_async",
    "outcome",
    "refusal",
    "root",
    "script_run",
]
