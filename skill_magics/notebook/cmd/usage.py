"""``%skills usage [--since 7d]``: what skills did, from the audit log (core/usage/): one row
per skill and script (runs, failure rate, median and p95 duration, cold and warm starts,
decisions, last run) and a chart of the same rows. Python: ``manager.usage(since=...)``.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "runs per skill and script from the audit log, as a table and a chart; --since 7d"
USAGE = "%skills usage [--since 30m|12h|7d|2w|'2 days'|DATE]"

PARSER = SubcommandParser("usage", USAGE)
PARSER.add_argument("--since", nargs="+", default=None)  # "2 days", "2026-11-01 10:00" too

HEADERS = (
    "skill",
    "script",
    "runs",
    "failed",
    "median",
    "p95",
    "cold",
    "warm",
    "approved",
    "declined",
    "refused",
    "last",
)


class UsageView:
    """The table and the chart, drawn together (plain text in a terminal)."""

    def __init__(self, rows: Sequence[Any], since: str | None, note: str = "") -> None:
        from skill_magics.core.usage.chart import usage_chart

        self.rows = list(rows)
        self.since = since
        self.note = note  # lines of the audit file that were skipped ("" none)
        self.chart = usage_chart(self.rows, title=self._title())

    def _title(self) -> str:
        return "Skill runs" + (f" since {self.since}" if self.since else "")

    def cells(self) -> list[tuple[str, ...]]:
        return [
            (
                row.skill,
                row.script,
                str(row.runs),
                "" if row.failure_rate is None else f"{row.failure_rate:.0%}",
                _ms(row.median_ms),
                _ms(row.p95_ms),
                str(row.cold),
                str(row.warm),
                str(row.approved),
                str(row.declined),
                str(row.refused + row.unavailable),
                row.last_run[:19].replace("T", " "),
            )
            for row in self.rows
        ]

    def _repr_html_(self) -> str:
        note = f"<p>{html.escape(self.note)}</p>" if self.note else ""
        if not self.rows:
            return f"<p>{html.escape(_EMPTY)}</p>{note}"
        head = "".join(f"<th>{h}</th>" for h in HEADERS)
        body = "".join(
            "<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells) + "</tr>"
            for cells in self.cells()
        )
        table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
        return f"{table}{note}{self.chart}"

    def __repr__(self) -> str:
        note = f"\n{self.note}" if self.note else ""
        if not self.rows:
            return _EMPTY + note
        table = [HEADERS, *self.cells()]
        widths = [max(len(r[i]) for r in table) for i in range(len(HEADERS))]
        return (
            "\n".join(
                "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip()
                for r in table
            )
            + note
        )


_EMPTY = "No runs recorded yet (or none since then): the audit log is empty"


def _ms(value: float | None) -> str:
    if value is None:
        return ""
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


def run(magics: SkillsHost, args: list[str]) -> Any:
    opts = PARSER.parse(args)
    from skill_magics.core.usage import read_usage

    since = " ".join(opts.since) if opts.since else None
    try:
        usage = read_usage(magics.manager.audit, since)
    except ValueError as exc:
        raise UsageError(f"{exc}: usage: {USAGE}") from None
    return UsageView(usage.rows, since, usage.note)
