"""The approval panel: exactly three buttons (Yes once / Yes in session / No).

The panel shows what would run (skill, script path, interpreter, arguments, argv and the
script's first lines). The first decision wins: after it every button is disabled and later
clicks do nothing. ``decided_by`` records who or what decided ("button 'Yes once'", ...).

ipywidgets is imported only when the widget is first built, so ``%load_ext`` stays fast.

Example:
    >>> panel = ApprovalPanel(request)
    >>> display(panel)                  # widget in Jupyter, text/HTML elsewhere
    >>> panel.buttons["yes_once"].click()
    >>> panel.decision, panel.decided_by
    (<Decision.YES_ONCE: 'yes_once'>, "button 'Yes once'")
"""

from __future__ import annotations

import asyncio
import html
import json
import shlex
import threading
import time
from collections.abc import Callable
from typing import Any

from ..core.approval import ApprovalRequest, Decision

DECISIONS: tuple[Decision, ...] = (Decision.YES_ONCE, Decision.YES_IN_SESSION, Decision.NO)
_BUTTON_STYLES = {
    Decision.YES_ONCE: "success",
    Decision.YES_IN_SESSION: "info",
    Decision.NO: "danger",
}
ARGUMENTS_PREVIEW_CHARS = 2000
PREVIEW_LINES = 12


