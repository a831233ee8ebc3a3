"""Generic aligned-text and HTML tables (cells escaped, long text shortened)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from skill_magics.core.base.visible import visible
from skill_magics.notebook.render.format import shorten


@dataclass(frozen=True)
class Cell:
    """A table cell: ``text`` shown (shortened in text tables); ``html`` pre-escaped markup
    used instead in HTML; ``title`` a hover text (e.g. the full description)."""

    text: str
    html: str | None = None
    title: str = ""


def _text(cell: object) -> str:
    if cell is None:
        return ""
    return cell.text if isinstance(cell, Cell) else str(cell)


def text_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], max_width: int = 60
) -> str:
    """Columns padded to the widest cell (each cell one line, at most ``max_width`` chars).

    Control characters (terminal escapes from a skill's description, say) are shown visibly:
    in terminal IPython they would otherwise erase or rewrite lines of the table."""
    cells = [[shorten(visible(_text(c)), max_width) for c in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, value in enumerate(row):
            widths[i] = max(widths[i], len(value))

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) for v, w in zip(values, widths, strict=True)).rstrip()

    out = [line(headers), line(["-" * w for w in widths])]
    out.extend(line(row) for row in cells)
    return "\n".join(out)


def html_table(
    headers: Sequence[str], rows: Sequence[Sequence[object]], css_class: str = ""
) -> str:
    """A plain ``<table>``; readable unstyled (GitHub strips styles)."""
    cls = f' class="{html.escape(css_class)}"' if css_class else ""
    head = "".join(f'<th style="text-align:left">{html.escape(h)}</th>' for h in headers)
    body = []
    for row in rows:
        tds = []
        for cell in row:
            if isinstance(cell, Cell):
                content = cell.html if cell.html is not None else html.escape(cell.text)
                title = f' title="{html.escape(cell.title)}"' if cell.title else ""
            else:
                content, title = html.escape(_text(cell)), ""
            tds.append(f'<td style="text-align:left"{title}>{content}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def warnings_text(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    return "\n".join(["warnings:", *(f"  - {visible(str(w))}" for w in warnings)])


def warnings_html(warnings: Sequence[str]) -> str:
    if not warnings:
        return ""
    items = "".join(f"<li>{html.escape(str(w))}</li>" for w in warnings)
    return f"<p><strong>warnings</strong></p><ul>{items}</ul>"


__all__ = ["Cell", "text_table", "html_table", "warnings_text", "warnings_html"]
