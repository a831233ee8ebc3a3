"""How a batch shows itself: the BatchResult in the places a single result renders (static
HTML, terminal text, the value's repr), and its live progress.

core's ``BatchResult`` knows nothing of IPython: the extension registers
:func:`batch_bundle` as its display printer (by name, so nothing is imported until one is
shown). Its bundle holds text/plain
(``BatchResult.text()``) and static text/html (no CSS or scripts needed: GitHub, nbviewer),
never a widget view: a finished batch changes no more, and a saved widget view shows "model
not found" once its kernel is gone (issue 44).

Progress (:func:`progress_for`): a widget bar with done / failed / running / elapsed / ETA and
a Stop button in JupyterLab; a text line in terminal IPython (rewritten in place) and in
headless runs (a line every few seconds, so a saved notebook keeps a short log).
"""

from __future__ import annotations

import contextvars
import html
import sys
import threading
import time
from dataclasses import replace
from typing import Any

from skill_magics.core.run.batch.result import EMPTY
from skill_magics.notebook import compat
from skill_magics.notebook.render.format import format_duration, shorten
from skill_magics.notebook.render.html import badge_html

ROWS = 10  # rows of items and of failures the views show (the value has them all)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


# -- static HTML -------------------------------------------------------------------------------


def summary_html(result: Any) -> str:
    if not result.items and not result.stopped:
        return f"<div><strong><code>{_e(result.name)}</code></strong>: {_e(EMPTY)}</div>"
    badges = " ".join(
        badge_html(status, f"{n:,} {status}") for status, n in result.counts().items()
    )
    line = (
        f"<strong><code>{_e(result.name)}</code></strong> · {len(result):,} items · {badges} · "
        f"{result.wall_s:.2f} s · {result.throughput:.1f} items/s · "
        f"{result.workers} workers on {_e(result.pool)}"
    )
    warm_starts = getattr(result, "warm_starts", 0)
    if warm_starts:
        line += f" · {warm_starts:,} started warm"
    if result.stopped:
        line += f"<br><em>stopped: {_e(result.stopped)}</em>"
    return f"<div>{line}</div>"


def _row(item: Any, error: bool) -> str:
    code = "" if item.exit_code is None else str(item.exit_code)
    time_ = format_duration(item.duration_ms)
    if error:
        last = item.message or (item.stderr.strip().splitlines() or [""])[-1]
        detail = shorten(last, 120)
    else:
        detail = shorten(item.stdout, 120)
    return (
        f"<tr><td>{item.index}</td><td>{badge_html(str(item.status), str(item.status))}</td>"
        f"<td>{_e(code)}</td><td>{_e(time_)}</td>"
        f"<td><code>{_e(shorten(item.describe_input(), 80))}</code></td>"
        f"<td><code>{_e(detail)}</code></td></tr>"
    )


def rows_html(items: list[Any], *, error: bool = False, total: int | None = None) -> str:
    if not items:
        return "<p><em>none</em></p>"
    last = "error" if error else "stdout"
    head = (
        f"<tr><th>#</th><th>status</th><th>exit</th><th>time</th><th>input</th><th>{last}</th></tr>"
    )
    body = "".join(_row(item, error) for item in items[:ROWS])
    more = ""
    shown = min(len(items), ROWS)
    count = total if total is not None else len(items)
    if count > shown:
        more = f"<p><small>showing {shown:,} of {count:,}</small></p>"
    return f"<table>{head}{body}</table>{more}"


def batch_html(result: Any) -> str:
    """Summary, the first rows, and the failures, as plain HTML."""
    failed = result.failed()
    parts = [
        summary_html(result),
        f"<details open><summary>first items</summary>{rows_html(result.items)}</details>",
    ]
    if failed:
        parts.append(
            f"<details open><summary>failures ({len(failed):,}; <code>.failed()</code>)"
            f"</summary>{rows_html(failed, error=True)}</details>"
        )
    return "<div class='skill-magics-batch'>" + "".join(parts) + "</div>"


def batch_bundle(result: Any) -> dict[str, Any]:
    """The display bundle of a BatchResult (what IPython shows for it)."""
    bundle: dict[str, Any] = {}
    bundle["text/plain"] = result.text()
    bundle["text/html"] = batch_html(result)
    return bundle


# -- progress ----------------------------------------------------------------------------------


