"""What a caller chooses for a lab run, apart from what each call brings.

An options object holds the choices (model, runs, caps, limits, ...), checked once when it is
made: a bad value is a ValueError in one line naming the fix, before anything is sent. The
per-call things (the client, the manager, the skill, the approver, a progress callback) stay
arguments of :func:`~.agent.run_agent`, :func:`~.triggers.evaluate_triggers` and
:func:`~.evals.run_evals`. Build one and reuse it::

    opts = TriggerOptions(model="claude-sonnet-4-5", runs=3, max_calls=60)
    a = evaluate_triggers(client, manager, "unit-converter", queries, opts)
    b = evaluate_triggers(client, manager, "unit-converter", queries, opts, description="...")

Keywords given to those calls are fields of their options (they replace the options' value),
so ``evaluate_triggers(..., model="m", runs=2)`` still reads as before.
"""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from skill_magics.core.lab.budget import Caps

MAX_TURNS = 8
MAX_TOKENS = 1024
CONFIGURATIONS = ("with_skill", "without_skill")

Opts = TypeVar("Opts")


def _model(value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("model= is required: the model's name, e.g. model='claude-sonnet-4-5'")


def _count(label: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{label}={value!r}: use a whole number of 1 or more")


def _text(label: str, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise ValueError(f"{label}= is a {type(value).__name__}: give text, or None")


def _names(options: Any, label: str) -> None:
    """A list of skill names kept as a tuple (a lone string would be read letter by letter)."""
    value = getattr(options, label)
    if value is None:
        return
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise ValueError(f"{label}={value!r}: give a list of skill names, e.g. ['unit-converter']")
    if not all(isinstance(name, str) for name in value):
        raise ValueError(f"{label}={value!r}: every entry must be a skill's name (text)")
    object.__setattr__(options, label, tuple(value))


@dataclass(frozen=True)
class AgentOptions:
    """:func:`~.agent.run_agent`'s choices: the model, the skills offered (None: every skill
    a model may use), a system prompt put first, and the limits of one conversation."""

    model: str
    skills: tuple[str, ...] | None = None
    system: str | None = None
    max_turns: int = MAX_TURNS
    max_tokens: int = MAX_TOKENS  # per reply

    def __post_init__(self) -> None:
        _model(self.model)
        _names(self, "skills")
        _text("system", self.system)
        _count("max_turns", self.max_turns)
        _count("max_tokens", self.max_tokens)


@dataclass(frozen=True)
class TriggerOptions:
    """:func:`~.triggers.evaluate_triggers`' choices (core/lab/triggers.py says what each
    does): ``runs`` per query, the pass ``threshold``, a ``description`` tried instead of
    SKILL.md's, the other ``skills`` offered, a seeded ``holdout``, hard caps."""

    model: str
    runs: int = 3
    threshold: float = 0.5
    description: str | None = None
    skills: tuple[str, ...] | None = None
    holdout: float | None = None
    seed: int = 42
    max_calls: int | None = None
    max_tokens_total: int | None = None
    system: str | None = None
    max_tokens: int = MAX_TOKENS  # per reply

    def __post_init__(self) -> None:
        _model(self.model)
        _count("runs", self.runs)
        _count("max_tokens", self.max_tokens)
        if not _number(self.threshold) or not 0 < self.threshold <= 1:
            raise ValueError(
                f"threshold={self.threshold!r}: use a rate above 0 and at most 1, e.g. 0.5"
            )
        object.__setattr__(self, "threshold", float(self.threshold))
        if self.description is not None:
            if not str(self.description).strip():
                raise ValueError("description= is empty: give the description to evaluate, or None")
            object.__setattr__(self, "description", str(self.description))
        _names(self, "skills")
        if self.holdout is not None and (not _number(self.holdout) or not 0 < self.holdout < 1):
            raise ValueError(f"holdout={self.holdout!r}: use a fraction between 0 and 1, e.g. 0.4")
        if self.holdout is not None:
            object.__setattr__(self, "holdout", float(self.holdout))
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            raise ValueError(f"seed={self.seed!r}: use a whole number, e.g. 42")
        Caps(self.max_calls, self.max_tokens_total)  # their one-line errors
        _text("system", self.system)


@dataclass(frozen=True)
class EvalOptions:
    """:func:`~.evals.run_evals`' choices (core/lab/evals.py says what each does): the
    configurations run, ``runs`` of each, the ``workspace`` folder (None:
    ``./<skill folder>-workspace``), the grader's model (None: ``model``), a cap on
    requests, and each agent run's system prompt and limits."""

    model: str
    configurations: tuple[str, ...] = CONFIGURATIONS
    runs: int = 1
    workspace: str | Path | None = None
    max_calls: int | None = None
    grader_model: str | None = None
    system: str | None = None
    max_turns: int = MAX_TURNS
    max_tokens: int = MAX_TOKENS  # per reply

    def __post_init__(self) -> None:
        _model(self.model)
        _count("runs", self.runs)
        configs = self.configurations
        listed = not isinstance(configs, (str, bytes)) and isinstance(configs, Sequence)
        chosen = tuple(configs) if listed else ()
        unknown = [c for c in chosen if c not in CONFIGURATIONS]
        if not chosen or unknown or len(set(chosen)) != len(chosen):
            raise ValueError(
                f"configurations={list(chosen) if listed else configs!r}: use one or both of "
                f"{', '.join(CONFIGURATIONS)}, each once"
            )
        object.__setattr__(self, "configurations", chosen)
        if self.workspace is not None and not isinstance(self.workspace, (str, os.PathLike)):
            raise ValueError(f"workspace={self.workspace!r}: give a folder's path, or None")
        Caps(self.max_calls, None)
        _text("grader_model", self.grader_model)
        AgentOptions(self.model, (), self.system, self.max_turns, self.max_tokens)

    def agent(self, skills: Sequence[str]) -> AgentOptions:
        """The options of one agent run offering ``skills``."""
        return AgentOptions(self.model, tuple(skills), self.system, self.max_turns, self.max_tokens)


def _number(value: Any) -> bool:
    """A real number (numpy's too), not a bool and not text that looks like one."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def chosen(kind: type[Opts], options: Opts | None, choices: Mapping[str, Any]) -> Opts:
    """``options`` with ``choices`` (keywords of a lab call) put in; without options, the
    choices make them. An unknown keyword or a missing model is a one-line ValueError."""
    if options is not None and not isinstance(options, kind):
        raise ValueError(
            f"options={type(options).__name__}(...): pass {kind.__name__}(model=...), or "
            "keywords such as model='...'"
        )
    fields = [f.name for f in dataclasses.fields(kind)]  # type: ignore[arg-type]
    unknown = sorted(set(choices) - set(fields))
    if unknown:
        raise ValueError(
            f"Unknown option {', '.join(unknown)}: {kind.__name__} takes {', '.join(fields)}"
        )
    if options is None:
        if "model" not in choices:
            _model(None)
        return kind(**choices)
    return dataclasses.replace(options, **choices) if choices else options  # type: ignore[type-var]


__all__ = [
    "CONFIGURATIONS",
    "MAX_TOKENS",
    "MAX_TURNS",
    "AgentOptions",
    "EvalOptions",
    "TriggerOptions",
    "chosen",
]
