"""``%%skillrun skill.script --map VAR [--workers N] [--pool VAR]``: one script over every
item of a notebook variable, approved once, with live progress and a Stop button.

The magic parses the line, turns VAR into items (a pandas DataFrame: one JSON object per
row, converted as ``--eval`` converts values; a list or any iterable: one item each), fills
``{column}`` placeholders of the words after ``--`` (core/run/planning/template.py: each placeholder
stays one argv element, no shell), asks core to plan the batch, and hands the plan to the
one call site (``manager.run_planned``) with the notebook approver: ONE request through the
gate, then the items.
The cell's value is the BatchResult (``-o NAME`` stores it too). ``--executor VAR`` is the
deprecated old name of ``--pool VAR`` (a FutureWarning, which notebooks show).

docs/architecture.md, *Batch runs*.
"""

from __future__ import annotations

import asyncio
import shlex
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError

from skill_magics.core.base.errors import BatchInterrupted, RunInterrupted, SkillMagicsError
from skill_magics.core.base.jsonable import to_jsonable
from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.runline import parse_run_line
from skill_magics.notebook.magics.skills import usage_error

if TYPE_CHECKING:
    from skill_magics.core.run.batch.result import BatchResult
    from skill_magics.core.run.batch.runner import BatchPlan
    from skill_magics.core.run.pipeline import BatchOptions

INTERRUPTED = "interrupted: every running process group was killed, the rest cancelled"


def wants_map(line: str) -> bool:
    """Does this %%skillrun line ask for a batch (``--map`` before any ``--``)?"""
    try:
        words = shlex.split(line)
    except ValueError:
        return False
    if "--" in words:
        words = words[: words.index("--")]
    return any(w == "--map" or w.startswith("--map=") for w in words)


@dataclass
class MapRun:
    """One ``%%skillrun --map`` after parsing and planning, before the gate."""

    plan: BatchPlan
    out: str | None
    workers: int | None
    pool: Any
    trace_content: bool = False

    @property
    def name(self) -> str:
        stem = self.plan.script.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return f"{self.plan.skill_name}.{stem}"


def plan_map(magics: Any, line: str, cell: str) -> MapRun:
    """Parse and plan; a one-line UsageError when nothing can run."""
    from skill_magics.core.run.planning.template import fill_argv, placeholders

    parsed = parse_run_line(
        magics.skillrun.parser, line, require_approval=magics.skill_magics.require_approval
    )
    opts, skill, script, template = parsed.opts, parsed.skill, parsed.script, parsed.tail
    if opts.eval or cell.strip():
        raise UsageError(
            "With --map the inputs come from the variable: leave the cell body empty and drop "
            "--eval (each item is sent on stdin, or fills the {column} placeholders after --)"
        )
    if opts.workers is not None and opts.workers < 1:
        raise UsageError(f"--workers must be at least 1, not {opts.workers}")
    value = _variable(magics, opts.map, "--map")
    pool = _pool(magics, opts)
    items = _items(value, opts.map)
    try:
        if template is not None and placeholders(template):
            plan = magics.manager.plan_map(
                skill,
                script,
                argv=fill_argv(template, items),
                timeout=opts.timeout,
                rows=items,
                sandbox=opts.sandbox,
                cwd=opts.cwd,
                warm=opts.warm,
            )
        elif template:
            raise UsageError(
                "The words after -- have no {column} placeholder, so every item would get the "
                "same argv: write e.g. -- --value {km} (or leave -- out to send each row on "
                "stdin)"
            )
        else:
            plan = magics.manager.plan_map(
                skill,
                script,
                items,
                timeout=opts.timeout,
                sandbox=opts.sandbox,
                cwd=opts.cwd,
                warm=opts.warm,
            )
    except (SkillMagicsError, ValueError) as exc:
        raise usage_error(exc) from None
    return MapRun(plan, opts.out, opts.workers, pool, opts.trace_content)


