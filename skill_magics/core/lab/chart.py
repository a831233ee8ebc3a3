"""The trigger-rate chart: one horizontal bar per query, as a self-contained SVG.

Plain text (no plotting library): it shows in Jupyter (``_repr_svg_``), inside the report's
static HTML, on GitHub and nbviewer. Bars are green when the query passed and red when it
failed; the dashed line is the threshold; ``▲`` marks queries that should trigger, ``▽``
those that should not; queries with errors or runs not sent say so at the bar's end.
"""

from __future__ import annotations

import html
from typing import Any

from skill_magics.core.base.svgchart import FAIL, PASS, Chart

ROW = 22
LABEL_W = 360
BAR_W = 300


def trigger_chart(report: Any, *, title: str | None = None) -> Chart:
    """The chart of a TriggerReport's results."""
    results = report.results
    head = 40
    height = head + ROW * len(results) + 28
    width = LABEL_W + BAR_W + 150
    x0 = LABEL_W
    title = title or f"Trigger rate per query: {report.skill} ({report.model})"
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}' "
        f"viewBox='0 0 {width} {height}' font-family='sans-serif' font-size='12'>",
        f"<title>{html.escape(title)}</title>",
        f"<text x='4' y='16' font-weight='bold'>{html.escape(title)}</text>",
        f"<text x='{x0}' y='34' fill='#555'>0%</text>",
        f"<text x='{x0 + BAR_W - 30}' y='34' fill='#555'>100%</text>",
    ]
    for i, r in enumerate(results):
        y = head + i * ROW
        mark = "▲" if r.should_trigger else "▽"
        label = " ".join(r.query.split())
        if len(label) > 52:
            label = label[:51] + "…"
        part = f" [{r.part}]" if r.part else ""
        out.append(
            f"<text x='4' y='{y + 15}'><tspan fill='#333'>{mark}</tspan> "
            f"{html.escape(label + part)}<title>{html.escape(r.query)}</title></text>"
        )
        out.append(f"<rect x='{x0}' y='{y + 4}' width='{BAR_W}' height='{ROW - 8}' fill='#eee'/>")
        rate = r.trigger_rate or 0.0
        colour = PASS if r.passed else FAIL
        out.append(
            f"<rect x='{x0}' y='{y + 4}' width='{rate * BAR_W:.1f}' height='{ROW - 8}' "
            f"fill='{colour}'/>"
        )
        shown = "no answer" if r.trigger_rate is None else f"{r.triggers}/{r.runs}"
        notes = []
        if r.errors:
            notes.append(f"{r.errors} error{'s' if r.errors != 1 else ''}")
        if r.not_run:
            notes.append(f"{r.not_run} not run")
        tail = shown + (f" ({', '.join(notes)})" if notes else "")
        out.append(f"<text x='{x0 + BAR_W + 6}' y='{y + 15}'>{html.escape(tail)}</text>")
    line_x = x0 + report.threshold * BAR_W
    bottom = head + ROW * len(results)
    out.append(
        f"<line x1='{line_x:.1f}' y1='{head}' x2='{line_x:.1f}' y2='{bottom}' stroke='#000' "
        "stroke-dasharray='4 3'/>"
    )
    out.append(
        f"<text x='4' y='{bottom + 18}' fill='#555'>▲ should trigger · ▽ should not · "
        f"dashed: threshold {report.threshold:g} · green passed, red failed</text>"
    )
    out.append("</svg>")
    return Chart("\n".join(out))


__all__ = ["FAIL", "PASS", "Chart", "trigger_chart"]
