"""The approval panel: exactly three buttons (Yes once / Yes in session / No).

The panel shows what would run (skill, script path, interpreter, the exact command with the
program's real path, arguments, argv, and the script's first lines with its real line count
and a "show all" toggle). A request for several skills at once (``request.parts``, from
``%skill_context a b``) shows each skill with its scripts, in order, under one set of
buttons; the decision covers all of them. Control characters and bidi overrides in any of
it are shown as visible escapes, so the text cannot hide or reorder what runs. What it shows
is one model, ``self.summary`` (core/panel/summary.py), which the widget, the text and HTML
fallbacks and the view a saved notebook keeps all render. The first decision wins: after it
every button is disabled and later clicks do nothing. ``decided_by`` records who or what
decided ("button 'Yes once'", ...).

ipywidgets is imported only when the widget is first built, so ``%load_ext`` stays fast.

Example (not run as a doctest: it builds a widget for an approval request)::

    panel = ApprovalPanel(request)
    display(panel)                  # widget in Jupyter, text/HTML elsewhere
    panel.buttons["yes_once"].click()
    panel.decision, panel.decided_by
    # -> (<Decision.YES_ONCE: 'yes_once'>, "button 'Yes once'")
"""

from __future__ import annotations

import html
import threading
import time
from collections.abc import Callable
from typing import Any

from skill_magics.core.base.secrets import known_masks
from skill_magics.core.base.visible import visible
from skill_magics.core.panel.summary import (
    Kind,
    Summary,
    arguments_text,
    env_only,
    first_lines,
    is_skill_install,
    shows_arguments,
    summarize,
)
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision
from skill_magics.notebook.compat import WIDGET_MIME, widget_view
from skill_magics.notebook.render.approval_html import summary_html
from skill_magics.notebook.render.approval_text import summary_text

DECISIONS: tuple[Decision, ...] = (Decision.YES_ONCE, Decision.YES_IN_SESSION, Decision.NO)
_BUTTON_STYLES = {
    Decision.YES_ONCE: "success",
    Decision.YES_IN_SESSION: "info",
    Decision.NO: "danger",
}


# on_inputs(skill, secrets, network, by) -> problems: what the panel's fields gave (docs/
# architecture.md, *Sandbox and secrets*), applied when a Yes is clicked, before the run.
OnInputs = Callable[[str, dict[str, str], bool, str], list[str]]


