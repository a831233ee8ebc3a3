"""Secrets declared the ways other tools write them (agentskills#86 ``env: {NAME: {secret:
true}}``, hermes-agent ``requires.env``, deer-flow ``required-secrets``, keys under
``metadata``) read into the one model the sandbox and redaction use: each value reaches
only its skill's script and is masked; ``%skills show`` says which form it read; validation
warns on a name declared twice differently, and not on one declared twice the same way."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skill_magics.core.manager import SkillManager
from skill_magics.core.base.secrets import (
    REDACTED,
    declared_secrets,
    secret_conflicts,
    secret_forms,
)
from skill_magics.core.lab.validation import check_skill

VALUE = "sk-form-5e4d3c2b1a09"

ECHO = """\
    #!/bin/bash
    echo "key=${KEY:-<unset>}"
    printf '%s' "$KEY" | sha256sum | cut -c1-64
    """

# frontmatter (top level, as the tools write it) -> the form %skills show names
FORMS = {
    "agentskills-env": (
        {"env": {"KEY": {"description": "the key", "secret": True}}},
        "env (secret: true)",
    ),
    "hermes-requires": ({"requires": {"env": ["KEY"]}}, "requires.env"),
    "deer-flow": ({"required-secrets": ["KEY"]}, "required-secrets"),
    "metadata-secrets": ({"metadata": {"secrets": "KEY"}}, "secrets"),
    "metadata-env": ({"metadata": {"env": {"KEY": {"secret": True}}}}, "env (secret: true)"),
}


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    for label, (extra, _form) in FORMS.items():
        fm = {"name": label, "description": f"Declares KEY as {label}.", **extra}
        make_skill(root, label, frontmatter=fm, scripts={"scripts/echo.sh": ECHO})
    make_skill(root, "other", scripts={"scripts/echo.sh": ECHO})
    plain = {
        "name": "plain",
        "description": "A plain env entry.",
        "env": {"KEY": {"description": "x"}},
    }
    make_skill(root, "plain", frontmatter=plain, scripts={"scripts/echo.sh": ECHO})
    return root


@pytest.mark.parametrize("label", sorted(FORMS))
def test_each_form_reaches_only_its_script_and_is_redacted(skills, label):
    manager = SkillManager([skills])
    assert manager.secret_status(label) == {"KEY": False}
    manager.provide_secret(label, "KEY", VALUE)
    result = manager.execute_skill_script(label, "echo")
    assert result.exit_code == 0
    assert hashlib.sha256(VALUE.encode()).hexdigest() in result.stdout  # it arrived
    assert f"key={REDACTED}" in result.stdout and VALUE not in result.stdout
    for other in ("other", "plain"):
        assert "key=<unset>" in manager.execute_skill_script(other, "echo").stdout


def test_an_env_entry_without_secret_true_is_not_a_secret(skills):
    manager = SkillManager([skills])
    assert manager.secret_status("plain") == {}
    with pytest.raises(ValueError, match="does not declare secret"):
        manager.provide_secret("plain", "KEY", VALUE)


def test_show_names_the_form_it_read(skills, monkeypatch):
    monkeypatch.setenv("SKILL_MAGICS_PATH", str(skills))
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "skill_magics")
    try:
        ip.run_line_magic("skills", f"add {skills}")
        for label, (_extra, form) in FORMS.items():
            shown = ip.run_line_magic("skills", f"show {label}")
            assert f"KEY (not set; declared in {form})" in shown.text, shown.text
            assert f"KEY (not set; declared in {form})" in shown.html
    finally:
        ip.run_line_magic("unload_ext", "skill_magics")


def test_a_name_declared_twice_differently_warns_and_the_same_twice_does_not(tmp_path, make_skill):
    both_ways = {"env": {"KEY": {"secret": False}}, "metadata": {"secrets": "KEY"}}
    described = {
        "env": {"KEY": {"description": "the API key", "secret": True}},
        "required-secrets": {"KEY": "a different key"},
    }
    cases = {"other_key": {"secrets": "OTHER_KEY other_key"}}
    assert secret_conflicts(both_ways["metadata"] | {"env": both_ways["env"]}) == [
        "KEY is declared a secret (secrets) and a plain variable (env): declare it once"
    ]
    assert secret_conflicts(described) == [
        "KEY is described differently in required-secrets, env (secret: true): declare it once"
    ]
    assert secret_conflicts(cases["other_key"]) == [
        "OTHER_KEY and other_key differ only in case: declare one of them"
    ]
    same = {"env": {"KEY": {"description": "k", "secret": True}}, "required-secrets": ["KEY"]}
    assert secret_conflicts(same) == []  # the same declaration twice is fine
    assert declared_secrets(same) == ("KEY",)
    assert secret_forms(same) == {"KEY": "required-secrets, env (secret: true)"}
    # validation reports it, one line naming the fix
    root = tmp_path / "skills"
    fm = {"name": "twice", "description": "Declares KEY twice.", **described}
    problems = check_skill(make_skill(root, "twice", frontmatter=fm))
    lines = [str(p) for p in problems if p.code == "secret-declared-twice"]
    assert lines == [
        "SKILL.md: KEY is described differently in required-secrets, env (secret: true). "
        "Fix: declare it once"
    ]
    fm_same = {"name": "same", "description": "Declares KEY twice the same way.", **same}
    ok = check_skill(make_skill(root, "same", frontmatter=fm_same))
    assert not [p for p in ok if p.code == "secret-declared-twice"]


@pytest.mark.parametrize("label", ["agentskills-env", "hermes-requires"])
def test_each_new_form_reaches_a_sandboxed_script_and_is_redacted(box, make_skill, label):
    extra, _form = FORMS[label]
    fm = {"name": label, "description": f"Declares KEY as {label}.", **extra}
    make_skill(box.skills, label, frontmatter=fm, scripts={"scripts/echo.sh": ECHO})
    box.skill("other", {"scripts/echo.sh": ECHO})
    manager = box.manager()
    manager.provide_secret(label, "KEY", VALUE)
    result = manager.execute_skill_script(label, "echo")
    assert result.sandbox is not None and result.sandbox["mode"] == "workspace-write"
    assert hashlib.sha256(VALUE.encode()).hexdigest() in result.stdout
    assert f"key={REDACTED}" in result.stdout and VALUE not in result.stdout
    assert "key=<unset>" in manager.execute_skill_script("other", "echo").stdout
