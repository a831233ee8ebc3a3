"""%skills and %%skillrun in a real IPython InteractiveShell, loaded through %load_ext.

Approval is decided by clicking the real ipywidgets buttons (Button.click()), either from a
helper thread while the cell waits (approval_ui "widgets") or after the cell returned
(approval_ui "nonblocking"). Scripts really run (real processes, real files).
"""

from __future__ import annotations

import os
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest
from IPython.core.displaypub import DisplayPublisher
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from magics_support import click_when_shown
from manager_support import posix_only

from skill_magics.notebook.extension import get_magics
from skill_magics.notebook.magics import skillrun as magics_module

ECHO = textwrap.dedent(
    """\
    import json, os, sys
    data = json.load(sys.stdin)
    marker = os.environ.get("SKILL_BASE_DIR", ".") + "/ran.marker"
    with open(marker, "a") as fh:
        fh.write("ran\\n")
    print(json.dumps({"got": data, "argv": sys.argv[1:]}))
    """
)
SLOW = textwrap.dedent(
    """\
    #!/usr/bin/env python3
    import sys, time
    for i in range(int(sys.argv[1]) if len(sys.argv) > 1 else 30):
        print("tick", i, flush=True)
        time.sleep(0.1)
    """
)


def write_echo_skill(make_skill, root: Path, name: str = "echo-skill") -> Path:
    """The skill these tests run: echo.py (JSON in, JSON out, leaves ran.marker), slow.py and
    a helper under scripts/utils/."""
    return make_skill(
        root,
        name,
        {"name": name, "description": "Echo the arguments back as JSON."},
        {
            "scripts/echo.py": ECHO,
            "scripts/slow.py": SLOW,
            # Top-level code: a program %%skillrun runs (catalog/kinds.py), no shebang needed.
            "scripts/utils/parser.py": "print('parser')\n",
        },
        body="Run `scripts/echo.py` with JSON on stdin.\n",
        executable=False,
    )


@pytest.fixture
def shell(tmp_path, make_skill, ipython_shell):
    """The IPython shell with the extension loaded via %load_ext and a private skills dir."""
    skills = tmp_path / "skills"
    skills.mkdir()
    write_echo_skill(make_skill, skills)
    return ipython_shell(skills, approval_ui="widgets")


def magics(ip):
    return get_magics(ip)


