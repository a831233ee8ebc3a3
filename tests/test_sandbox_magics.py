"""Sandbox and secrets in a real IPython shell: %config, %%skillrun --sandbox, %skills show,
the approval panel's masked secret field and network choice (real ipywidgets, real runs)."""

from __future__ import annotations

import hashlib
import threading
import time

import pytest
from sandbox_support import require_bwrap

from skill_magics.core.base.secrets import REDACTED
from skill_magics.core.base.status import AuditOutcome
from skill_magics.notebook.extension import get_magics

VALUE = "panel-typed-secret-6b1f0c77"
SCRIPT = """\
    #!/bin/bash
    echo "key=${API_KEY:-<unset>}"
    printf '%s' "$API_KEY" | sha256sum | cut -c1-64
    (exec 3<>/dev/tcp/127.0.0.1/9) 2>/dev/null; echo "net-probe"
    """


@pytest.fixture
def shell(tmp_path, monkeypatch, make_skill, ipython_shell):
    require_bwrap()
    monkeypatch.delenv("SKILL_MAGICS_SANDBOX", raising=False)
    ws = tmp_path / "ws"
    ws.mkdir()
    monkeypatch.chdir(ws)
    skills = tmp_path / "skills"
    fm = {"name": "keyed", "description": "Needs a key.", "metadata": {"secrets": "API_KEY"}}
    make_skill(skills, "keyed", frontmatter=fm, scripts={"scripts/run.sh": SCRIPT})
    return ipython_shell(skills, approval_ui="widgets")


def _fill_and_click(ip, *, secret: str | None, network: bool, timeout: float = 20):
    """Type into the next panel's masked field, tick "allow network", click Yes once."""
    m = get_magics(ip)
    seen = len(m.panels)
    state: dict = {}

    def act() -> None:
        deadline = time.monotonic() + timeout
        while len(m.panels) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        panel = m.panels[seen]
        _ = panel.widget
        field = panel.secret_fields[("keyed", "API_KEY")]
        state["field"] = field
        if secret is not None:
            field.value = secret
        panel.network_boxes["keyed"].value = network
        panel.buttons["yes_once"].click()

    thread = threading.Thread(target=act, daemon=True)
    thread.start()
    return thread, state


def test_panel_asks_for_the_secret_masked_and_clears_it(shell) -> None:
    m = get_magics(shell)
    shell.run_cell("%config SkillMagics.sandbox = 'workspace-write'")
    assert m.manager.settings.sandbox == "workspace-write"
    thread, state = _fill_and_click(shell, secret=VALUE, network=True)
    res = shell.run_cell("%%skillrun keyed.run\n").result
    thread.join(5)
    assert res.exit_code == 0, res.stderr
    assert hashlib.sha256(VALUE.encode()).hexdigest() in res.stdout  # the value arrived
    assert f"key={REDACTED}" in res.stdout and VALUE not in res.stdout
    field = state["field"]
    assert type(field).__name__ == "Password" and field.value == ""  # nothing in widget state
    assert "sandbox: workspace-write · network on" in res.text()
    grants = [r for r in m.manager.audit.records() if r.outcome == AuditOutcome.NETWORK_GRANTED]
    assert len(grants) == 1 and "approval panel" in (grants[0].reason or "")
    assert all(VALUE not in str(r.to_dict()) for r in m.manager.audit.records())
    history = "\n".join(shell.history_manager.input_hist_raw)
    assert VALUE not in history
    # %skills show: declared secrets and whether each is set (never the value).
    shown = shell.run_cell("%skills show keyed").result
    assert "API_KEY (set; declared in " in shown.text and VALUE not in shown.text + shown.html


def test_a_blank_field_means_the_run_is_refused_in_one_line(shell) -> None:
    shown = shell.run_cell("%skills show keyed").result
    assert "API_KEY (not set; declared in " in shown.text
    thread, _ = _fill_and_click(shell, secret=None, network=False)
    outcome = shell.run_cell("%%skillrun keyed.run --sandbox read-only\n")
    thread.join(5)
    err = outcome.error_in_exec
    assert err is not None and "needs secret API_KEY" in str(err)
    records = get_magics(shell).manager.audit.records()
    assert records[-1].outcome == AuditOutcome.REFUSED


def test_sandbox_option_and_config_are_checked(shell) -> None:
    outcome = shell.run_cell("%%skillrun keyed.run --sandbox strict\n")
    assert outcome.error_in_exec is not None or outcome.error_before_exec is not None
    m = get_magics(shell)
    shell.run_cell("%config SkillMagics.sandbox = 'strict'")  # refused (IPython logs it)
    assert m.sandbox is None and m.manager.settings.sandbox == "off"
    shell.run_cell("%config SkillMagics.sandbox_network = ['keyed']")
    assert get_magics(shell).manager.sandbox_network == ("keyed",)


def test_terminal_asks_missing_secrets_with_getpass(shell, monkeypatch) -> None:
    import getpass

    prompts: list[str] = []

    def fake_getpass(prompt: str = "") -> str:  # the terminal's masked input
        prompts.append(prompt)
        return VALUE

    monkeypatch.setattr(getpass, "getpass", fake_getpass)
    m = get_magics(shell)
    request = m.manager.plan("keyed", "run").request
    m.approver()._ask_secrets_terminal(request)
    assert prompts == [
        "Secret API_KEY for skill 'keyed' (input hidden, kept in memory for this session): "
    ]
    assert m.manager.secret_status("keyed") == {"API_KEY": True}
    res = m.manager.execute_skill_script("keyed", "run")
    assert hashlib.sha256(VALUE.encode()).hexdigest() in res.stdout and VALUE not in res.stdout


def test_panel_lists_secrets_and_no_clears_the_field() -> None:
    from skill_magics.core.run.gating.approval import (
        ApprovalRequest,
        SandboxInfo,
        ScriptToApprove,
        SecretsInfo,
    )
    from skill_magics.notebook.approval.panel import ApprovalPanel, summary_html, summary_text

    request = ApprovalRequest(
        skill_name="keyed",
        scripts=(ScriptToApprove("scripts/run.sh", "bash", "echo hi\n"),),
        sandbox=SandboxInfo("workspace-write", False, ("/ws", "<private TMPDIR>")),
        secrets=SecretsInfo(("API_KEY", "OTHER"), ("API_KEY",)),
    )
    text = summary_text(request)
    assert "Secrets: API_KEY (missing: enter it below), OTHER (set)" in text
    assert "Sandbox: workspace-write" in text and "writable: /ws, <private TMPDIR>" in text
    assert "API_KEY (missing: enter it below)" in summary_html(request)
    given: list = []
    panel = ApprovalPanel(request, on_inputs=lambda *args: given.append(args) or [])
    _ = panel.widget  # built when displayed
    assert list(panel.network_boxes) == ["keyed"]
    field = panel.secret_fields[("keyed", "API_KEY")]
    field.value = VALUE
    panel.buttons["no"].click()
    assert field.value == "" and given == []  # declined: nothing kept, nothing left behind
    assert ApprovalPanel(request).widget is not None  # without on_inputs: no fields at all
