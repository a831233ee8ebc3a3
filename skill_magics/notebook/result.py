"""SkillRunResult: the value ``%%skillrun`` returns, and how it shows itself.

Usage (the magics)::

    res = SkillRunResult.from_execution("pdf", "scripts/extract.py", execution_result,
                                        arguments={"file": "a.pdf"}, argv=["--fast"])
    res = SkillRunResult("pdf", "scripts/extract.py", "declined", message=str(exc))
    res = SkillRunResult("pdf", "scripts/extract.py", "refused", message=str(exc))

    # Not decided yet (non-blocking approval): return a pending handle, fill it in later.
    res = SkillRunResult.pending("pdf", "scripts/extract.py")
    res.show()                       # display with a display_id: saved HTML/text update too
    ...                              # on the click, through the one call site:
    outcome = manager.run_planned(plan, Answer(decision, by), on_output=res.append_output,
                                  on_start=..., cancel=cancel_event)   # the gate settles it
    res.set_result(outcome.result)   # or res.set_status(outcome.status, outcome.message)

    res.wait(timeout=None)  /  await res.wait_async()     # block until a final status
    # (once it returns, every view and display already shows that final state)
    res.refresh()                    # send the current state to the views/displays again
    # wait() blocks the calling thread: in the cell that shows the buttons, use wait_async()
    # (top-level await) unless the kernel delivers clicks on another thread.

Values: ``.status .stdout .stderr .exit_code .success .json() .result .message``.
Views: ``_repr_mimebundle_`` gives text/plain + static text/html always, and the live
ipywidgets view (``application/vnd.jupyter.widget-view+json``) only while the result can still
change (pending, running) and only inside a kernel with a comm manager: a final result's
display is replaced by its static form. ``.widget()`` builds/returns the live view;
``.text()`` / ``.html()`` the fallbacks.

A pending result returned as the cell value keeps its display-time HTML/text in the saved
notebook (execute_result cannot be updated); display it with ``.show()`` so later
``set_result``/``set_status`` also refresh the saved fallbacks.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.status import RunStatus
from skill_magics.notebook.compat import WIDGET_MIME, widget_view
from skill_magics.notebook.render import sections as _sections

log = logging.getLogger("skill_magics.notebook")

# Statuses a %%skillrun result can have (a context's error/skipped never reach one).
STATUSES = tuple(s for s in RunStatus if s not in (RunStatus.ERROR, RunStatus.SKIPPED))
FINAL_STATUSES = frozenset(s for s in STATUSES if s.final)
WAITING_MESSAGE = _sections.WAITING_MESSAGE

# Live output streams into the view at most this often; a chatty script would otherwise
# send one comm message (with the whole visible text) per chunk.
_REFRESH_INTERVAL = 0.2
_TICK_INTERVAL = 0.5


class ResultJSONError(SkillMagicsError, ValueError):
    """``.json()`` could not parse stdout (or nothing ran)."""


def status_for(execution_result: ScriptExecutionResult) -> RunStatus:
    """timeout -> "timeout", signal -> "signaled", exit 0 -> "completed", else "failed"."""
    return execution_result.status


def _check_status(status: RunStatus | str) -> RunStatus:
    if status not in STATUSES:
        raise ValueError(f"unknown status {status!r}: use one of {', '.join(STATUSES)}")
    return RunStatus(status)


class SkillRunResult:
    """One ``%%skillrun``: what ran, how it ended, and its live/static views."""

    # None: widget view when a kernel with a comm manager is present; False: never (config).
    use_widget: bool | None = None

    def __init__(
        self,
        skill: str,
        script: str | PurePath,
        status: RunStatus | str | None = None,
        result: ScriptExecutionResult | None = None,
        message: str = "",
        *,
        arguments: Any = None,
        argv: Sequence[str] = (),
        max_display_chars: int = 100_000,
    ) -> None:
        self.skill = str(skill)
        self.script = str(script)
        self.arguments = arguments
        self.argv = tuple(str(a) for a in argv)
        self.max_display_chars = int(max_display_chars)
        if status is None:
            status = status_for(result) if result is not None else "pending"
        self._status = _check_status(status)
        self._result = result
        self._message = str(message or "")
        self._lock = threading.RLock()
        self._done = threading.Event()
        self._started: float | None = time.monotonic() if status == "running" else None
        self._live: dict[str, list[str]] = {"stdout": [], "stderr": []}
        self._live_len = {"stdout": 0, "stderr": 0}
        self._live_total = {"stdout": 0, "stderr": 0}
        self._views: list[Any] = []  # ResultView objects (render/widgets.py)
        self._handles: list[Any] = []  # IPython DisplayHandles from show()
        self._version = 0  # bumped by every state change (see show())
        self._last_refresh = 0.0
        self._on_stop: Callable[[], Any] | None = None
        self.stop_requested = False
        self._ticker: threading.Thread | None = None
        if self._status in FINAL_STATUSES:
            self._done.set()

    # -- construction -------------------------------------------------------------------

    @classmethod
    def from_execution(
        cls,
        skill: str,
        script: str | PurePath | None,
        execution_result: ScriptExecutionResult,
        **kwargs: Any,
    ) -> SkillRunResult:
        """A finished run; the status follows from the execution result."""
        if script is None:
            script = execution_result.script_path
        return cls(skill, script, status_for(execution_result), execution_result, **kwargs)

    @classmethod
    def pending(
        cls, skill: str, script: str | PurePath, message: str = "", **kwargs: Any
    ) -> SkillRunResult:
        """A handle for a run awaiting a click; fill it with set_result/set_status."""
        return cls(skill, script, "pending", None, message, **kwargs)

    # -- values -------------------------------------------------------------------------

    @property
    def status(self) -> RunStatus:
        return self._status

    @property
    def result(self) -> ScriptExecutionResult | None:
        return self._result

    @property
    def message(self) -> str:
        return self._message

    @property
    def stdout(self) -> str:
        """Full stdout ('' when nothing ran; use the view for output while running)."""
        return self._result.stdout if self._result is not None else ""

    @property
    def stderr(self) -> str:
        return self._result.stderr if self._result is not None else ""

    @property
    def exit_code(self) -> int | None:
        return self._result.exit_code if self._result is not None else None

    @property
    def success(self) -> bool:
        return self._status == "completed"

    @property
    def done(self) -> bool:
        """True once the status is final (not pending or running)."""
        return self._done.is_set()

    @property
    def elapsed_ms(self) -> float | None:
        """Execution time when finished, time since start while running, else None."""
        if self._result is not None:
            return self._result.execution_time_ms
        if self._started is not None and self._status == "running":
            return (time.monotonic() - self._started) * 1000
        return None

    def json(self) -> Any:
        """Parse stdout as JSON; ResultJSONError says where it failed or why there is none."""
        if self._result is None:
            if self._status in ("pending", "running"):
                raise ResultJSONError(
                    f"{self.skill} has not finished (status {self._status}): answer the "
                    "approval, then `await res.wait_async()` in a new cell before .json() (a "
                    "plain .wait() can keep the click from arriving)"
                )
            raise ResultJSONError(
                f"nothing ran (status {self._status}), so there is no stdout to parse: "
                "run the cell again once the script may run"
            )
        text = self._result.stdout
        if not text.strip():
            raise ResultJSONError(
                "stdout is empty, not JSON: use .stdout for the raw text and .stderr for errors"
            )
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ResultJSONError(
                f"stdout is not JSON (line {exc.lineno} column {exc.colno}): "
                "use .stdout for the raw text"
            ) from None

    # -- waiting ------------------------------------------------------------------------

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the status is final; True if it is, False on timeout."""
        return self._done.wait(timeout)

    async def wait_async(self, timeout: float | None = None, poll: float = 0.1) -> bool:
        """Await a final status in short sleeps, so the kernel keeps delivering clicks."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while not self._done.is_set():
            if deadline is not None and time.monotonic() >= deadline:
                return False
            await asyncio.sleep(poll)
        return True

    # -- state changes (any thread) -----------------------------------------------------

    def set_result(
        self,
        execution_result: ScriptExecutionResult,
        *,
        status: RunStatus | str | None = None,
        message: str = "",
    ) -> None:
        """Fill in the finished run; updates every view and wakes .wait()."""
        with self._lock:
            self._result = execution_result
            self._status = _check_status(status or status_for(execution_result))
            self._message = str(message or "")
            self._clear_live()
            self._version += 1
        self._changed()

    def set_status(self, status: RunStatus | str, message: str = "") -> None:
        """Change status without a run result (declined, refused, running, ...)."""
        with self._lock:
            self._status = _check_status(status)
            self._message = str(message or "")
            if status == "running":
                self._started = time.monotonic()
                self._clear_live()
            self._version += 1
        self._changed()

    def append_output(self, stream: str, text: str) -> None:
        """Streaming output while running (an executor ``on_output`` callback)."""
        if stream not in self._live:
            raise ValueError(f"unknown stream {stream!r}: use 'stdout' or 'stderr'")
        with self._lock:
            chunks = self._live[stream]
            chunks.append(text)
            self._live_len[stream] += len(text)
            self._live_total[stream] += len(text)
            limit = self._live_limit()
            if self._live_len[stream] > 2 * limit:  # compact now and then, not per chunk
                tail = "".join(chunks)[-limit:]
                self._live[stream] = [tail]
                self._live_len[stream] = len(tail)
        if time.monotonic() - self._last_refresh >= _REFRESH_INTERVAL:
            self._refresh_views()

    def live_text(self, stream: str) -> tuple[str, str]:
        """(visible tail of the output so far, note or '') for the running view."""
        with self._lock:
            text = "".join(self._live[stream])
            total = self._live_total[stream]
        limit = self._live_limit()
        if len(text) > limit:
            text = text[-limit:]
            # Drop the partial first line so the tail starts cleanly.
            newline = text.find("\n")
            if 0 <= newline < len(text) - 1:
                text = text[newline + 1 :]
        if len(text) < total:
            return text, f"showing last {len(text):,} of {total:,} characters while running"
        return text, ""

    def tick(self) -> None:
        """Refresh the elapsed time and any buffered output in the live views."""
        if self._views:
            self._refresh_views()

    # -- stop button --------------------------------------------------------------------

    @property
    def on_stop(self) -> Callable[[], Any] | None:
        """Called once when the person clicks Stop; the button shows only while running."""
        return self._on_stop

    @on_stop.setter
    def on_stop(self, callback: Callable[[], Any] | None) -> None:
        self._on_stop = callback
        self._refresh_views()

    def stop(self) -> bool:
        """Ask the running script to stop (what the Stop button does); False if it cannot."""
        callback = self._on_stop
        if callback is None or self._status != "running" or self.stop_requested:
            return False
        self.stop_requested = True
        try:
            callback()
        finally:
            self._refresh_views()
        return True

    # -- views --------------------------------------------------------------------------

    def text(self) -> str:
        from skill_magics.notebook.render.text import result_text

        return result_text(self)

    def html(self) -> str:
        from skill_magics.notebook.render.html import result_html

        return result_html(self)

    def widget(self) -> Any:
        """The live ipywidgets view (built on first call; imports ipywidgets)."""
        return self._view().widget

    def show(self) -> None:
        """Display with a display_id, so status changes also update the saved fallbacks."""
        from IPython.display import display

        seen = self._version
        handle = display(self, display_id=True)
        if handle is None:
            return
        self._handles.append(handle)
        if self._version != seen:
            # Changed while display() ran (a click on another thread): _changed() did not
            # know this handle yet, so bring it up to date here.
            self._update_handle(handle)

    def refresh(self) -> None:
        """Send the current state again to every live view and displayed copy."""
        self._refresh_views(force=True)
        for handle in list(self._handles):
            self._update_handle(handle)

    def _view(self) -> Any:
        with self._lock:
            if not self._views:
                from skill_magics.notebook.render.widgets import ResultView

                self._views.append(ResultView(self))
            view = self._views[0]
        self._ensure_ticker()
        return view

    def _widget_wanted(self) -> bool:
        if self.use_widget is not None:
            return self.use_widget
        from skill_magics.notebook.render.widgets import widgets_supported

        return widgets_supported()

    def _repr_mimebundle_(
        self, include: Any = None, exclude: Any = None, **kwargs: Any
    ) -> dict[str, Any]:
        def wanted(mime: str) -> bool:
            return (include is None or mime in include) and not (exclude and mime in exclude)

        bundle: dict[str, Any] = {}
        # The live view only while something can change (pending, running: Stop, streaming
        # output); a finished result is static HTML and text, so the saved notebook shows it
        # after a kernel restart, in nbviewer, on GitHub and on the docs site (issue 44).
        live = self._status not in FINAL_STATUSES
        if live and wanted(WIDGET_MIME) and self._widget_wanted():
            try:
                bundle[WIDGET_MIME] = widget_view(self.widget())
            except Exception:  # the static fallbacks below still show the result
                log.debug("skill result widget view failed", exc_info=True)
        if wanted("text/plain"):
            bundle["text/plain"] = self.text()
        if wanted("text/html"):
            bundle["text/html"] = self.html()
        return bundle

    def __repr__(self) -> str:
        stem = Path(self.script).stem if self.script else ""
        bits = [f"{self.skill}.{stem}" if stem else self.skill, self._status]
        if self._result is not None:
            bits.append(f"exit_code={self._result.exit_code}")
        return f"<SkillRunResult {' '.join(bits)}>"

    # -- internals ----------------------------------------------------------------------

    def _live_limit(self) -> int:
        return self.max_display_chars if self.max_display_chars > 0 else 100_000

    def _clear_live(self) -> None:
        for stream in self._live:
            self._live[stream] = []
            self._live_len[stream] = 0
            self._live_total[stream] = 0

    def _changed(self) -> None:
        final = self._status in FINAL_STATUSES
        if not final:
            self._done.clear()
        self.refresh()
        self._ensure_ticker()
        if final:
            # Only now: when wait() returns, every view and display shows the final state.
            self._done.set()

    def _update_handle(self, handle: Any) -> None:
        try:
            handle.update(self)
        except Exception:  # no frontend any more: the object itself is still right
            log.debug("display update failed", exc_info=True)

    def _refresh_views(self, force: bool = False) -> None:
        self._last_refresh = time.monotonic()
        for view in list(self._views):
            view.refresh(status_changed=force)

    def _ensure_ticker(self) -> None:
        # Elapsed time must move even when a script prints nothing for a while.
        if self._status != "running" or not self._views:
            return
        with self._lock:
            if self._ticker is not None and self._ticker.is_alive():
                return
            self._ticker = threading.Thread(
                target=self._tick_loop, name="skill-magics-elapsed", daemon=True
            )
            self._ticker.start()

    def _tick_loop(self) -> None:
        while self._status == "running" and not self._done.wait(_TICK_INTERVAL):
            try:
                self.tick()
            except Exception:  # a failing refresh must not kill the run
                log.debug("elapsed tick failed", exc_info=True)
                return


__all__ = [
    "SkillRunResult",
    "ResultJSONError",
    "STATUSES",
    "FINAL_STATUSES",
    "WAITING_MESSAGE",
    "status_for",
]
