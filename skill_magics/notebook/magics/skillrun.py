"""``%%skillrun``: run one skill script, through core's pipeline (plan -> gate -> execute).

The magic parses the line and the body, asks core to plan the run (every check, a one-line
UsageError when nothing can run), and hands the plan to the one call site
(``manager.run_planned``) with the notebook approver (approval/approver.py): the gate decides,
the executor runs what it allows, and the magic shows a SkillRunResult.

How a result is shown (so a saved notebook ends with the final output):

- A result that is final when the cell ends (a quick run, a decline, unavailable approval) is
  simply returned: IPython shows it as the cell's Out, and it is ``_`` / ``Out[n]``.
- A result that changes after it was first shown (a run over LIVE_DELAY_S with its live view,
  or a pending result whose click comes after the cell returned) is displayed once with a
  display id (``SkillRunResult.show()``), and every later change replaces that same output,
  saved text/HTML included: one output area goes running -> final. It is still *returned*, so
  ``_``, ``Out[n]``, ``run_cell_magic(...)`` and ``-o NAME`` all give the live object, but the
  frozen duplicate IPython would print as Out is left out (:func:`_quiet_out`).
- Where displays cannot be updated in place (terminal IPython prints every update as new
  text) there is no live view and results are always returned plainly.
"""

from __future__ import annotations

import asyncio
import contextvars
import json
import logging
import threading
from collections.abc import Awaitable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from skill_magics.core.base.errors import RunInterrupted, SkillMagicsError
from skill_magics.core.base.jsonable import to_jsonable
from skill_magics.core.base.status import RunStatus
from skill_magics.core.run.launching.sandbox_profiles import PROFILES
from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.runline import parse_run_line
from skill_magics.notebook.magics.skills import SharedMagics, usage_error

if TYPE_CHECKING:  # loaded on first use: %load_ext stays light
    from skill_magics.core.run.gating.approval import Decision
    from skill_magics.core.run.pipeline import RunOutcome
    from skill_magics.core.run.planning.plan import PlannedRun
    from skill_magics.notebook.result import SkillRunResult

logger = logging.getLogger(__name__)

LIVE_DELAY_S = 1.0  # show the live view (elapsed time, streaming output) after this long
INTERRUPTED = "interrupted: the script's process group was killed"


@dataclass
class _Run:
    """One %%skillrun after parsing and planning, before the gate."""

    plan: PlannedRun
    arguments: Any
    argv: list[str] | None
    out: str | None
    trace_content: bool = False

    @property
    def skill(self) -> str:
        return self.plan.skill_name

    @property
    def script(self) -> str:
        return self.plan.script

    @property
    def prepared(self) -> Any:
        return self.plan.prepared


