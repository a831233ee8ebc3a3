"""The one notebook approver: asks a person the way this kernel can deliver the answer.

Every magic (``%%skillrun``, ``%skill_context``, ``%%skillpy``, ``%skills env``) hands its plan
to the one call site (``manager.run_planned``) with a :class:`NotebookApprover`; the gate
(``core/run/gating/gate.py``) decides, audits and remembers "Yes in session". This module only
*asks*:

- configuration first: ``require_approval = False`` or ``auto_approve`` answer alone;
- then by the wait strategy (``waiting.choose``, the one place it is chosen): headless and
  no-frontend runs are unavailable, a terminal gets an ``input()`` prompt (so does a notebook
  with ``approval_ui = "stdin"``: its input box), a notebook gets the panel (panel.py) and
  waits for a click by awaiting, on a thread, or by pumping;
- a cell that cannot wait (or stopped waiting) leaves the question open when the caller takes
  a pending answer (``pending_ok``: %%skillrun returns a pending result a later click fills),
  else the approval is unavailable.

Example (not run as a doctest: it needs a notebook kernel)::

    approver = NotebookApprover(skill_magics, pending_ok=True)
    outcome = manager.run_planned(plan, approver)
"""

from __future__ import annotations

import threading
import warnings
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Protocol

from IPython.display import display

from skill_magics.core.base.deprecation import deprecation_message, renamed_module_name
from skill_magics.core.base.errors import (
    ApprovalPending,
    ApprovalUnavailable,
    RunInterrupted,
    SkillMagicsError,
)
from skill_magics.core.run.gating.approval import Answer, ApprovalRequest, Decision, coerce_decision
from skill_magics.notebook.approval import reconnect, relay, waiting
from skill_magics.notebook.approval.preapproval import preapproved_by, unavailable_message
from skill_magics.notebook.approval.waiting import Strategy
from skill_magics.notebook.compat import widget_ids

WAIT_INTERRUPTED = "the cell was interrupted while waiting for approval; nothing ran"
PROMPT_INTERRUPTED = "interrupted at the approval prompt; nothing ran"
MAX_PANELS = 50  # panels kept for inspection (tests, %skills history); older ones dropped


class ApprovalHost(Protocol):
    """What the approver reads from the magics that ask (SkillMagics has it all): their
    configuration (``require_approval``, ``auto_approve``, ``approval_ui``, ...), the shell
    and the panels shown; not a RunSettings (that is ``manager.settings``)."""

    shell: Any
    require_approval: bool
    auto_approve: str | Sequence[str]
    approval_ui: str
    approval_timeout: float
    panels: list[Any]  # every panel shown, oldest first


