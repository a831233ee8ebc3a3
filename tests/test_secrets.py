"""Declared secrets (core/base/secrets.py) through real runs: only the declaring skill gets a value,
and no value appears in output, results or the audit (memory and JSONL)."""

from __future__ import annotations

import hashlib
import html
import json
import random
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from manager_support import run_plan

from skill_magics.core.base.errors import SecretMissingError, SkillMagicsError
from skill_magics.core.manager import SkillManager
from skill_magics.core.base.secrets import REDACTED, SecretStore, declared_secrets, rejected_secrets
from skill_magics.core.base.status import AuditOutcome

VALUE = "sk-test-9f8e7d6c5b4a39281706"


@pytest.mark.parametrize(
    ("metadata", "expected"),
    [
        ({"secrets": "A_KEY B_TOKEN"}, ("A_KEY", "B_TOKEN")),
        ({"secrets": "A_KEY, B_TOKEN"}, ("A_KEY", "B_TOKEN")),
        ({"secrets": ["A_KEY", "B_TOKEN"]}, ("A_KEY", "B_TOKEN")),
        ({"secrets": {"A_KEY": "the API key"}}, ("A_KEY",)),
        ({"secret": "A_KEY"}, ("A_KEY",)),
        ({"required-secrets": "A_KEY"}, ("A_KEY",)),
        ({"required_secrets": "A_KEY"}, ("A_KEY",)),
        ({"requiredSecrets": "A_KEY"}, ("A_KEY",)),
        ({"env-secrets": "A_KEY"}, ("A_KEY",)),
        ({"api-keys": "A_KEY"}, ("A_KEY",)),
        ({"secrets": "A_KEY", "api_keys": "A_KEY C"}, ("A_KEY", "C")),
        ({"secrets": 5}, ()),
        ({}, ()),
    ],
)
def test_declared_secret_variants(metadata: dict, expected: tuple) -> None:
    assert declared_secrets(metadata) == expected


def test_names_that_steer_the_run_are_not_secrets() -> None:
    meta = {"secrets": "PATH LD_PRELOAD PYTHONPATH SKILL_NAME 9BAD OK_KEY"}
    assert declared_secrets(meta) == ("OK_KEY",)
    assert rejected_secrets(meta) == ("PATH", "LD_PRELOAD", "PYTHONPATH", "SKILL_NAME", "9BAD")


def test_store_keeps_values_per_skill_and_never_shows_them() -> None:
    store = SecretStore()
    store.provide("a", "KEY", VALUE)
    assert store.env_for("a", ["KEY"]) == {"KEY": VALUE}
    assert store.env_for("b", ["KEY"]) == {}
    assert VALUE not in repr(store)
    with pytest.raises(ValueError, match="too short"):
        store.provide("a", "KEY", "abc")
    with pytest.raises(ValueError, match="cannot be a secret"):
        store.provide("a", "LD_PRELOAD", VALUE)
    assert store.forget("a") == 1 and len(store) == 0


def test_redaction_whole_streamed_and_cut() -> None:
    store = SecretStore()
    store.provide("a", "KEY", VALUE)
    assert store.redact(f"x{VALUE}y{VALUE}") == f"x{REDACTED}y{REDACTED}"
    stream = store.stream()
    text = f"begin {VALUE} middle {VALUE} end"
    pieces = [text[i : i + 5] for i in range(0, len(text), 5)]  # every split point
    out = "".join(stream.feed(p) for p in pieces) + stream.flush()
    assert out == f"begin {REDACTED} middle {REDACTED} end"
    # A cut text is never redacted after the cut: head() redacts first, then keeps the start.
    shown, more = store.masks().head("x" * 20 + VALUE + "y" * 50, 30)
    assert (shown, more) == ("x" * 20 + REDACTED + "y" * 6, True)


ECHO = """\
    #!/bin/bash
    echo "stdout: key=${API_KEY:-<unset>}"
    echo "stderr: $API_KEY" >&2
    printf '%s' "$API_KEY" | sha256sum | cut -c1-64
    """


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    fm = {"name": "owner", "description": "Declares a key.", "metadata": {"secrets": "API_KEY"}}
    make_skill(root, "owner", frontmatter=fm, scripts={"scripts/echo.sh": ECHO})
    make_skill(root, "other", scripts={"scripts/echo.sh": ECHO})
    return root


