"""Plain-text view of an approval question (terminal prompt, ``text/plain``, the side panel).

Lays out the one model of the question (``core/panel/summary.py``), whose strings are already
made safe to show: masked, control and bidi characters visible, so an ANSI sequence in a
script cannot erase the lines above it. ``full=True`` shows each script's (and diff's) whole
text, as much as the request holds, instead of its first lines.
"""

from __future__ import annotations

from skill_magics.core.panel.summary import (
    DIFF_LINES_SHOWN,
    INSTALL_FILES_SHOWN,
    Fact,
    Inputs,
    InstallPart,
    Kind,
    Script,
    Summary,
    summarize,
)
from skill_magics.core.run.gating.approval import ApprovalRequest


def summary_text(request: ApprovalRequest | Summary, *, full: bool = False) -> str:
    """The question as text: the lead line, warnings, then each skill (its scripts, their
    commands, inputs, what else the answer covers, the scripts' first lines); an install of
    skill files lists each skill's source, commit, files and diff."""
    summary = request if isinstance(request, Summary) else summarize(request)
    lines = [summary.asker] if summary.asker else []
    lines.append(summary.lead)
    for install in summary.installs:
        lines += _install_lines(install, full)
    lines += [f"  WARNING: {note}" for note in summary.warnings]
    if summary.inputs is not None:
        lines += _input_lines(summary.inputs, "  ", full)
    lines += _fact_lines(summary.facts, "  ")
    several = summary.kind is Kind.SEVERAL
    indent = "    " if several else "  "
    for part in summary.skills:
        if several:
            lines.append(f"  skill '{part.name}':")
        lines += _script_lines(part.scripts, indent)
        if part.inputs is not None:
            lines += _input_lines(part.inputs, indent, full)
        lines += _fact_lines(part.facts, indent)
        lines += _preview_lines(part.scripts, indent, full)
    return "\n".join(lines)


def _script_lines(scripts: tuple[Script, ...], indent: str) -> list[str]:
    lines = []
    for script in scripts:
        lines.append(f"{indent}{script.path}  (interpreter: {script.interpreter})")
        if script.command:
            lines.append(f"{indent}  command: {script.command}")
        if script.program_realpath:
            lines.append(f"{indent}  program (real path): {script.program_realpath}")
        if script.cwd:
            lines.append(f"{indent}  working directory: {script.cwd}")
        if script.missing:
            lines.append(f"{indent}  missing (it may fail): {', '.join(script.missing)}")
    return lines


def _input_lines(inputs: Inputs, indent: str, full: bool) -> list[str]:
    lines = []
    if inputs.code is not None:
        lines.append(f"{indent}Python code:")
        code = inputs.code.whole() if full else inputs.code.head()
        lines += [f"{indent}  " + line for line in code.splitlines()]
    if inputs.arguments_brief is not None:
        # json.dumps escapes newlines inside values: the only real newlines are its indentation.
        args = inputs.arguments_brief.splitlines() or ["{}"]
        every = ", every script" if inputs.every else ""
        lines.append(f"{indent}arguments (stdin JSON{every}): " + args[0])
        lines += [f"{indent}  " + line for line in args[1:]]
    if inputs.argv:
        lines.append(f"{indent}argv{' (every script)' if inputs.every else ''}: {inputs.argv}")
    return lines


def _fact_lines(facts: tuple[Fact, ...], indent: str) -> list[str]:
    return [
        f"{indent}{fact.label}: {fact.text}" if fact.label else f"{indent}  {fact.text}"
        for fact in facts
    ]


def _preview_lines(scripts: tuple[Script, ...], indent: str, full: bool) -> list[str]:
    lines = []
    for script in scripts:
        preview = script.preview
        if preview is None:
            continue
        size = f" ({script.size})" if script.size else ""
        if full:
            lines.append(f"{indent}{script.path}{size}:")
            body = preview.whole()
        else:
            lines.append(f"{indent}first lines of {script.path}{size}:")
            body = preview.head()
        lines += [f"{indent}  | " + line for line in body.splitlines()]
        if full and preview.cut:
            lines.append(
                f"{indent}  ... cut at {preview.chars:,} characters of {preview.size:,} bytes"
            )
    return lines


def _install_lines(part: InstallPart, full: bool) -> list[str]:
    lines = [f"  skill '{part.name}':"]
    lines += [f"    {fact.label}: {fact.text}" for fact in part.facts]
    shown = part.files if full else part.files[:INSTALL_FILES_SHOWN]
    for file in shown:
        mark = "  [script]" if file.script else ""
        lines.append(f"      {file.path} ({file.size:,} bytes){mark}")
    if len(part.files) > len(shown):
        lines.append(f"      ... and {len(part.files) - len(shown):,} more files")
    if part.diff is not None:
        lines.append("    diff:")
        body, more = part.diff.lines(None if full else DIFF_LINES_SHOWN)
        lines += [f"      | {line}" for line in body]
        if more:
            lines.append(f"      ... {more:,} more diff lines (show all)")
    return lines


__all__ = ["summary_text"]