class NotebookApprover:
    """An approver (``request -> Answer``) for notebook and terminal IPython.

    ``host``: the magics that ask (a SkillMagics, :class:`ApprovalHost`). ``in_worker``: the
    gate runs in a worker thread while the cell awaits (the await path), so a click arrives
    on the kernel's loop. ``cancel`` set (the awaiting cell was
    interrupted) stops the wait. ``pending_ok``: when the cell cannot wait, or stopped
    waiting, raise :class:`ApprovalPending` with the live panel instead of giving up.
    """

    def __init__(
        self,
        host: ApprovalHost,
        *,
        in_worker: bool = False,
        cancel: threading.Event | None = None,
        pending_ok: bool = False,
        asker: str = "",
    ) -> None:
        self.host = host  # the magics asking (SkillMagics): configuration, shell, panels
        self.asker = asker  # who wants the run, when not the person (a model: %%skillagent)
        self.in_worker = in_worker
        self.cancel = cancel
        self.pending_ok = pending_ok
        self.relay_failed = False  # RELAY: the kernel did not take the relay (approval/relay.py)
        self.strategy = waiting.choose(host.shell, in_coroutine=in_worker, mode=host.approval_ui)
        # the cell's request, read on the cell's thread (the gate may ask from a worker)
        self.cell_request = reconnect.waiting_parent(waiting.get_kernel(host.shell))

    @property
    def settings(self) -> ApprovalHost:
        """Deprecated: the old name of ``host`` (it never was a RunSettings)."""
        message = deprecation_message("NotebookApprover.settings", "NotebookApprover.host")
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.host

    # -- configuration -----------------------------------------------------------------------

    def decides_alone(self, request: ApprovalRequest) -> bool:
        """True when configuration answers ``request`` (nobody would be asked)."""
        return self._preapproved(request) is not None

    def _preapproved(self, request: ApprovalRequest) -> str | None:
        """Who pre-approved every skill of ``request`` (for the audit), or None."""
        if not self.host.require_approval:
            return "config SkillMagics.require_approval=False"
        found: list[str] = []
        for part in request.requests:
            by = preapproved_by(part.skill_name, self.host.auto_approve)
            if by is None:
                return None
            found.append(by)
        return "auto_approve by " + " and ".join(dict.fromkeys(found))

    # -- asking ------------------------------------------------------------------------------

    def __call__(self, request: ApprovalRequest) -> Answer:
        by = self._preapproved(request)
        if by is not None:
            return Answer(Decision.YES_ONCE, by)
        names, strategy = request.skill_names, self.strategy
        if strategy is Strategy.HEADLESS:
            why = "nobody can click in this headless run (allow_stdin is false)"
            raise ApprovalUnavailable(unavailable_message(names, why))
        if strategy is Strategy.UNAVAILABLE:
            why = "there is no frontend for buttons and stdin is not a terminal"
            raise ApprovalUnavailable(unavailable_message(names, why))
        if strategy in (Strategy.TERMINAL, Strategy.STDIN):
            by = "terminal input()" if strategy is Strategy.TERMINAL else "notebook stdin prompt"
            answer = self._ask_terminal(request, by)
            if answer.decision is not Decision.NO:
                self._ask_secrets_terminal(request)
            return answer
        if strategy is Strategy.NONBLOCKING and not self.pending_ok:
            if self.host.approval_ui == "nonblocking":
                why = "SkillMagics.approval_ui is 'nonblocking', so this cell cannot wait"
            else:
                why = (
                    "this kernel cannot deliver a click to a waiting cell (%config "
                    "SkillMagics.approval_ui = 'stdin' asks in an input box instead)"
                )
            raise ApprovalUnavailable(unavailable_message(names, why))
        if strategy is Strategy.NONBLOCKING:
            raise ApprovalPending(
                "Waiting for a click on the approval panel", self.show_panel(request)
            )
        # RELAY: in place before the panel is built, so its widget messages come to this
        # thread from the moment each widget's comm opens (a click sent at once included).
        kernel = waiting.get_kernel(self.host.shell)
        # A page reloaded meanwhile gets its kernel_info answered (approval/reconnect.py).
        with self._relayed() as inbox, reconnect.answering(kernel, self.cell_request, inbox):
            panel = self.make_panel(request)
            if inbox is not None:
                relay.divert(waiting.get_kernel(self.host.shell), widget_ids(panel.widget))
            self.display_panel(panel)
            # While it waits, a page reloaded meanwhile shows it in its cell again (reconnect.py)
            reconnect.shown(panel, self.cell_request, _HANDLES.get(panel), self.host.shell)
            try:
                self._wait(panel, inbox)
            except KeyboardInterrupt:  # Kernel > Interrupt (or Ctrl-C) during the wait
                raise self._interrupted(panel) from None
            except BaseException:
                _withdraw(panel, "the wait for a click failed; nothing ran")  # no live buttons
                raise
            finally:
                reconnect.forget(panel)  # the cell stops waiting: its request may end now
        if self.cancel is not None and self.cancel.is_set():
            # Interrupted, even if a click arrived at the same moment: the cell is ending and
            # must not leave a "Yes in session" behind.
            raise self._interrupted(panel)
        if panel.decision is None:
            return self._no_click(request, panel)
        return Answer(panel.decision, panel.decided_by or "button")

    def show_panel(self, request: ApprovalRequest) -> Any:
        """Display Yes once / Yes in session / No for ``request`` (kept in ``panels``)."""
        panel = self.make_panel(request)
        self.display_panel(panel)
        return panel

    def make_panel(self, request: ApprovalRequest) -> Any:
        """The panel for ``request``, its widgets built (kept in ``panels``), not shown yet."""
        from skill_magics.notebook.approval.panel import ApprovalPanel

        panel = ApprovalPanel(request, on_inputs=self.apply_inputs, asker=self.asker)
        panel.widget  # noqa: B018 - build it now: the relay needs its widgets' comm ids
        panels = self.host.panels
        panels.append(panel)
        del panels[:-MAX_PANELS]
        return panel

    def display_panel(self, panel: Any) -> None:
        handle = display(panel, display_id=True)
        if handle is not None:
            # Re-render once decided: the output becomes the static panel with the decision
            # (panel._repr_mimebundle_), what a saved notebook shows wherever it is opened.
            _HANDLES[panel] = handle
            panel.on_decision(lambda _decision, _by: _update_quietly(handle, panel))

    @contextmanager
    def _relayed(self) -> Iterator[Any]:
        """RELAY: divert the widget messages of the comms this thread opens (the panel's)
        to this thread, and hold the rest bound for its shell (approval/relay.py)."""
        kernel = waiting.get_kernel(self.host.shell)
        if self.strategy is not Strategy.RELAY or kernel is None:
            yield None
            return
        with relay.diverted(kernel) as inbox:
            self.relay_failed = inbox is None
            yield inbox

    def _wait(self, panel: Any, inbox: Any) -> None:
        shell, timeout = self.host.shell, self.host.approval_timeout
        if self.strategy is Strategy.RELAY and inbox is None:
            return  # the relay could not be set up: no click can come; _no_click says so
        if self.strategy is Strategy.PUMP:
            waiting.wait_pumping(shell, panel.event, timeout)
        elif self.strategy in (Strategy.RELAY, Strategy.THREAD):
            waiting.wait_for_click(shell, panel.event, timeout, stop=self.cancel, inbox=inbox)
        else:  # AWAIT: the gate runs in a worker thread, the kernel's loop delivers the click
            waiting.wait_event(panel.event, timeout, stop=self.cancel)

    def _no_click(self, request: ApprovalRequest, panel: Any) -> Answer:
        """The wait ended without a decision: leave it open, or give up (unavailable)."""
        if self.pending_ok:
            raise ApprovalPending("Waiting for a click on the approval panel", panel)
        # Withdrawn, not only removed: nothing waits for it any more (the side panel lists
        # the open ones, notebook/sidepanel.py), and its output becomes the static panel.
        _withdraw(panel, f"no decision within {self.host.approval_timeout:g} s; nothing ran")
        panel.close()
        if self.relay_failed:
            why = (
                "this kernel did not let the click through to the waiting cell (%config "
                "SkillMagics.approval_ui = 'stdin' asks in an input box instead)"
            )
            raise ApprovalUnavailable(unavailable_message(request.skill_names, why))
        raise ApprovalUnavailable(
            f"No decision within {self.host.approval_timeout:g} s for "
            f"{request.skill_name}: nothing ran. Run the cell again, or raise "
            "SkillMagics.approval_timeout"
        )

    @staticmethod
    def _interrupted(panel: Any) -> RunInterrupted:
        """Disable the buttons (a later click must not look like it ran something)."""
        _withdraw(panel, WAIT_INTERRUPTED)
        return RunInterrupted(WAIT_INTERRUPTED)

    def apply_inputs(
        self, skill: str, secrets: dict[str, str], network: bool, by: str
    ) -> list[str]:
        """What the panel's fields gave: secret values (kept in memory by the manager) and a
        network grant (audited). Returns one line per value that was not kept."""
        manager = getattr(self.host, "manager", None)
        if manager is None:
            return ["no manager to keep the values: nothing was kept"]
        problems = []
        for name, value in secrets.items():
            try:
                manager.provide_secret(skill, name, value)
            except (ValueError, TypeError, SkillMagicsError) as exc:
                problems.append(f"Secret {name} not kept: {exc}")
        if network:
            manager.grant_network(skill, by=f"approval panel ({by})")
        return problems

    def _ask_secrets_terminal(self, request: ApprovalRequest) -> None:
        """Missing secrets, asked with getpass (nothing echoed, nothing in the history)."""
        import getpass

        for part in request.requests:
            for name in part.secrets.missing if part.secrets is not None else ():
                try:
                    value = getpass.getpass(
                        f"Secret {name} for skill '{part.skill_name}' (input hidden, kept in "
                        "memory for this session): "
                    )
                except (EOFError, KeyboardInterrupt):
                    return  # the run then refuses in one line: the secret is missing
                if not value:
                    continue
                for problem in self.apply_inputs(part.skill_name, {name: value}, False, "getpass"):
                    print(problem)

    def _ask_terminal(self, request: ApprovalRequest, by: str) -> Answer:
        from skill_magics.core.panel.summary import summarize
        from skill_magics.notebook.render.approval_text import summary_text

        summary = summarize(request, asker=self.asker)
        try:
            answer = waiting.ask_terminal(
                summary_text(summary), full=summary_text(summary, full=True)
            )
        except KeyboardInterrupt:  # Ctrl-C at the prompt: nothing runs
            raise RunInterrupted(PROMPT_INTERRUPTED) from None
        except EOFError:  # Ctrl-D: the person ended the question
            return Answer(Decision.NO, f"{by} (end of input)")
        except OSError:
            raise ApprovalUnavailable(
                unavailable_message(request.skill_names, "stdin is closed")
            ) from None
        return Answer(coerce_decision(answer), by)


# panel -> the display handle of its output, to replace the live panel by its static form
# once nobody can decide any more (weak: a panel kept nowhere else is forgotten).
_HANDLES: weakref.WeakKeyDictionary[Any, Any] = weakref.WeakKeyDictionary()


def _withdraw(panel: Any, reason: str) -> None:
    """End an undecided panel; its output becomes the static panel saying why."""
    if panel.withdraw(reason) and panel in _HANDLES:
        _update_quietly(_HANDLES[panel], panel)


def _update_quietly(handle: Any, obj: Any) -> None:
    try:
        handle.update(obj)
    except Exception:  # noqa: BLE001 - a display refresh must never block a decision
        pass


__all__ = [
    "ApprovalHost",
    "NotebookApprover",
    "WAIT_INTERRUPTED",
    "PROMPT_INTERRUPTED",
]


def __getattr__(name: str) -> Any:
    """Old names kept for one release: ``ApprovalSettings`` (now ``ApprovalHost``)."""
    return renamed_module_name(__name__, name, {"ApprovalSettings": ("ApprovalHost", ApprovalHost)})