@magics_class
class SkillRunMagics(SharedMagics):
    """``%%skillrun``; configuration, manager and panels come from ``skill_magics``."""

    @magic_arguments(name="%skillrun")  # a cell magic: usage reads %%skillrun
    @argument(
        "target",
        help="SKILL.SCRIPT: skill name, a dot, then the script's stem, file name or relative "
        "path (pdf.extract, pdf.extract.py, pdf.scripts/utils/parser.py)",
    )
    @argument("--timeout", type=float, default=None, help="seconds before the script is killed")
    @argument("-o", "--out", default=None, help="also store the result in this variable")
    @argument(
        "--sandbox",
        default=None,
        choices=PROFILES.names(),  # the registered profiles, read live
        help="this run's isolation (default: SkillMagics.sandbox)",
    )
    @argument(
        "--eval",
        action="store_true",
        help="the body is a Python expression evaluated in the notebook, e.g. "
        "df.head().to_dict(); pandas/NumPy values become JSON (int keys -> strings, "
        "NaN -> null, timestamps -> ISO text)",
    )
    @argument(
        "--cwd",
        default=None,
        help="working directory: workspace (the notebook's folder), skill (the skill folder) "
        "or a path; default SkillMagics.run_cwd",
    )
    @argument(
        "--no-approval",
        action="store_true",
        help="run without asking (only when SkillMagics.require_approval is False)",
    )
    @argument(
        "--map",
        default=None,
        metavar="VAR",
        help="run once per item of VAR (a DataFrame: one JSON object per row; a list or "
        "iterable), after ONE approval; words after -- may use {column} placeholders",
    )
    @argument(
        "--warm",
        dest="warm",
        action="store_const",
        const=True,
        default=None,
        help="start a Python script warm: forked from a server that imported its packages "
        "(waits for the server the first time); default SkillMagics.warm_start",
    )
    @argument(
        "--cold",
        dest="warm",
        action="store_const",
        const=False,
        help="start a fresh interpreter (a cold start), whatever SkillMagics.warm_start says",
    )
    @argument(
        "--trace-content",
        action="store_true",
        help="while tracing is on (%%skills trace), this run's spans also hold its arguments "
        "and output, secrets masked first; default: names, codes and sizes only",
    )
    @argument("--workers", type=int, default=None, help="with --map: items run at once")
    @argument(
        "--pool",
        default=None,
        metavar="VAR",
        help="with --map: a concurrent.futures.Executor, dask.distributed.Client or "
        "scheduler address held in VAR",
    )
    @argument(
        "--executor",
        default=None,
        metavar="VAR",
        help="deprecated: the old name of --pool",
    )
    @cell_magic
    def skillrun(self, line: str, cell: str = "") -> Any:
        """Run a skill script: %%skillrun SKILL.SCRIPT [options] [-- ARGV...]

        The cell body is JSON sent on stdin (empty body: {}); with --eval it is a Python
        expression. Words after -- are passed as command-line arguments. Asks Yes once /
        Yes in session / No before running. Returns a SkillRunResult (.stdout, .stderr,
        .exit_code, .json(), .status).
        """
        return drive.blocking(self.skill_magics, self._skillrun, line, cell)

    async def skillrun_async(self, line: str, cell: str = "") -> Any:
        """The await path (ipykernel >= 7.4): the gate and the run happen in worker threads
        while the cell awaits, so the click, Stop and Kernel > Interrupt reach the kernel."""
        return await drive.awaited(self.skill_magics, self._skillrun, line, cell)

    def _skillrun(self, mode: drive.Mode, line: str, cell: str) -> drive.Magic[Any]:
        """Both paths, written once: plan, then the call site (gate, run) as the one step."""
        from skill_magics.notebook.approval.approver import WAIT_INTERRUPTED
        from skill_magics.notebook.approval.waiting import Strategy
        from skill_magics.notebook.magics import skillmap

        if skillmap.wants_map(line):  # a batch: magics/skillmap.py
            return (yield from skillmap.magic(mode, self, line, cell))
        run = self._plan(line, cell)
        approver = mode.approver(pending_ok=True)
        # Stop works when awaited, or where clicks arrive on another thread while this one
        # runs the script.
        stoppable = mode.is_awaited or approver.strategy in (Strategy.RELAY, Strategy.THREAD)
        view = _RunView(self, run, stoppable=stoppable, cancel=mode.cancel, on_loop=mode.is_awaited)
        manager = self.manager
        hooks: dict[str, Any] = {
            "on_start": view.start,
            "on_output": view.output,
            "cancel": view.cancel,
            "trace_content": run.trace_content,
        }
        try:
            outcome = yield drive.Step(
                lambda: manager.run_planned(run.plan, approver, **hooks),
                lambda: _until_stopped(
                    manager.run_planned_async(run.plan, approver, **hooks), view.cancel
                ),
            )
        except RunInterrupted as exc:  # while waiting for the click: nothing ran
            raise RunInterrupted(f"{run.skill}.{run.script}: {exc}") from None
        except KeyboardInterrupt:  # Ctrl-C on the blocking path
            if view.res is None:
                raise
            # The executor killed the group; only the streamed output (res.live_text) is left.
            raise self._interrupted(run, view.res) from None
        finally:
            view.finish()
        if isinstance(outcome, _Stopped):  # Kernel > Interrupt on the await path
            res = view.res
            if res is None:
                raise RunInterrupted(f"{run.skill}.{run.script}: {WAIT_INTERRUPTED}")
            if outcome.ended is not None:
                res.set_result(outcome.ended, status=RunStatus.INTERRUPTED, message=INTERRUPTED)
            raise self._interrupted(run, res)
        return self._settled(run, outcome, view)

    # -- steps --------------------------------------------------------------------------------
    def _plan(self, line: str, cell: str) -> _Run:
        """Parse and plan; a one-line UsageError when nothing can run."""
        parsed = parse_run_line(
            self.skillrun.parser, line, require_approval=self.skill_magics.require_approval
        )
        opts, skill, script, argv = parsed.opts, parsed.skill, parsed.script, parsed.tail
        manager = self.manager
        try:
            arguments = self._arguments(cell, opts.eval)
        except SkillMagicsError as exc:  # --eval's value cannot become JSON: refused, audited
            manager.audit.refused(skill, script, None, exc)
            raise usage_error(exc) from None
        try:
            plan = manager.plan(
                skill,
                script,
                arguments,
                argv=argv,
                timeout=opts.timeout,
                sandbox=opts.sandbox,
                cwd=opts.cwd,
                warm=opts.warm,
            )
        except (SkillMagicsError, ValueError) as exc:  # ValueError: e.g. --timeout 0
            # The cell fails (Run All and papermill stop; -o keeps nothing stale), one line.
            raise usage_error(exc) from None
        return _Run(plan, arguments, argv, opts.out, opts.trace_content)

    def _arguments(self, cell: str, evaluate: bool) -> Any:
        body = cell.strip()
        if evaluate:
            if not body:
                raise UsageError("--eval needs a Python expression in the cell body")
            try:
                value = self._shell.ev(body)
            except Exception as exc:
                raise UsageError(
                    f"--eval could not evaluate the cell body ({type(exc).__name__}: {exc}): "
                    "fix the expression"
                ) from None
            return to_jsonable(value)  # pandas/NumPy values as plain JSON (core/base/jsonable.py)
        if not body:
            return {}
        try:
            return json.loads(body)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"The cell body is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); nothing ran. Fix it, or use --eval for a Python expression"
            ) from None

    def _result(self, run: _Run, status: RunStatus | str, message: str = "") -> SkillRunResult:
        from skill_magics.notebook.result import SkillRunResult

        return SkillRunResult(
            run.skill,
            run.script,
            status,
            message=message,
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.skill_magics.max_display_chars,
        )

    def _settled(self, run: _Run, outcome: RunOutcome, view: _RunView) -> SkillRunResult:
        """The cell's value once the call site returned: a pending handle, what the gate
        said, or the finished run."""
        if outcome.status is RunStatus.PENDING:
            return self._pending(run, outcome.pending)
        blocked = outcome.why_not
        if blocked is not None:
            return self._store(run.out, self._result(run, *blocked))
        launch = outcome.launches[0]
        if launch.error is not None:  # refused at launch (the file changed, a secret missing)
            raise launch.error
        res = view.res
        assert res is not None and launch.result is not None
        res.set_result(launch.result, status=_stopped_status(res), message=_stop_message(res))
        return self._finished(run, res, view.shown)

    def _interrupted(self, run: _Run, res: SkillRunResult) -> RunInterrupted:
        """Mark ``res`` interrupted, keep it (``-o``), and give the cell's one-line error."""
        if res.status != RunStatus.INTERRUPTED:
            res.set_status(RunStatus.INTERRUPTED, INTERRUPTED)
        self._store(run.out, res)
        where = f"; the partial result is in {run.out}" if run.out else ""
        return RunInterrupted(f"{run.skill}.{run.script}: {INTERRUPTED}{where}")

    def _finished(self, run: _Run, res: SkillRunResult, shown: bool) -> SkillRunResult:
        """The cell value of a finished run: the live view already became it, or plain Out."""
        if shown:  # set_result replaced the live view in place: no second, duplicate Out
            _quiet_out(self.shell, res)
        return self._store(run.out, res)

    def _pending(self, run: _Run, panel: Any) -> SkillRunResult:
        """Non-blocking: return a pending handle; the click runs the script and fills it.

        The click is settled by the gate (stale files refused, decisions audited). Where
        displays update in place the handle is shown with a display id (before the click can
        change it), so the saved notebook ends with the final result, not "Waiting for
        approval"; the returned value then adds no frozen Out of its own.
        """
        from skill_magics.notebook.result import SkillRunResult

        res = SkillRunResult.pending(
            run.skill,
            run.script,
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.skill_magics.max_display_chars,
        )
        pending = self.skill_magics.pending
        pending.append(res)
        updates = _displays_update(self.shell)
        if updates:
            res.show()
        context = contextvars.copy_context()  # outputs of the later run go to this cell

        def decided(decision: Decision, by: str) -> None:
            try:
                pending.remove(res)
            except ValueError:
                pass
            cancel = threading.Event()

            def started() -> None:
                res.set_status(RunStatus.RUNNING)
                res.on_stop = cancel.set

            def work() -> None:
                from skill_magics.core.run.gating.approval import Answer

                # The gate settles the click (stale files refused, decisions audited); the
                # run follows through the same call site.
                try:
                    outcome = self.manager.run_planned(
                        run.plan,
                        Answer(decision, by),
                        on_start=started,
                        on_output=res.append_output,
                        cancel=cancel,
                    )
                except BaseException as exc:  # never leave the handle pending forever
                    res.set_status(RunStatus.REFUSED, f"{type(exc).__name__}: {exc}")
                    return
                blocked = outcome.why_not
                if blocked is not None:
                    res.set_status(*blocked)
                    return
                launch = outcome.launches[0]
                if launch.result is None:
                    res.set_status(RunStatus.REFUSED, launch.message)
                    return
                res.set_result(
                    launch.result, status=_stopped_status(res), message=_stop_message(res)
                )

            threading.Thread(
                target=context.run, args=(work,), name="skill-magics-run", daemon=True
            ).start()

        panel.on_decision(decided)
        if updates:
            _quiet_out(self.shell, res)
        return self._store(run.out, res)