class RecordingPublisher(DisplayPublisher):
    """IPython's display publisher, recording every display and update_display like a frontend.

    Like ipykernel's publisher (and unlike the base one, which prints), a display with an id
    can be replaced later, so the magics treat this shell like Jupyter.
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.records: list[dict] = []
        self._lock = threading.Lock()

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
        with self._lock:
            self.records.append(
                {"data": data, "display_id": (transient or {}).get("display_id"), "update": update}
            )

    def by_id(self) -> dict[str, list[dict]]:
        """display_id -> its records in order (first the display, then the updates)."""
        with self._lock:
            out: dict[str, list[dict]] = {}
            for rec in self.records:
                if rec["display_id"]:
                    out.setdefault(rec["display_id"], []).append(rec)
            return out


@pytest.fixture
def recorded(shell):
    """The shell with a recording display publisher: (shell, publisher)."""
    original = shell.display_pub
    shell.display_pub = RecordingPublisher(shell=shell)
    yield shell, shell.display_pub
    shell.display_pub = original


def out_count(ip) -> int:
    """How many execute_result outputs (a cell's Out) IPython has logged so far.

    IPython 9 keeps them in history_manager.outputs; IPython 7 and 8 (Colab's 7.34 among
    them) keep no such log, so there the displayhook's log_output is counted from the first
    call on (tests call this before the cell they look at).
    """
    outputs = getattr(ip.history_manager, "outputs", None)
    if outputs is not None:
        return sum(1 for out in outputs.values() for o in out if o.output_type == "execute_result")
    hook = ip.displayhook
    if not hasattr(hook, "_outs_logged"):
        hook._outs_logged = 0
        original = hook.log_output

        def counting(format_dict):
            hook._outs_logged += 1
            return original(format_dict)

        hook.log_output = counting
    return hook._outs_logged


def wait_for_last(records_of, predicate, timeout: float = 15) -> dict:
    """Poll until the newest record satisfies ``predicate`` (updates come from threads)."""
    deadline = time.monotonic() + timeout
    while True:
        records = records_of()
        if records and predicate(records[-1]):
            return records[-1]
        if time.monotonic() > deadline:
            raise AssertionError(f"last record never matched: {records[-1:]}")
        time.sleep(0.05)


def run(ip, cell: str):
    result = ip.run_cell(cell)
    return result.result


def marker(ip) -> Path:
    return ip.skills_root / "echo-skill" / "ran.marker"


# -- approval with real button clicks -------------------------------------------------


def test_yes_once_runs_and_asks_again(shell):
    click_when_shown(shell, "Yes once")
    res = run(shell, '%%skillrun echo-skill.echo\n{"a": 1}')
    assert res.status == "completed", res.message
    assert res.json() == {"got": {"a": 1}, "argv": []}
    panel = magics(shell).panels[-1]
    assert panel.decision.value == "yes_once"
    assert panel.decided_by == "button 'Yes once'"
    assert all(b.disabled for b in panel.buttons.values())
    # Yes once is not remembered: the next run shows a new panel.
    before = len(magics(shell).panels)
    click_when_shown(shell, "Yes once")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "completed"
    assert len(magics(shell).panels) == before + 1


def test_no_declines_and_nothing_runs(shell):
    click_when_shown(shell, "No")
    res = run(shell, "%%skillrun echo-skill.echo -o res\n{}")
    assert res.status == "declined"
    assert "nothing ran" in res.message
    assert not marker(shell).exists()
    assert shell.user_ns["res"] is res
    outcomes = [r.outcome for r in magics(shell).manager.audit.records()]
    assert outcomes[-1] == "declined"


def test_yes_in_session_then_reapproval_after_edit(shell):
    click_when_shown(shell, "Yes in session")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "completed"
    shown = len(magics(shell).panels)
    assert run(shell, "%%skillrun echo-skill.slow -- 1").status == "completed"
    assert len(magics(shell).panels) == shown, "session approval should not ask again"
    # Editing any script of the skill changes the content hash: asked again.
    script = shell.skills_root / "echo-skill" / "scripts" / "echo.py"
    script.write_text(ECHO + "\n# edited\n")
    click_when_shown(shell, "No")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "declined"
    assert len(magics(shell).panels) == shown + 1


def test_second_click_does_nothing(shell):
    click_when_shown(shell, "No")
    run(shell, "%%skillrun echo-skill.echo\n{}")
    panel = magics(shell).panels[-1]
    panel.buttons["yes_once"].click()  # disabled in the browser; a stray call changes nothing
    assert panel.decision.value == "no"
    assert not marker(shell).exists()


def test_panel_shows_what_would_run(shell):
    click_when_shown(shell, "No")
    run(shell, '%%skillrun echo-skill.echo -- --fast "two words"\n{"k": "v"}')
    panel = magics(shell).panels[-1]
    html = panel.widget.children[0].value
    assert "echo-skill" in html and "scripts/echo.py" in html and "python3" in html
    assert "&quot;k&quot;" in html or '"k"' in html
    assert "--fast" in html and "two words" in html
    assert "import json, os, sys" in html  # the script's first lines
    assert [b.description for b in panel.widget.children[1].children] == [
        "Yes once",
        "Yes in session",
        "No",
    ]


def test_nonblocking_click_after_cell_returned(shell):
    shell.run_cell("%config SkillMagics.approval_ui = 'nonblocking'")
    res = run(shell, '%%skillrun echo-skill.echo -o res\n{"late": true}')
    assert res.status == "pending"
    assert shell.user_ns["res"] is res
    assert not marker(shell).exists()
    magics(shell).panels[-1].buttons["yes_once"].click()
    assert res.wait(30), "the click should run the script and fill the handle"
    assert res.status == "completed"
    assert res.json()["got"] == {"late": True}
    assert marker(shell).exists()


def test_nonblocking_no(shell):
    shell.run_cell("%config SkillMagics.approval_ui = 'nonblocking'")
    res = run(shell, "%%skillrun echo-skill.echo\n{}")
    magics(shell).panels[-1].buttons["no"].click()
    assert res.wait(5) and res.status == "declined"
    assert not marker(shell).exists()


def test_approval_timeout_falls_back_to_pending(shell):
    shell.run_cell("%config SkillMagics.approval_timeout = 0.3")
    res = run(shell, "%%skillrun echo-skill.echo\n{}")
    assert res.status == "pending"
    magics(shell).panels[-1].buttons["yes_once"].click()
    assert res.wait(30) and res.status == "completed"


# -- what stays in the saved notebook: one output that ends final ---------------------------


def test_pending_display_is_updated_to_final_after_click(recorded):
    """A pending result is a display with an id; the later click replaces it (saved text/HTML
    included) and no frozen "Waiting for approval" Out is left beside it."""
    shell, pub = recorded
    shell.run_cell("%config SkillMagics.approval_ui = 'nonblocking'")
    outs = out_count(shell)
    result = shell.run_cell('%%skillrun echo-skill.echo -o res\n{"late": true}')
    res = result.result
    assert res.status == "pending"
    assert shell.user_ns["res"] is res and shell.user_ns["_"] is res  # the live object
    assert out_count(shell) == outs, "a pending result must not also be a (frozen) Out"
    panel_id, *_ = panel_display(pub)
    (display_id, records), *others = [(i, r) for i, r in pub.by_id().items() if i != panel_id]
    assert not others and not records[0]["update"]
    assert "Waiting for approval" in records[0]["data"]["text/plain"]

    magics(shell).panels[-1].buttons["yes_once"].click()
    assert res.wait(30) and res.status == "completed"
    last = wait_for_last(
        lambda: pub.by_id()[display_id], lambda r: "completed" in r["data"]["text/plain"]
    )
    assert last["update"]
    assert '{"got": {"late": true}' in last["data"]["text/plain"]
    assert "completed" in last["data"]["text/html"] and "late" in last["data"]["text/html"]
    assert "Waiting" not in last["data"]["text/plain"] + last["data"]["text/html"]
    assert set(pub.by_id()) == {display_id, panel_id}, "updates go to the same display"


def panel_display(pub: RecordingPublisher) -> tuple[str, list[dict]]:
    """The approval panel's display: (display_id, records)."""
    panels = [
        (i, r)
        for i, r in pub.by_id().items()
        if r[0]["data"]["text/plain"].startswith("Approval needed")
    ]
    assert len(panels) == 1, panels
    return panels[0]


@pytest.mark.parametrize(
    ("label", "shown"),
    [("yes_once", "Yes once"), ("no", "No"), ("yes_in_session", "Yes in session")],
)
def test_saved_panel_says_what_was_decided(recorded, label, shown):
    """The panel's display is refreshed on the click, so a saved notebook (text/HTML, no
    widget state) shows the decision, not an open question."""
    shell, pub = recorded
    shell.run_cell("%config SkillMagics.approval_ui = 'nonblocking'")
    res = shell.run_cell("%%skillrun echo-skill.echo\n{}").result
    panel_id, records = panel_display(pub)
    assert "Decision" not in records[0]["data"]["text/plain"]
    magics(shell).panels[-1].buttons[label].click()
    res.wait(30)
    last = panel_display(pub)[1][-1]
    assert last["update"] and last["data"]["text/plain"].splitlines()[-1].startswith(
        f"Decision: {shown} (button '{shown}', "
    )
    assert f"Decision: <b>{shown}</b>" in last["data"]["text/html"]


def test_live_view_becomes_the_final_result(recorded, monkeypatch):
    """A run over LIVE_DELAY_S: one output area goes running -> final (no blank residue, no
    second copy as Out), and the cell value is still the result."""
    shell, pub = recorded
    monkeypatch.setattr(magics_module, "LIVE_DELAY_S", 0.2)
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    outs = out_count(shell)
    result = shell.run_cell("%%skillrun echo-skill.slow -o res -- 15")
    res = result.result
    assert res.status == "completed", res.stderr
    assert shell.user_ns["_"] is res and shell.user_ns["res"] is res
    assert out_count(shell) == outs, "the live view became the result: no extra Out"
    (display_id, records), *others = pub.by_id().items()
    assert not others
    assert not records[0]["update"] and "running" in records[0]["data"]["text/plain"]
    assert all(r["update"] for r in records[1:])
    assert all(r["data"].get("text/plain", "").strip() for r in pub.records), "no blanked output"
    last = records[-1]["data"]
    assert "completed" in last["text/plain"] and "tick 14" in last["text/plain"]
    assert "tick 14" in last["text/html"]


def test_quick_run_is_a_plain_out(recorded, monkeypatch):
    from skill_magics.notebook.magics import skillrun

    # "Quick" is "ended before the live view's delay"; a busy machine once took the echo past
    # the 1 s it has by default (a fresh-clone run at load 12).
    monkeypatch.setattr(skillrun, "LIVE_DELAY_S", 60.0)
    shell, pub = recorded
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    outs = out_count(shell)
    res = run(shell, "%%skillrun echo-skill.echo\n{}")
    assert res.status == "completed"
    assert out_count(shell) == outs + 1
    assert not pub.by_id(), "nothing to update later: no display with an id"


def test_terminal_shell_returns_results_plainly(shell, monkeypatch):
    """IPython's base publisher prints each update as new text: no live view, plain Out."""
    monkeypatch.setattr(magics_module, "LIVE_DELAY_S", 0.2)
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    outs = out_count(shell)
    res = run(shell, "%%skillrun echo-skill.slow -- 8")
    assert res.status == "completed"
    assert out_count(shell) == outs + 1


# -- no frontend: unavailable unless pre-approved -------------------------------------------


def test_no_frontend_is_unavailable(shell):
    shell.run_cell("%config SkillMagics.approval_ui = 'auto'")  # pytest's stdin is no TTY
    res = run(shell, "%%skillrun echo-skill.echo\n{}")
    assert res.status == "approval_unavailable"
    assert "SKILL_MAGICS_AUTO_APPROVE" in res.message
    assert not marker(shell).exists()
    assert magics(shell).manager.audit.records()[-1].outcome == "approval_unavailable"


def test_auto_approve_config(shell):
    shell.run_cell("%config SkillMagics.approval_ui = 'auto'")
    shell.run_cell("%config SkillMagics.auto_approve = ['echo-skill']")
    res = run(shell, "%%skillrun echo-skill.echo\n{}")
    assert res.status == "completed"
    reasons = [r.reason or "" for r in magics(shell).manager.audit.records()]
    assert any("auto_approve by config" in r for r in reasons)


def test_auto_approve_env(shell, monkeypatch):
    shell.run_cell("%config SkillMagics.approval_ui = 'auto'")
    monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", "other, echo-skill")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "completed"
    monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", "other")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "approval_unavailable"


def test_no_approval_flag_needs_config(shell):
    result = shell.run_cell("%%skillrun echo-skill.echo --no-approval\n{}")
    assert "require_approval" in str(result.error_in_exec)
    assert not marker(shell).exists()
    shell.run_cell("%config SkillMagics.require_approval = False")
    assert run(shell, "%%skillrun echo-skill.echo --no-approval\n{}").status == "completed"


# -- parsing ---------------------------------------------------------------------------


def test_invalid_json_one_line_error_nothing_runs(shell, capsys):
    result = shell.run_cell('%%skillrun echo-skill.echo\n{"a": 1,\n "b": }')
    err = str(result.error_in_exec)
    assert "line 2, column 7" in err and "nothing ran" in err
    assert "\n" not in err
    assert not magics(shell).panels
    assert not marker(shell).exists()


def test_eval_argv_and_out(shell):
    shell.user_ns["payload"] = {"rows": [1, 2, 3]}
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    res = run(
        shell,
        "%%skillrun echo-skill.echo.py --eval -o res -- --name 'two words' x\n"
        "{**payload, 'n': len(payload['rows'])}",
    )
    assert res.status == "completed", res.stderr
    assert res.json() == {
        "got": {"rows": [1, 2, 3], "n": 3},
        "argv": ["--name", "two words", "x"],
    }
    assert shell.user_ns["res"] is res


def test_script_by_relative_path_and_empty_body(shell):
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    res = run(shell, "%%skillrun echo-skill.scripts/utils/parser.py\n")
    assert res.status == "completed" and res.stdout.strip() == "parser"


def failed_one_line(shell, capsys, cell: str) -> str:
    """Run a cell that must fail with one UsageError line (no traceback, no value)."""
    result = shell.run_cell(cell)
    assert isinstance(result.error_in_exec, UsageError), result.error_in_exec
    assert result.result is None
    err = capsys.readouterr().err.strip()
    assert err.startswith("UsageError: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_unknown_skill_and_script_one_line(shell, capsys):
    err = failed_one_line(shell, capsys, "%%skillrun echo-skil.echo\n{}")
    assert "SkillNotFoundError" in err and "did you mean 'echo-skill'" in err
    err = failed_one_line(shell, capsys, "%%skillrun echo-skill.ech\n{}")
    assert "ScriptNotFoundError" in err and "did you mean echo-skill.echo?" in err
    assert "add_dir" not in err  # a magic's user is told the magic (issue 31)


def test_failed_plan_fails_the_cell_and_keeps_no_stale_value(shell, capsys):
    """papermill / Run All stop at a cell that could not run, and -o is not left stale."""
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    assert run(shell, "%%skillrun echo-skill.echo -o res\n{}").status == "completed"
    shell.user_ns.pop("res")
    failed_one_line(shell, capsys, "%%skillrun echo-skill.nope -o res\n{}")
    assert "res" not in shell.user_ns
    err = failed_one_line(shell, capsys, "%skills show nope")
    assert "SkillNotFoundError" in err


def test_quoted_target_loses_its_quotes(shell):
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    res = run(shell, "%%skillrun 'echo-skill.echo' -o res -- 'two words'\n{}")
    assert res.status == "completed" and res.json()["argv"] == ["two words"]


def test_bad_target_and_help(shell):
    result = shell.run_cell("%%skillrun echo-skill\n{}")
    assert "SKILL.SCRIPT" in str(result.error_in_exec)
    doc = shell.find_cell_magic("skillrun").__doc__
    assert "-- ARGV" in doc and "--timeout" in doc and "--no-approval" in doc


def test_timeout(shell):
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    res = run(shell, "%%skillrun echo-skill.slow --timeout 1 -- 100")
    assert res.status == "timeout" and res.exit_code == 124


# -- %skills ---------------------------------------------------------------------------


def test_skills_subcommands(shell, tmp_path, capsys, make_skill):
    table = run(shell, "%skills")
    assert "echo-skill" in repr(table) and "echo-skill" in table._repr_html_()
    detail = run(shell, "%skills show echo-skill")
    assert "scripts/echo.py" in repr(detail) and "asks before running" in repr(detail)
    other = tmp_path / "more"
    write_echo_skill(make_skill, other, "second-skill")
    shell.run_cell(f"%skills add {other}")
    assert "second-skill" in repr(run(shell, "%skills"))
    assert str(other) in repr(run(shell, "%skills dirs"))
    shell.run_cell(f"%skills remove {other}")
    assert "second-skill" not in repr(run(shell, "%skills"))
    shell.run_cell("%skills reload")
    assert "No session approvals" in repr(run(shell, "%skills approvals"))
    magics(shell).manager.approvals.approve("echo-skill", "abc")
    assert "echo-skill" in repr(run(shell, "%skills approvals"))
    shell.run_cell("%skills revoke echo-skill")
    assert magics(shell).manager.approvals.approvals() == {}
    shell.run_cell("%%skillrun echo-skill.nope\n{}")
    assert "refused" in repr(run(shell, "%skills history"))
    result = shell.run_cell("%skills shwo echo-skill")
    assert "Did you mean show" in str(result.error_in_exec)
    result = shell.run_cell("%skills show nope")
    assert "SkillNotFoundError" in str(result.error_in_exec)


def test_skills_add_examples(shell):
    shell.run_cell("%skills add --examples")
    assert "csv-profiler" in repr(run(shell, "%skills"))


def test_config_traits_apply(shell):
    shell.run_cell("%config SkillMagics.timeout = 7")
    m = magics(shell)
    assert m.timeout == 7 and m.manager.settings.timeout == 7
    assert m.manager.settings.timeout == 7


@pytest.mark.parametrize("value", ["0", "1e6", "-3"])
def test_bad_timeout_option_is_one_line_and_nothing_runs(shell, capsys, value):
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    err = failed_one_line(shell, capsys, f"%%skillrun echo-skill.echo --timeout {value}\n{{}}")
    assert "out of range: use 1 to 600 seconds" in err
    assert not marker(shell).exists()
    assert magics(shell).manager.audit.records()[-1].outcome == "refused"


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("timeout = 1000", "out of range: use 1 to 600 seconds"),
        ("timeout = 0.5", "out of range"),
        ("max_output_size = -5", "is negative: use 0 or more"),
        ("max_display_chars = -1", "is negative"),
        ("approval_timeout = -1", "is negative"),
    ],
)
def test_bad_config_values_are_refused_when_set(shell, caplog, setting, message):
    m = magics(shell)
    before = {n: getattr(m, n) for n in ("timeout", "max_output_size", "max_display_chars")}
    shell.run_cell(f"%config SkillMagics.{setting}")
    assert message in caplog.text  # IPython reports the TraitError on one line
    assert {n: getattr(m, n) for n in before} == before
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    assert run(shell, "%%skillrun echo-skill.echo\n{}").status == "completed"  # still usable


