"""What an approval panel shows, independent of the medium: one model per request.

``summarize(request)`` builds a :class:`Summary` once; every view of the question reads it:
the cell's panel (the widget), its ``text/plain`` fallback, the static HTML a saved notebook
keeps, the terminal prompt and the side panel's text (the renderers are
``notebook/render/approval_text.py`` and ``approval_html.py``, as results are rendered from
``notebook/render/sections.py``). So a section shown in one view is shown in the other, in the
same order, made safe the same way.

Every string of the model is display text already: secret values masked (before any cut or
quoting), control, line-separator and bidi characters shown as escapes (``core/base/visible``),
and names (skills, packages) with their non-ASCII letters marked (``requ⟨U+0435⟩sts``). A
renderer only lays it out (and the HTML one escapes it). Multi-line text (a script, code, a
diff) is a :class:`Block`, whose first lines are cut from the text as the file has them.

Example:
    >>> from skill_magics.core.run.gating.approval import ApprovalRequest, ScriptToApprove
    >>> s = summarize(ApprovalRequest("pdf", (ScriptToApprove("a.py", "python3", "x\\u202e"),)))
    >>> s.lead, s.title
    ("Approval needed: skill 'pdf' wants to run:", 'Approve running this skill script?')
    >>> s.skills[0].scripts[0].preview.whole()
    'x⟨U+202E⟩'
"""

from __future__ import annotations

import enum
import json
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.secrets import cut_known, redact_known
from skill_magics.core.base.visible import mark_non_ascii, visible
from skill_magics.core.run.gating.approval import ApprovalRequest, ScriptToApprove

ARGUMENTS_PREVIEW_CHARS = 2000  # stdin JSON shown in the panel
ARGUMENTS_BRIEF_CHARS = 300  # ... and in a terminal
PREVIEW_LINES = 12
INSTALL_FILES_SHOWN = 40  # files listed per skill in the text view (the HTML lists all)
DIFF_LINES_SHOWN = 60  # diff lines in the text view unless full


class Kind(enum.StrEnum):
    """What the answer decides: which title and which button tooltips."""

    RUN = "run"  # one skill's scripts (or code)
    PACKAGES = "packages"  # packages installed into one skill's environment: nothing runs
    SEVERAL = "several"  # the scripts of several skills, one answer for all
    INSTALL = "install"  # skill files copied into a skills folder: nothing runs


# -- making text safe to show ---------------------------------------------------------------


def shown(text: str) -> str:
    """One line: secret values masked, then control, line-separator and bidi characters
    made visible."""
    return visible(redact_known(text))


def shown_name(text: str) -> str:
    """A name (skill, package, program): non-ASCII letters marked too, so a lookalike never
    reads as the name it imitates."""
    return mark_non_ascii(text)


def shown_block(text: str) -> str:
    """Multi-line text: like :func:`shown`, but tabs and newlines stay."""
    return visible(redact_known(text), keep="\t\n")


def words(items: Any) -> str:
    """A command line: each word masked BEFORE shlex quotes it (quoting splits a value
    holding a ' into pieces no mask would recognise)."""
    return shlex.join(redact_known(str(w)) for w in items)


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
    shown_ = "\n".join(lines[:n])
    if count > n:
        shown_ += f"\n... {count - n} more lines ({count} total)"
    return shown_


def one_line(value: Any, limit: int = 200) -> str:
    """A batch item or a prompt as compact JSON, secret values masked, then cut."""
    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError):
        text = repr(value)
    return cut_known(text, limit)