def test_secret_reaches_only_the_declaring_skill_and_never_shows(
    skills: Path, tmp_path: Path
) -> None:
    log = tmp_path / "audit.jsonl"
    manager = SkillManager([skills], audit_log=log)
    assert manager.secret_status("owner") == {"API_KEY": False}
    manager.provide_secret("owner", "API_KEY", VALUE)
    assert manager.secret_status("owner") == {"API_KEY": True}
    streamed: list[str] = []
    plan = manager.plan("owner", "echo", {"note": f"arg {VALUE}"})
    res = run_plan(manager, plan, on_output=lambda _s, text: streamed.append(text))
    assert res.exit_code == 0
    # The value arrived (its hash matches) and is masked wherever it was printed.
    assert hashlib.sha256(VALUE.encode()).hexdigest() in res.stdout
    assert f"key={REDACTED}" in res.stdout and REDACTED in res.stderr
    assert VALUE not in res.stdout + res.stderr + "".join(streamed)
    # Another skill never gets it, even when it reads the same variable name.
    other = manager.execute_skill_script("other", "echo")
    assert "key=<unset>" in other.stdout
    # The audit, in memory and on disk, holds no value (the arguments carried one).
    records = manager.audit.records()
    assert records and all(VALUE not in json.dumps(r.to_dict()) for r in records)
    assert any(REDACTED in r.arguments for r in records)
    assert VALUE not in log.read_text()


def test_missing_secret_refuses_before_the_run(skills: Path) -> None:
    manager = SkillManager([skills])
    plan = manager.plan("owner", "echo")
    with pytest.raises(SecretMissingError) as err:
        run_plan(manager, plan)
    assert "\n" not in str(err.value)
    assert "manager.provide_secret('owner', 'API_KEY', value)" in str(err.value)
    outcomes = [r.outcome for r in manager.audit.records()]
    assert outcomes == [AuditOutcome.REFUSED]  # nothing started: no run record


def test_provide_secret_checks_the_declaration(skills: Path) -> None:
    manager = SkillManager([skills])
    with pytest.raises(ValueError, match="does not declare secret 'API_KEY'"):
        manager.provide_secret("other", "API_KEY", VALUE)