def test_config_changes_reach_the_live_manager_and_keep_state(shell, tmp_path, make_skill):
    """Every setting reaches the live manager's settings (read at the next run, nothing
    rebuilt); approvals and history stay."""
    from skill_magics.core.run.planning.settings import RunSettings
    from skill_magics.notebook.magics.skills import RUN_SETTINGS

    assert RUN_SETTINGS == RunSettings.names(), "the traits that are run settings, same names"
    m = magics(shell)
    m.manager.approvals.approve("echo-skill", "abc")
    audit, executor = m.manager.audit, m.manager._executor
    shell.run_cell("%config SkillMagics.allowed_interpreters = ['python3']")
    assert m.manager.settings.allowed == frozenset({"python3"})
    shell.run_cell("%config SkillMagics.env_passthrough = ['MY_TOKEN']")
    assert m.manager.settings.env_passthrough == ("MY_TOKEN",)
    shell.run_cell("%config SkillMagics.inherit_env = True")
    assert m.manager.settings.inherit_env is True
    shell.run_cell("%config SkillMagics.max_output_size = 1234")
    assert m.manager.settings.max_output_size == 1234
    assert m.manager._executor is executor
    other = tmp_path / "more"
    write_echo_skill(make_skill, other, "second-skill")
    shell.run_cell(f"%config SkillMagics.skill_dirs = [{str(other)!r}]")
    assert [d.name for d in m.manager.skill_dirs] == ["more"]
    listing = repr(run(shell, "%skills"))
    assert "second-skill" in listing and "echo-skill" not in listing
    assert m.manager.approvals.is_approved("echo-skill", "abc")
    assert m.manager.audit is audit


