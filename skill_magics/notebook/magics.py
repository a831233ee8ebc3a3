"""``%skills`` and ``%%skillrun``: a thin layer over core's SkillManager.

The magics parse the line, ask core to resolve/check/run, ask a person for approval the way
this kernel can deliver a click (waiting.py), and hand back a SkillRunResult.

Configuration (``%config SkillMagics.timeout = 60`` or ``c.SkillMagics.timeout`` in
ipython_config.py): see the traits below.

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

import argparse
import asyncio
import contextvars
import json
import logging
import shlex
import threading
from dataclasses import dataclass
from keyword import iskeyword
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import (
    Bool,
    CaselessStrEnum,
    Float,
    Int,
    List,
    TraitError,
    Unicode,
    Union,
    observe,
    validate,
)

from skill_magics.core.errors import ApprovalDeclined, RunInterrupted, SkillMagicsError
from skill_magics.core.jsonable import to_jsonable
from skill_magics.core.run.approval import ApprovalRequest, Decision, coerce_decision
from skill_magics.notebook.approval import waiting
from skill_magics.notebook.approval.preapproval import preapproved_by, unavailable_message
from skill_magics.notebook.approval.waiting import Strategy

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager
    from skill_magics.notebook.approval.panel import ApprovalPanel
    from skill_magics.notebook.result import SkillRunResult

logger = logging.getLogger(__name__)

LIVE_DELAY_S = 1.0  # show the live view (elapsed time, streaming output) after this long
INTERRUPTED = "interrupted: the script's process group was killed"


@dataclass
class _Run:
    """One %%skillrun after parsing and checks, before approval."""

    skill: str
    script: str  # relative path, posix
    arguments: Any
    argv: list[str] | None
    prepared: Any  # core PreparedRun
    request: ApprovalRequest
    out: str | None


@magics_class
class SkillMagics(Magics):
    """Agent Skills in IPython: ``%skills`` to browse, ``%%skillrun`` to run a script."""

    skill_dirs = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="Skill directories, first wins a name clash. None: $SKILL_MAGICS_PATH, then "
        "./skills, ./.agents/skills, ./.claude/skills and the same under ~.",
    ).tag(config=True)
    timeout = Float(30.0, help="Default script timeout in seconds (1-600).").tag(config=True)
    max_output_size = Int(
        10 * 2**20, help="Bytes of stdout and of stderr kept per run (the rest is counted)."
    ).tag(config=True)
    allowed_interpreters = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="Interpreters scripts may use; None: python3, bash, sh, node.",
    ).tag(config=True)
    require_approval = Bool(
        True,
        help="Ask before every run (Yes once / Yes in session / No). False: nothing asks "
        "(audited), and %%skillrun --no-approval is accepted.",
    ).tag(config=True)
    auto_approve = Union(
        [Unicode(), List(Unicode())],
        default_value=[],
        help='Skills pre-approved without asking: a list of names or "*" (audited). '
        "Env var SKILL_MAGICS_AUTO_APPROVE does the same (comma-separated or *).",
    ).tag(config=True)
    inherit_env = Bool(
        False, help="Give scripts the kernel's whole environment (default: a minimal one)."
    ).tag(config=True)
    env_passthrough = List(
        Unicode(), help="Environment variables passed to scripts in addition to the minimal set."
    ).tag(config=True)
    approval_timeout = Float(
        300.0,
        help="Seconds a cell waits for an approval click; after that it returns a pending "
        "result and a later click still runs the script.",
    ).tag(config=True)
    max_display_chars = Int(
        100_000, help="Characters of stdout/stderr shown in the view (the object keeps all)."
    ).tag(config=True)
    approval_ui = CaselessStrEnum(
        ["auto", "widgets", "nonblocking", "terminal"],
        default_value="auto",
        help="How approval is asked: auto (by kernel, see docs), widgets (buttons, cell waits), "
        "nonblocking (buttons, cell returns a pending result), terminal (input()).",
    ).tag(config=True)
    audit_log = Unicode(
        None, allow_none=True, help="Also append audit records to this JSONL file."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        # Set before traitlets loads the config: config observers run inside super().__init__.
        self._manager: SkillManager | None = None
        self._lock = threading.RLock()
        self.panels: list[ApprovalPanel] = []  # every approval panel shown, oldest first
        self.pending: list[SkillRunResult] = []  # non-blocking runs not decided yet
        super().__init__(shell=shell, **kwargs)

    # -- the manager ------------------------------------------------------------------------
    @property
    def manager(self) -> SkillManager:
        """The SkillManager behind the magics (created on first use from the config)."""
        with self._lock:
            if self._manager is None:
                from skill_magics.core.manager import SkillManager

                self._manager = SkillManager(
                    self.skill_dirs,
                    timeout=self.timeout,
                    max_output_size=self.max_output_size,
                    allowed_interpreters=self.allowed_interpreters,
                    inherit_env=self.inherit_env,
                    env_passthrough=tuple(self.env_passthrough),
                    audit_log=self.audit_log,
                )
            return self._manager

    # Bad values are refused when set (one line from %config), not at the next run.
    @validate("timeout")
    def _valid_timeout(self, proposal: Any) -> float:
        from skill_magics.core.run.executor import MAX_TIMEOUT, MIN_TIMEOUT

        value = proposal["value"]
        if not MIN_TIMEOUT <= value <= MAX_TIMEOUT:
            raise TraitError(
                f"SkillMagics.timeout = {value:g} is out of range: use {MIN_TIMEOUT} to "
                f"{MAX_TIMEOUT} seconds"
            )
        return value

    @validate("max_output_size", "max_display_chars", "approval_timeout")
    def _valid_non_negative(self, proposal: Any) -> Any:
        value, name = proposal["value"], proposal["trait"].name
        if value < 0:
            raise TraitError(f"SkillMagics.{name} = {value} is negative: use 0 or more")
        return value

    @observe("skill_dirs")
    def _dirs_changed(self, change: Any) -> None:
        manager = self._manager
        if manager is not None:
            manager.skill_dirs = change["new"]  # None: the defaults; rescans on next use

    @observe("timeout", "max_output_size", "allowed_interpreters", "inherit_env", "env_passthrough")
    def _executor_changed(self, change: Any) -> None:
        # Keep approvals and audit history: update the manager's settings in place; assigning
        # any of them makes the manager rebuild its executor on next use (core/discovery.py).
        manager = self._manager
        if manager is None:
            return
        value = change["new"]
        if change["name"] == "env_passthrough":
            value = tuple(value)
        if change["name"] == "allowed_interpreters" and value is not None:
            value = tuple(value)
        setattr(manager, change["name"], value)

    # -- %skills ----------------------------------------------------------------------------
    @magic_arguments()
    @argument(
        "subcommand",
        nargs="?",
        default="list",
        help="list (default), show NAME, add DIR|--examples, remove DIR, reload, dirs, "
        "approvals, revoke NAME|--all, history, catalog",
    )
    @argument("args", nargs=argparse.REMAINDER, help="arguments of the subcommand")
    @line_magic
    def skills(self, line: str = "") -> Any:
        """Browse and manage Agent Skills.

        %skills                      table of skills (HTML in Jupyter, text in a terminal)
        %skills show NAME            metadata, SKILL.md, scripts and their approval state
        %skills add DIR              search another directory (--examples: bundled examples)
        %skills remove DIR | reload | dirs
        %skills approvals            session approvals; %skills revoke NAME forgets one
        %skills history              this session's audit records
        %skills catalog              the <available_skills> block for a system prompt
        """
        from skill_magics.notebook import cmd

        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"Cannot parse {line!r}: {exc}; check the quotes") from None
        name, args = (words[0], words[1:]) if words else ("list", [])
        run = cmd.lookup(name)
        try:
            return run(self, args)
        except SkillMagicsError as exc:
            raise _usage(exc) from None

    # -- %%skillrun -------------------------------------------------------------------------
    @magic_arguments(name="%skillrun")  # a cell magic: usage reads %%skillrun
    @argument(
        "target",
        help="SKILL.SCRIPT: skill name, a dot, then the script's stem, file name or relative "
        "path (pdf.extract, pdf.extract.py, pdf.scripts/utils/parser.py)",
    )
    @argument("--timeout", type=float, default=None, help="seconds before the script is killed")
    @argument("-o", "--out", default=None, help="also store the result in this variable")
    @argument(
        "--eval",
        action="store_true",
        help="the body is a Python expression evaluated in the notebook, e.g. "
        "df.head().to_dict(); pandas/NumPy values become JSON (int keys -> strings, "
        "NaN -> null, timestamps -> ISO text)",
    )
    @argument(
        "--no-approval",
        action="store_true",
        help="run without asking (only when SkillMagics.require_approval is False)",
    )
    @cell_magic
    def skillrun(self, line: str, cell: str = "") -> Any:
        """Run a skill script: %%skillrun SKILL.SCRIPT [options] [-- ARGV...]

        The cell body is JSON sent on stdin (empty body: {}); with --eval it is a Python
        expression. Words after -- are passed as command-line arguments. Asks Yes once /
        Yes in session / No before running. Returns a SkillRunResult (.stdout, .stderr,
        .exit_code, .json(), .status).
        """
        run = self._plan(line, cell)
        strategy = waiting.choose(self.shell, in_coroutine=False, mode=self.approval_ui)
        decided = self._decide_now(run, strategy)
        panel = None
        if decided is None:
            panel = self.show_panel(run.request)
            try:
                if strategy is Strategy.THREAD:
                    waiting.wait_for_click(self.shell, panel.event, self.approval_timeout)
                elif strategy is Strategy.PUMP:
                    waiting.wait_pumping(self.shell, panel.event, self.approval_timeout)
            except KeyboardInterrupt:  # a kernel interrupt during the wait
                raise self._withdraw(run, panel) from None
            except BaseException:
                self._withdraw(run, panel)
                raise
        final = self._settle(run, decided, panel)
        if final is not None:
            return final
        stoppable = strategy is Strategy.THREAD  # clicks arrive on another thread there
        return self._execute(run, stoppable=stoppable)

    async def skillrun_async(self, line: str, cell: str = "") -> Any:
        """The await path (ipykernel >= 7.4): same as %%skillrun, waiting with ``await``."""
        run = self._plan(line, cell)
        strategy = waiting.choose(self.shell, in_coroutine=True, mode=self.approval_ui)
        decided = self._decide_now(run, strategy)
        panel = None
        if decided is None:
            panel = self.show_panel(run.request)
            try:
                if strategy is Strategy.AWAIT:
                    await waiting.wait_future(panel.future(), self.approval_timeout)
                elif strategy is Strategy.THREAD:
                    waiting.wait_for_click(self.shell, panel.event, self.approval_timeout)
            except (asyncio.CancelledError, KeyboardInterrupt):  # a kernel interrupt
                raise self._withdraw(run, panel) from None
            except BaseException:
                self._withdraw(run, panel)
                raise
        final = self._settle(run, decided, panel)
        if final is not None:
            return final
        return await self._execute_async(run)

    # -- steps --------------------------------------------------------------------------------
    def _plan(self, line: str, cell: str) -> _Run:
        """Parse and check everything; a one-line UsageError when nothing can run."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"Cannot parse the %%skillrun line: {exc}; check the quotes") from None
        argv: list[str] | None = None
        if "--" in words:
            cut = words.index("--")
            words, argv = words[:cut], words[cut + 1 :]
        opts = self.skillrun.parser.parse_args(words)  # already split: quotes stay removed
        skill, dot, script = opts.target.partition(".")
        if not dot or not skill or not script:
            raise UsageError(
                f"Name a skill and a script as SKILL.SCRIPT (e.g. pdf.extract), not "
                f"{opts.target!r}: %skills show SKILL lists its scripts"
            )
        if opts.out is not None and not (opts.out.isidentifier() and not iskeyword(opts.out)):
            raise UsageError(f"-o needs a Python variable name, not {opts.out!r}: e.g. -o result")
        if opts.no_approval and self.require_approval:
            raise UsageError(
                "--no-approval is refused while SkillMagics.require_approval is True: "
                "set %config SkillMagics.require_approval = False to allow it"
            )
        manager = self.manager
        try:
            arguments = self._arguments(cell, opts.eval)
        except SkillMagicsError as exc:  # --eval's value cannot become JSON: refused, audited
            manager.audit.refused(skill, script, None, exc)
            raise _usage(exc) from None
        try:
            prepared = manager.prepare_skill_script(
                skill, script, arguments, argv=argv, timeout=opts.timeout
            )
            meta = manager.get_skill(skill).find_script(script)
            request = manager.approval_request(
                skill, [meta], arguments, argv or (), prepared=[prepared]
            )
        except (SkillMagicsError, ValueError) as exc:  # ValueError: e.g. --timeout 0
            # The cell fails (Run All and papermill stop; -o keeps nothing stale), one line.
            raise _usage(exc) from None
        return _Run(skill, meta.path.as_posix(), arguments, argv, prepared, request, opts.out)

    def _arguments(self, cell: str, evaluate: bool) -> Any:
        body = cell.strip()
        if evaluate:
            if not body:
                raise UsageError("--eval needs a Python expression in the cell body")
            try:
                value = self.shell.ev(body)
            except Exception as exc:
                raise UsageError(
                    f"--eval could not evaluate the cell body ({type(exc).__name__}: {exc}): "
                    "fix the expression"
                ) from None
            return to_jsonable(value)  # pandas/NumPy values as plain JSON (core/jsonable.py)
        if not body:
            return {}
        try:
            return json.loads(body)
        except json.JSONDecodeError as exc:
            raise UsageError(
                f"The cell body is not valid JSON (line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}); nothing ran. Fix it, or use --eval for a Python expression"
            ) from None

    def _decide_now(self, run: _Run, strategy: Strategy) -> tuple[Decision, str] | _Result | None:
        """A decision that needs no buttons, a final result, or None (show the panel)."""
        manager = self.manager
        if not self.require_approval:
            return Decision.YES_ONCE, "config SkillMagics.require_approval=False"
        if manager.approvals.is_approved(run.skill, run.request.content_hash):
            return Decision.YES_IN_SESSION, "session approval"
        by = preapproved_by(run.skill, self.auto_approve)
        if by is not None:
            return Decision.YES_ONCE, f"auto_approve by {by}"
        if strategy in (Strategy.HEADLESS, Strategy.UNAVAILABLE):
            return _Result(self._unavailable(run, strategy))
        if strategy is Strategy.TERMINAL:
            from skill_magics.notebook.approval.panel import summary_text

            try:
                answer = waiting.ask_terminal(
                    summary_text(run.request), full=summary_text(run.request, full=True)
                )
            except KeyboardInterrupt:  # Ctrl-C at the prompt: nothing runs, audited
                reason = "interrupted at the approval prompt; nothing ran"
                self.manager.audit.event(
                    run.skill, run.script, run.arguments, "interrupted", reason=reason
                )
                raise RunInterrupted(f"{run.skill}.{run.script}: {reason}") from None
            except EOFError:  # Ctrl-D at a terminal prompt: the person ended the question
                return Decision.NO, "terminal input() (end of input)"
            except OSError:
                return _Result(self._unavailable(run, Strategy.UNAVAILABLE))
            return coerce_decision(answer), "terminal input()"
        return None

    def _settle(
        self,
        run: _Run,
        decided: tuple[Decision, str] | _Result | None,
        panel: ApprovalPanel | None,
    ) -> SkillRunResult | None:
        """After any wait: the cell's value when the script must not run now, else None.

        ``panel`` is the one shown when nothing was decided up front: undecided it gives a
        pending handle (a later click runs the script).
        """
        if panel is not None:
            if panel.decision is None:
                return self._pending(run, panel)
            decided = (panel.decision, panel.decided_by or "")
        if isinstance(decided, _Result):
            return self._store(run, decided.value)
        assert decided is not None  # _decide_now gave a decision, or a panel was shown
        blocked = self._approve(run, *decided)
        return None if blocked is None else self._store(run, blocked)

    def _unavailable(self, run: _Run, strategy: Strategy) -> SkillRunResult:
        from skill_magics.notebook.result import SkillRunResult

        if strategy is Strategy.HEADLESS:
            why = "nobody can click in this headless run (allow_stdin is false)"
        else:
            why = "there is no frontend for buttons and stdin is not a terminal"
        message = unavailable_message(run.skill, why)
        self.manager.audit.event(
            run.skill, run.script, run.arguments, "approval_unavailable", reason=message
        )
        return SkillRunResult(
            run.skill,
            run.script,
            "approval_unavailable",
            message=message,
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.max_display_chars,
        )

    def _withdraw(self, run: _Run, panel: ApprovalPanel) -> RunInterrupted:
        """The cell stopped while waiting for a click: disable the buttons (a later click
        must not look like it ran something) and audit it. A click that won the race stands.
        Returns the one-line error the cell ends with."""
        reason = "the cell was interrupted while waiting for approval; nothing ran"
        if panel.withdraw(reason):
            self.manager.audit.event(
                run.skill, run.script, run.arguments, "interrupted", reason=reason
            )
        return RunInterrupted(f"{run.skill}.{run.script}: {reason}")

    def show_panel(self, request: ApprovalRequest) -> ApprovalPanel:
        """Display Yes once / Yes in session / No for ``request`` (kept in ``self.panels``)."""
        from IPython.display import display

        from skill_magics.notebook.approval.panel import ApprovalPanel

        panel = ApprovalPanel(request)
        self.panels.append(panel)
        del self.panels[:-50]  # keep the recent ones only (tests and history look at them)
        handle = display(panel, display_id=True)
        if handle is not None:
            # Re-render once decided, so the saved notebook's fallback says what was decided.
            panel.on_decision(lambda _decision, _by: _update_quietly(handle, panel))
        return panel

    def _approve(self, run: _Run, decision: Decision, by: str) -> SkillRunResult | None:
        """Apply a decision (audited); a declined/stale result, or None when it may run."""
        from skill_magics.notebook.result import SkillRunResult

        manager = self.manager
        kwargs = dict(
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.max_display_chars,
        )
        if decision is not Decision.NO and not manager.request_is_current(run.request):
            # The scripts changed between asking and the click: the approval is for old code.
            message = (
                f"{run.skill}'s scripts changed after the approval was asked; nothing ran. "
                "Run the cell again to review the new code"
            )
            manager.audit.refused(run.skill, run.script, run.arguments, _Stale(message))
            return SkillRunResult(run.skill, run.script, "refused", message=message, **kwargs)
        try:
            manager.approvals.record(run.request, decision)
        except ApprovalDeclined as exc:
            message = f"Declined ({by}): nothing ran. Run the cell again to be asked again"
            manager.audit.event(
                run.skill, run.script, run.arguments, "declined", reason=f"{by}: {exc}"
            )
            return SkillRunResult(run.skill, run.script, "declined", message=message, **kwargs)
        if by != "session approval":
            manager.audit_decision(run.request, "approved", f"{decision.value} by {by}")
        return None

    def _new_running(self, run: _Run) -> SkillRunResult:
        from skill_magics.notebook.result import SkillRunResult

        return SkillRunResult(
            run.skill,
            run.script,
            "running",
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.max_display_chars,
        )

    def _execute(self, run: _Run, *, stoppable: bool) -> SkillRunResult:
        """Run synchronously (KeyboardInterrupt kills the group in the executor, re-raised)."""
        res = self._new_running(run)
        cancel = threading.Event()
        if stoppable:
            res.on_stop = cancel.set
        live = _LiveDisplay(res, enabled=_displays_update(self.shell))
        try:
            outcome = self.manager.executor.run(
                run.prepared, on_output=res.append_output, cancel=cancel
            )
        except KeyboardInterrupt:
            # The executor killed the group; only the streamed output (res.live_text) is left.
            raise self._interrupted(run, res) from None
        finally:
            live.finish()
        res.set_result(outcome, status=_stopped_status(res), message=_stop_message(res))
        return self._finished(run, res, live.shown)

    async def _execute_async(self, run: _Run) -> SkillRunResult:
        """Await the run in slices: Stop and Kernel > Interrupt both kill the process group."""
        res = self._new_running(run)
        cancel = threading.Event()
        res.on_stop = cancel.set
        # Stop sets ``cancel`` (the result comes back); cancelling the task (Kernel >
        # Interrupt) kills the process group and re-raises.
        task = asyncio.ensure_future(
            self.manager.executor.run_async(
                run.prepared, on_output=res.append_output, cancel=cancel
            )
        )
        live = _LiveDisplay(res, enabled=_displays_update(self.shell), start_thread=False)
        try:
            done, _ = await asyncio.wait({task}, timeout=LIVE_DELAY_S)
            if not done:
                live.show()
            outcome = await asyncio.shield(task)
        except (asyncio.CancelledError, KeyboardInterrupt):
            # Kernel > Interrupt: stop the run as the Stop button does (the group is killed and
            # the output so far comes back as a result), then end the cell with one line.
            cancel.set()
            if not task.done():
                await asyncio.wait({task}, timeout=5)
            if not task.done():
                task.cancel()
            elif not task.cancelled() and task.exception() is None:
                res.set_result(task.result(), status="interrupted", message=INTERRUPTED)
            raise self._interrupted(run, res) from None
        finally:
            live.finish()
        res.set_result(outcome, status=_stopped_status(res), message=_stop_message(res))
        return self._finished(run, res, live.shown)

    def _interrupted(self, run: _Run, res: SkillRunResult) -> RunInterrupted:
        """Mark ``res`` interrupted, keep it (``-o``), and give the cell's one-line error."""
        if res.status != "interrupted":
            res.set_status("interrupted", INTERRUPTED)
        self._store(run, res)
        where = f"; the partial result is in {run.out}" if run.out else ""
        return RunInterrupted(f"{run.skill}.{run.script}: {INTERRUPTED}{where}")

    def _finished(self, run: _Run, res: SkillRunResult, shown: bool) -> SkillRunResult:
        """The cell value of a finished run: the live view already became it, or plain Out."""
        if shown:  # set_result replaced the live view in place: no second, duplicate Out
            _quiet_out(self.shell, res)
        return self._store(run, res)

    def _pending(self, run: _Run, panel: ApprovalPanel) -> SkillRunResult:
        """Non-blocking: return a pending handle; the click runs the script and fills it.

        Where displays update in place the handle is shown with a display id (before the
        click can change it), so the saved notebook ends with the final result, not
        "Waiting for approval"; the returned value then adds no frozen Out of its own.
        """
        from skill_magics.notebook.result import SkillRunResult

        res = SkillRunResult.pending(
            run.skill,
            run.script,
            arguments=run.arguments,
            argv=run.argv or (),
            max_display_chars=self.max_display_chars,
        )
        self.pending.append(res)
        updates = _displays_update(self.shell)
        if updates:
            res.show()
        context = contextvars.copy_context()  # outputs of the later run go to this cell

        def decided(decision: Decision, by: str) -> None:
            try:
                self.pending.remove(res)
            except ValueError:
                pass
            blocked = self._approve(run, decision, by)
            if blocked is not None:
                res.set_status(blocked.status, blocked.message)
                return
            cancel = threading.Event()
            res.set_status("running")
            res.on_stop = cancel.set

            def work() -> None:
                try:
                    outcome = self.manager.executor.run(
                        run.prepared, on_output=res.append_output, cancel=cancel
                    )
                except BaseException as exc:  # never leave the handle pending forever
                    res.set_status("refused", f"{type(exc).__name__}: {exc}")
                    return
                res.set_result(outcome, status=_stopped_status(res), message=_stop_message(res))

            threading.Thread(
                target=context.run, args=(work,), name="skill-magics-run", daemon=True
            ).start()

        panel.on_decision(decided)
        if updates:
            _quiet_out(self.shell, res)
        return self._store(run, res)

    def _store(self, run: _Run, res: Any) -> Any:
        if run.out and res is not None:
            self.shell.user_ns[run.out] = res
        return res


# -- helpers ---------------------------------------------------------------------------------


@dataclass
class _Result:
    value: Any


class _Stale(SkillMagicsError):
    """Scripts changed between the approval request and the decision."""


def _update_quietly(handle: Any, obj: Any) -> None:
    try:
        handle.update(obj)
    except Exception:  # noqa: BLE001 - a display refresh must never block a decision
        logger.debug("Could not refresh the approval panel display", exc_info=True)


def _usage(exc: BaseException) -> UsageError:
    """The one-line error IPython shows without a traceback ("UsageError: ...")."""
    text = f"{type(exc).__name__}: {exc}" if isinstance(exc, SkillMagicsError) else str(exc)
    return UsageError(text.replace("\n", " "))


def _stopped_status(res: SkillRunResult) -> str | None:
    return "interrupted" if res.stop_requested else None


def _stop_message(res: SkillRunResult) -> str:
    return "Stopped with the Stop button" if res.stop_requested else ""


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


__all__ = ["SkillMagics", "LIVE_DELAY_S"]