class ApprovalPanel:
    """Three buttons for one ApprovalRequest; thread-safe, first decision wins.

    ``on_inputs``: receives, on a Yes, the values typed into the masked fields of missing
    secrets and the "allow network" choice, per skill; the fields are cleared right after,
    so no value stays in the widget state a notebook saves.
    """

    def __init__(
        self, request: ApprovalRequest, on_inputs: OnInputs | None = None, asker: str = ""
    ) -> None:
        self.request = request
        self.on_inputs = on_inputs
        self.asker = asker  # shown first: who is asking when it is not the person (a model)
        self.secret_fields: dict[tuple[str, str], Any] = {}  # (skill, name) -> Password
        self.network_boxes: dict[str, Any] = {}  # skill -> Checkbox
        self.decision: Decision | None = None
        self.decided_by: str | None = None
        self.decided_at: float | None = None  # time.time() of the decision
        self.withdrawn: str | None = None  # why nobody can decide any more (cell interrupted)
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._callbacks: list[Callable[[Decision, str], None]] = []
        self._widget: Any = None
        self._status: Any = None
        self._buttons: dict[str, Any] = {}
        self._summary: tuple[Any, Summary] | None = None  # (the masks it was made with, it)

    @property
    def summary(self) -> Summary:
        """What every view of this panel shows (core/panel/summary.py), built once; again
        only when the secret values known change, so a value entered since (say in this
        panel's own field) is masked in the view a notebook saves."""
        masks = known_masks()
        built = self._summary
        if built is None or built[0] is not masks:
            built = self._summary = (masks, summarize(self.request, asker=self.asker))
        return built[1]

    # -- the widget ---------------------------------------------------------------------
    @property
    def buttons(self) -> dict[str, Any]:
        """Decision value -> ipywidgets Button ("yes_once", "yes_in_session", "no")."""
        with self._build_lock:
            if self._widget is None:
                self._build()
        return self._buttons

    @property
    def widget(self) -> Any:
        """The ipywidgets VBox (built on first use)."""
        with self._build_lock:
            if self._widget is None:
                self._build()
        return self._widget

    def _build(self) -> None:
        import ipywidgets as w

        for decision in DECISIONS:
            button = w.Button(
                description=decision.label,
                button_style=_BUTTON_STYLES[decision],
                tooltip=self._tooltips()[decision],
                layout=w.Layout(width="auto"),
            )
            button.on_click(lambda _b, d=decision: self.decide(d, f"button '{d.label}'"))
            self._buttons[decision.value] = button
        self._status = w.HTML("")
        self._widget = w.VBox(
            [
                w.HTML(summary_html(self.summary)),
                *self._input_widgets(w),
                w.HBox(list(self._buttons.values())),
                self._status,
            ]
        )
        self._widget.add_class("skill-magics-approval-panel")
        if self.decision is not None:
            self._show_decision()

    def _tooltips(self) -> dict[Decision, str]:
        return _TOOLTIPS[self.summary.kind]

    def _input_widgets(self, w: Any) -> list[Any]:
        """Masked fields for missing secrets, a checkbox to allow the network (per skill)."""
        out: list[Any] = []
        if self.on_inputs is None:
            return out
        for part in self.request.requests:
            for name in part.secrets.missing if part.secrets is not None else ():
                field = w.Password(
                    description=name,
                    placeholder=f"secret for '{visible(part.skill_name)}' (kept in memory only)",
                    layout=w.Layout(width="32em"),
                    style={"description_width": "initial"},
                )
                self.secret_fields[(part.skill_name, name)] = field
                out.append(field)
            box = part.sandbox
            if box is not None and not box.network and box.writable:
                check = w.Checkbox(
                    value=False,
                    description=f"Allow network for '{visible(part.skill_name)}' (this session)",
                    indent=False,
                )
                self.network_boxes[part.skill_name] = check
                out.append(check)
        return out

    def _apply_inputs(self, by: str) -> list[str]:
        """Hand the fields' values to ``on_inputs`` and clear them (Yes only)."""
        if self.on_inputs is None or not (self.secret_fields or self.network_boxes):
            return []
        problems: list[str] = []
        for part in self.request.requests:
            skill = part.skill_name
            values = {}
            for (owner, name), field in self.secret_fields.items():
                if owner == skill:
                    values[name] = field.value
                    field.value = ""  # nothing left in the widget state a notebook saves
                    field.disabled = True
            box = self.network_boxes.get(skill)
            network = bool(box is not None and box.value)
            if box is not None:
                box.disabled = True
            if any(values.values()) or network:
                values = {k: v for k, v in values.items() if v}
                problems += self.on_inputs(skill, values, network, by)
        return problems

    def outcome_text(self) -> str:
        """ "Decision: Yes once (button 'Yes once', 12:00:01)", the withdrawal, or ""."""
        if self.decision is not None:
            when = time.strftime("%H:%M:%S", time.localtime(self.decided_at or time.time()))
            return f"Decision: {self.decision.label} ({self.decided_by or ''}, {when})"
        if self.withdrawn is not None:
            return f"Not asked any more: {self.withdrawn}"
        return ""

    def _show_decision(self) -> None:
        if self._widget is None or (self.decision is None and self.withdrawn is None):
            return
        for value, button in self._buttons.items():
            button.disabled = True
            if self.decision is None or value != self.decision.value:
                button.button_style = ""
        self._status.value = f"<span>{_bold_label(self.outcome_text())}</span>"

    # -- deciding -----------------------------------------------------------------------
    def decide(self, decision: Decision | str, by: str) -> bool:
        """Record the decision unless one exists; True when this call decided."""
        decision = Decision(decision)
        with self._lock:
            if self.decision is not None or self.withdrawn is not None:
                return False
            self.decision, self.decided_by, self.decided_at = decision, by, time.time()
            callbacks = list(self._callbacks)
        problems = self._apply_inputs(by) if decision is not Decision.NO else []
        if decision is Decision.NO:
            for field in self.secret_fields.values():
                field.value = ""
        self._show_decision()
        if problems and self._status is not None:
            self._status.value += "".join(f"<div>{html.escape(p)}</div>" for p in problems)
        self.event.set()
        for callback in callbacks:
            callback(decision, by)
        return True

    def withdraw(self, reason: str) -> bool:
        """End an undecided panel without a decision (e.g. its cell was interrupted): the
        buttons are disabled and a later click does nothing. True when this call ended it."""
        with self._lock:
            if self.decision is not None or self.withdrawn is not None:
                return False
            self.withdrawn = reason
            self._callbacks.clear()
        self._show_decision()
        return True

    def on_decision(self, callback: Callable[[Decision, str], None]) -> None:
        """Call ``callback(decision, by)`` once decided (at once if already decided)."""
        with self._lock:
            if self.decision is None:
                self._callbacks.append(callback)
                return
        callback(self.decision, self.decided_by or "")

    def close(self) -> None:
        """Remove the widget from the page (the decision stays recorded)."""
        if self._widget is not None:
            self._widget.close()

    # -- display ------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The widget view while a click can still decide, plus readable fallbacks. Once
        # decided (or withdrawn) only the static HTML and text: the saved notebook must show
        # the decision wherever it is opened, and a frontend prefers a widget view it cannot
        # draw once the kernel that held its model is gone ("model not found", issue 44).
        summary = self.summary
        text, page = summary_text(summary), summary_html(summary)
        outcome = self.outcome_text()
        if outcome:  # a saved notebook shows what was decided, not only what was asked
            text += "\n" + outcome
            page += f"<div>{_bold_label(outcome)}</div>"
            return {"text/plain": text, "text/html": page}
        return {"text/plain": text, "text/html": page, WIDGET_MIME: widget_view(self.widget)}

    def __repr__(self) -> str:
        state = self.decision.value if self.decision else "undecided"
        return f"<ApprovalPanel {self.request.skill_name} {state}>"