# -- helpers ---------------------------------------------------------------------------------


STOP_WAIT_S = 5.0  # how long an interrupted await waits for the killed script's result


@dataclass(frozen=True)
class _Stopped:
    """The await path's run ended by Kernel > Interrupt; ``ended``: the killed script's
    result, when it came back in time."""

    ended: Any


async def _until_stopped(
    running: Awaitable[RunOutcome[Any]], cancel: threading.Event
) -> RunOutcome[Any] | _Stopped:
    """Await the call site; on Kernel > Interrupt stop as the Stop button does (a wait for
    the click ends; a running group is killed and the output so far comes back)."""
    task = asyncio.ensure_future(running)
    try:
        return await asyncio.shield(task)
    except (asyncio.CancelledError, KeyboardInterrupt, RunInterrupted):
        cancel.set()
        if not task.done():
            await asyncio.wait({task}, timeout=STOP_WAIT_S)
        if not task.done():
            task.cancel()  # takes effect at the task's next step: it is not done yet
        ended = None
        if task.done() and not task.cancelled() and task.exception() is None:
            ended = task.result().result
        return _Stopped(ended)


def _stopped_status(res: SkillRunResult) -> RunStatus | None:
    return RunStatus.INTERRUPTED if res.stop_requested else None


def _stop_message(res: SkillRunResult) -> str:
    return "Stopped with the Stop button" if res.stop_requested else ""


