"""``%skills triggers NAME --queries VAR [--runs N]``: how often a model activates a skill.

Core sends the requests and counts (core/lab/triggers.py); nothing runs and nobody is asked.
The client is ``--client VAR`` or ``SkillMagics.model_client``, the model ``--model`` or
``SkillMagics.model``. ``--description`` tries another description (text, or a variable
holding it) without editing SKILL.md. A progress line or bar shows while it runs.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from skill_magics.core.base.errors import SkillMagicsError, magic_words
from skill_magics.notebook.cmd import SkillsHost
from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.skillagent import MissingKey
from skill_magics.notebook.names import NameListAction

if TYPE_CHECKING:  # core/lab is imported on use
    from skill_magics.core.lab.options import TriggerOptions

HELP = "NAME --queries VAR [--runs N] [--description TEXT|VAR]: trigger rates of a skill"
USAGE = (
    "%skills triggers NAME --queries VAR|FILE [--runs N] [--model M] [--client VAR] "
    "[--description TEXT|VAR] [--skills A B ...] [--holdout F] [--seed N] [--threshold F] "
    "[--max-calls N] [--max-tokens-total N] [-o VAR]"
)


def parser() -> argparse.ArgumentParser:
    from skill_magics.notebook.magics.skillagent import LineParser

    p = LineParser("%skills triggers", USAGE)
    p.add_argument("name")
    p.add_argument("--queries", required=True)
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--model", default=None)
    p.add_argument("--client", default=None)
    p.add_argument("--description", default=None)
    p.add_argument("--skills", nargs="+", action=NameListAction, default=None)
    p.add_argument("--holdout", type=float, default=None)
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--threshold", type=float, default=0.5)
    p.add_argument("--max-calls", type=int, default=None)
    p.add_argument("--max-tokens-total", type=int, default=None)
    p.add_argument("-o", "--out", default=None)
    return p


def _call(magics: Any, args: list[str]) -> tuple[argparse.Namespace, _Call]:
    """The parsed line and what the evaluation is given: the client, skill, queries, options."""
    from skill_magics.core.lab.options import TriggerOptions
    from skill_magics.notebook.magics.skillagent import find_client, find_model

    try:
        opts, rest = parser().parse_known_args(args)
    except (argparse.ArgumentError, ValueError) as exc:
        raise UsageError(f"{exc}: usage: {USAGE}") from None
    if rest:
        raise UsageError(f"Unexpected {' '.join(rest)!r}: usage: {USAGE}")
    user_ns = getattr(getattr(magics, "shell", None), "user_ns", {})
    queries = user_ns.get(opts.queries, opts.queries)  # a variable, else a file path
    description = opts.description
    if description is not None and description.isidentifier() and description in user_ns:
        description = user_ns[description]
    client = find_client(magics, opts.client)
    try:
        options = TriggerOptions(
            model=find_model(magics, opts.model),
            runs=opts.runs,
            threshold=opts.threshold,
            description=description,
            skills=opts.skills,
            holdout=opts.holdout,
            seed=opts.seed,
            max_calls=opts.max_calls,
            max_tokens_total=opts.max_tokens_total,
        )
    except ValueError as exc:
        raise UsageError(magic_words(exc)) from None
    return opts, _Call(client, opts.name, queries, options)


@dataclass(frozen=True)
class _Call:
    client: Any
    skill: str
    queries: Any
    options: TriggerOptions


def magic(mode: drive.Mode, magics: SkillsHost, args: list[str]) -> drive.Magic[Any]:
    """Awaited, requests of a sync client wait in a worker thread (the progress bar and
    Kernel > Interrupt get through); an async client is awaited. Nobody is asked."""
    from skill_magics.core.lab import triggers
    from skill_magics.notebook.magics.skillagent import sync_only

    try:
        opts, call = _call(magics, args)
    except MissingKey as exc:
        return _keyless(magics, args, exc)
    if not mode.is_awaited:
        sync_only(call.client, "%skills triggers")
    run = (call.client, magics.manager, call.skill, call.queries, call.options)
    try:
        report = yield drive.Step(
            lambda: triggers.evaluate_triggers(*run),
            lambda: triggers.evaluate_triggers_async(*run),
        )
    except (SkillMagicsError, ValueError) as exc:
        raise UsageError(magic_words(exc)) from None
    return _store(magics, opts.out, report)


def _keyless(magics: Any, args: list[str], exc: MissingKey) -> None:
    """No key: how many requests a model would have been sent, then the fix."""
    opts, _ = parser().parse_known_args(args)
    user_ns = getattr(getattr(magics, "shell", None), "user_ns", {})
    queries = user_ns.get(opts.queries, opts.queries)
    count = len(queries) if hasattr(queries, "__len__") and not isinstance(queries, str) else 0
    asked = f"each of the {count} queries" if count else f"each query of {opts.queries}"
    cap = f", at most {opts.max_calls} requests" if opts.max_calls else ""
    exc.note(f"a model would be asked {asked} {opts.runs} times with {opts.name!r} offered{cap}")
    if opts.out:
        user_ns[opts.out] = None


def _store(magics: Any, out: str | None, value: Any) -> Any:
    shell = getattr(magics, "shell", None)
    if out and shell is not None:
        shell.user_ns[out] = value
    return value
