"""``%skills evals NAME``: run a skill's ``evals/evals.json`` with and without the skill.

Core runs each prompt through the agent loop per configuration, writes the workspace
(``<skill>-workspace/iteration-N/...`` with timing.json, grading.json, benchmark.json in
skill-creator's fields) and grades with ``--grader VAR`` when given (core/lab/evals.py).
The approval panel asks ONCE for the whole evaluation. On ipykernel >= 7.4 the line is
awaited (magics/rewrite.py), so that click arrives.
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
    from skill_magics.core.lab.options import EvalOptions

HELP = "NAME [--runs N] [--grader VAR] [--workspace DIR]: evals.json with and without a skill"
USAGE = (
    "%skills evals NAME [--model M] [--client VAR] [--grader VAR] [--grader-model M] "
    "[--runs N] [--configurations with_skill without_skill] [--workspace DIR] "
    "[--max-calls N] [-o VAR]"
)


def parser() -> argparse.ArgumentParser:
    from skill_magics.notebook.magics.skillagent import LineParser

    p = LineParser("%skills evals", USAGE)
    p.add_argument("name")
    p.add_argument("--model", default=None)
    p.add_argument("--client", default=None)
    p.add_argument("--grader", default=None)
    p.add_argument("--grader-model", default=None)
    p.add_argument("--runs", type=int, default=1)
    p.add_argument(
        "--configurations",
        nargs="+",
        action=NameListAction,
        default=["with_skill", "without_skill"],
    )
    p.add_argument("--workspace", default=None)
    p.add_argument("--max-calls", type=int, default=None)
    p.add_argument("-o", "--out", default=None)
    return p


def _call(magics: Any, args: list[str]) -> tuple[argparse.Namespace, _Call]:
    """The parsed line and what the evaluation is given: the clients, skill, options."""
    from skill_magics.core.lab.options import EvalOptions
    from skill_magics.notebook.magics.skillagent import find_client, find_model

    try:
        opts, rest = parser().parse_known_args(args)
    except (argparse.ArgumentError, ValueError) as exc:
        raise UsageError(f"{exc}: usage: {USAGE}") from None
    if rest:
        raise UsageError(f"Unexpected {' '.join(rest)!r}: usage: {USAGE}")
    grader = None
    if opts.grader is not None:
        grader = find_client(magics, opts.grader)
    client = find_client(magics, opts.client)
    try:
        options = EvalOptions(
            model=find_model(magics, opts.model),
            configurations=tuple(opts.configurations),
            runs=opts.runs,
            workspace=opts.workspace,
            grader_model=opts.grader_model,
            max_calls=opts.max_calls,
        )
    except ValueError as exc:
        raise UsageError(magic_words(exc)) from None
    return opts, _Call(client, grader, opts.name, options)


@dataclass(frozen=True)
class _Call:
    client: Any
    grader: Any
    skill: str
    options: EvalOptions


def magic(mode: drive.Mode, magics: SkillsHost, args: list[str]) -> drive.Magic[Any]:
    """Awaited, the one approval and sync requests wait in worker threads while the cell
    awaits; Kernel > Interrupt kills a running script."""
    from skill_magics.core.lab import evals
    from skill_magics.core.run.gating.approval import MANAGER_APPROVER
    from skill_magics.notebook.magics.skillagent import sync_only

    try:
        opts, call = _call(magics, args)
    except MissingKey as exc:
        return _keyless(magics, args, exc)
    if not mode.is_awaited:  # awaited, an async client is awaited too
        sync_only(call.client, "%skills evals")
        if call.grader is not None:
            sync_only(call.grader, "%skills evals")
    approver = mode.approver(fallback=MANAGER_APPROVER)
    run = (call.client, magics.manager, call.skill, call.options)
    try:
        report = yield drive.Step(
            lambda: evals.run_evals(*run, grader=call.grader, approver=approver),
            lambda: evals.run_evals_async(
                *run, grader=call.grader, approver=approver, cancel=mode.cancel
            ),
        )
    except (SkillMagicsError, ValueError) as exc:
        raise UsageError(magic_words(exc)) from None
    return _store(magics, opts.out, report)


def _keyless(magics: Any, args: list[str], exc: MissingKey) -> None:
    """No key: what a model would have been asked, then the fix."""
    opts, _ = parser().parse_known_args(args)
    cap = f", at most {opts.max_calls} requests" if opts.max_calls else ""
    exc.note(
        f"a model would work on each prompt of {opts.name}'s evals/evals.json, "
        f"{opts.runs} runs each with and without the skill{cap}"
    )
    user_ns = getattr(getattr(magics, "shell", None), "user_ns", {})
    if opts.out:
        user_ns[opts.out] = None


def _store(magics: Any, out: str | None, value: Any) -> Any:
    shell = getattr(magics, "shell", None)
    if out and shell is not None:
        shell.user_ns[out] = value
    return value
