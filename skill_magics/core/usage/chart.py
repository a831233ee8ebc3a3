"""The usage chart: one stacked bar per skill and script (completed, failed, stopped), its
failure rate, median and p95 duration and warm starts at the bar's end, as a self-contained
SVG (the lab's :class:`~skill_magics.core.lab.chart.Chart`: Jupyter, GitHub and nbviewer
draw it; no plotting library).
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from skill_magics.core.base.svgchart import FAIL, PASS, Chart
from skill_magics.core.base.visible import visible
from skill_magics.core.usage import UsageRow

ROW = 22
LABEL_W = 300
BAR_W = 260
STOPPED = "#9e9e9e"
MAX_ROWS = 40  # the busiest; the rest are counted in a last line


def usage_chart(rows: Sequence[UsageRow], *, title: str | None = None) -> Chart:
    """The chart of :func:`~skill_magics.core.usage.usage_rows` (busiest first)."""
    shown = list(rows[:MAX_ROWS])
    head = 40
    height = head + ROW * max(len(shown), 1) + 30
    width = LABEL_W + BAR_W + 330
    x0 = LABEL_W
    most = max((r.runs for r in shown), default=0) or 1
    title = visible(title or "Skill runs: completed, failed, stopped")
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='12'>",
        f"<title>{html.escape(title)}</title>",
        f"<text x='4' y='16' font-weight='bold'>{html.escape(title)}</text>",
        f"<text x='{x0}' y='34' fill='#555'>0</text>",
        f"<text x='{x0 + BAR_W - 30}' y='34' fill='#555'>{most} runs</text>",
    ]
    if not shown:
        out.append(f"<text x='4' y='{head + 15}' fill='#555'>no runs recorded yet</text>")
    for i, row in enumerate(shown):
        y = head + i * ROW
        # visible(): a control character is no XML (one would break the whole picture)
        whole = visible(f"{row.skill} · {row.script}")
        label = whole if len(whole) <= 44 else whole[:43] + "…"
        out.append(
            f"<text x='4' y='{y + 15}'>{html.escape(label)}"
            f"<title>{html.escape(visible(row.skill + ' ' + row.script))}</title></text>"
        )
        x = float(x0)
        for count, colour in (
            (row.completed, PASS),
            (row.failed, FAIL),
            (row.interrupted, STOPPED),
        ):
            if count:
                w = count / most * BAR_W
                out.append(
                    f"<rect x='{x:.1f}' y='{y + 4}' width='{w:.1f}' height='{ROW - 8}' "
                    f"fill='{colour}'/>"
                )
                x += w
        out.append(f"<text x='{x0 + BAR_W + 6}' y='{y + 15}'>{html.escape(_tail(row))}</text>")
    bottom = head + ROW * max(len(shown), 1)
    more = len(rows) - len(shown)
    legend = "green completed · red failed · grey stopped; times: median / p95"
    if more > 0:
        legend += f" · {more} more not shown"
    out.append(f"<text x='4' y='{bottom + 18}' fill='#555'>{html.escape(legend)}</text>")
    out.append("</svg>")
    return Chart("\n".join(out))


def _tail(row: UsageRow) -> str:
    parts = [f"{row.runs} run{'s' if row.runs != 1 else ''}"]
    if row.failure_rate:
        parts.append(f"{row.failure_rate:.0%} failed")
    if row.median_ms is not None and row.p95_ms is not None:
        parts.append(f"{_ms(row.median_ms)} / {_ms(row.p95_ms)}")
    if row.warm:
        parts.append(f"{row.warm} warm")
    refusals = row.declined + row.refused + row.unavailable
    if refusals:
        parts.append(f"{refusals} not run")
    return " · ".join(parts)


def _ms(value: float) -> str:
    return f"{value / 1000:.1f} s" if value >= 1000 else f"{value:.0f} ms"


__all__ = ["usage_chart"]