def _complete(shell, text: str) -> set[str]:
    from IPython.core.completer import provisionalcompleter

    with provisionalcompleter():
        return {c.text for c in shell.Completer.completions(text, len(text))}


def test_completion(shell):
    assert "echo-skill.echo" in _complete(shell, "%%skillrun echo-skill.e")
    assert {"echo-skill.echo", "echo-skill.slow", "echo-skill.parser"} <= _complete(
        shell, "%%skillrun ec"
    )
    assert "echo-skill" in _complete(shell, "%skills show ec")
    assert "echo-skill.echo" not in _complete(shell, "print(ec")


def test_load_is_light():
    """%load_ext must not import ipywidgets or the executor (measured in a fresh process)."""
    import subprocess

    code = (
        "import sys, time\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "ip = InteractiveShell.instance()\n"
        "t = time.perf_counter(); ip.run_line_magic('load_ext', 'skill_magics')\n"
        "print((time.perf_counter() - t) * 1000)\n"
        "print('ipywidgets' in sys.modules, 'skill_magics.core.run.executor' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(Path(__file__).resolve().parent.parent),
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    ).stdout.split()
    # What it imports, not how long it takes: a time here failed under load (1608 ms on a
    # busy 2-core CI run); bench/bench_load_ext.py measures the time side by side.
    assert out[1:] == ["False", "False"]


