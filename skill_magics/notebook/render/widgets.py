"""Live ipywidgets view of a skill run. ipywidgets is imported only when a view is built.

Layout: header line (name, status badge, exit code, time), a Stop button while running (only
when the result has an ``on_stop`` callback), a one-line message when there is something to
explain, and a Tab ``stdout | stderr | exit code | signal | timing`` of ``<pre>`` panes.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from typing import Any

from skill_magics.notebook import compat
from skill_magics.notebook.render.html import header_html, message_html, section_body_html
from skill_magics.notebook.render.sections import TAB_TITLES, sections


def widgets_supported() -> bool:
    """True inside a Jupyter kernel with a comm manager and ipywidgets installed.

    Terminal IPython and plain Python have no frontend to draw a widget: text only there.
    """
    ipython_module = sys.modules.get("IPython")  # not imported: certainly no kernel
    if ipython_module is None:
        return False
    shell = ipython_module.get_ipython()
    kernel = getattr(shell, "kernel", None)
    if getattr(kernel, "comm_manager", None) is None:
        return False
    return importlib.util.find_spec("ipywidgets") is not None


class ResultView:
    """Widgets bound to one SkillRunResult; ``refresh()`` re-reads it (thread-safe)."""

    def __init__(self, run: Any) -> None:
        import ipywidgets as w

        self._run = run
        self._lock = threading.Lock()
        self._auto_selected = False
        self.header = w.HTML()
        self.stop_button = w.Button(
            description="Stop", button_style="danger", icon="stop", tooltip="Stop the script"
        )
        self.stop_button.on_click(self._on_stop_click)
        self.message = w.HTML()
        self.panes = [w.HTML() for _ in TAB_TITLES]
        self.tab = compat.tab(self.panes, TAB_TITLES)
        self.widget = w.VBox([self.header, self.stop_button, self.message, self.tab])
        self.widget.add_class("skill-magics-result")
        self.refresh(status_changed=True)

    def refresh(self, status_changed: bool = False) -> None:
        """Bring every widget in line with the result (assign only what changed)."""
        run = self._run
        with self._lock:
            self._set(self.header, "value", header_html(run))
            note = message_html(run)
            self._set(self.message, "value", note)
            self._show(self.message, bool(note))
            running = run.status == "running"
            self._show(self.stop_button, running and run.on_stop is not None)
            if run.stop_requested:
                self._set(self.stop_button, "disabled", True)
                self._set(self.stop_button, "description", "Stopping…")
            parts = sections(run)
            self._show(self.tab, bool(parts))
            # parts is [] when nothing ran: the tab is hidden and keeps its old panes.
            for pane, section in zip(self.panes, parts, strict=False):
                self._set(pane, "value", section_body_html(section))
            if status_changed and parts and run.result is not None and not self._auto_selected:
                # A failed run that printed only to stderr opens on stderr.
                self._auto_selected = True
                if not run.result.stdout and run.result.stderr:
                    self.tab.selected_index = 1

    def _on_stop_click(self, _button: Any) -> None:
        self._run.stop()

    @staticmethod
    def _set(widget: Any, name: str, value: Any) -> None:
        # Each assignment is a comm message to the browser; skip the unchanged ones.
        if getattr(widget, name) != value:
            setattr(widget, name, value)

    @classmethod
    def _show(cls, widget: Any, visible: bool) -> None:
        cls._set(widget.layout, "display", None if visible else "none")


__all__ = ["ResultView", "widgets_supported"]
