"""A conversation between a model and the skills, step by step: :class:`Transcript`.

``messages`` are in the provider's own format, ready to send again (Anthropic: pass
``system=transcript.system`` too; OpenAI: the system message is the first of ``messages``).
``steps`` hold what happened in order, each with its start time and duration:
:class:`ModelStep` (the reply's text, its tool calls, tokens, stop reason),
:class:`ToolStep` (a tool call: its input, whether it activated a skill or ran a script,
what the approver answered, the result the model got back) and :class:`ErrorStep` (the API
failed). Core keeps it plain: ``text()`` for terminals, ``to_markdown()`` for files,
``to_pandas()``; the notebook layer draws it as a widget and as HTML
(notebook/render/lab.py).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from skill_magics.core.lab.approvals import ApprovalNote
from skill_magics.core.lab.clients import ToolUse

PREVIEW = 300  # characters of a result or input a one-line view shows


@dataclass(frozen=True)
class Usage:
    """Tokens the provider reported, summed over the replies."""

    input_tokens: int = 0
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class ModelStep:
    """One reply of the model."""

    turn: int
    text: str
    tool_uses: tuple[ToolUse, ...]
    stop_reason: str
    input_tokens: int
    output_tokens: int
    started_at: str
    seconds: float
    kind: str = "model"
    answered_by: str = ""  # the model name the API reported for this reply

    @property
    def label(self) -> str:
        """``model``, or what a stand-in's reply is (see :func:`stand_in`)."""
        return STAND_IN_LABEL if stand_in(self.answered_by) else "model"


# A server that replays recorded replies or answers by rule (tests/model_server.py) reports
# a model name starting with one of these; its replies are then labelled so everywhere they
# are shown, never presented as a model's.
STAND_IN_PREFIXES = ("recording", "recorded", "scripted", "replay")
STAND_IN_LABEL = "recorded/scripted reply, not a model"


def stand_in(model_name: str) -> bool:
    """Did a stand-in (a recording, a scripted server) answer, by the model name it gave?"""
    return model_name.strip().lower().startswith(STAND_IN_PREFIXES)


@dataclass(frozen=True)
class ToolStep:
    """One tool call and what the model got back.

    ``target`` is ``activation`` (``skill`` is the skill asked for), ``script`` (``skill``
    and ``script`` name it) or ``unknown`` (a name the model was not offered).
    ``approvals`` are the approver's answers during the call (none when a session approval
    covered it or a check refused it before anyone was asked)."""

    turn: int
    id: str
    name: str
    input: Any
    target: str
    skill: str | None
    script: str | None
    result: str
    is_error: bool
    approvals: tuple[ApprovalNote, ...]
    started_at: str
    seconds: float
    kind: str = "tool"

    @property
    def approval(self) -> str:
        """How the gate's question went, in words ("" for calls that run nothing)."""
        if self.target != "script":
            return ""
        if self.approvals:
            return "; ".join(note.line() for note in self.approvals)
        if self.is_error:
            return "not asked (refused before asking)"
        return "not asked (an approval given earlier covered it)"

    @property
    def ran(self) -> bool:
        """Did a script run (approved), whatever its exit status?"""
        if self.target != "script":
            return False
        if self.approvals:
            return self.approvals[-1].allowed
        return not self.is_error


@dataclass(frozen=True)
class ErrorStep:
    """A request that failed (HTTP error, no connection, timeout): no reply came."""

    turn: int
    message: str
    error: str  # ModelCallError.kind: status, connection, timeout
    started_at: str
    seconds: float
    kind: str = "error"


Step = ModelStep | ToolStep | ErrorStep