class _Ticking:
    """Keeps the newest snapshot (``update`` is called from the batch's worker threads) and
    redraws from ONE thread started in the cell's context, so output reaches this cell and
    the elapsed time moves even while no item finishes."""

    interval = 0.2

    def __init__(self, total: int, name: str) -> None:
        self.total = total
        self.name = name
        self._snapshot: Any = None
        self._at = time.monotonic()
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        context = contextvars.copy_context()
        self._thread = threading.Thread(
            target=context.run, args=(self._loop,), name="skill-magics-progress", daemon=True
        )
        self._thread.start()

    def update(self, progress: Any) -> None:
        self._snapshot, self._at = progress, time.monotonic()

    def line(self) -> str:
        snap = self._snapshot
        if snap is None:
            elapsed = time.monotonic() - self._started
            return f"0/{self.total:,} done · starting · {elapsed:.1f} s elapsed"
        moved = replace(snap, elapsed_s=snap.elapsed_s + time.monotonic() - self._at)
        return str(moved.line())

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                with self._lock:
                    if not self._stop.is_set():
                        self.draw(self.line())
            except Exception:  # noqa: BLE001 - a broken display must not stop the batch
                return

    def finish(self, result: Any) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        line = ", ".join(f"{n:,} {s}" for s, n in result.counts().items()) or "nothing ran"
        with self._lock:
            self.done(f"{len(result):,} items in {result.wall_s:.2f} s: {line}")

    def finish_text(self, line: str) -> None:
        """Stop redrawing and leave ``line`` (a lab evaluation's closing summary)."""
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            self.done(line)

    def finish_quietly(self) -> None:
        """Stop redrawing: the batch ended without a result (the cell shows the error)."""
        self._stop.set()
        self._thread.join(timeout=2)
        with self._lock:
            self.done("stopped before any result")

    def draw(self, line: str) -> None:
        raise NotImplementedError

    def done(self, line: str) -> None:
        raise NotImplementedError


class TextProgress(_Ticking):
    """A progress line on stdout: rewritten in place (``live``: a terminal), else printed
    every few seconds and once at the end (a headless run keeps a short log)."""

    def __init__(self, total: int, name: str, *, live: bool, stream: Any = None) -> None:
        self.live = live
        self.interval = 0.2 if live else 5.0
        self.stream = stream if stream is not None else sys.stdout
        super().__init__(total, name)

    def draw(self, line: str) -> None:
        text = f"{self.name}: {line}"
        self.stream.write(("\r" + text.ljust(100)) if self.live else text + "\n")
        self.stream.flush()

    def done(self, line: str) -> None:
        text = f"{self.name}: {line}"
        self.stream.write(("\r" + text.ljust(100) + "\n") if self.live else text + "\n")
        self.stream.flush()


def _one_line(markup: str) -> str:
    """The progress text as one line: cut with an ellipsis, never wrapped."""
    return (
        "<span style='white-space:nowrap;overflow:hidden;text-overflow:ellipsis;"
        f"display:block'>{markup}</span>"
    )


class WidgetProgress(_Ticking):
    """An ipywidgets bar with done / failed / running / elapsed / ETA, and a Stop button."""

    def __init__(self, total: int, name: str, *, on_stop: Any = None) -> None:
        import ipywidgets as w

        # One line however wide the page: the bar keeps its width, the label takes the rest
        # and never wraps (the ETA wrapped under the bar at 1400 px).
        self.bar = w.IntProgress(
            value=0,
            min=0,
            max=max(total, 1),
            bar_style="info",
            layout=w.Layout(width="240px", flex="0 0 auto"),
        )
        self.label = w.HTML(
            _one_line(f"<code>{_e(name)}</code>: starting {total:,} items"),
            layout=w.Layout(flex="1 1 auto", overflow="hidden"),
        )
        self.stop_button = w.Button(
            description="Stop", button_style="danger", icon="stop", tooltip="Stop the batch"
        )
        self._on_stop = on_stop
        self.stop_button.on_click(self._stop_clicked)
        children = [self.bar, self.label] + ([self.stop_button] if on_stop else [])
        self.widget = w.HBox(children, layout=w.Layout(flex_flow="row nowrap", width="100%"))
        self.widget.add_class("skill-magics-batch-progress")
        self.handle = compat.show_widget(self.widget)
        super().__init__(total, name)

    def _stop_clicked(self, _button: Any = None) -> None:
        self.stop_button.disabled = True
        self.stop_button.description = "Stopping…"
        if self._on_stop is not None:
            self._on_stop()

    def draw(self, line: str) -> None:
        snap = self._snapshot
        if snap is not None:
            if self.bar.value != snap.done:
                self.bar.value = snap.done
            if snap.failed and self.bar.bar_style != "warning":
                self.bar.bar_style = "warning"
        value = _one_line(f"<code>{_e(self.name)}</code>: {_e(line)}")
        if self.label.value != value:
            self.label.value = value

    def done(self, line: str) -> None:
        """The bar becomes one static line (the cell's value shows the result)."""
        from skill_magics.notebook.render.display import Display

        text = f"{self.name}: {line}"
        self.widget.close()
        if self.handle is not None:
            self.handle.update(Display(text, f"<div><small>{_e(text)}</small></div>"))


def progress_for(
    total: int, name: str, *, widget: bool, terminal: bool, on_stop: Any = None
) -> TextProgress | WidgetProgress:
    """The widget bar where a person sees widgets, else a text line."""
    if widget:
        return WidgetProgress(total, name, on_stop=on_stop)
    return TextProgress(total, name, live=terminal)


__all__ = [
    "TextProgress",
    "WidgetProgress",
    "batch_bundle",
    "batch_html",
    "progress_for",
]