def arguments_text(arguments: Any, limit: int = ARGUMENTS_PREVIEW_CHARS) -> str:
    """The arguments as people read them (pretty JSON, cut at ``limit`` characters)."""
    if arguments is None:
        return "{}"
    try:
        text = json.dumps(arguments, indent=1, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(arguments)
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return text


def first_lines(text: str, n: int = PREVIEW_LINES) -> str:
    lines = text.splitlines()
    shown = "\n".join(lines[:n])
    return shown + (f"\n... ({len(lines) - n} more lines)" if len(lines) > n else "")


def summary_text(request: ApprovalRequest) -> str:
    """Plain-text description of a request (terminal prompt, text fallback)."""
    lines = [f"Approval needed: skill '{request.skill_name}' wants to run:"]
    for script in request.scripts:
        lines.append(f"  {script.path}  (interpreter: {script.interpreter})")
    if request.code is not None:
        lines.append("  Python code:")
        lines += ["    " + line for line in first_lines(request.code).splitlines()]
    lines.append("  arguments (stdin JSON): " + arguments_text(request.arguments, 300))
    if request.argv:
        lines.append("  argv: " + shlex.join(request.argv))
    for script in request.scripts:
        if script.preview:
            lines.append(f"  first lines of {script.path}:")
            lines += ["    | " + line for line in first_lines(script.preview).splitlines()]
    return "\n".join(lines)


def summary_html(request: ApprovalRequest) -> str:
    """HTML description of a request (inside the widget, and the static fallback)."""
    esc = html.escape
    rows = [("Skill", f"<b>{esc(request.skill_name)}</b>")]
    for script in request.scripts:
        rows.append(("Script", f"<code>{esc(script.path)}</code>"))
        rows.append(("Interpreter", f"<code>{esc(script.interpreter)}</code>"))
    rows.append(("Arguments", _pre(arguments_text(request.arguments))))
    if request.argv:
        rows.append(("argv", f"<code>{esc(shlex.join(request.argv))}</code>"))
    if request.code is not None:
        rows.append(("Code", _pre(first_lines(request.code))))
    for script in request.scripts:
        if script.preview:
            rows.append((f"First lines of {esc(script.path)}", _pre(first_lines(script.preview))))
    body = "".join(
        f"<tr><th style='text-align:left;vertical-align:top;padding-right:1em'>{k}</th>"
        f"<td style='text-align:left'>{v}</td></tr>"
        for k, v in rows
    )
    return (
        "<div class='skill-magics-approval'><div><b>Approve running this skill script?</b></div>"
        f"<table>{body}</table></div>"
    )


def _pre(text: str) -> str:
    return (
        "<pre style='margin:0;max-height:16em;overflow:auto;white-space:pre-wrap'>"
        f"{html.escape(text)}</pre>"
    )


class ApprovalPanel:
    """Three buttons for one ApprovalRequest; thread-safe, first decision wins."""

    def __init__(self, request: ApprovalRequest) -> None:
        self.request = request
        self.decision: Decision | None = None
        self.decided_by: str | None = None
        self.decided_at: float | None = None  # time.time() of the decision
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._callbacks: list[Callable[[Decision, str], None]] = []
        self._futures: list[tuple[asyncio.AbstractEventLoop, asyncio.Future]] = []
        self._widget: Any = None
        self._status: Any = None
        self._buttons: dict[str, Any] = {}

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
                tooltip=_TOOLTIPS[decision],
                layout=w.Layout(width="auto"),
            )
            button.on_click(lambda _b, d=decision: self.decide(d, f"button '{d.label}'"))
            self._buttons[decision.value] = button
        self._status = w.HTML("")
        self._widget = w.VBox(
            [
                w.HTML(summary_html(self.request)),
                w.HBox(list(self._buttons.values())),
                self._status,
            ]
        )
        self._widget.add_class("skill-magics-approval-panel")
        if self.decision is not None:
            self._show_decision()

    def _show_decision(self) -> None:
        if self._widget is None or self.decision is None:
            return
        for value, button in self._buttons.items():
            button.disabled = True
            if value != self.decision.value:
                button.button_style = ""
        when = time.strftime("%H:%M:%S", time.localtime(self.decided_at or time.time()))
        self._status.value = (
            f"<span>Decision: <b>{html.escape(self.decision.label)}</b> "
            f"({html.escape(self.decided_by or '')}, {when})</span>"
        )

    # -- deciding -----------------------------------------------------------------------
    def decide(self, decision: Decision | str, by: str) -> bool:
        """Record the decision unless one exists; True when this call decided."""
        decision = Decision(decision)
        with self._lock:
            if self.decision is not None:
                return False
            self.decision, self.decided_by, self.decided_at = decision, by, time.time()
            futures, self._futures = self._futures, []
            callbacks = list(self._callbacks)
        self._show_decision()
        self.event.set()
        for loop, future in futures:
            loop.call_soon_threadsafe(_resolve, future, decision)
        for callback in callbacks:
            callback(decision, by)
        return True

    def on_decision(self, callback: Callable[[Decision, str], None]) -> None:
        """Call ``callback(decision, by)`` once decided (at once if already decided)."""
        with self._lock:
            if self.decision is None:
                self._callbacks.append(callback)
                return
        callback(self.decision, self.decided_by or "")

    def future(self) -> asyncio.Future:
        """An asyncio future on the running loop, resolved (thread-safely) by the decision."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        with self._lock:
            if self.decision is None:
                self._futures.append((loop, future))
                return future
        future.set_result(self.decision)
        return future

    def close(self) -> None:
        """Remove the widget from the page (the decision stays recorded)."""
        if self._widget is not None:
            self._widget.close()

    # -- display ------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The widget view for live frontends plus readable fallbacks for saved notebooks.
        bundle = {"text/plain": summary_text(self.request), "text/html": summary_html(self.request)}
        view = self.widget._repr_mimebundle_()
        if isinstance(view, tuple):
            view = view[0]
        if view and "application/vnd.jupyter.widget-view+json" in view:
            key = "application/vnd.jupyter.widget-view+json"
            bundle[key] = view[key]
        return bundle

    def __repr__(self) -> str:
        state = self.decision.value if self.decision else "undecided"
        return f"<ApprovalPanel {self.request.skill_name} {state}>"


_TOOLTIPS = {
    Decision.YES_ONCE: "Run it this time only",
    Decision.YES_IN_SESSION: "Run it; don't ask again for this skill until its scripts change",
    Decision.NO: "Don't run it",
}


def _resolve(future: asyncio.Future, decision: Decision) -> None:
    if not future.done():
        future.set_result(decision)


__all__ = ["ApprovalPanel", "DECISIONS", "summary_text", "summary_html", "arguments_text"]
