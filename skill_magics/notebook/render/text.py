"""Plain-text view of a skill run (terminal IPython, logs, ``text/plain``)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.render.ansi import strip_ansi
from skill_magics.notebook.render.sections import header, message, sections


def header_text(run: Any) -> str:
    """``pdf.extract · completed · exit 0 · 12 ms · warm · scripts/extract.py``"""
    h = header(run)
    parts = [h.name, h.label, h.exit_code, h.time, h.start, h.script]
    return " · ".join(p for p in parts if p)


def result_text(run: Any) -> str:
    """Header, arguments, message, then stdout/stderr blocks; ANSI codes stripped."""
    h = header(run)
    lines = [header_text(run)]
    if h.arguments:
        lines.append(f"  {h.arguments}")
    if h.sandbox:
        lines.append(f"  {h.sandbox}")
    note = message(run)
    if note:
        lines.append(note)
    by_title = {s.title: s for s in sections(run)}
    for title in ("stdout", "stderr"):
        section = by_title.get(title)
        if section is None:
            continue
        if title == "stderr" and not section.text and not section.notes:
            continue  # an empty stderr block is noise in a terminal
        lines.append(f"--- {title} ---")
        body = strip_ansi(section.text).rstrip("\n")
        lines.append(body if body else section.placeholder)
        lines.extend(f"[{n}]" for n in section.notes)
    res = run.result
    if res is not None and res.signal:
        lines.append(f"signal: {by_title['signal'].text}")
    return "\n".join(lines)


__all__ = ["header_text", "result_text"]