def test_unload_removes_everything(shell):
    table = shell.magics_manager.magics
    assert {"skills", "skill_context"} <= set(table["line"])
    assert {"skillrun", "skillpy"} <= set(table["cell"])
    shell.run_line_magic("unload_ext", "skill_magics")
    assert not {"skills", "skill_context"} & set(table["line"])
    assert not {"skillrun", "skillpy"} & set(table["cell"])
    assert not [t for t in shell.input_transformers_cleanup if "skill" in t.__module__]
    shell.run_line_magic("load_ext", "skill_magics")
    shell.run_cell(f"%config SkillMagics.skill_dirs = [{str(shell.skills_root)!r}]")
    assert "skillrun" in table["cell"] and "skillpy" in table["cell"]


def test_eval_takes_a_real_dataframe_to_dict(shell):
    """The issue's own example: --eval df.head().to_dict() (int index keys, NaN, NumPy)."""
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    shell.run_cell(
        "import pandas as pd\ndf = pd.DataFrame({'n': [1, 2], 'x': [0.5, float('nan')]})"
    )
    res = run(shell, "%%skillrun echo-skill.echo --eval -o res\ndf.head().to_dict()")
    assert res.status == "completed", res.message
    assert res.json()["got"] == {"n": {"0": 1, "1": 2}, "x": {"0": 0.5, "1": None}}
    res = run(shell, "%%skillrun echo-skill.echo --eval\n{'total': df['n'].sum()}")
    assert res.json()["got"] == {"total": 3}


