"""The approval panel: exactly three buttons (Yes once / Yes in session / No).

The panel shows what would run (skill, script path, interpreter, the exact command with the
program's real path, arguments, argv, and the script's first lines with its real line count
and a "show all" toggle). A request for several skills at once (``request.parts``, from
``%skill_context a b``) shows each skill with its scripts, in order, under one set of
buttons; the decision covers all of them. Control characters and bidi overrides in any of
it are shown as visible escapes, so the text cannot hide or reorder what runs. The first
decision wins: after it every button is disabled and later clicks do nothing. ``decided_by``
records who or what decided ("button 'Yes once'", ...).

ipywidgets is imported only when the widget is first built, so ``%load_ext`` stays fast.

Example (not run as a doctest: it builds a widget for an approval request)::

    panel = ApprovalPanel(request)
    display(panel)                  # widget in Jupyter, text/HTML elsewhere
    panel.buttons["yes_once"].click()
    panel.decision, panel.decided_by
    # -> (<Decision.YES_ONCE: 'yes_once'>, "button 'Yes once'")
"""

from __future__ import annotations

import html
import json
import re
import shlex
import threading
import time
from collections.abc import Callable
from typing import Any

from skill_magics.core.base.secrets import cut_known, redact_known
from skill_magics.core.base.visible import mark_non_ascii, visible
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision, ScriptToApprove
from skill_magics.notebook.compat import WIDGET_MIME, widget_view

DECISIONS: tuple[Decision, ...] = (Decision.YES_ONCE, Decision.YES_IN_SESSION, Decision.NO)
_BUTTON_STYLES = {
    Decision.YES_ONCE: "success",
    Decision.YES_IN_SESSION: "info",
    Decision.NO: "danger",
}
ARGUMENTS_PREVIEW_CHARS = 2000
PREVIEW_LINES = 12


