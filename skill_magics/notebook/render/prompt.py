"""HTML views for prompt engineering: the ``<available_skills>`` block's sizes and omissions,
validation problems.

Plain tables, everything escaped; readable on GitHub and nbviewer (no scripts, no CSS).
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def available_skills_html(block: Any) -> str:
    """Per-skill tokens and characters, what was shortened or left out and why, the total."""
    rows = []
    for entry in block.entries:
        note = f"shortened from {entry.original_chars:,} characters" if entry.shortened else ""
        rows.append(
            f"<tr><td><code>{_e(entry.name)}</code></td><td>{entry.tokens:,}</td>"
            f"<td>{entry.chars:,}</td><td>{_e(note)}</td></tr>"
        )
    for omission in block.omitted:
        rows.append(
            f"<tr><td><code>{_e(omission.name)}</code></td><td>-</td><td>-</td>"
            f"<td><strong>left out</strong>: {_e(omission.reason)}</td></tr>"
        )
    total = (
        f"{len(block.entries)} skills listed, {block.tokens:,} tokens, "
        f"{len(block):,} characters ({block.counter}); budget: {block.budget_text()}"
    )
    return (
        "<table class='skill-magics-available-skills'><thead><tr><th>skill</th><th>tokens</th>"
        f"<th>chars</th><th>note</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        f"<p>{_e(total)}</p>"
    )


def validation_html(results: Mapping[str, Sequence[str]]) -> str:
    """One section per skill: its problems, one per line, or that none were found."""
    parts = []
    for name, problems in results.items():
        if not problems:
            parts.append(f"<p>✓ <code>{_e(name)}</code>: no problems found</p>")
            continue
        items = "".join(f"<li><code>{_e(p)}</code></li>" for p in problems)
        count = f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
        parts.append(f"<p>✗ <code>{_e(name)}</code>: {count}</p><ul>{items}</ul>")
    return "<div class='skill-magics-validation'>" + "".join(parts) + "</div>"


def validation_text(results: Mapping[str, Sequence[str]]) -> str:
    lines = []
    for name, problems in results.items():
        if not problems:
            lines.append(f"✓ {name}: no problems found")
            continue
        lines.append(f"✗ {name}: {len(problems)} problem{'s' if len(problems) != 1 else ''}")
        lines += [f"  {p}" for p in problems]
    return "\n".join(lines)


__all__ = ["available_skills_html", "validation_html", "validation_text"]