def test_text_views_show_a_skills_terminal_escapes_visibly(shell, tmp_path, make_skill):
    hostile = tmp_path / "hostile"
    make_skill(
        hostile,
        "ansi-skill",
        'name: ansi-skill\ndescription: "ok\\e[2K\\e[1A\\a erased"\nx: "\\e]0;t\\a"\n',
        body="# Title\n\x1b[2Jcleared\n",
    )
    shell.run_cell(f"%skills add {hostile}")
    for cell in ("%skills", "%skills show ansi-skill"):
        text = repr(run(shell, cell))
        assert "\x1b" not in text and "\x07" not in text, cell
        assert "\\x1b[2K" in text, cell


@pytest.mark.parametrize("out", ["results[0]", "1x", "class"])
def test_out_must_be_a_variable_name(shell, capsys, out):
    err = failed_one_line(shell, capsys, f"%%skillrun echo-skill.echo -o '{out}'\n{{}}")
    assert "-o needs a Python variable name" in err
    assert not marker(shell).exists()


@pytest.mark.parametrize("sub", ["reload", "dirs", "approvals", "history"])
def test_stray_words_after_a_subcommand_are_an_error(shell, sub):
    result = shell.run_cell(f"%skills {sub} extra")
    assert "Unexpected 'extra': usage: %skills " + sub in str(result.error_in_exec)


