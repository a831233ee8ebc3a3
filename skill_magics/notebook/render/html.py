"""Static HTML view of a skill run: works without JavaScript or CSS.

GitHub and nbviewer drop ``<style>``, scripts and often ``style`` attributes, so the structure
carries the meaning: a header line, then stacked ``<details>`` blocks named like the widget
tabs (stdout | stderr | exit code | signal | timing). Everything is escaped.
"""

from __future__ import annotations

import html
from typing import Any

from skill_magics.notebook.render.ansi import ansi_to_html
from skill_magics.notebook.render.format import status_colour
from skill_magics.notebook.render.sections import Section, header, message, sections

PRE_STYLE = (
    "white-space:pre-wrap;word-break:break-word;max-height:32em;overflow:auto;margin:0.2em 0"
)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def badge_html(status: str, label: str) -> str:
    colour = status_colour(status)
    return (
        f'<span class="skill-magics-status skill-magics-{_e(status)}" '
        f'style="background:{colour};color:#fff;border-radius:0.6em;padding:0 0.5em">'
        f"{_e(label)}</span>"
    )


def header_html(run: Any) -> str:
    """One line: bold name, status badge, exit code, time, script path; then arguments."""
    h = header(run)
    bits = [f"<strong><code>{_e(h.name)}</code></strong>", badge_html(h.status, h.label)]
    bits += [_e(x) for x in (h.exit_code, h.time, h.start) if x]
    if h.script:
        bits.append(f"<code>{_e(h.script)}</code>")
    line = f"<div>{' · '.join(bits)}</div>"
    if h.arguments:
        line += f"<div><small>{_e(h.arguments)}</small></div>"
    if h.sandbox:
        line += f"<div><small>{_e(h.sandbox)}</small></div>"
    return line


def message_html(run: Any) -> str:
    text = message(run)
    return f"<p><em>{_e(text)}</em></p>" if text else ""


def section_body_html(section: Section) -> str:
    """``<pre>`` with the section text (ANSI colours rendered) plus its notes."""
    if section.is_output:
        body = ansi_to_html(section.text) if section.text else ""
    else:
        body = _e(section.text)
    if not body:
        body = f"<em>{_e(section.placeholder)}</em>"
    notes = "".join(f"<div><small><em>{_e(n)}</em></small></div>" for n in section.notes)
    return f'<pre style="{PRE_STYLE}">{body}</pre>{notes}'


def result_html(run: Any) -> str:
    """The whole static view as one ``<div>``."""
    parts = [f'<div class="skill-magics-result">{header_html(run)}{message_html(run)}']
    for section in sections(run):
        # Output with content starts open; short facts start closed (the header has them).
        is_open = section.title == "stdout" or (section.is_output and bool(section.text))
        attr = " open" if is_open else ""
        parts.append(
            f"<details{attr}><summary>{_e(section.title)}</summary>"
            f"{section_body_html(section)}</details>"
        )
    parts.append("</div>")
    return "".join(parts)


__all__ = [
    "PRE_STYLE",
    "badge_html",
    "header_html",
    "message_html",
    "section_body_html",
    "result_html",
]
