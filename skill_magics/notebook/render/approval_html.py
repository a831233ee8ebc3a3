"""HTML view of an approval question (inside the panel's widget, and the static view a saved
notebook keeps): a title and one table, rows in the order of the text view.

Lays out the one model of the question (``core/panel/summary.py``); every string is escaped
here, and the ``⟨U+XXXX⟩`` markers of names and of what else the answer covers are
highlighted. Each script shows its first lines with the real line count and a "show all"
toggle with the whole text; a question for several skills shows one block per skill.
"""

from __future__ import annotations

import html
import re

from skill_magics.core.panel.summary import (
    PREVIEW_LINES,
    Block,
    Fact,
    Inputs,
    InstallPart,
    Kind,
    SkillPart,
    Summary,
    summarize,
)
from skill_magics.core.run.gating.approval import ApprovalRequest

Row = tuple[str, str, bool]  # (label HTML, value HTML, starts a new skill)
_SEPARATOR = " style='border-top:1px solid #ccc'"


def summary_html(request: ApprovalRequest | Summary) -> str:
    """The question as one ``<div>`` (the asker's line, if any, before it)."""
    summary = request if isinstance(request, Summary) else summarize(request)
    rows: list[Row] = []
    for install in summary.installs:
        rows += _install_rows(install)
    several = summary.kind is Kind.SEVERAL
    if not several and summary.skills:
        rows.append(_skill_row(summary.skills[0]))
    rows += [("Warning", f"<mark>{_e(note)}</mark>", False) for note in summary.warnings]
    if summary.inputs is not None:
        rows += _input_rows(summary.inputs)
    rows += _fact_rows(summary.facts)
    for part in summary.skills:
        if several:
            rows.append(_skill_row(part))
        rows += _part_rows(part)
    body = "".join(
        f"<tr{_SEPARATOR if new and i else ''}>"
        f"<th style='text-align:left;vertical-align:top;padding-right:1em'>{label}</th>"
        f"<td style='text-align:left'>{value}</td></tr>"
        for i, (label, value, new) in enumerate(rows)
    )
    return (
        f"{asker_html(summary.asker)}<div class='skill-magics-approval'><div><b>"
        f"{_e(summary.title)}</b></div><table>{body}</table></div>"
    )


def asker_html(asker: str) -> str:
    """Who asks, when it is not the person (a model), in the panel's colour; "" for none."""
    return f"<div style='color:#8a4b00'><b>{_e(asker)}</b></div>" if asker else ""


def _e(text: str) -> str:
    return html.escape(text)


def _code(text: str) -> str:
    return f"<code>{_e(text)}</code>"


def _highlight(escaped: str) -> str:
    """Highlight the ``⟨U+XXXX⟩`` markers of escaped HTML text."""
    return re.sub(r"⟨U\+[0-9A-F]+⟩", lambda m: f"<mark>{m.group()}</mark>", escaped)


def _skill_row(part: SkillPart) -> Row:
    return ("Skill", f"<b>{_highlight(_e(part.name))}</b>", True)


def _part_rows(part: SkillPart) -> list[Row]:
    rows: list[Row] = []
    for script in part.scripts:
        rows.append(("Script", _code(script.path), False))
        rows.append(("Interpreter", _code(script.interpreter), False))
        if script.command:
            rows.append(("Command", _code(script.command), False))
        if script.program_realpath:
            rows.append(("Program (real path)", _code(script.program_realpath), False))
        if script.cwd:
            rows.append(("Working directory", _code(script.cwd), False))
        if script.missing:
            # Named before anyone approves: %skills env NAME installs the packages.
            missing = ", ".join(_highlight(_e(name)) for name in script.missing)
            rows.append(("Missing (it may fail)", missing, False))
    if part.inputs is not None:
        rows += _input_rows(part.inputs)
    rows += _fact_rows(part.facts)
    for script in part.scripts:
        if script.preview is not None:
            size = f"<br><small>{script.size}</small>" if script.size else ""
            rows.append((_e(script.path) + size, _expandable(script.preview), False))
    return rows


def _input_rows(inputs: Inputs) -> list[Row]:
    every = " (every script)" if inputs.every else ""
    rows: list[Row] = []
    if inputs.code is not None:
        rows.append(("Code", _expandable(inputs.code), False))
    if inputs.arguments is not None:
        rows.append((f"Arguments{every}", _pre(inputs.arguments), False))
    if inputs.argv:
        rows.append((f"argv{every}", _code(inputs.argv), False))
    return rows


def _fact_rows(facts: tuple[Fact, ...]) -> list[Row]:
    return [(_e(f.label), f"<code>{_highlight(_e(f.text))}</code>", False) for f in facts]


def _pre(shown: str) -> str:
    return (
        "<pre style='margin:0;max-height:16em;overflow:auto;white-space:pre-wrap'>"
        f"{_e(shown)}</pre>"
    )


def _expandable(block: Block) -> str:
    """First lines with the real count; a <details> toggle holds the whole text."""
    head = _pre(block.head())
    count = block.count
    if count <= PREVIEW_LINES and not block.cut:
        return head
    note = " (cut at 200 KB)" if block.cut else ""
    return (
        f"{head}<details><summary>show all {count:,} lines{note}</summary>"
        "<pre style='margin:0;max-height:40em;overflow:auto;white-space:pre-wrap'>"
        f"{_e(block.whole())}</pre></details>"
    )


def _install_rows(part: InstallPart) -> list[Row]:
    rows: list[Row] = [("Skill", f"<b>{_e(part.name)}</b>", True)]
    rows += [(_e(f.label), _code(f.text), False) for f in part.facts]
    items = "".join(
        f"<li>{_code(f.path)} ({f.size:,} bytes){' <b>script</b>' if f.script else ''}</li>"
        for f in part.files
    )
    rows.append(
        (
            "Files",
            f"<details{' open' if len(part.files) <= 12 else ''}><summary>"
            f"{len(part.files):,} files</summary><ul style='margin:0'>{items}</ul></details>",
            False,
        )
    )
    if part.diff is not None:
        rows.append(("Diff", _expandable(part.diff), False))
    return rows


__all__ = ["asker_html", "summary_html"]