# -- the model ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """Multi-line text (a script, code, a diff), secret values masked; shown by its first
    lines, or whole. ``total``: the real line count (the request may hold fewer lines);
    ``cut``: the request holds less than the whole file, ``chars`` characters of its
    ``size`` bytes."""

    text: str
    total: int = 0
    cut: bool = False
    chars: int = 0
    size: int = 0

    @property
    def count(self) -> int:
        """Lines in all: the real count, or what the text holds if more."""
        return max(self.total, len(self.text.splitlines()))

    def head(self, n: int = PREVIEW_LINES) -> str:
        """The first ``n`` lines and how many more, as display text."""
        return shown_block(first_lines(self.text, n, self.total))

    def whole(self) -> str:
        """All of the text the request holds, as display text."""
        return shown_block(self.text)

    def lines(self, n: int | None = None) -> tuple[list[str], int]:
        """The first ``n`` lines (all: None) as display lines, and how many are left out."""
        every = self.text.splitlines()
        body = every if n is None else every[:n]
        return shown_block("\n".join(body)).splitlines(), len(every) - len(body)

    @classmethod
    def of(cls, text: str, total: int | None = None, size: int = 0) -> Block:
        """``text`` masked; ``cut`` when it holds less than the ``size`` bytes of the file."""
        count = len(text.splitlines()) if total is None else total
        cut = bool(size) and len(text.encode("utf-8", "replace")) < size
        return cls(redact_known(text), count, cut, len(text), size)


@dataclass(frozen=True)
class Fact:
    """One labelled value of what the answer decides (``label`` "": it goes on from the
    fact above, e.g. "... and 997 more")."""

    label: str
    text: str


@dataclass(frozen=True)
class Script:
    """One script that would run: where, with what, the exact command, its text."""

    path: str
    interpreter: str
    command: str = ""  # the whole command line, the program's path first
    program_realpath: str = ""  # the program's real path when it differs
    cwd: str = ""
    missing: tuple[str, ...] = ()  # names of packages/programs it needs and lacks
    preview: Block | None = None
    size: str = ""  # "301 lines, 2,420 bytes", or ""


@dataclass(frozen=True)
class Inputs:
    """What the scripts get: code (``%%skillpy``), stdin JSON, argv. ``every``: one value
    for every script of several skills."""

    code: Block | None = None
    arguments: str | None = None  # the JSON, cut at ARGUMENTS_PREVIEW_CHARS
    arguments_brief: str | None = None  # ... at ARGUMENTS_BRIEF_CHARS
    argv: str = ""
    every: bool = False


@dataclass(frozen=True)
class SkillPart:
    """One skill of the question: its scripts, inputs (None: shown once for all skills),
    what else the answer covers for it (sandbox, batch, secrets, ...)."""

    name: str
    scripts: tuple[Script, ...]
    inputs: Inputs | None
    facts: tuple[Fact, ...]


@dataclass(frozen=True)
class InstalledFile:
    """One file an install copies: its path, its bytes, whether it is a script."""

    path: str
    size: int
    script: bool


@dataclass(frozen=True)
class InstallPart:
    """One skill whose files would be installed: source, commit, files, diff."""

    name: str
    facts: tuple[Fact, ...]
    files: tuple[InstalledFile, ...]
    diff: Block | None


@dataclass(frozen=True)
class Summary:
    """Everything an approval panel shows, in order (see the module docstring).

    ``title`` is the question the panel asks, ``lead`` the first line of the text view;
    ``warnings``, ``inputs`` (shared by several skills) and ``facts`` (of the whole request)
    come before the skills; ``skills`` for a run, ``installs`` for an install of skill files.
    """

    kind: Kind
    title: str
    lead: str
    warnings: tuple[str, ...] = ()
    inputs: Inputs | None = None
    facts: tuple[Fact, ...] = ()
    skills: tuple[SkillPart, ...] = ()
    installs: tuple[InstallPart, ...] = ()
    asker: str = ""  # who asks, when not the person (a model), shown first


# -- building it -------------------------------------------------------------------------------


def is_skill_install(request: ApprovalRequest) -> bool:
    """Is ``request`` an install of skill files (nothing runs)?"""
    return all(part.skill_install is not None for part in request.requests)


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


def kind_of(request: ApprovalRequest) -> Kind:
    """What the answer to ``request`` decides."""
    if is_skill_install(request):
        return Kind.INSTALL
    if request.is_combined:
        return Kind.SEVERAL
    return Kind.PACKAGES if env_only(request) else Kind.RUN


def summarize(request: ApprovalRequest, asker: str = "") -> Summary:
    """The model of everything the panel for ``request`` shows (see the module docstring)."""
    kind = kind_of(request)
    if kind is Kind.INSTALL:
        title = _install_title(request)
        parts = tuple(_install_part(part) for part in request.requests)
        return Summary(kind, title, f"Approval needed: {title}", installs=parts, asker=asker)
    warnings = tuple(shown(note) for note in request.name_notes)
    if kind is not Kind.SEVERAL:
        part = _skill_part(request, _inputs(request))
        return Summary(
            kind, _title(request, kind), _lead(request, kind), warnings, skills=(part,), asker=asker
        )
    shared = request.shares_inputs
    return Summary(
        kind,
        _title(request, kind),
        _lead(request, kind),
        warnings,
        inputs=_inputs(request, every=True) if shared else None,
        facts=_facts(request),
        skills=tuple(
            _skill_part(part, None if shared else _inputs(part)) for part in request.parts
        ),
        asker=asker,
    )


def _title(request: ApprovalRequest, kind: Kind) -> str:
    if kind is Kind.PACKAGES:
        return "Approve installing packages for this skill?"
    if kind is Kind.RUN:
        count = len(request.scripts)
        if count <= 1:
            return "Approve running this skill script?"
        return f"Approve running these {count} scripts of this skill?"
    count = sum(len(part.scripts) for part in request.parts)
    return (
        f"Approve running {count} script{'s' if count != 1 else ''} of "
        f"{len(request.parts)} skills? One answer decides for all of them."
    )


def _lead(request: ApprovalRequest, kind: Kind) -> str:
    if kind is not Kind.SEVERAL:
        wants = "wants packages installed" if kind is Kind.PACKAGES else "wants to run"
        return f"Approval needed: skill '{shown_name(request.skill_name)}' {wants}:"
    parts = request.parts
    count = sum(len(part.scripts) for part in parts)
    names = ", ".join(f"'{shown_name(part.skill_name)}'" for part in parts)
    return (
        f"Approval needed: {len(parts)} skills ({names}) want to run {count} "
        f"script{'s' if count != 1 else ''}; one answer decides for all of them:"
    )


def _skill_part(request: ApprovalRequest, inputs: Inputs | None) -> SkillPart:
    scripts = tuple(_script(script) for script in request.scripts)
    return SkillPart(shown_name(request.skill_name), scripts, inputs, _facts(request))


def _script(script: ScriptToApprove) -> Script:
    preview = Block.of(script.preview, script.lines, script.size) if script.preview else None
    size = ""
    if script.lines or script.size:
        size = f"{script.lines:,} lines, {script.size:,} bytes"
    return Script(
        path=shown(script.path),
        interpreter=shown(script.interpreter),
        command=shown(words(script.command)) if script.command else "",
        program_realpath=shown(script.program_realpath),
        cwd=shown(script.cwd),
        missing=tuple(shown_name(m) for m in script.missing),
        preview=preview,
        size=size,
    )


def _inputs(request: ApprovalRequest, every: bool = False) -> Inputs:
    code = None if request.code is None else Block.of(request.code)
    arguments = brief = None
    if shows_arguments(request):
        arguments = shown_block(arguments_text(request.arguments))
        brief = shown_block(arguments_text(request.arguments, ARGUMENTS_BRIEF_CHARS))
    argv = shown(words(request.argv)) if request.argv else ""
    return Inputs(code, arguments, brief, argv, every)


def _facts(request: ApprovalRequest) -> tuple[Fact, ...]:
    """What else the decision covers: a scope of model-chosen runs, a batch, an install, a
    sandbox, where the skill came from, how the processes start (warm or cold: the same run
    either way), secrets."""
    rows = _scope_rows(request) + _batch_rows(request) + _package_install_rows(request)
    sandbox = request.sandbox
    if sandbox is not None:
        rows.append(("Sandbox", sandbox.mode))
        rows.append(("network", "on" if sandbox.network else "off"))
        rows.append(("writable", ", ".join(sandbox.writable) or "nothing"))
    rows += _provenance_rows(request) + _mcp_rows(request)
    if request.signature is not None:
        # Who signed it (verified at install, core/trust) or why not (docs/trust.md).
        rows.append(("Signature", request.signature.describe()))
    if request.start:
        rows.append(("Start", request.start))
    secrets = request.secrets
    if secrets is not None:
        listed = [
            f"{name} ({'missing: enter it below' if name in secrets.missing else 'set'})"
            for name in secrets.declared
        ]
        rows.append(("Secrets", ", ".join(listed)))
    return tuple(Fact(label, shown(text)) for label, text in rows)


def _scope_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    scope = request.scope
    if scope is None:
        return []
    more = scope.agent_runs - len(scope.sample)
    return _sampled(
        ("Scope", scope.summary()),
        "prompt",
        scope.sample,
        f"... {more:,} more agent runs" if more > 0 else "",
    )


def _batch_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    batch = request.batch
    if batch is None:
        return []
    more = batch.count - len(batch.sample)
    head = ("Batch", f"{batch.count:,} items, each one run")
    return _sampled(head, "item", batch.sample, f"... and {more:,} more" if more > 0 else "")


def _sampled(
    head: tuple[str, str], label: str, sample: Sequence[str], more: str
) -> list[tuple[str, str]]:
    """A heading row, the sample numbered (``label 1``, ...), then what the sample left out."""
    rows = [head, *((f"{label} {i}", one_line(text)) for i, text in enumerate(sample, 1))]
    return rows + [("", more)] if more else rows


def _package_install_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    install = request.install
    if install is None:
        return []
    rows = [("Install first", ", ".join(shown_name(p) for p in install.packages) or "(nothing)")]
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
    more = len(provenance.changes) - 6
    rows.append(
        (
            "lock",
            f"{len(provenance.changes)} CHANGED since the install "
            f"({', '.join(provenance.changes[:6])}"
            + (f", +{more} more" if more > 0 else "")
            + f"; %skills verify lists them, {provenance.lock})",
        )
    )
    return rows


def _mcp_rows(request: ApprovalRequest) -> list[tuple[str, str]]:
    """An MCP server's skill: where its code comes from, the digest set a "Yes in session"
    binds to, and what the server changed since the copy cached before."""
    mcp = request.mcp
    if mcp is None:
        return []
    rows = [("From MCP server", f"{mcp.origin} ({mcp.server})"), ("digest set", mcp.binding)]
    if mcp.changes:
        more = len(mcp.changes) - 8
        rows.append(
            (
                "server changed",
                f"{len(mcp.changes)} file(s) since the copy fetched before: "
                f"{', '.join(mcp.changes[:8])}" + (f", +{more} more" if more > 0 else ""),
            )
        )
    return rows


# -- installing skill files (%skills install / update / sync) ---------------------------------


def _install_title(request: ApprovalRequest) -> str:
    parts = request.requests
    info = parts[0].skill_install
    action = info.action if info is not None else "install"
    verb = {"install": "Install", "update": "Update", "sync": "Re-create"}.get(action, "Install")
    names = ", ".join(f"'{shown(p.skill_name)}'" for p in parts)
    noun = "skill" if len(parts) == 1 else f"{len(parts)} skills"
    tail = "; one answer decides for all of them" if len(parts) > 1 else ""
    return (
        f"{verb} {noun} {names}? Their files are copied into the skills folder; nothing runs "
        f"now (each run still asks){tail}"
    )


def _install_part(part: ApprovalRequest) -> InstallPart:
    """One skill's install: source, commit, target, files, diff."""
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
    scripts = set(info.scripts)
    return InstallPart(
        name=shown(part.skill_name),
        facts=tuple(Fact(label, shown(text)) for label, text in rows),
        files=tuple(InstalledFile(shown(path), size, path in scripts) for path, size in info.files),
        diff=Block.of(info.diff) if info.diff else None,
    )


__all__ = [
    "ARGUMENTS_PREVIEW_CHARS",
    "Block",
    "Fact",
    "InstallPart",
    "InstalledFile",
    "Inputs",
    "Kind",
    "Script",
    "SkillPart",
    "Summary",
    "arguments_text",
    "env_only",
    "first_lines",
    "is_skill_install",
    "shows_arguments",
    "summarize",
]