def _pool(magics: Any, opts: Any) -> Any:
    """The variable ``--pool VAR`` names (or ``--executor VAR``, its deprecated old name)."""
    from skill_magics.core.base.deprecation import renamed_argument

    try:
        name = renamed_argument(
            opts.pool, opts.executor, new="--pool", old="--executor", category=FutureWarning
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if name is None:
        return None
    option = "--pool" if opts.pool is not None else "--executor"
    pool = _variable(magics, name, option)
    if not _is_pool(pool):
        raise UsageError(
            f"{option} {name}: pool= must be a concurrent.futures.Executor, a "
            f"dask.distributed.Client or a scheduler address, not a {type(pool).__name__}"
        )
    return pool


def _is_pool(value: Any) -> bool:
    from concurrent.futures import Executor

    from skill_magics.core.run.batch.dask_backend import is_dask_client

    return isinstance(value, (str, Executor)) or is_dask_client(value)


def _variable(magics: Any, name: str, option: str) -> Any:
    namespace = magics._shell.user_ns
    if name not in namespace:
        raise UsageError(
            f"{option} {name}: there is no variable {name!r} in the notebook; define it first"
        )
    return namespace[name]


def _items(value: Any, name: str) -> list[Any]:
    """A DataFrame's rows (as JSON objects), or the items of a list / iterable."""
    if hasattr(value, "to_dict") and hasattr(value, "columns") and hasattr(value, "iloc"):
        return list(to_jsonable(value.to_dict(orient="records")))
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise UsageError(
            f"--map {name} needs a DataFrame, a list or another iterable of items, not a "
            f"{type(value).__name__}"
        )
    return [to_jsonable(v) for v in value]


# -- running ---------------------------------------------------------------------------------


def _progress(magics: Any, run: MapRun, approver: Any, stop: Any) -> Any:
    from IPython.core.displaypub import DisplayPublisher

    from skill_magics.notebook.approval.waiting import Strategy
    from skill_magics.notebook.render.batch import progress_for
    from skill_magics.notebook.render.widgets import widgets_supported

    # Can an output be replaced later (Jupyter, VS Code)? IPython's base publisher (terminal
    # IPython) prints every update as new text: a text line is drawn there instead.
    publisher = getattr(magics.shell, "display_pub", None)
    updates = publisher is not None and type(publisher) is not DisplayPublisher
    headless = approver is not None and approver.strategy is Strategy.HEADLESS
    widget = updates and not headless and widgets_supported()
    return progress_for(len(run.plan), run.name, widget=widget, terminal=not updates, on_stop=stop)


def _options(run: MapRun, progress: Any) -> BatchOptions:
    from skill_magics.core.run.pipeline import BatchOptions

    on_progress = None if progress is None else progress.update
    return BatchOptions(max_workers=run.workers, pool=run.pool, on_progress=on_progress)


class _Progress:
    """The progress display, made when the gate allowed the batch (the call site's
    ``on_start``), fed by the runner's ``on_progress``."""

    def __init__(self, magics: Any, run: MapRun, approver: Any, stop: Any) -> None:
        self.args = (magics, run, approver, stop)
        self.view: Any = None

    def start(self) -> None:
        self.view = _progress(*self.args)

    def update(self, snapshot: Any) -> None:
        if self.view is not None:
            self.view.update(snapshot)

    def finish(self, result: Any) -> None:
        if self.view is not None:
            self.view.finish(result)

    def finish_quietly(self) -> None:
        if self.view is not None:
            self.view.finish_quietly()


def _value(magics: Any, run: MapRun, outcome: Any, progress: _Progress) -> BatchResult:
    """The cell's value: the batch's result, or the one-line error of a gate that said no."""
    if not outcome.allowed:
        try:
            outcome.raise_if_blocked()
        except SkillMagicsError as exc:
            raise usage_error(exc) from None
    result: BatchResult = outcome.value
    progress.finish(result)
    return magics._store(run.out, result)


def magic(mode: drive.Mode, magics: Any, line: str, cell: str) -> drive.Magic[BatchResult]:
    """Gate, then the batch: in this thread (Ctrl-C stops it), or awaited (ipykernel >= 7.4:
    the gate and the batch in worker threads while the cell awaits, so the approval click,
    the Stop click and Kernel > Interrupt arrive)."""
    from skill_magics.notebook.approval.waiting import Strategy

    run = plan_map(magics, line, cell)
    approver = mode.approver()
    cancel = mode.cancel or threading.Event()
    # Stop: awaited, or a click handled on another thread (a JupyterLab subshell) while this
    # thread runs the batch
    stoppable = mode.is_awaited or approver.strategy in (Strategy.RELAY, Strategy.THREAD)
    progress = _Progress(magics, run, approver, cancel.set if stoppable else None)
    options: dict[str, Any] = {
        "on_start": progress.start if len(run.plan) else None,
        "cancel": cancel,
        "batch": _options(run, progress),
        "trace_content": run.trace_content,
    }
    manager = magics.manager
    try:
        outcome = yield drive.Step(
            lambda: manager.run_planned(run.plan, approver, **options),
            lambda: manager.run_planned_async(run.plan, approver, **options),
        )
    except BatchInterrupted as exc:
        # Ctrl-C or Kernel > Interrupt during the batch: it saw ``cancel`` and stopped; keep
        # what it did.
        raise _failed(magics, run, progress, exc) from None
    except RunInterrupted as exc:  # while waiting for the click: nothing ran
        if mode.is_awaited:
            raise _interrupted(magics, run, progress) from None
        raise RunInterrupted(f"{run.name}: {exc}") from None
    except (asyncio.CancelledError, KeyboardInterrupt):
        if not mode.is_awaited:
            raise
        raise _interrupted(magics, run, progress) from None
    except (SkillMagicsError, ValueError) as exc:
        raise _failed(magics, run, progress, exc) from None
    return _value(magics, run, outcome, progress)


def _interrupted(magics: Any, run: MapRun, progress: _Progress) -> BaseException:
    """Kernel > Interrupt on the await path: as the batch started (nothing to keep), or while
    the click was awaited."""
    from skill_magics.notebook.approval.approver import WAIT_INTERRUPTED

    if progress.view is not None:
        return _failed(magics, run, progress, BatchInterrupted(INTERRUPTED))
    return RunInterrupted(f"{run.name}: {WAIT_INTERRUPTED}")


def _failed(magics: Any, run: MapRun, progress: _Progress, exc: BaseException) -> BaseException:
    """The cell's one-line error; an interrupted batch's partial result is kept (``-o``)."""
    partial = getattr(exc, "result", None)
    if partial is not None:
        progress.finish(partial)
        magics._store(run.out, partial)
    else:
        progress.finish_quietly()
    if isinstance(exc, BatchInterrupted):
        where = f"; the partial result is in {run.out}" if run.out and partial is not None else ""
        return RunInterrupted(f"{run.name}: {INTERRUPTED}{where}")
    return usage_error(exc)


__all__ = ["MapRun", "magic", "plan_map", "wants_map"]
