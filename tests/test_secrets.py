"""Declared secrets (core/secrets.py) through real runs: only the declaring skill gets a value,
and no value appears in output, results or the audit (memory and JSONL)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from manager_support import run_plan

from skill_magics.core.errors import SecretMissingError
from skill_magics.core.manager import SkillManager
from skill_magics.core.secrets import REDACTED, SecretStore, declared_secrets, rejected_secrets
from skill_magics.core.status import AuditOutcome

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
    # Output cut by the size cap in the middle of a value: the head is masked too.
    assert store.redact("out: " + VALUE[:10], cut=True) == "out: " + REDACTED


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