def test_env_passthrough_keeps_working(skills: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_KEY", "from-the-environment")
    manager = SkillManager([skills], env_passthrough=["API_KEY"])
    res = manager.execute_skill_script("other", "echo")
    assert "key=from-the-environment" in res.stdout


def test_request_lists_declared_and_missing_secrets(skills: Path) -> None:
    manager = SkillManager([skills])
    info = manager.plan("owner", "echo").request.secrets
    assert info is not None and info.declared == ("API_KEY",) and info.missing == ("API_KEY",)
    manager.provide_secret("owner", "API_KEY", VALUE)
    assert manager.plan("owner", "echo").request.secrets.missing == ()
    assert manager.plan("other", "echo").request.secrets is None


# -- redaction before any cut, and of escaped forms (issue 17, defects 4 and 5) ---------------

# Values whose JSON form differs from the value: non-ASCII (uXXXX, a surrogate pair for the
# emoji), a quote and a backslash (\" and \\), a slash (\/ from some encoders).
HARD_VALUES = ['pä"ss\\wörd/€😀-tok', "ключ-секрет-7781", 'q"u\\o/t\te-9931']


def _forms(value: str) -> list[str]:
    """Ways a script (or a library it uses) writes ``value`` inside JSON and Python text."""
    dumped = json.dumps(value)
    upper = re.sub(r"\\u([0-9a-f]{4})", lambda m: "\\u" + m.group(1).upper(), dumped)
    return [
        value,
        dumped,
        json.dumps(value, ensure_ascii=False),
        upper,
        dumped.replace("/", "\\/"),
        json.dumps(dumped),  # JSON inside JSON
        json.dumps(json.dumps(dumped, ensure_ascii=False)),
        repr(value),
        ascii(value),
    ]


def _decoded_views(text: str) -> list[str]:
    """What a JSON view can give back from ``text``, up to three levels deep."""
    views, current = [text], text
    for _ in range(3):
        try:
            current = json.loads(current)
        except (TypeError, ValueError):
            break
        shown = current if isinstance(current, str) else json.dumps(current, ensure_ascii=False)
        views.append(shown)
    return views


@pytest.mark.parametrize("value", [VALUE, *HARD_VALUES])
def test_every_escaped_form_is_masked_whole_and_streamed(value: str) -> None:
    store = SecretStore()
    store.provide("a", "KEY", value)
    for form in _forms(value):
        masked = store.redact(f"<{form}>")
        assert masked.strip("<>\"'\\") == REDACTED, (form, masked)  # only quotes are left
        for view in _decoded_views(form):  # e.g. result.json() of a masked line
            assert value not in store.redact(view)
    doc = json.dumps({"k": value, "n": [value, {"deep": json.dumps({"k": value})}]})
    masked = store.redact(doc)
    assert json.loads(masked) == {"k": REDACTED, "n": [REDACTED, {"deep": '{"k": "****"}'}]}
    for size in (1, 2, 3, 7, 50):  # every split point of a stream
        stream = store.stream()
        out = "".join(stream.feed(doc[i : i + size]) for i in range(0, len(doc), size))
        assert out + stream.flush() == masked


def test_random_values_in_random_forms_never_survive() -> None:
    rng = random.Random(17)
    alphabet = "ab9Z-_\"\\/'$ \tàé€ж中😀𝄞"
    for _ in range(200):
        value = "".join(rng.choice(alphabet) for _ in range(rng.randint(4, 12)))
        store = SecretStore()
        store.provide("a", "KEY", value)
        form = rng.choice(_forms(value))
        text = "x" * rng.randint(0, 9) + form + "y" * rng.randint(0, 9)
        for view in _decoded_views(store.redact(text)):
            assert value not in view, (value, form)
        cut = rng.randint(1, len(text))
        shown, _ = store.masks().head(text, cut)
        assert shown == store.redact(text)[:cut]  # redacted first, then cut


def test_redaction_does_not_eat_ordinary_text() -> None:
    store = SecretStore()
    store.provide("a", "KEY", "abcd-1234")
    text = 'abcd-123 \\u0061bcd-12 bcd-1234 "abcd" \\n ab\\cd-1234'
    assert store.redact(text) == text


@pytest.fixture
def printer(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    fm = {"name": "printer", "description": "Prints its key.", "metadata": {"secrets": "API_KEY"}}
    show = """\
        import json, os, sys
        key = os.environ["API_KEY"]
        pad = json.load(sys.stdin).get("pad", 0)
        sys.stdout.write("x" * pad + json.dumps({"k": key}) + "\\n")
        sys.stdout.write(json.dumps({"k": key}, ensure_ascii=False) + "\\n")
        sys.stderr.write(json.dumps(json.dumps({"k": key})) + "\\n")
        """
    one = """\
        import json, os
        print(json.dumps({"k": os.environ["API_KEY"]}))
        """
    make_skill(
        root,
        "printer",
        frontmatter=fm,
        scripts={"scripts/show.py": show, "scripts/one.py": one},
        body="Run `scripts/show.py` or `scripts/one.py`.\n",
    )
    return root


@pytest.mark.parametrize("value", HARD_VALUES)
def test_json_views_never_give_a_secret_back(printer: Path, tmp_path: Path, value: str) -> None:
    from skill_magics.core.prompt.context import build_skill_context
    from skill_magics.core.prompt.tools import handle_tool_call

    manager = SkillManager([printer], audit_log=tmp_path / "audit.jsonl")
    manager.provide_secret("printer", "API_KEY", value)
    streamed: list[str] = []
    plan = manager.plan("printer", "show", {})
    res = run_plan(manager, plan, on_output=lambda _s, text: streamed.append(text))
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert [json.loads(line) for line in lines] == [{"k": REDACTED}] * 2
    assert json.loads(json.loads(res.stderr)) == {"k": REDACTED}
    shown = "".join(streamed)
    assert shown == res.stdout + res.stderr or sorted(shown) == sorted(res.stdout + res.stderr)
    one = manager.execute_skill_script("printer", "one")
    assert one.json() == {"k": REDACTED}
    batch = manager.map("printer", "one", [{}, {}], approver=None)
    assert [item.json() for item in batch] == [{"k": REDACTED}] * 2
    frame = batch.to_pandas(json=True)
    assert value not in frame.to_json(force_ascii=False)
    assert all(v == REDACTED for v in frame["k"])
    block = handle_tool_call(manager, "printer__one", {}, "t1", approver=lambda request: "yes_once")
    assert json.loads(block["content"]) == {"k": REDACTED}
    xml = build_skill_context(manager, "printer", approver=lambda request: "yes_once")
    for node in ET.fromstring(xml).iter():
        for text in (node.text or "", *node.attrib.values()):
            for view in _decoded_views(text.strip()):
                assert value not in view
    everything = res.stdout + res.stderr + shown + xml + (tmp_path / "audit.jsonl").read_text()
    for form in _forms(value):
        assert form not in everything


def test_output_cap_cuts_after_redaction(printer: Path) -> None:
    """A value straddling max_output_size is masked whole: no head of it is kept."""
    manager = SkillManager([printer], max_output_size=64)
    manager.provide_secret("printer", "API_KEY", VALUE)
    head = '{"k": "' + VALUE[:8]
    for pad in range(40, 64):  # the cap falls before, inside and after the value
        streamed: list[str] = []
        plan = manager.plan("printer", "show", {"pad": pad})
        res = run_plan(manager, plan, on_output=lambda _s, t, out=streamed: out.append(t))
        assert res.stdout_truncated
        assert VALUE[:4] not in res.stdout and VALUE[:4] not in "".join(streamed), pad
        assert head not in res.stdout
        assert len(res.stdout.encode()) <= 64
        assert res.stdout.startswith("x" * pad)


def test_audit_preview_is_redacted_before_its_cut(printer: Path, tmp_path: Path) -> None:
    """The arguments preview is cut at 256 characters: a value crossing the cut leaves no head
    in the records, the JSONL file or the logger, wherever the record was made."""
    from skill_magics.core.base.audit import ARGUMENTS_PREVIEW_CHARS

    log = tmp_path / "audit.jsonl"
    manager = SkillManager([printer], audit_log=log)
    manager.provide_secret("printer", "API_KEY", VALUE)
    head = VALUE[:6]
    for pad in range(ARGUMENTS_PREVIEW_CHARS - 20, ARGUMENTS_PREVIEW_CHARS + 2, 3):
        arguments = {"pad": 0, "note": "n" * pad + VALUE}
        manager.execute_skill_script("printer", "one", arguments)  # executor record
        with pytest.raises(SkillMagicsError):  # refused by the planner: its own record
            manager.execute_skill_script("printer", "missing", arguments)
        manager.map("printer", "one", [arguments], approver=None)  # batch item records
    # A value provided after the run was prepared (in the approval panel) counts too.
    other = "tok-late-5d4c3b2a1908"
    plan = manager.plan("printer", "one", {"n": "n" * 240 + other})
    manager.provide_secret("printer", "API_KEY", other)
    run_plan(manager, plan)
    records = manager.audit.records()
    assert len(records) > 20
    text = log.read_text() + "".join(json.dumps(r.to_dict()) for r in records)
    assert head not in text and other[:6] not in text
    assert all(len(r.arguments) <= ARGUMENTS_PREVIEW_CHARS for r in records)
    assert any(r.arguments.endswith(REDACTED + "…") or REDACTED in r.arguments for r in records)


@pytest.mark.parametrize("value", [VALUE, HARD_VALUES[0]])
def test_views_saved_with_a_notebook_mask_before_they_cut(printer: Path, value: str) -> None:
    """Approval panel (arguments, argv, batch sample), result header, batch table: each cuts
    its text; each masks a value first, even one crossing the cut (or split by quoting)."""
    from skill_magics.notebook.approval.panel import summary_html, summary_text
    from skill_magics.notebook.render.batch import batch_bundle
    from skill_magics.notebook.render.sections import header
    from skill_magics.notebook.result import SkillRunResult

    manager = SkillManager([printer])
    manager.provide_secret("printer", "API_KEY", value)
    word = value + "'s"  # shlex quotes a ' by splitting the word
    shown: list[str] = []
    for pad in (0, 40, 55, 75, 115, 190, 290, 1990):
        args = {"pad": 0, "note": "n" * pad + value}
        plan = manager.plan("printer", "one", args, argv=["--key", word])
        shown += [summary_text(plan.request), summary_text(plan.request, full=True)]
        shown.append(summary_html(plan.request))
        batch = manager.plan_map("printer", "one", [args, {"k": word}] * 3)
        shown += [summary_text(batch.request), summary_html(batch.request)]
        run = SkillRunResult("printer", "one", "failed", arguments=args, argv=["--key", word])
        run.set_status("failed", f"refused: bad input {args!r}")
        shown += [str(header(run)), run.text(), run.html()]
    result = manager.map("printer", "one", [{"note": "n" * p + value} for p in (0, 50, 70)])
    bundle = batch_bundle(result)
    shown += [result.text(), bundle["text/plain"], bundle["text/html"]]
    text = "\n".join(shown)
    assert REDACTED in text
    for view in (text, html.unescape(text)):
        for form in _forms(value):
            assert form[:6] not in view.replace(REDACTED, "")


def test_reference_files_in_the_envelope_are_masked_before_their_cut(printer: Path) -> None:
    """A run may write a value into the skill's files; include_references="content" sends
    them to a model: masked, also where the 200,000-character cut falls inside the value."""
    from skill_magics.core.prompt.context import MAX_REFERENCE_CHARS, build_skill_context

    manager = SkillManager([printer])
    manager.provide_secret("printer", "API_KEY", VALUE)
    refs = printer / "printer" / "references"
    refs.mkdir()
    (refs / "notes.md").write_text("n" * (MAX_REFERENCE_CHARS - 10) + VALUE + "m" * 100)
    (refs / "escaped.json").write_text(json.dumps({"k": VALUE, "again": VALUE}))
    xml = build_skill_context(manager, "printer", run_scripts=False, include_references="content")
    files = {f.get("path"): f for f in ET.fromstring(xml).iter("file")}
    notes = files["references/notes.md"]
    assert notes.get("truncated") == "true" and VALUE[:4] not in (notes.text or "")
    assert (notes.text or "").endswith("n" * 10 + REDACTED + "m" * 6)
    assert json.loads(files["references/escaped.json"].text or "") == {
        "k": REDACTED,
        "again": REDACTED,
    }
