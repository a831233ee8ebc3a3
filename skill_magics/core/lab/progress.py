"""Progress of a lab evaluation: snapshots for a bar, and who draws them.

Core never draws: a caller passes ``on_progress(snapshot)``; without one, the display that
``%load_ext skill_magics`` registered here (:func:`set_display`: a widget bar in Jupyter, a
text line elsewhere) is used, so ``evaluate_triggers(...)`` called in a notebook shows a bar
too. Outside IPython nothing is drawn.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class LabProgress:
    """Runs done of ``total`` so far, how many failed (provider errors), and the time since
    the start (the shape the batch progress bars draw: notebook/render/batch.py)."""

    total: int
    done: int
    failed: int
    elapsed_s: float
    label: str = "runs"

    @property
    def eta_s(self) -> float | None:
        if self.done <= 0 or self.done >= self.total:
            return None if self.done <= 0 else 0.0
        return self.elapsed_s / self.done * (self.total - self.done)

    def line(self) -> str:
        """``12/60 runs · 1 error · 4.1 s elapsed · ETA 16.4 s``"""
        bits = [f"{self.done:,}/{self.total:,} {self.label}"]
        if self.failed:
            bits.append(f"{self.failed:,} error{'s' if self.failed != 1 else ''}")
        bits.append(f"{self.elapsed_s:.1f} s elapsed")
        eta = self.eta_s
        if eta is not None and self.done < self.total:
            bits.append(f"ETA {eta:.1f} s")
        return " · ".join(bits)


class ProgressDisplay(Protocol):
    """What a registered display returns: it gets snapshots, then one closing line."""

    def update(self, progress: LabProgress) -> None: ...

    def finish_text(self, line: str) -> None: ...


DisplayFactory = Callable[[int, str], ProgressDisplay]
_display: DisplayFactory | None = None


def set_display(factory: DisplayFactory | None) -> None:
    """Register (None: remove) the default progress display (the notebook layer does)."""
    global _display
    _display = factory


class Tracker:
    """Counts runs and tells ``on_progress`` (or the registered display) after each."""

    def __init__(
        self,
        total: int,
        name: str,
        on_progress: Callable[[LabProgress], object] | None = None,
        label: str = "runs",
    ) -> None:
        self.total = total
        self.label = label
        self.done = 0
        self.failed = 0
        self.started = time.monotonic()
        self.callback = on_progress
        self.name = name
        self.display: ProgressDisplay | None = None

    def start(self) -> None:
        """Open the registered display (when no ``on_progress`` was given): called when the
        evaluation starts running, not when it is set up (a coroutine may never be awaited)."""
        self.started = time.monotonic()
        if self.callback is None and _display is not None and self.total > 0:
            try:
                self.display = _display(self.total, self.name)
            except Exception:  # noqa: BLE001 - no bar is better than a failed evaluation
                logger.warning("lab progress display failed", exc_info=True)

    def snapshot(self) -> LabProgress:
        elapsed = time.monotonic() - self.started
        return LabProgress(self.total, self.done, self.failed, elapsed, self.label)

    def step(self, *, failed: bool = False) -> None:
        self.done += 1
        self.failed += int(failed)
        self._tell(self.snapshot())

    def _tell(self, snap: LabProgress) -> None:
        try:
            if self.callback is not None:
                self.callback(snap)
            elif self.display is not None:
                self.display.update(snap)
        except Exception:  # noqa: BLE001 - a broken bar must not stop the evaluation
            logger.warning("lab on_progress failed", exc_info=True)

    def finish(self, line: str) -> None:
        if self.display is not None:
            try:
                self.display.finish_text(line)
            except Exception:  # noqa: BLE001
                logger.warning("lab progress display failed", exc_info=True)
            self.display = None


__all__ = ["LabProgress", "ProgressDisplay", "Tracker", "set_display"]
