"""Helpers for the tests that drive the magics in a real IPython shell (no tests in here)."""

from __future__ import annotations

import threading
import time

from skill_magics.notebook.extension import get_magics

BUTTON_VALUES = {"Yes once": "yes_once", "Yes in session": "yes_in_session", "No": "no"}


def click_when_shown(ip, label: str, *, timeout: float = 20) -> threading.Thread:
    """Click ``label`` on the next approval panel, from another thread (as a subshell would)."""
    m = get_magics(ip)
    seen = len(m.panels)

    def clicker() -> None:
        deadline = time.monotonic() + timeout
        while len(m.panels) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        if len(m.panels) > seen:
            panel = m.panels[seen]
            _ = panel.widget  # built on display; make sure the buttons exist
            panel.buttons[BUTTON_VALUES[label]].click()

    thread = threading.Thread(target=clicker, daemon=True)
    thread.start()
    return thread
