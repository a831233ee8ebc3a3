"""``%skills approvals`` and ``%skills history`` tables (AuditRecord duck-typed)."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from skill_magics.notebook.render.display import Display
from skill_magics.notebook.render.format import format_duration, shorten, status_label
from skill_magics.notebook.render.html import badge_html
from skill_magics.notebook.render.table import Cell, html_table, text_table


def approvals_table(
    approvals: Mapping[str, str], *, current: Mapping[str, str] | None = None
) -> Display:
    """Session approvals (skill -> content hash); ``current`` hashes mark stale ones."""
    if not approvals:
        text = (
            "No session approvals. Choose 'Yes in session' when asked to add one; "
            "%skills revoke NAME removes one."
        )
        return Display(text, f"<p>{html.escape(text)}</p>")
    headers = ["skill", "content hash", "state"]
    rows = []
    for name in sorted(approvals):
        digest = approvals[name]
        if current is None or name not in current:
            state = ""
        elif current[name] == digest:
            state = "valid"
        else:
            state = "stale: scripts changed, asks again"
        rows.append(
            [name, Cell(digest[:12], f"<code>{html.escape(digest[:12])}</code>", digest), state]
        )
    return Display(text_table(headers, rows), html_table(headers, rows, "skill-magics-approvals"))


def _when(timestamp: str) -> str:
    """ISO timestamp (UTC) -> local 'YYYY-MM-DD HH:MM:SS'; unparseable values shown as given."""
    try:
        moment = datetime.fromisoformat(str(timestamp).replace("Z", "+00:00"))
    except ValueError:
        return str(timestamp)
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S")


def history_table(records: Iterable[Any]) -> Display:
    """This session's audit records, oldest first (as AuditLog.records() returns them)."""
    items = list(records)
    if not items:
        text = "No skill runs in this session yet."
        return Display(text, f"<p>{html.escape(text)}</p>")
    headers = ["time", "skill", "script", "arguments", "outcome", "exit code", "duration", "reason"]
    rows = []
    for rec in items:
        outcome = str(getattr(rec, "outcome", ""))
        exit_code = getattr(rec, "exit_code", None)
        reason = str(getattr(rec, "reason", None) or "")
        arguments = str(getattr(rec, "arguments", "") or "")
        rows.append(
            [
                _when(getattr(rec, "timestamp", "")),
                getattr(rec, "skill", ""),
                Cell(str(rec.script), f"<code>{html.escape(str(rec.script))}</code>"),
                Cell(shorten(arguments, 40), title=arguments),
                Cell(status_label(outcome), badge_html(outcome, status_label(outcome))),
                "" if exit_code is None else str(exit_code),
                format_duration(getattr(rec, "duration_ms", None)),
                Cell(shorten(reason, 80), title=reason),
            ]
        )
    return Display(text_table(headers, rows), html_table(headers, rows, "skill-magics-history"))


__all__ = ["approvals_table", "history_table"]
