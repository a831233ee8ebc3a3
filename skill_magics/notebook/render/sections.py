"""What a result view shows, independent of the medium (text, HTML, widget).

Every view is built from ``header(run)``, ``message(run)`` and ``sections(run)`` so the three
renderings always agree. ``run`` is a SkillRunResult (duck-typed: skill, script, status,
result, message, arguments, argv, max_display_chars, live_text(), elapsed_ms).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from skill_magics.core.base.secrets import redact_known
from skill_magics.core.run.launching.sandbox_profiles import Off
from skill_magics.notebook.render.format import (
    arguments_preview,
    display_slice,
    format_count,
    format_duration,
    status_label,
    truncation_note,
)

TAB_TITLES = ("stdout", "stderr", "exit code", "signal", "timing")

WAITING_MESSAGE = "Waiting for approval — click a button above; the result will appear here"

# Shown when the caller gave no message for a status where nothing ran.
DEFAULT_MESSAGES = {
    "pending": WAITING_MESSAGE,
    "declined": "Declined: nothing ran. Run the cell again and choose Yes to run the script.",
    "approval_unavailable": (
        "Approval unavailable: nobody could be asked, so nothing ran. "
        "Pre-approve with SkillMagics.auto_approve or SKILL_MAGICS_AUTO_APPROVE."
    ),
    "refused": "Refused before running: the script did not pass the safety checks.",
}


@dataclass(frozen=True)
class Section:
    """One tab (widget) / details block (HTML) / block (text)."""

    title: str
    text: str  # raw stream text (may hold ANSI codes) or a plain description
    notes: tuple[str, ...] = ()
    is_output: bool = False  # stream text: ANSI rendered in HTML, stripped in text
    placeholder: str = ""  # what to show when text is empty


@dataclass(frozen=True)
class Header:
    """The one-line summary above the sections."""

    name: str  # skill.script-stem, as typed after %%skillrun
    script: str  # relative path
    status: str
    label: str  # human status label
    exit_code: str  # "exit 0" or ""
    time: str  # "12 ms", "3.20 s" or ""
    arguments: str  # one-line preview of stdin/argv, or ""
    sandbox: str = ""  # "sandbox: workspace-write · network off · writable: ...", or ""
    start: str = ""  # "warm", "cold", "cold (warm server starting)"; "" before it ran


def header(run: Any) -> Header:
    script = str(run.script or "")
    stem = PurePath(script).stem if script else ""
    name = f"{run.skill}.{stem}" if stem else str(run.skill)
    res = run.result
    exit_text = f"exit {res.exit_code}" if res is not None else ""
    ms = res.execution_time_ms if res is not None else run.elapsed_ms
    return Header(
        name=name,
        script=script,
        status=run.status,
        label=status_label(run.status),
        exit_code=exit_text,
        time=format_duration(ms),
        arguments=arguments_preview(run.arguments, run.argv or ()),
        sandbox=sandbox_text(getattr(res, "sandbox", None)),
        start=start_text(res),
    )


def start_text(res: Any) -> str:
    """How the process started (run/launching/warm/): "warm", "cold", or "cold (why not warm)"."""
    if res is None:
        return ""
    start = getattr(res, "start", "") or ""
    note = getattr(res, "start_note", "") or ""
    return f"{start} ({note})" if start and note else start


def sandbox_text(box: Any) -> str:
    """One line for a run's sandbox record (mode, network, writable paths), or ''."""
    if not box:
        return ""
    if box.get("note"):
        return f"sandbox: {box.get('mode', Off.name)} ({box['note']})"
    writable = ", ".join(str(p) for p in box.get("writable", ())) or "nothing"
    network = "on" if box.get("network") else "off"
    return f"sandbox: {box.get('mode')} · network {network} · writable: {writable}"


def message(run: Any) -> str:
    """The one-line explanation to show, or '' (a run that produced a result needs none)."""
    if run.message:
        return redact_known(str(run.message))  # an error may quote the input
    if run.result is None:
        return DEFAULT_MESSAGES.get(run.status, "")
    return ""


def sections(run: Any) -> list[Section]:
    """The five sections, or [] when nothing ran (then the message says why)."""
    if run.result is None and run.status != "running":
        return []
    return [
        _stream(run, "stdout"),
        _stream(run, "stderr"),
        _exit_code(run),
        _signal(run),
        _timing(run),
    ]


def _stream(run: Any, stream: str) -> Section:
    res = run.result
    if res is None:  # running: the live tail the result object keeps
        text, note = run.live_text(stream)
        live_notes = (note,) if note else ()
        return Section(stream, text, live_notes, is_output=True, placeholder="(no output yet)")
    full = getattr(res, stream)
    text, cut = display_slice(full, run.max_display_chars)
    notes: list[str] = []
    if cut:
        notes.append(truncation_note(stream, len(text), len(full)))
    if getattr(res, f"{stream}_truncated", False):
        written = getattr(res, f"{stream}_bytes", 0)
        notes.append(
            f"capture stopped at max_output_size: the script wrote {format_count(written)} "
            f"bytes to {stream}, the rest was discarded"
        )
    return Section(stream, text, tuple(notes), is_output=True, placeholder="(no output)")


def _exit_code(run: Any) -> Section:
    res = run.result
    if res is None:
        return Section("exit code", "(still running)")
    code = res.exit_code
    if res.timed_out:
        why = "timed out: the script was killed when the time limit passed"
    elif res.signal:
        why = f"killed by signal {res.signal}"
    elif code == 0:
        why = "success"
    else:
        why = "failure: see stderr"
    return Section("exit code", f"{code} ({why})")


def _signal(run: Any) -> Section:
    res = run.result
    if res is None:
        return Section("signal", "(still running)")
    if res.signal:
        number = f" ({res.signal_number})" if res.signal_number is not None else ""
        return Section("signal", f"{res.signal}{number}")
    return Section("signal", "none")


def _timing(run: Any) -> Section:
    res = run.result
    if res is None:
        return Section("timing", f"elapsed: {format_duration(run.elapsed_ms) or '0 ms'} (running)")
    lines = [
        f"execution time: {format_duration(res.execution_time_ms)} "
        f"({res.execution_time_ms:.1f} ms)",
        f"timed out: {'yes' if res.timed_out else 'no'}",
    ]
    notes = []
    for stream in ("stdout", "stderr"):
        written = getattr(res, f"{stream}_bytes", 0)
        capped = getattr(res, f"{stream}_truncated", False)
        line = f"{stream}: {format_count(written)} bytes written"
        if capped:
            line += ", capture capped at max_output_size"
        lines.append(line)
        full = getattr(res, stream)
        if 0 < run.max_display_chars < len(full):
            notes.append(truncation_note(stream, run.max_display_chars, len(full)))
    lines.append(f"script: {run.script}")
    return Section("timing", "\n".join(lines), tuple(notes))


__all__ = [
    "TAB_TITLES",
    "WAITING_MESSAGE",
    "DEFAULT_MESSAGES",
    "Section",
    "Header",
    "header",
    "message",
    "sections",
]