_TOOLTIPS: dict[Kind, dict[Decision, str]] = {  # by what the answer decides
    Kind.RUN: {
        Decision.YES_ONCE: "Run it this time only",
        Decision.YES_IN_SESSION: "Run it; don't ask again for this skill until its scripts change",
        Decision.NO: "Don't run it",
    },
    Kind.SEVERAL: {
        Decision.YES_ONCE: "Run every listed script this time only",
        Decision.YES_IN_SESSION: (
            "Run them; don't ask again for each of these skills until its files change"
        ),
        Decision.NO: "Don't run any of them",
    },
    Kind.INSTALL: {
        Decision.YES_ONCE: "Install these files",
        Decision.YES_IN_SESSION: "Install them; don't ask again for these exact files this session",
        Decision.NO: "Install nothing",
    },
    Kind.PACKAGES: {
        Decision.YES_ONCE: "Install these packages this time",
        Decision.YES_IN_SESSION: (
            "Install them; don't ask again for these packages of this skill this session"
        ),
        Decision.NO: "Install nothing",
    },
}


def _bold_label(outcome: str) -> str:
    """HTML for outcome_text(): escaped, with the part after the first ": " in bold."""
    head, sep, rest = outcome.partition(": ")
    if not sep:
        return html.escape(outcome)
    label, paren, tail = rest.partition(" (")
    return f"{html.escape(head)}: <b>{html.escape(label)}</b>{html.escape(paren + tail)}"


__all__ = [
    "ApprovalPanel",
    "DECISIONS",
    "summary_text",
    "summary_html",
    "arguments_text",
    "env_only",
    "first_lines",
    "is_skill_install",
    "shows_arguments",
]