def arguments_text(arguments: Any, limit: int = ARGUMENTS_PREVIEW_CHARS) -> str:
    """The arguments as people read them (pretty JSON, secret values masked, then cut at
    ``limit`` characters): the panel is saved with the notebook."""
    if arguments is None:
        return "{}"
    try:
        text = json.dumps(arguments, indent=1, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(arguments)
    text = redact_known(text)
    if len(text) > limit:
        text = text[:limit] + f"\n... ({len(text) - limit} more characters)"
    return text


def first_lines(text: str, n: int = PREVIEW_LINES, total: int | None = None) -> str:
    """The first ``n`` lines, then how many more there are (``total``: the file's real count,
    which may exceed what ``text`` holds)."""
    lines = text.splitlines()
    count = max(total or 0, len(lines))
    shown = "\n".join(lines[:n])
    if count > n:
        shown += f"\n... {count - n} more lines ({count} total)"
    return shown


def _safe(text: str) -> str:
    """One-line text for a prompt: secret values masked, then control, line-separator and
    bidi characters made visible."""
    return visible(redact_known(text))


def _name(text: str) -> str:
    """A name (skill, package, program): like _safe, and non-ASCII letters marked
    (``requ⟨U+0435⟩sts``), so a lookalike never reads as the name it imitates."""
    return mark_non_ascii(text)


def _safe_block(text: str) -> str:
    """Multi-line text (code): like _safe, but tabs and newlines stay."""
    return visible(redact_known(text), keep="\t\n")


def _words(words: Any) -> str:
    """A command line to show: each word redacted BEFORE shlex quotes it (quoting splits a
    value holding a ' into pieces no redaction would recognise)."""
    return shlex.join(redact_known(str(w)) for w in words)


def _command_text(script: ScriptToApprove) -> str:
    return _safe(_words(script.command)) if script.command else ""


def _size_text(script: ScriptToApprove) -> str:
    if not script.lines and not script.size:
        return ""
    return f"{script.lines:,} lines, {script.size:,} bytes"


def _preview_cut(script: ScriptToApprove) -> bool:
    """Does the request hold less than the whole file (over PREVIEW_MAX_BYTES)?"""
    return bool(script.size) and len(script.preview.encode("utf-8", "replace")) < script.size


def summary_text(request: ApprovalRequest, *, full: bool = False) -> str:
    """Plain-text description of a request (terminal prompt, text fallback).

    Every value is shown with control characters escaped (an ANSI sequence in a script
    cannot erase the lines above it) and bidi overrides marked. ``full=True`` shows each
    script's whole text (as much as the request holds) instead of its first lines. A combined
    request lists each skill (its scripts, commands and first lines) in turn. An install of
    skill files lists each skill's source, commit, files and scripts (and an update's diff).
    """
    if is_skill_install(request):
        return _install_text(request, full)
    if not request.is_combined:
        wants = "wants packages installed" if env_only(request) else "wants to run"
        lines = [f"Approval needed: skill '{_name(request.skill_name)}' {wants}:"]
        lines += [f"  WARNING: {_safe(note)}" for note in request.name_notes]
        lines += _script_lines(request, "  ")
        lines += _input_lines(request, "  ", full)
        lines += _extra_lines(request, "  ")
        lines += _preview_lines(request, "  ", full)
        return "\n".join(lines)
    parts = request.parts
    count = sum(len(part.scripts) for part in parts)
    names = ", ".join(f"'{_name(part.skill_name)}'" for part in parts)
    lines = [
        f"Approval needed: {len(parts)} skills ({names}) want to run {count} "
        f"script{'s' if count != 1 else ''}; one answer decides for all of them:"
    ]
    lines += [f"  WARNING: {_safe(note)}" for note in request.name_notes]
    shared = request.shares_inputs
    if shared:
        lines += _input_lines(request, "  ", full, every=True)
    lines += _extra_lines(request, "  ")
    for part in parts:
        lines.append(f"  skill '{_name(part.skill_name)}':")
        lines += _script_lines(part, "    ")
        if not shared:
            lines += _input_lines(part, "    ", full)
        lines += _extra_lines(part, "    ")
        lines += _preview_lines(part, "    ", full)
    return "\n".join(lines)


def _script_lines(request: ApprovalRequest, indent: str) -> list[str]:
    lines = []
    for script in request.scripts:
        lines.append(f"{indent}{_safe(script.path)}  (interpreter: {_safe(script.interpreter)})")
        if script.command:
            lines.append(f"{indent}  command: {_command_text(script)}")
        if script.program_realpath:
            lines.append(f"{indent}  program (real path): {_safe(script.program_realpath)}")
        if script.cwd:
            lines.append(f"{indent}  working directory: {_safe(script.cwd)}")
        if script.missing:
            missing = ", ".join(_name(m) for m in script.missing)
            lines.append(f"{indent}  missing (it may fail): {missing}")
    return lines


def _input_lines(
    request: ApprovalRequest, indent: str, full: bool, every: bool = False
) -> list[str]:
    lines = []
    if request.code is not None:
        lines.append(f"{indent}Python code:")
        code = _safe_block(request.code if full else first_lines(request.code))
        lines += [f"{indent}  " + line for line in code.splitlines()]
    if shows_arguments(request):
        # json.dumps escapes newlines inside values: the only real newlines are its indentation.
        args = _safe_block(arguments_text(request.arguments, 300)).splitlines() or ["{}"]
        every_note = ", every script" if every else ""
        lines.append(f"{indent}arguments (stdin JSON{every_note}): " + args[0])
        lines += [f"{indent}  " + line for line in args[1:]]
    if request.argv:
        lines.append(
            f"{indent}argv{' (every script)' if every else ''}: " + _safe(_words(request.argv))
        )
    return lines


def _extras(request: ApprovalRequest) -> list[tuple[str, str]]:
    """(label, plain text) for what else the decision covers: a scope of model-chosen runs,
    a batch, an install, a sandbox, how the processes start (warm or cold: the same run
    either way), secrets."""
    rows = _scope_rows(request) + _batch_rows(request) + _package_install_rows(request)
    sandbox = request.sandbox
    if sandbox is not None:
        rows.append(("Sandbox", sandbox.mode))
        rows.append(("network", "on" if sandbox.network else "off"))
        rows.append(("writable", ", ".join(sandbox.writable) or "nothing"))
    rows += _provenance_rows(request) + _mcp_rows(request) + _signature_rows(request)
    if request.start:
        rows.append(("Start", request.start))
    secrets = request.secrets
    if secrets is not None:
        shown = [
            f"{name} ({'missing: enter it below' if name in secrets.missing else 'set'})"
            for name in secrets.declared
        ]
        rows.append(("Secrets", ", ".join(shown)))
    return rows


def _scope_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    scope = request.scope
    if scope is None:
        return []
    rows = [("Scope", scope.summary())]
    for i, prompt in enumerate(scope.sample, 1):
        rows.append((f"prompt {i}", _one_line(prompt)))
    if scope.agent_runs > len(scope.sample):
        rows.append(("", f"... {scope.agent_runs - len(scope.sample):,} more agent runs"))
    return rows


def _batch_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    batch = request.batch
    if batch is None:
        return []
    shown = [_one_line(item) for item in batch.sample]
    rows = [("Batch", f"{batch.count:,} items, each one run")]
    for i, item in enumerate(shown, 1):
        rows.append((f"item {i}", item))
    if batch.count > len(shown):
        rows.append(("", f"... and {batch.count - len(shown):,} more"))
    return rows


def _package_install_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    install = request.install
    if install is None:
        return []
    rows = [("Install first", ", ".join(_name(p) for p in install.packages) or "(nothing)")]
    if install.target:
        rows.append(("into", install.target))
    if install.command:
        rows.append(("install command", shlex.join(install.command)))
    return rows


def _provenance_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    provenance = request.provenance
    if provenance is None:
        return []
    rows = [("Installed from", provenance.source)]
    if provenance.matches:
        rows.append(("lock", f"files match {provenance.lock}"))
        return rows
    listed = ", ".join(provenance.changes[:6])
    more = len(provenance.changes) - 6
    rows.append(
        (
            "lock",
            f"{len(provenance.changes)} CHANGED since the install ({listed}"
            + (f", +{more} more" if more > 0 else "")
            + f"; %skills verify lists them, {provenance.lock})",
        )
    )
    return rows


def _signature_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    """Who signed the skill (verified at install, core/trust), or why it is unsigned: what a
    person clicking Yes must see (docs/trust.md)."""
    signature = request.signature
    return [] if signature is None else [("Signature", signature.describe())]


def _mcp_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    """An MCP server's skill: where its code comes from, the digest set a "Yes in session"
    binds to, and what the server changed since the copy cached before."""
    mcp = request.mcp
    if mcp is None:
        return []
    rows = [("From MCP server", f"{mcp.origin} ({mcp.server})"), ("digest set", mcp.binding)]
    if mcp.changes:
        listed = ", ".join(mcp.changes[:8])
        more = len(mcp.changes) - 8
        rows.append(
            (
                "server changed",
                f"{len(mcp.changes)} file(s) since the copy fetched before: {listed}"
                + (f", +{more} more" if more > 0 else ""),
            )
        )
    return rows


def _one_line(value: Any, limit: int = 200) -> str:
    """A batch item as compact JSON (argv lists too), secret values masked, then cut at
    ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return cut_known(text, limit)


def _extra_lines(request: ApprovalRequest, indent: str) -> list[str]:
    return [
        f"{indent}{label}: {_safe(text)}" if label else f"{indent}  {_safe(text)}"
        for label, text in _extras(request)
    ]


def _extra_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    return [
        (html.escape(label), f"<code>{_highlight(_esc(text))}</code>")
        for label, text in _extras(request)
    ]


def _preview_lines(request: ApprovalRequest, indent: str, full: bool) -> list[str]:
    lines = []
    for script in request.scripts:
        if not script.preview:
            continue
        size = _size_text(script)
        size = f" ({size})" if size else ""
        name = _safe(script.path)
        if full:
            lines.append(f"{indent}{name}{size}:")
            body = _safe_block(script.preview)
        else:
            lines.append(f"{indent}first lines of {name}{size}:")
            body = _safe_block(first_lines(script.preview, total=script.lines))
        lines += [f"{indent}  | " + line for line in body.splitlines()]
        if full and _preview_cut(script):
            lines.append(
                f"{indent}  ... cut at {len(script.preview):,} characters of {script.size:,} bytes"
            )
    return lines


def summary_html(request: ApprovalRequest) -> str:
    """HTML description of a request (inside the widget, and the static fallback).

    Each script shows its exact command, its first lines with the real line count, and a
    "show all" toggle with the whole text (up to PREVIEW_MAX_BYTES). Bidi overrides and
    control characters appear as visible markers, never as formatting. A combined request
    shows one block per skill (skill, its scripts, their first lines), in order.
    """
    if is_skill_install(request):
        return _install_html(request)
    if not request.is_combined:
        rows = [("Skill", f"<b>{_esc_name(request.skill_name)}</b>")]
        rows += _note_rows(request)
        rows += _script_rows(request)
        rows += _input_rows(request)
        rows += _extra_rows(request)
        rows += _preview_rows(request)
        count = len(request.scripts)
        title = (
            "Approve installing packages for this skill?"
            if env_only(request)
            else "Approve running this skill script?"
            if count <= 1
            else f"Approve running these {count} scripts of this skill?"
        )
    else:
        shared = request.shares_inputs
        count = sum(len(part.scripts) for part in request.parts)
        rows = _note_rows(request)
        if shared:
            rows += _input_rows(request, " (every script)")
        rows += _extra_rows(request)
        for part in request.parts:
            rows.append(("Skill", f"<b>{_esc_name(part.skill_name)}</b>"))
            rows += _script_rows(part)
            if not shared:
                rows += _input_rows(part)
            rows += _extra_rows(part)
            rows += _preview_rows(part)
        title = (
            f"Approve running {count} script{'s' if count != 1 else ''} of "
            f"{len(request.parts)} skills? One answer decides for all of them."
        )
    body = "".join(
        f"<tr{_SEPARATOR if k == 'Skill' and i else ''}>"
        f"<th style='text-align:left;vertical-align:top;padding-right:1em'>{k}</th>"
        f"<td style='text-align:left'>{v}</td></tr>"
        for i, (k, v) in enumerate(rows)
    )
    return (
        f"<div class='skill-magics-approval'><div><b>{html.escape(title)}</b></div>"
        f"<table>{body}</table></div>"
    )


_SEPARATOR = " style='border-top:1px solid #ccc'"


def _script_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    rows = []
    for script in request.scripts:
        rows.append(("Script", f"<code>{_esc(script.path)}</code>"))
        rows.append(("Interpreter", f"<code>{_esc(script.interpreter)}</code>"))
        if script.command:
            rows.append(("Command", f"<code>{_esc(_words(script.command))}</code>"))
        if script.program_realpath:
            rows.append(("Program (real path)", f"<code>{_esc(script.program_realpath)}</code>"))
        if script.cwd:
            rows.append(("Working directory", f"<code>{_esc(script.cwd)}</code>"))
        if script.missing:
            # Named before anyone approves: %skills env NAME installs the packages.
            missing = ", ".join(_esc_name(m) for m in script.missing)
            rows.append(("Missing (it may fail)", missing))
    return rows


def env_only(request: ApprovalRequest) -> bool:
    """A package install into the skill's environment (``%skills env``): nothing of the
    skill runs."""
    return request.install is not None and not request.scripts


def shows_arguments(request: ApprovalRequest) -> bool:
    """Is there stdin JSON worth a row? Not for an install, nor the empty ``{}`` of an
    argv run (its argv row says what it gets); an empty ``{}`` alone is shown: it is what
    the scripts get (``%skill_context`` without ``--args``, issue 44)."""
    if env_only(request) or request.arguments is None:
        return False
    return request.arguments != {} or not request.argv


def _input_rows(request: ApprovalRequest, label: str = "") -> list[tuple[str, str]]:
    rows = []
    if shows_arguments(request):
        rows.append((f"Arguments{label}", _pre(arguments_text(request.arguments))))
    if request.argv:
        rows.append((f"argv{label}", f"<code>{_esc(_words(request.argv))}</code>"))
    if request.code is not None:
        rows.append(("Code", _expandable(request.code, len(request.code.splitlines()))))
    return rows


def _preview_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    rows = []
    for script in request.scripts:
        if script.preview:
            size = _size_text(script)
            label = f"{_esc(script.path)}" + (f"<br><small>{size}</small>" if size else "")
            rows.append((label, _expandable(script.preview, script.lines, _preview_cut(script))))
    return rows


def _esc(text: str) -> str:
    return html.escape(_safe(text))


def _esc_name(text: str) -> str:
    """A name in HTML: its non-ASCII letters marked, and highlighted."""
    return _highlight(html.escape(_name(text)))


def _highlight(escaped: str) -> str:
    """Highlight the ``⟨U+XXXX⟩`` markers of escaped HTML text."""
    return re.sub(r"⟨U\+[0-9A-F]+⟩", lambda m: f"<mark>{m.group()}</mark>", escaped)


def _note_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    return [("Warning", f"<mark>{_esc(note)}</mark>") for note in request.name_notes]


def _pre(text: str) -> str:
    return (
        "<pre style='margin:0;max-height:16em;overflow:auto;white-space:pre-wrap'>"
        f"{html.escape(_safe_block(text))}</pre>"
    )


def _expandable(text: str, total: int, cut: bool = False) -> str:
    """First lines with the real count; a <details> toggle holds the whole text."""
    head = _pre(first_lines(text, total=total))
    count = max(total, len(text.splitlines()))
    if count <= PREVIEW_LINES and not cut:
        return head
    note = " (cut at 200 KB)" if cut else ""
    return (
        f"{head}<details><summary>show all {count:,} lines{note}</summary>"
        "<pre style='margin:0;max-height:40em;overflow:auto;white-space:pre-wrap'>"
        f"{html.escape(_safe_block(text))}</pre></details>"
    )


# -- installing skill files (%skills install / update / sync) ---------------------------------

INSTALL_FILES_SHOWN = 40  # files listed per skill in the text view (the HTML lists all)
DIFF_LINES_SHOWN = 60  # diff lines in the text view unless full


def is_skill_install(request: ApprovalRequest) -> bool:
    """Is ``request`` an install of skill files (nothing runs)?"""
    return all(part.skill_install is not None for part in request.requests)


def _install_title(request: ApprovalRequest) -> str:
    parts = request.requests
    info = parts[0].skill_install
    action = info.action if info is not None else "install"
    verb = {"install": "Install", "update": "Update", "sync": "Re-create"}.get(action, "Install")
    names = ", ".join(f"'{_safe(p.skill_name)}'" for p in parts)
    noun = "skill" if len(parts) == 1 else f"{len(parts)} skills"
    tail = "; one answer decides for all of them" if len(parts) > 1 else ""
    return (
        f"{verb} {noun} {names}? Their files are copied into the skills folder; nothing runs "
        f"now (each run still asks){tail}"
    )


def _install_rows(part: ApprovalRequest) -> list[tuple[str, str]]:
    """(label, plain text) for one skill's install: source, commit, target, files..."""
    info = part.skill_install
    assert info is not None
    rows = [("from", info.source)]
    rows.append(("commit", info.commit or "(not a git source: the files as read now)"))
    if info.path:
        rows.append(("folder in source", info.path))
    rows.append(("into", info.target))
    if info.signature:
        rows.append(("signature", info.signature))
    if info.replaces:
        rows.append(("replaces", info.replaces))
    rows.append(("tree digest", info.tree))
    rows.append(("files", f"{len(info.files):,} files, {info.size:,} bytes"))
    rows.append(("scripts", ", ".join(info.scripts) or "(none)"))
    if info.changes:
        rows.append(("changes", "; ".join(info.changes)))
    return rows


def _install_text(request: ApprovalRequest, full: bool) -> str:
    lines = [f"Approval needed: {_install_title(request)}"]
    for part in request.requests:
        info = part.skill_install
        assert info is not None
        lines.append(f"  skill '{_safe(part.skill_name)}':")
        lines += [f"    {label}: {_safe(text)}" for label, text in _install_rows(part)]
        scripts = set(info.scripts)
        shown = info.files if full else info.files[:INSTALL_FILES_SHOWN]
        for path, size in shown:
            mark = "  [script]" if path in scripts else ""
            lines.append(f"      {_safe(path)} ({size:,} bytes){mark}")
        if len(info.files) > len(shown):
            lines.append(f"      ... and {len(info.files) - len(shown):,} more files")
        if info.diff:
            diff = info.diff.splitlines()
            lines.append("    diff:")
            body = diff if full else diff[:DIFF_LINES_SHOWN]
            lines += [f"      | {line}" for line in _safe_block("\n".join(body)).splitlines()]
            if len(diff) > len(body):
                lines.append(f"      ... {len(diff) - len(body):,} more diff lines (show all)")
    return "\n".join(lines)


def _install_html(request: ApprovalRequest) -> str:
    rows: list[tuple[str, str]] = []
    for part in request.requests:
        info = part.skill_install
        assert info is not None
        rows.append(("Skill", f"<b>{_esc(part.skill_name)}</b>"))
        rows += [(html.escape(k), f"<code>{_esc(v)}</code>") for k, v in _install_rows(part)]
        scripts = set(info.scripts)
        items = "".join(
            f"<li><code>{_esc(path)}</code> ({size:,} bytes)"
            f"{' <b>script</b>' if path in scripts else ''}</li>"
            for path, size in info.files
        )
        rows.append(
            (
                "Files",
                f"<details{' open' if len(info.files) <= 12 else ''}><summary>"
                f"{len(info.files):,} files</summary><ul style='margin:0'>{items}</ul></details>",
            )
        )
        if info.diff:
            rows.append(("Diff", _expandable(info.diff, len(info.diff.splitlines()))))
    body = "".join(
        f"<tr{_SEPARATOR if k == 'Skill' and i else ''}>"
        f"<th style='text-align:left;vertical-align:top;padding-right:1em'>{k}</th>"
        f"<td style='text-align:left'>{v}</td></tr>"
        for i, (k, v) in enumerate(rows)
    )
    return (
        f"<div class='skill-magics-approval'><div><b>{html.escape(_install_title(request))}"
        f"</b></div><table>{body}</table></div>"
    )


# on_inputs(skill, secrets, network, by) -> problems: what the panel's fields gave (docs/
# architecture.md, *Sandbox and secrets*), applied when a Yes is clicked, before the run.
OnInputs = Callable[[str, dict[str, str], bool, str], list[str]]


class ApprovalPanel:
    """Three buttons for one ApprovalRequest; thread-safe, first decision wins.

    ``on_inputs``: receives, on a Yes, the values typed into the masked fields of missing
    secrets and the "allow network" choice, per skill; the fields are cleared right after,
    so no value stays in the widget state a notebook saves.
    """

    def __init__(
        self, request: ApprovalRequest, on_inputs: OnInputs | None = None, asker: str = ""
    ) -> None:
        self.request = request
        self.on_inputs = on_inputs
        self.asker = asker  # shown first: who is asking when it is not the person (a model)
        self.secret_fields: dict[tuple[str, str], Any] = {}  # (skill, name) -> Password
        self.network_boxes: dict[str, Any] = {}  # skill -> Checkbox
        self.decision: Decision | None = None
        self.decided_by: str | None = None
        self.decided_at: float | None = None  # time.time() of the decision
        self.withdrawn: str | None = None  # why nobody can decide any more (cell interrupted)
        self.event = threading.Event()
        self._lock = threading.Lock()
        self._build_lock = threading.Lock()
        self._callbacks: list[Callable[[Decision, str], None]] = []
        self._widget: Any = None
        self._status: Any = None
        self._buttons: dict[str, Any] = {}

    # -- the widget ---------------------------------------------------------------------
    @property
    def buttons(self) -> dict[str, Any]:
        """Decision value -> ipywidgets Button ("yes_once", "yes_in_session", "no")."""
        with self._build_lock:
            if self._widget is None:
                self._build()
        return self._buttons

    @property
    def widget(self) -> Any:
        """The ipywidgets VBox (built on first use)."""
        with self._build_lock:
            if self._widget is None:
                self._build()
        return self._widget

    def _build(self) -> None:
        import ipywidgets as w

        for decision in DECISIONS:
            button = w.Button(
                description=decision.label,
                button_style=_BUTTON_STYLES[decision],
                tooltip=self._tooltips()[decision],
                layout=w.Layout(width="auto"),
            )
            button.on_click(lambda _b, d=decision: self.decide(d, f"button '{d.label}'"))
            self._buttons[decision.value] = button
        self._status = w.HTML("")
        self._widget = w.VBox(
            [
                w.HTML(self._asker_html() + summary_html(self.request)),
                *self._input_widgets(w),
                w.HBox(list(self._buttons.values())),
                self._status,
            ]
        )
        self._widget.add_class("skill-magics-approval-panel")
        if self.decision is not None:
            self._show_decision()

    def _asker_html(self) -> str:
        if not self.asker:
            return ""
        return f"<div style='color:#8a4b00'><b>{html.escape(self.asker)}</b></div>"

    def _tooltips(self) -> dict[Decision, str]:
        if is_skill_install(self.request):
            return _TOOLTIPS_INSTALL
        if env_only(self.request):
            return _TOOLTIPS_ENV
        return _TOOLTIPS_SEVERAL if self.request.is_combined else _TOOLTIPS

    def _input_widgets(self, w: Any) -> list[Any]:
        """Masked fields for missing secrets, a checkbox to allow the network (per skill)."""
        out: list[Any] = []
        if self.on_inputs is None:
            return out
        for part in self.request.requests:
            for name in part.secrets.missing if part.secrets is not None else ():
                field = w.Password(
                    description=name,
                    placeholder=f"secret for '{visible(part.skill_name)}' (kept in memory only)",
                    layout=w.Layout(width="32em"),
                    style={"description_width": "initial"},
                )
                self.secret_fields[(part.skill_name, name)] = field
                out.append(field)
            box = part.sandbox
            if box is not None and not box.network and box.writable:
                check = w.Checkbox(
                    value=False,
                    description=f"Allow network for '{visible(part.skill_name)}' (this session)",
                    indent=False,
                )
                self.network_boxes[part.skill_name] = check
                out.append(check)
        return out

    def _apply_inputs(self, by: str) -> list[str]:
        """Hand the fields' values to ``on_inputs`` and clear them (Yes only)."""
        if self.on_inputs is None or not (self.secret_fields or self.network_boxes):
            return []
        problems: list[str] = []
        for part in self.request.requests:
            skill = part.skill_name
            values = {}
            for (owner, name), field in self.secret_fields.items():
                if owner == skill:
                    values[name] = field.value
                    field.value = ""  # nothing left in the widget state a notebook saves
                    field.disabled = True
            box = self.network_boxes.get(skill)
            network = bool(box is not None and box.value)
            if box is not None:
                box.disabled = True
            if any(values.values()) or network:
                values = {k: v for k, v in values.items() if v}
                problems += self.on_inputs(skill, values, network, by)
        return problems

    def outcome_text(self) -> str:
        """ "Decision: Yes once (button 'Yes once', 12:00:01)", the withdrawal, or ""."""
        if self.decision is not None:
            when = time.strftime("%H:%M:%S", time.localtime(self.decided_at or time.time()))
            return f"Decision: {self.decision.label} ({self.decided_by or ''}, {when})"
        if self.withdrawn is not None:
            return f"Not asked any more: {self.withdrawn}"
        return ""

    def _show_decision(self) -> None:
        if self._widget is None or (self.decision is None and self.withdrawn is None):
            return
        for value, button in self._buttons.items():
            button.disabled = True
            if self.decision is None or value != self.decision.value:
                button.button_style = ""
        self._status.value = f"<span>{_bold_label(self.outcome_text())}</span>"

    # -- deciding -----------------------------------------------------------------------
    def decide(self, decision: Decision | str, by: str) -> bool:
        """Record the decision unless one exists; True when this call decided."""
        decision = Decision(decision)
        with self._lock:
            if self.decision is not None or self.withdrawn is not None:
                return False
            self.decision, self.decided_by, self.decided_at = decision, by, time.time()
            callbacks = list(self._callbacks)
        problems = self._apply_inputs(by) if decision is not Decision.NO else []
        if decision is Decision.NO:
            for field in self.secret_fields.values():
                field.value = ""
        self._show_decision()
        if problems and self._status is not None:
            self._status.value += "".join(f"<div>{html.escape(p)}</div>" for p in problems)
        self.event.set()
        for callback in callbacks:
            callback(decision, by)
        return True

    def withdraw(self, reason: str) -> bool:
        """End an undecided panel without a decision (e.g. its cell was interrupted): the
        buttons are disabled and a later click does nothing. True when this call ended it."""
        with self._lock:
            if self.decision is not None or self.withdrawn is not None:
                return False
            self.withdrawn = reason
            self._callbacks.clear()
        self._show_decision()
        return True

    def on_decision(self, callback: Callable[[Decision, str], None]) -> None:
        """Call ``callback(decision, by)`` once decided (at once if already decided)."""
        with self._lock:
            if self.decision is None:
                self._callbacks.append(callback)
                return
        callback(self.decision, self.decided_by or "")

    def close(self) -> None:
        """Remove the widget from the page (the decision stays recorded)."""
        if self._widget is not None:
            self._widget.close()

    # -- display ------------------------------------------------------------------------
    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None) -> dict[str, Any]:
        # The widget view while a click can still decide, plus readable fallbacks. Once
        # decided (or withdrawn) only the static HTML and text: the saved notebook must show
        # the decision wherever it is opened, and a frontend prefers a widget view it cannot
        # draw once the kernel that held its model is gone ("model not found", issue 44).
        text = (f"{self.asker}\n" if self.asker else "") + summary_text(self.request)
        page = self._asker_html() + summary_html(self.request)
        outcome = self.outcome_text()
        if outcome:  # a saved notebook shows what was decided, not only what was asked
            text += "\n" + outcome
            page += f"<div>{_bold_label(outcome)}</div>"
            return {"text/plain": text, "text/html": page}
        return {"text/plain": text, "text/html": page, WIDGET_MIME: widget_view(self.widget)}

    def __repr__(self) -> str:
        state = self.decision.value if self.decision else "undecided"
        return f"<ApprovalPanel {self.request.skill_name} {state}>"