class _RunView:
    """The SkillRunResult of a run the gate allowed, made when it starts (``start``, the
    call site's ``on_start``) with its live display; ``output`` streams into it."""

    def __init__(
        self,
        magics: SkillRunMagics,
        run: _Run,
        *,
        stoppable: bool,
        cancel: threading.Event | None = None,
        on_loop: bool = False,
    ) -> None:
        self.magics = magics
        self.run = run
        self.stoppable = stoppable
        self.cancel = cancel if cancel is not None else threading.Event()
        self.on_loop = on_loop  # start() runs on the cell's event loop (the await path)
        self.res: SkillRunResult | None = None
        self.live: _LiveDisplay | None = None

    def start(self) -> None:
        res = self.magics._result(self.run, RunStatus.RUNNING)
        if self.stoppable:
            res.on_stop = self.cancel.set
        enabled = _displays_update(self.magics.shell)
        self.live = _LiveDisplay(res, enabled=enabled, start_thread=not self.on_loop)
        if self.on_loop and enabled:
            # The cell awaits: its loop shows the live view once the run takes a while.
            asyncio.get_running_loop().call_later(LIVE_DELAY_S, self.live.show)
        self.res = res

    def output(self, stream: str, text: str) -> None:
        if self.res is not None:
            self.res.append_output(stream, text)

    def finish(self) -> None:
        if self.live is not None:
            self.live.finish()

    @property
    def shown(self) -> bool:
        return self.live is not None and self.live.shown


