"""The span every call gets while tracing is off: one shared object whose methods do nothing.

Nothing here imports OpenTelemetry; the cost of a traced call site while off is a call and
a ``with`` on this object (bench/bench_trace.py measures it side by side).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar

T = TypeVar("T")


class NoSpan:
    """A span that records nothing (the API every span of core/trace has)."""

    __slots__ = ()
    recording = False

    def __enter__(self) -> NoSpan:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def set(self, key: str, value: Any) -> None:
        """Set one attribute (None: left out)."""

    def update(self, attributes: Mapping[str, Any]) -> None:
        """Set several attributes (None values left out)."""

    def fail(self, message: str) -> None:
        """Mark the span failed with a one-line message."""

    def set_content(self, key: str, text: str) -> None:
        """Set content a run opted into (an argument, an output): redacted, then cut."""

    def end(self) -> None:
        """End the span (a second call does nothing)."""

    def within(self, work: Callable[[], T]) -> Callable[[], T]:
        """``work`` run with this span current (and ended, failed, if it raises)."""
        return work

    def traceparent(self) -> dict[str, str]:
        """The W3C ``TRACEPARENT``/``TRACESTATE`` of this span, for a child's environment."""
        return {}


NOOP = NoSpan()

__all__ = ["NOOP", "NoSpan"]