_TOOLTIPS = {
    Decision.YES_ONCE: "Run it this time only",
    Decision.YES_IN_SESSION: "Run it; don't ask again for this skill until its scripts change",
    Decision.NO: "Don't run it",
}
_TOOLTIPS_SEVERAL = {
    Decision.YES_ONCE: "Run every listed script this time only",
    Decision.YES_IN_SESSION: (
        "Run them; don't ask again for each of these skills until its files change"
    ),
    Decision.NO: "Don't run any of them",
}

_TOOLTIPS_INSTALL = {
    Decision.YES_ONCE: "Install these files",
    Decision.YES_IN_SESSION: "Install them; don't ask again for these exact files this session",
    Decision.NO: "Install nothing",
}

_TOOLTIPS_ENV = {
    Decision.YES_ONCE: "Install these packages this time",
    Decision.YES_IN_SESSION: (
        "Install them; don't ask again for these packages of this skill this session"
    ),
    Decision.NO: "Install nothing",
}


def _bold_label(outcome: str) -> str:
    """HTML for outcome_text(): escaped, with the part after the first ": " in bold."""
    head, sep, rest = outcome.partition(": ")
    if not sep:
        return html.escape(outcome)
    label, paren, tail = rest.partition(" (")
    return f"{html.escape(head)}: <b>{html.escape(label)}</b>{html.escape(paren + tail)}"


__all__ = [
    "ApprovalPanel",
    "DECISIONS",
    "summary_text",
    "summary_html",
    "arguments_text",
    "is_skill_install",
]