def test_eval_keys_that_collide_in_json_are_one_line_and_audited(shell, capsys):
    shell.run_cell("%config SkillMagics.auto_approve = '*'")
    err = failed_one_line(shell, capsys, "%%skillrun echo-skill.echo --eval\n{1: 'a', '1': 'b'}")
    assert "Keys 1 and '1' both become '1' in JSON" in err
    assert not marker(shell).exists()
    assert magics(shell).manager.audit.records()[-1].outcome == "refused"


def test_script_edited_while_the_panel_waits_does_not_run(shell):
    """The click approves what the panel showed: edited since, nothing runs (refused)."""
    script = shell.skills_root / "echo-skill" / "scripts" / "echo.py"
    m = magics(shell)
    seen = len(m.panels)

    def edit_then_click() -> None:
        deadline = time.monotonic() + 20
        while len(m.panels) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        script.write_text(script.read_text() + "\n# edited after the panel was shown\n")
        panel = m.panels[seen]
        _ = panel.widget
        panel.buttons["yes_once"].click()

    clicker = threading.Thread(target=edit_then_click, daemon=True)
    clicker.start()
    res = run(shell, '%%skillrun echo-skill.echo -o res\n{"a": 1}')
    clicker.join(5)
    assert res.status == "refused", res.message
    assert "changed after the approval was asked" in res.message
    assert not marker(shell).exists()
    assert m.manager.audit.records()[-1].outcome == "refused"


# -- --no-approval ----------------------------------------------------------------------------


@posix_only
def test_skillrun_no_approval_flag_refused_while_approval_required():
    # The magic's bypass switch only works after an explicit config change.
    from IPython.core.error import UsageError

    from skill_magics.notebook.magics.skillrun import SkillRunMagics
    from skill_magics.notebook.magics.skills import SkillMagics

    shell = InteractiveShell.instance()
    magics = SkillRunMagics(shell, SkillMagics(shell=shell))
    assert magics.skill_magics.require_approval is True
    with pytest.raises(UsageError):
        magics._plan("anything.a --no-approval", "")


def test_the_skills_help_names_every_subcommand():
    # Issue 31 item 12: %skills? left env out of its table.
    from skill_magics.notebook import cmd
    from skill_magics.notebook.magics.skills import SkillMagics

    doc = SkillMagics.skills.__doc__ or ""
    missing = [name for name in cmd.names() if f"%skills {name}" not in doc and name != "list"]
    # several subcommands share a line ("remove DIR | reload | dirs")
    missing = [name for name in missing if f"| {name}" not in doc and f" {name} " not in doc]
    assert missing == [], f"%skills? does not name {missing}"
    assert "%skills env NAME" in doc