class _LiveDisplay:
    """Shows a running result after LIVE_DELAY_S, with a display id (``res.show()``).

    That display *is* the result's output: ``set_result`` later replaces it in place with the
    final view, so no empty or duplicate output is left behind. ``enabled=False`` (terminal
    IPython, where a display cannot be updated) shows nothing.
    """

    def __init__(
        self, res: SkillRunResult, *, enabled: bool = True, start_thread: bool = True
    ) -> None:
        self.res = res
        self.shown = False
        self._done = threading.Event()
        self._lock = threading.Lock()
        if not enabled:
            self._done.set()
        elif start_thread:
            context = contextvars.copy_context()  # display goes to the running cell
            threading.Thread(
                target=context.run, args=(self._later,), name="skill-magics-live", daemon=True
            ).start()

    def _later(self) -> None:
        if not self._done.wait(LIVE_DELAY_S):
            self.show()

    def show(self) -> None:
        with self._lock:  # never after finish(): then the cell's value shows the result
            if self._done.is_set() or self.shown:
                return
            self.res.show()
            self.shown = True

    def finish(self) -> None:
        """No live view from now on; ``shown`` tells whether one was displayed."""
        with self._lock:
            self._done.set()


def _displays_update(shell: Any) -> bool:
    """Whether an output can be replaced later via its display id (Jupyter, VS Code, capture).

    IPython's base DisplayPublisher (terminal IPython, a bare shell) prints every update as new
    text, so there a live view or a later update would only add stale copies.
    """
    from IPython.core.displaypub import DisplayPublisher

    publisher = getattr(shell, "display_pub", None)
    return publisher is not None and type(publisher) is not DisplayPublisher


def _quiet_out(shell: Any, res: SkillRunResult) -> None:
    """Let ``res`` be this cell's value without IPython also showing it as a frozen Out.

    ``res`` is already displayed with a display id. The displayhook asks the display
    formatter first (``ipython_display_formatter``); a one-object printer that shows nothing
    makes the format empty, so no execute_result is sent, while ``_``, ``Out[n]`` and
    ``run_cell(...).result`` are still set. The printer is removed when the cell ends.
    """
    formatter = getattr(
        getattr(shell, "display_formatter", None), "ipython_display_formatter", None
    )
    if formatter is None:
        return
    key = id(res)
    status_then = res.status

    def already_displayed(obj: Any) -> None:
        """Shown by the display with an id; nothing more to print."""

    def cleanup(*_args: Any) -> None:
        shell.events.unregister("post_execute", cleanup)
        if formatter.singleton_printers.get(key) is already_displayed:
            del formatter.singleton_printers[key]
        if res.done and res.status != status_then:
            # Finished while the printer was active (a click right as the cell ended): an
            # update sent then was swallowed, so send the final state once more.
            res.refresh()

    formatter.singleton_printers[key] = already_displayed
    shell.events.register("post_execute", cleanup)


__all__ = ["SkillRunMagics", "LIVE_DELAY_S"]
