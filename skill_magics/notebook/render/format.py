"""Small formatting helpers shared by the text, HTML and widget views."""

from __future__ import annotations

import json
import shlex
from collections.abc import Sequence
from typing import Any

from skill_magics.core.base.secrets import redact_known

# status -> (label shown to people, badge colour). Colours read on light and dark themes.
STATUS_STYLES: dict[str, tuple[str, str]] = {
    "completed": ("completed", "#1a7f37"),
    "failed": ("failed", "#cf222e"),
    "timeout": ("timeout", "#bc4c00"),
    "signaled": ("signaled", "#cf222e"),
    "interrupted": ("interrupted", "#bc4c00"),
    "declined": ("declined", "#6e7781"),
    "approval_unavailable": ("approval unavailable", "#9a6700"),
    "refused": ("refused", "#cf222e"),
    "pending": ("pending approval", "#0969da"),
    "running": ("running", "#0969da"),
    "cancelled": ("cancelled", "#6e7781"),
    "error": ("error", "#cf222e"),
}


def status_label(status: str) -> str:
    """Human label for a status ("approval_unavailable" -> "approval unavailable")."""
    return STATUS_STYLES.get(status, (status, ""))[0]


def status_colour(status: str) -> str:
    return STATUS_STYLES.get(status, ("", "#6e7781"))[1]


def format_duration(ms: float | None) -> str:
    """12.3 ms, 840 ms, 1.25 s, 2 min 3.0 s; empty string for None."""
    if ms is None:
        return ""
    if ms < 10:
        return f"{ms:.1f} ms"
    if ms < 1000:
        return f"{ms:.0f} ms"
    seconds = ms / 1000
    if seconds < 60:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)} min {rest:.1f} s"


def format_count(n: int) -> str:
    return f"{n:,}"


def shorten(text: str | None, width: int) -> str:
    """One line, whitespace collapsed, cut at ``width`` characters with an ellipsis.

    Secret values are masked first (core/base/secrets.py): before the collapse and the cut
    change the text, so no part of a value ever shows."""
    line = " ".join(redact_known(str(text or "")).split())
    if len(line) <= width:
        return line
    return line[: max(width - 1, 0)].rstrip() + "…"


def display_slice(text: str, limit: int) -> tuple[str, bool]:
    """The first ``limit`` characters and whether anything was cut (limit <= 0: no limit)."""
    if limit <= 0 or len(text) <= limit:
        return text, False
    return text[:limit], True


def truncation_note(stream: str, shown: int, total: int) -> str:
    return (
        f"showing first {format_count(shown)} of {format_count(total)} characters; "
        f"full text in result.{stream}"
    )


def arguments_preview(arguments: Any, argv: Sequence[str] = (), width: int = 120) -> str:
    """One short line describing what the script received ('' when nothing)."""
    parts = []
    if arguments not in (None, {}, ""):
        try:
            encoded = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"))
        except (TypeError, ValueError):  # not JSON-able: still show something readable
            encoded = repr(arguments)
        parts.append(f"stdin {shorten(encoded, width)}")
    if argv:
        # Each word redacted before shlex quotes it (quoting splits a value containing ').
        words = (redact_known(str(a)) for a in argv)
        parts.append(f"argv {shorten(shlex.join(words), width)}")
    return "   ".join(parts)