@dataclass
class Transcript:
    """What happened when a model worked on ``prompt`` with the skills it was offered."""

    prompt: str
    provider: str
    model: str
    system: str
    skills: tuple[str, ...]
    messages: list[dict[str, Any]] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    stop_reason: str = ""  # the provider's, or max_turns, error, budget
    error: str = ""
    started_at: str = ""
    seconds: float = 0.0

    # -- views -----------------------------------------------------------------------------

    @property
    def activated(self) -> list[str]:
        """Skills the model activated (the activation succeeded), in order, once each."""
        names: list[str] = []
        for step in self.tool_calls:
            if step.target == "activation" and not step.is_error and step.skill:
                if step.skill not in names:
                    names.append(step.skill)
        return names

    @property
    def tool_calls(self) -> list[ToolStep]:
        return [s for s in self.steps if isinstance(s, ToolStep)]

    @property
    def model_steps(self) -> list[ModelStep]:
        return [s for s in self.steps if isinstance(s, ModelStep)]

    @property
    def final_text(self) -> str:
        """The text of the model's last reply ("" when there was none)."""
        replies = self.model_steps
        return replies[-1].text if replies else ""

    @property
    def usage(self) -> Usage:
        replies = self.model_steps
        return Usage(sum(s.input_tokens for s in replies), sum(s.output_tokens for s in replies))

    @property
    def turns(self) -> int:
        return len(self.model_steps)

    @property
    def errors(self) -> int:
        """Failed requests plus tool calls that came back as errors."""
        return sum(1 for s in self.steps if isinstance(s, ErrorStep)) + sum(
            1 for s in self.tool_calls if s.is_error
        )

    @property
    def stand_in(self) -> bool:
        """A recording or a scripted server answered (labelled wherever it is shown)."""
        return any(step.label != "model" for step in self.model_steps)

    def summary(self) -> str:
        usage = self.usage
        bits = [
            f"{self.provider} {self.model}".strip(),
            f"{self.turns} repl{'y' if self.turns == 1 else 'ies'}",
            f"{len(self.tool_calls)} tool call{'s' if len(self.tool_calls) != 1 else ''}",
            f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens",
            f"{self.seconds:.2f} s",
            f"stop: {self.stop_reason or '?'}",
        ]
        return " · ".join(bits)

    def text(self) -> str:
        """The conversation for a terminal: one block per step."""
        lines = [f"Transcript · {self.summary()}"]
        lines.append(f"skills offered: {', '.join(self.skills) or '(none)'}")
        lines.append(f"activated: {', '.join(self.activated) or '(none)'}")
        if self.stand_in:
            lines.append("Replies below are a recording or scripted, not a model's answers.")
        if self.error:
            lines.append(f"error: {self.error}")
        lines.append(f"[user] {self.prompt}")
        for step in self.steps:
            lines.extend(step_lines(step))
        return "\n".join(lines)

    def to_markdown(self) -> str:
        """The whole conversation as markdown (texts in full): what ``transcript.md`` holds."""
        out = [
            f"- provider: {self.provider}",
            f"- model: {self.model}",
            f"- skills offered: {', '.join(self.skills) or '(none)'}",
            f"- activated: {', '.join(self.activated) or '(none)'}",
            f"- stop reason: {self.stop_reason}",
            f"- tokens: {self.usage.input_tokens} in, {self.usage.output_tokens} out",
            f"- duration: {self.seconds:.2f} s",
        ]
        if self.stand_in:
            out.append("- replies: a recording or scripted, not a model's answers")
        if self.error:
            out.append(f"- error: {self.error}")
        out += ["", "## System prompt", "", _fence(self.system or "(none)"), ""]
        out += ["## User", "", self.prompt, ""]
        for step in self.steps:
            if isinstance(step, ModelStep):
                out += [
                    f"## {step.label.capitalize()} (turn {step.turn}, {step.seconds:.2f} s)",
                    "",
                ]
                if step.text:
                    out += [step.text, ""]
                for use in step.tool_uses:
                    out += [f"Tool call `{use.name}`:", "", _fence(_json(use.input)), ""]
            elif isinstance(step, ToolStep):
                state = "error" if step.is_error else "ok"
                out += [f"## Tool result `{step.name}` ({state}, {step.seconds:.2f} s)", ""]
                if step.approval:
                    out += [f"Approval: {step.approval}", ""]
                out += [_fence(step.result), ""]
            else:
                out += [f"## API error (turn {step.turn})", "", step.message, ""]
        return "\n".join(out).rstrip() + "\n"

    def to_dict(self) -> dict[str, Any]:
        """JSON-able data (steps as dicts, tool uses and approvals included)."""
        data = asdict(self)
        data["activated"] = self.activated
        data["final_text"] = self.final_text
        data["usage"] = asdict(self.usage)
        return data

    def to_pandas(self) -> Any:
        """One row per step (the prompt first): kind, name, skill, input, output, error,
        approval, tokens, start and duration."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("Transcript.to_pandas needs pandas: pip install pandas") from None
        rows = [_row(step=0, kind="user", name="user", output=self.prompt)]
        for i, step in enumerate(self.steps, 1):
            if isinstance(step, ModelStep):
                rows.append(
                    _row(
                        step=i,
                        turn=step.turn,
                        kind="model",
                        name=self.model or "model",
                        input=", ".join(u.name for u in step.tool_uses),
                        output=step.text,
                        input_tokens=step.input_tokens,
                        output_tokens=step.output_tokens,
                        started_at=step.started_at,
                        seconds=step.seconds,
                    )
                )
            elif isinstance(step, ToolStep):
                rows.append(
                    _row(
                        step=i,
                        turn=step.turn,
                        kind="tool",
                        name=step.name,
                        skill=step.skill,
                        input=_json(step.input),
                        output=step.result,
                        is_error=step.is_error,
                        approval=step.approval,
                        started_at=step.started_at,
                        seconds=step.seconds,
                    )
                )
            else:
                rows.append(
                    _row(
                        step=i,
                        turn=step.turn,
                        kind="error",
                        name=step.error,
                        output=step.message,
                        is_error=True,
                        started_at=step.started_at,
                        seconds=step.seconds,
                    )
                )
        return pd.DataFrame(rows)

    def __repr__(self) -> str:
        return f"<Transcript {self.summary()}>"


def step_lines(step: Step) -> list[str]:
    """A step as a few terminal lines (texts cut to PREVIEW characters)."""
    if isinstance(step, ModelStep):
        head = (
            f"[{step.label} · turn {step.turn} · {step.seconds:.2f} s · "
            f"{step.input_tokens:,}+{step.output_tokens:,} tokens · {step.stop_reason}]"
        )
        lines = [head]
        if step.text:
            lines.append("  " + cut(step.text))
        lines += [f"  -> {use.name} {cut(_json(use.input), 160)}" for use in step.tool_uses]
        return lines
    if isinstance(step, ToolStep):
        state = "error" if step.is_error else "ok"
        lines = [f"[tool {step.name} · {state} · {step.seconds:.2f} s]"]
        if step.approval:
            lines.append(f"  approval: {step.approval}")
        lines.append("  " + cut(step.result))
        return lines
    return [f"[API error · turn {step.turn} · {step.error}] {step.message}"]


def cut(text: str, limit: int = PREVIEW) -> str:
    """One line of at most ``limit`` characters (newlines shown as ⏎)."""
    flat = " ⏎ ".join(line.strip() for line in text.strip().splitlines() if line.strip())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _fence(text: str) -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}\n{text}\n{ticks}"


COLUMNS = (
    "step",
    "turn",
    "kind",
    "name",
    "skill",
    "input",
    "output",
    "is_error",
    "approval",
    "input_tokens",
    "output_tokens",
    "started_at",
    "seconds",
)


def _row(**values: Any) -> dict[str, Any]:
    """A to_pandas row: every column, defaults for those not given."""
    defaults: dict[str, Any] = {
        "turn": 0,
        "skill": None,
        "input": "",
        "output": "",
        "is_error": False,
        "approval": "",
        "input_tokens": 0,
        "output_tokens": 0,
        "started_at": "",
        "seconds": 0.0,
    }
    row = {**defaults, **values}
    return {name: row[name] for name in COLUMNS}


__all__ = ["ErrorStep", "ModelStep", "Step", "ToolStep", "Transcript", "Usage", "cut"]
