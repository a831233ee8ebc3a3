"""The approval panel's one model (core/panel/summary.py) and its two views.

The text view (terminal prompt, ``text/plain``, the side panel) and the HTML view (the widget,
the static view a saved notebook keeps) both lay out one ``Summary``: every string of the model
is in both views, in the same order, masked and made visible once, and HTML-escaped on the way
into the page. A hostile skill (a ``<script>`` name, bidi characters, a secret value) shows the
same, safely, in both.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import replace
from types import SimpleNamespace

import pytest

from skill_magics.core.base.secrets import REDACTED, SecretStore
from skill_magics.core.installed.signature import Signature
from skill_magics.core.mcp.origin import McpOriginInfo
from skill_magics.core.panel.summary import (
    Block,
    Fact,
    Kind,
    Summary,
    summarize,
)
from skill_magics.core.run.gating.approval import (
    ApprovalRequest,
    BatchInfo,
    InstallInfo,
    ProvenanceInfo,
    SandboxInfo,
    ScopeInfo,
    ScriptToApprove,
    SecretsInfo,
    SkillInstallInfo,
    combine_requests,
)
from skill_magics.notebook.approval.panel import ApprovalPanel, summary_html, summary_text

SECRET = "hunter2-not-for-any-view"
HOSTILE = "<script>alert(1)</script>\u202eevil\u2066\x1b[2K\r"
BIDI = ("\u202e", "\u2066")


@pytest.fixture(autouse=True)
def secret() -> Iterator[SecretStore]:
    store = SecretStore()  # a live store: its values are masked in every view
    store.provide("evil", "API_KEY", SECRET)
    yield store
    store.forget()


def _script(path: str, text: str = "print(1)\n", **kw) -> ScriptToApprove:
    return ScriptToApprove(
        path,
        "python3",
        text,
        command=kw.pop("command", ("/usr/bin/python3", f"/skills/{path}")),
        lines=len(text.splitlines()),
        size=len(text),
        **kw,
    )


def _hostile() -> ApprovalRequest:
    body = "".join(f"x{i} = {i}  # {HOSTILE}\n" for i in range(30)) + f"KEY = '{SECRET}'\n"
    return ApprovalRequest(
        f"{HOSTILE}n\u0430me",
        (
            _script(
                f"scripts/{HOSTILE}.py",
                body,
                command=("/usr/bin/python3", f"--key={SECRET}", f"{SECRET}'s", HOSTILE),
                program_realpath=f"/real/{HOSTILE}",
                cwd=f"/work/{HOSTILE}",
                missing=("r\u0435quests",),
            ),
        ),
        arguments={"note": f"{HOSTILE} {SECRET}"},
        argv=("--name", HOSTILE, SECRET),
        content_hash="h",
        batch=BatchInfo(5, ({"p": HOSTILE}, ["--key", SECRET])),
        install=InstallInfo(("lx\u043cl",), target=f"/env/{HOSTILE}", command=("uv", SECRET)),
        sandbox=SandboxInfo("workspace-write", writable=(f"/w/{HOSTILE}",)),
        provenance=ProvenanceInfo(f"https://x/{HOSTILE}", lock="/l.json", changes=("changed a",)),
        mcp=McpOriginInfo("mcp:team", f"srv {HOSTILE}", "digest", ("changed b",)),
        signature=Signature.unsigned(f"a folder {HOSTILE}"),
        start=f"warm {HOSTILE}",
        secrets=SecretsInfo(("API_KEY",), ()),
        scope=ScopeInfo(f"eval {HOSTILE}", 3, (f"say {SECRET}",)),
    )


def _install(name: str) -> ApprovalRequest:
    info = SkillInstallInfo(
        "update",
        f"https://github.com/o/{HOSTILE}@main",
        commit="abc",
        target=f"/skills/{HOSTILE}",
        files=((f"scripts/{HOSTILE}.py", 10), ("SKILL.md", 5)),
        scripts=(f"scripts/{HOSTILE}.py",),
        tree="sha256:t",
        changes=("changed SKILL.md",),
        diff=f"-old\n+new {HOSTILE}\n+key {SECRET}\n",
    )
    return ApprovalRequest(name, (), skill_install=info)


REQUESTS = {
    "one skill": _hostile,
    "several skills": lambda: combine_requests(
        [_hostile(), replace(_hostile(), skill_name=f"b\u0435ta{HOSTILE}", batch=None)]
    ),
    "packages": lambda: ApprovalRequest(HOSTILE, (), install=InstallInfo((HOSTILE, SECRET))),
    "code": lambda: ApprovalRequest(HOSTILE, (), code=f"print('{SECRET}')\n{HOSTILE}\n" * 10),
    "install": lambda: combine_requests([_install(HOSTILE), _install("plain")]),
}


def _page(page: str) -> str:
    """The HTML as a person reads it: highlights dropped, entities decoded."""
    return html.unescape(re.sub("</?mark>", "", page))


def _shown(summary: Summary, full: bool = False) -> Iterator[str]:
    """Every string of the model, in the order the views show it (a name a single skill's
    lead and Skill row already show is left out; lines of multi-line text one by one, their
    first lines or, ``full``, all)."""

    def block(b: Block | None) -> Iterator[str]:
        if b is not None:
            yield from (line for line in (b.whole() if full else b.head()).splitlines() if line)

    def facts(items: tuple[Fact, ...]) -> Iterator[str]:
        for fact in items:
            yield from (fact.label, fact.text) if fact.label else (fact.text,)

    for part in summary.installs:
        yield part.name
        yield from facts(part.facts)
        yield from (f.path for f in part.files)
        if part.diff is not None:
            yield from (line for line in part.diff.lines()[0] if line)
    yield from summary.warnings
    if summary.inputs is not None:
        yield from (summary.inputs.arguments or "").splitlines()
        yield summary.inputs.argv
    for part in summary.skills:
        if summary.kind is Kind.SEVERAL:
            yield part.name
        for s in part.scripts:
            yield from (s.path, s.interpreter, s.command, s.program_realpath, s.cwd, *s.missing)
        if part.inputs is not None:
            yield from block(part.inputs.code)
            assert part.inputs.arguments == part.inputs.arguments_brief  # short: both whole
            yield from (part.inputs.arguments or "").splitlines()
            yield part.inputs.argv
        yield from facts(part.facts)
        for s in part.scripts:
            yield from block(s.preview)


def _in_order(view: str, strings: list[str]) -> list[str]:
    """The strings not found in ``view`` at or after the one before."""
    missing, at = [], 0
    for s in filter(None, strings):
        found = view.find(s, at)
        if found < 0:
            missing.append(s)
        else:
            at = found
    return missing


@pytest.mark.parametrize("case", sorted(REQUESTS))
def test_every_section_of_the_model_is_in_both_views_in_the_same_order(case: str) -> None:
    request = REQUESTS[case]()
    summary = summarize(request)
    shown, every = list(_shown(summary)), list(_shown(summary, full=True))
    text, page = summary_text(request), _page(summary_html(request))
    if case == "several skills":  # the same inputs: shown once, before the skills
        assert summary.inputs is not None and summary.inputs.every
        assert "arguments (stdin JSON, every script)" in text and "Arguments (every script)" in page
    assert shown and _in_order(text, shown) == [] and _in_order(page, shown) == []
    assert _in_order(summary_text(request, full=True), every) == []
    assert _in_order(page, every) == []  # the HTML holds the whole text behind "show all"
    assert summary.title in page and summary.lead in text
    for name in [p.name for p in summary.skills] + [p.name for p in summary.installs]:
        assert name in text and name in page


@pytest.mark.parametrize("case", sorted(REQUESTS))
def test_a_hostile_skill_is_escaped_and_masked_in_both_views(case: str) -> None:
    request = REQUESTS[case]()
    views = {
        "text": summary_text(request),
        "full text": summary_text(request, full=True),
        "html": summary_html(request),
    }
    for what, view in views.items():
        for form in (view, html.unescape(view)):
            assert SECRET not in form and SECRET[:8] not in form, what
            assert not any(c in form for c in BIDI), what
            assert "\x1b" not in form and "\r" not in form, what
        assert "U+202E" in view, what  # the override is shown, not obeyed
    assert "<script>" not in views["html"] and "&lt;script&gt;" in views["html"]
    assert "<script>" in views["text"]  # text is text: the name is shown as it is
    if case != "install":  # what a secret was given to shows the mask instead
        assert REDACTED in views["text"] and REDACTED in views["html"]
    else:
        assert REDACTED in views["full text"] and REDACTED in views["html"]
    if case in ("one skill", "several skills"):
        # a lookalike letter is marked in a skill's name and a package's, in both views
        for marked in ("n⟨U+0430⟩me", "r⟨U+0435⟩quests", "lx⟨U+043C⟩l"):
            assert marked in views["text"] and marked in _page(views["html"]), marked


def test_both_views_read_the_model_they_are_given() -> None:
    """Nothing is shown from the request itself: a changed model changes both views."""
    summary = summarize(_hostile())
    (part,) = summary.skills
    changed = replace(
        summary,
        warnings=("WARNING-FROM-THE-MODEL",),
        skills=(replace(part, facts=(Fact("Label-X", "value-from-the-model"),)),),
    )
    text, page = summary_text(changed), summary_html(changed)
    for view in (text, page):
        assert "WARNING-FROM-THE-MODEL" in view and "value-from-the-model" in view
        assert "Sandbox" not in view  # the request's facts are gone with the model's
    assert summary_text(summary) == summary_text(_hostile())
    assert summary_html(summary) == summary_html(_hostile())


def test_the_panel_builds_its_model_once_and_again_for_a_new_secret(secret) -> None:
    request = replace(_hostile(), arguments={"token": "typed-in-the-panel-later"})
    panel = ApprovalPanel(request, asker="A model is asking")
    first = panel.summary
    _ = panel.widget, panel._repr_mimebundle_()
    assert panel.summary is first and first.asker == "A model is asking"
    assert first.kind is Kind.RUN
    bundle = panel._repr_mimebundle_()
    assert bundle["text/plain"] == summary_text(first)
    assert bundle["text/html"] == summary_html(first)
    assert panel.widget.children[0].value == summary_html(first)
    # A value given while the panel is shown (its own secret field) is masked in the view
    # the notebook saves once decided.
    secret.provide("evil", "TOKEN", "typed-in-the-panel-later")
    panel.buttons["yes_once"].click()
    saved = panel._repr_mimebundle_()
    assert panel.summary is not first
    assert "typed-in-the-panel-later" not in saved["text/plain"] + saved["text/html"]
    assert saved["text/plain"].startswith("A model is asking\n")


@pytest.mark.parametrize(
    ("case", "kind", "yes_once"),
    [
        ("one skill", Kind.RUN, "Run it this time only"),
        ("several skills", Kind.SEVERAL, "Run every listed script this time only"),
        ("packages", Kind.PACKAGES, "Install these packages this time"),
        ("install", Kind.INSTALL, "Install these files"),
    ],
)
def test_the_buttons_are_the_same_three_and_say_what_the_kind_decides(case, kind, yes_once):
    panel = ApprovalPanel(REQUESTS[case]())
    assert panel.summary.kind is kind
    buttons = list(panel.buttons.values())
    assert [b.description for b in buttons] == ["Yes once", "Yes in session", "No"]
    assert buttons[0].tooltip == yes_once


def test_the_side_panel_shows_a_waiting_question_as_the_cells_text(tmp_path) -> None:
    from skill_magics.core.manager import SkillManager
    from skill_magics.notebook import sidepanel

    panel = ApprovalPanel(_hostile())
    magics = SimpleNamespace(
        manager=SkillManager([tmp_path]), panels=[panel], require_approval=True, auto_approve=[]
    )
    (waiting,) = sidepanel._board(magics).handle("state", {})["waiting"]
    assert waiting["summary"] == summary_text(panel.request)
    assert SECRET not in waiting["summary"] and "\u202e" not in waiting["summary"]


def test_sampled_rows_number_the_sample_and_say_what_it_left_out() -> None:
    request = _hostile()  # 5 batch items, 2 shown; 3 agent runs, 1 prompt shown
    text = summary_text(summarize(request), full=True)
    for row in ("item 1", "item 2", "... and 3 more", "prompt 1", "... 2 more agent runs"):
        assert row in text, row
    whole = replace(request, batch=BatchInfo(2, request.batch.sample), scope=None)
    text = summary_text(summarize(whole), full=True)
    assert "item 2" in text and "more" not in text.split("item 2")[1].split("\n")[0]
    assert "... and" not in text
