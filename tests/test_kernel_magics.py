"""%%skillrun in real Jupyter kernels (jupyter_client, no mocks).

- headless (allow_stdin=False, what nbclient/papermill send): approval_unavailable at once;
- pre-approved by env var or %config: runs;
- Kernel > Interrupt during a long script kills its process group; the next cell works;
- a real button click (the comm_msg a browser sends) while the cell waits, where the kernel
  can deliver it (ipykernel >= 7.4 await path, 6.x pumping); the Stop button on the await path;
- ipykernel 7.0-7.3 (subshell thread wait): the click sent the way JupyterLab >= 4.4 sends
  widget messages by default ("comms over subshells", one subshell per comm target: a
  ``create_subshell_request`` on the control channel, then the comm_msg with ``subshell_id``
  in its header); the Stop button there too;
- what a saved notebook keeps: a live view or a pending result is one display that later
  ``update_display_data`` messages turn into the final result, with no frozen execute_result.

Run against another kernel: SKILL_MAGICS_TEST_KERNEL_PYTHON=/venv/bin/python pytest -m kernel.
"""

from __future__ import annotations

import textwrap
import time
from pathlib import Path

import pytest
from kernel_fixtures import WIDGET_VIEW_MIME, kernel_ipykernel_version, start_kernel
from process_support import assert_group_gone, group_alive, wait_for_text

pytestmark = pytest.mark.kernel

BANG = "#!/usr/bin/env python3\n"

SLEEPER = textwrap.dedent(
    """\
    import json, os, sys, time
    args = json.load(sys.stdin)
    with open(args["pgid_file"], "w") as fh:
        fh.write(str(os.getpgid(0)))
    print("started", flush=True)
    time.sleep(args.get("seconds", 60))
    print("finished", flush=True)
    """
)
ECHO = 'import json, sys\nprint(json.dumps({"got": json.load(sys.stdin), "argv": sys.argv[1:]}))\n'
TICKER = textwrap.dedent(
    """\
    import sys, time
    for i in range(int(sys.argv[1])):
        print("tick", i, flush=True)
        time.sleep(0.1)
    """
)


@pytest.fixture
def skills_dir(tmp_path: Path, make_skill) -> Path:
    make_skill(
        tmp_path / "skills",
        "kernel-skill",
        {"name": "kernel-skill", "description": "Scripts for the real-kernel tests."},
        # Shebangs as real CLIs have them (any top-level code would run too: catalog/kinds.py).
        {
            "scripts/sleeper.py": BANG + SLEEPER,
            "scripts/echo.py": BANG + ECHO,
            "scripts/ticker.py": BANG + TICKER,
        },
        body="Body\n",
        executable=False,
    )
    return tmp_path / "skills"


def _env(skills_dir: Path, **extra: str) -> dict[str, str]:
    return {"SKILL_MAGICS_PATH": str(skills_dir), **extra}


def _load(k) -> None:
    r = k.execute("%load_ext skill_magics", allow_stdin=False)
    assert r.ok, r.error_text


def test_headless_is_unavailable_without_waiting(skills_dir, tmp_path):
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        r = k.execute("%%skillrun kernel-skill.echo -o res\n{}\n", allow_stdin=False, timeout=60)
        assert r.ok, r.error_text
        assert r.duration_s < 30, "must not wait for a click nobody can give"
        assert "approval unavailable" in r.text_plain
        shown = set(k.buttons())
        assert not shown & {"Yes once", "Yes in session", "No"}, "headless: no approval buttons"
        r = k.execute("print(res.status, res.exit_code)", allow_stdin=False)
        assert r.stdout.strip() == "approval_unavailable None"
        r = k.execute(
            "print([x.outcome for x in "
            "__import__('skill_magics.notebook.extension', fromlist=['x'])"
            ".get_magics(get_ipython()).manager.audit.records()])",
            allow_stdin=False,
        )
        assert "approval_unavailable" in r.stdout


def test_headless_auto_approve_env(skills_dir, tmp_path):
    env = _env(skills_dir, SKILL_MAGICS_AUTO_APPROVE="kernel-skill")
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        r = k.execute('%%skillrun kernel-skill.echo -o res -- a b\n{"x": 1}', allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute("print(res.status, res.json())", allow_stdin=False)
        assert r.stdout.strip() == "completed {'got': {'x': 1}, 'argv': ['a', 'b']}"


def test_headless_auto_approve_config(skills_dir, tmp_path):
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        k.execute("%config SkillMagics.auto_approve = '*'", allow_stdin=False)
        r = k.execute("%%skillrun kernel-skill.echo\n", allow_stdin=False)
        assert r.ok, r.error_text
        assert "completed" in r.text_plain


def test_interrupt_kills_process_group_and_kernel_survives(skills_dir, tmp_path):
    pgid_file = tmp_path / "pgid"
    env = _env(skills_dir, SKILL_MAGICS_AUTO_APPROVE="*")
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        msg_id = k.submit(
            f"%%skillrun kernel-skill.sleeper -o res\n"
            f'{{"pgid_file": "{pgid_file}", "seconds": 120}}',
            allow_stdin=False,
        )
        pgid = int(wait_for_text(pgid_file))
        assert group_alive(pgid)
        time.sleep(0.3)
        k.interrupt()
        r = k.collect(msg_id, timeout=60)
        assert not r.ok, "an interrupted cell ends with an error (Run All stops there)"
        assert r.duration_s < 60
        # one line, not a traceback through the magic's frames
        assert r.reply["ename"] == "RunInterrupted", r.reply
        assert r.reply["traceback"] == [
            "RunInterrupted: kernel-skill.scripts/sleeper.py: interrupted: the script's process "
            "group was killed; the partial result is in res"
        ]
        assert_group_gone(pgid, within=10)
        r = k.execute("1 + 1", allow_stdin=False)
        assert r.ok and r.text_plain == "2"
        r = k.execute("print(res.status, 'started' in res.stdout)", allow_stdin=False)
        # the await path (>= 7.4) stops the run like Stop does: the output so far is kept
        kept = "True" if kernel_ipykernel_version() >= (7, 4) else "False"
        assert r.stdout.strip() == f"interrupted {kept}"


def test_interrupt_while_waiting_for_a_click_withdraws_the_panel(skills_dir, tmp_path):
    """Kernel > Interrupt during the approval wait (every strategy: await, subshell thread,
    pumping): the cell ends, the buttons are disabled, a late click runs nothing and the
    interruption is audited."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        if not _blocking_click_supported():
            _subshell_for_comms(k)  # 7.0-7.3 block (thread wait) only when a subshell exists
        msg_id = k.submit('%%skillrun kernel-skill.echo -o res\n{"k": 9}', allow_stdin=True)
        button = k.wait_for_button("Yes once", timeout=60)
        k.drain(0.5)
        assert not k._idle_seen(msg_id), "the cell must be waiting for the click"
        k.interrupt()
        r = k.collect(msg_id, timeout=60)
        assert not r.ok and r.duration_s < 60, "an interrupted cell ends with an error"
        assert r.reply["ename"] == "RunInterrupted" and len(r.reply["traceback"]) == 1
        deadline = time.monotonic() + 30
        while not k.widgets[button].get("disabled"):
            assert time.monotonic() < deadline, "the buttons must be disabled"
            k.drain(0.2)
        k.click(button)  # a late click (on the main shell, now idle)
        k.drain(1.0)
        r = k.execute(
            "m = get_ipython().magics_manager.registry['SkillMagics']\n"
            "print([(x.outcome, x.reason) for x in m.manager.audit.records()])\n"
            "print(m.panels[-1].decision, repr(m.panels[-1].withdrawn))\n"
            "print('res' in globals())",
            allow_stdin=False,
        )
        assert r.ok, r.error_text
        records, state, has_res = r.stdout.strip().splitlines()
        assert records == (
            "[('interrupted', 'the cell was interrupted while waiting for approval; nothing ran')]"
        )
        assert state.startswith("None 'the cell was interrupted")
        assert has_res == "False"


def _blocking_click_supported() -> bool:
    """A click on the main shell (no subshell: VS Code) reaches a waiting cell on every
    supported kernel: awaited (>= 7.4), relayed (7.x), pumped (6.x)."""
    return True


@pytest.mark.skipif(
    not _blocking_click_supported(),
    reason="ipykernel 7.0-7.3 receives clicks only on a frontend subshell",
)
@pytest.mark.parametrize("label,status", [("Yes once", "completed"), ("No", "declined")])
def test_click_while_cell_waits(skills_dir, tmp_path, label, status):
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        msg_id = k.submit('%%skillrun kernel-skill.echo -o res\n{"k": 2}', allow_stdin=True)
        button = k.wait_for_button(label, timeout=60)
        assert not k._idle_seen(msg_id), "the cell must still be waiting for the click"
        k.click(button)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        r = k.execute("print(res.status)", allow_stdin=True)
        assert r.stdout.strip() == status


@pytest.mark.skipif(
    kernel_ipykernel_version() < (7, 4), reason="the Stop button needs the await path"
)
def test_stop_button_on_await_path(skills_dir, tmp_path):
    pgid_file = tmp_path / "pgid"
    env = _env(skills_dir, SKILL_MAGICS_AUTO_APPROVE="*")
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        msg_id = k.submit(
            f'%%skillrun kernel-skill.sleeper -o res\n{{"pgid_file": "{pgid_file}"}}',
            allow_stdin=True,
        )
        pgid = int(wait_for_text(pgid_file))
        stop = k.wait_for_button("Stop", timeout=60)
        k.click(stop)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert not group_alive(pgid)
        r = k.execute("print(res.status, 'started' in res.stdout)", allow_stdin=True)
        assert r.stdout.strip() == "interrupted True"


def test_run_all_queued_cell_runs_after_the_click(skills_dir, tmp_path):
    """Run All: a cell queued behind a waiting %%skillrun runs after it, once, in order."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        # 7.0-7.3 get the click only on a subshell (JupyterLab's default there).
        subshell = None if _blocking_click_supported() else _subshell_for_comms(k)
        first = k.submit('%%skillrun kernel-skill.echo -o res\n{"k": 3}', allow_stdin=True)
        second = k.submit("print('after', res.status)", allow_stdin=True)
        button = k.wait_for_button("Yes once", timeout=60)
        if subshell is None:
            k.click(button)
        else:
            _click_on_subshell(k, button, subshell)
        assert k.collect(first, timeout=60).ok
        r = k.collect(second, timeout=60)
        assert r.ok, r.error_text
        # ipykernel 6.x: the held-back cell reported idle once when it was deferred, so its
        # output can arrive after collect() returned; read on until it is there.
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "after" not in _stream_text(k, second):
            k.drain(0.3)
        assert _stream_text(k, second).strip() == "after completed"


def _stream_text(k, msg_id: str) -> str:
    return "".join(
        m["content"]["text"]
        for m in k.iopub
        if m["msg_type"] == "stream" and m.get("parent_header", {}).get("msg_id") == msg_id
    )


# -- ipykernel 7.0-7.3: clicks arrive on a subshell thread -----------------------------------


def _subshells_supported() -> bool:
    return kernel_ipykernel_version() >= (7, 0)


def _subshell_for_comms(k) -> str:
    """Create a subshell the way JupyterLab does for widget comms (control channel)."""
    request = k.kc.session.msg("create_subshell_request", {})
    k.kc.control_channel.send(request)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        reply = k.kc.get_control_msg(timeout=30)
        if reply.get("parent_header", {}).get("msg_id") == request["header"]["msg_id"]:
            assert reply["content"].get("status", "ok") == "ok", reply["content"]
            return reply["content"]["subshell_id"]
    raise AssertionError("no create_subshell_reply: does this kernel support subshells?")


def _click_on_subshell(k, comm_id: str, subshell_id: str) -> None:
    """The comm_msg of a button click, on the subshell (``subshell_id`` in the header)."""
    msg = k.kc.session.msg(
        "comm_msg",
        {"comm_id": comm_id, "data": {"method": "custom", "content": {"event": "click"}}},
    )
    msg["header"]["subshell_id"] = subshell_id
    k.kc.session.send(k.kc.shell_channel.socket, msg)


@pytest.mark.skipif(not _subshells_supported(), reason="kernel subshells need ipykernel >= 7")
@pytest.mark.parametrize("label,status", [("Yes once", "completed"), ("No", "declined")])
def test_subshell_click_while_cell_waits(skills_dir, tmp_path, label, status):
    """JupyterLab's default on ipykernel 7.x: the click comes on a subshell while the cell
    waits (7.0-7.3: threading.Event wait; >= 7.4: the await path)."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        subshell = _subshell_for_comms(k)
        msg_id = k.submit('%%skillrun kernel-skill.echo -o res\n{"k": 4}', allow_stdin=True)
        button = k.wait_for_button(label, timeout=60)
        k.drain(0.5)
        assert not k._idle_seen(msg_id), "the cell must still be waiting for the click"
        deadline = time.monotonic() + 60
        # Click again after 5 s without effect, as a person would (see click_until_handled).
        while not k._idle_seen(msg_id):
            assert time.monotonic() < deadline, "the click must end the wait"
            _click_on_subshell(k, button, subshell)
            retry_at = time.monotonic() + 5
            while not k._idle_seen(msg_id) and time.monotonic() < retry_at:
                k.drain(0.2)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert r.duration_s < 60, "the click must end the wait, not approval_timeout"
        r = k.execute("print(res.status, res.stdout.strip())", allow_stdin=True)
        expected = 'completed {"got": {"k": 4}, "argv": []}' if status == "completed" else status
        assert r.stdout.strip() == expected


@pytest.mark.skipif(
    not (7, 0) <= kernel_ipykernel_version() < (7, 4),
    reason="the thread-wait Stop path is ipykernel 7.0-7.3 (>= 7.4 awaits; see the await test)",
)
def test_stop_button_on_subshell(skills_dir, tmp_path):
    pgid_file = tmp_path / "pgid"
    env = _env(skills_dir, SKILL_MAGICS_AUTO_APPROVE="*")
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        subshell = _subshell_for_comms(k)
        msg_id = k.submit(
            f'%%skillrun kernel-skill.sleeper -o res\n{{"pgid_file": "{pgid_file}"}}',
            allow_stdin=True,
        )
        pgid = int(wait_for_text(pgid_file))
        _click_on_subshell(k, k.wait_for_button("Stop", timeout=60), subshell)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert not group_alive(pgid)
        r = k.execute("print(res.status, 'started' in res.stdout)", allow_stdin=True)
        assert r.stdout.strip() == "interrupted True"


# -- what the saved notebook keeps ---------------------------------------------------------


def _displays(k, msg_ids: set[str] | None = None) -> dict[str, list[dict]]:
    """display_id -> [display_data, update_display_data...] seen on iopub, in order."""
    out: dict[str, list[dict]] = {}
    for m in k.iopub:
        if m["msg_type"] not in ("display_data", "update_display_data"):
            continue
        if msg_ids is not None and m.get("parent_header", {}).get("msg_id") not in msg_ids:
            continue
        display_id = (m["content"].get("transient") or {}).get("display_id")
        if display_id:
            out.setdefault(display_id, []).append({"msg_type": m["msg_type"], **m["content"]})
    return out


def test_live_view_is_one_output_that_ends_final(skills_dir, tmp_path):
    """A run over ~1 s: one display (running) whose updates end with the final result; no
    execute_result, so nothing stale stays in the saved notebook."""
    env = _env(skills_dir, SKILL_MAGICS_AUTO_APPROVE="*")
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        r = k.execute("%%skillrun kernel-skill.ticker -o res -- 25", allow_stdin=True)
        assert r.ok, r.error_text
        assert not [o for o in r.outputs if o["msg_type"] == "execute_result"]
        (display_id, msgs), *others = _displays(k, {r.msg_id}).items()
        assert not others
        assert msgs[0]["msg_type"] == "display_data"
        assert "running" in msgs[0]["data"]["text/plain"]
        final = msgs[-1]
        assert final["msg_type"] == "update_display_data"
        assert "completed" in final["data"]["text/plain"]
        assert "tick 24" in final["data"]["text/plain"] and "tick 24" in final["data"]["text/html"]
        # Live while running, static once final: the saved output needs no kernel (issue 44)
        assert WIDGET_VIEW_MIME in msgs[0]["data"] and WIDGET_VIEW_MIME not in final["data"]
        assert all(m["data"].get("text/plain", "").strip() for m in msgs), "no blanked output"
        r = k.execute("print(res.status, _ is res)", allow_stdin=True)
        assert r.stdout.strip() == "completed True"


def test_pending_display_updated_after_later_click(skills_dir, tmp_path):
    """Non-blocking approval: the cell ends pending; the click afterwards turns that same
    display into the final result (what nbconvert/GitHub later show)."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        k.execute("%config SkillMagics.approval_ui = 'nonblocking'", allow_stdin=True)
        r = k.execute('%%skillrun kernel-skill.echo -o res\n{"late": 1}', allow_stdin=True)
        assert r.ok, r.error_text
        assert not [o for o in r.outputs if o["msg_type"] == "execute_result"]
        shown = _displays(k, {r.msg_id})
        panel = [i for i, m in shown.items() if "Approval needed" in m[0]["data"]["text/plain"]]
        (display_id, msgs), *others = [(i, m) for i, m in shown.items() if i not in panel]
        assert len(panel) == 1 and not others
        assert "Waiting for approval" in msgs[0]["data"]["text/plain"]
        k.click(k.wait_for_button("Yes once", timeout=60))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            last = _displays(k)[display_id][-1]["data"]["text/plain"]
            if "completed" in last:
                break
            k.drain(0.3)
        assert "completed" in last and '"late": 1' in last
        # The panel's own display was refreshed too: saved, it says what was decided.
        decided = _displays(k)[panel[0]][-1]
        assert decided["msg_type"] == "update_display_data"
        assert "Decision: Yes once (button 'Yes once'" in decided["data"]["text/plain"]
        assert WIDGET_VIEW_MIME not in decided["data"], "a decided panel is static (issue 44)"
        assert WIDGET_VIEW_MIME not in _displays(k)[display_id][-1]["data"]
        r = k.execute("print(res.status, _ is res)", allow_stdin=True)
        assert r.stdout.strip() == "completed True"


@pytest.mark.skipif(not _subshells_supported(), reason="kernel subshells need ipykernel >= 7")
def test_subshell_opened_after_the_panel_appears_gets_the_click(skills_dir, tmp_path):
    """JupyterLab 4.6 on ipykernel 7.x: no subshell exists when the cell starts; the frontend
    creates one when the panel's widget comm opens, while the cell already waits."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        msg_id = k.submit('%%skillrun kernel-skill.echo -o res\n{"k": 6}', allow_stdin=True)
        button = k.wait_for_button("Yes once", timeout=60)
        k.comms_subshell()  # opened now, as the frontend reacts to the panel's comm_open
        k.drain(0.5)
        assert not k._idle_seen(msg_id), "the cell must still be waiting for the click"
        k.click_until_handled(button, msg_id, subshell=True)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        r = k.execute("print(res.status, res.stdout.strip())", allow_stdin=True)
        assert r.stdout.strip() == 'completed {"got": {"k": 6}, "argv": []}'


def test_run_all_with_two_approval_cells_gets_both_clicks(skills_dir, tmp_path):
    """Run All over two %%skillrun cells: the second waits behind the first, shows its own
    panel once the first is done, and its click reaches it too (ipykernel 6.x replays the
    held-back cell through the kernel's dispatcher, so the pump sees the click)."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        subshell = not _blocking_click_supported()
        if subshell:
            k.comms_subshell()
        first = k.submit('%%skillrun kernel-skill.echo -o a\n{"k": 1}', allow_stdin=True)
        second = k.submit('%%skillrun kernel-skill.echo -o b\n{"k": 2}', allow_stdin=True)
        after = k.submit("print(a.status, b.status)", allow_stdin=True)
        k.click_while_waiting(first, "Yes once", subshell=subshell)
        deadline = time.monotonic() + 60
        while len(k.buttons_all("Yes once")) < 2:
            assert time.monotonic() < deadline, "the second cell must show its own panel"
            k.drain(0.3)
        k.click_until_handled(k.buttons_all("Yes once")[-1], second, subshell=subshell)
        r = k.collect(second, timeout=60)
        assert r.ok, r.error_text
        assert r.duration_s < 50, "the click must end the wait, not approval_timeout"
        k.collect(after, timeout=60)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and "completed" not in _stream_text(k, after):
            k.drain(0.3)
        assert _stream_text(k, after).strip() == "completed completed"


def test_run_all_keeps_cell_order_and_interrupts_after_an_approval_cell(skills_dir, tmp_path):
    """Cells queued behind a waiting approval cell run in order, before one sent after the
    click, and Kernel > Interrupt still reaches them (ipykernel 6.x replays them)."""
    with start_kernel(env=_env(skills_dir), cwd=tmp_path) as k:
        _load(k)
        assert k.execute("import time\nL = []", allow_stdin=True).ok
        subshell = not _blocking_click_supported()
        if subshell:
            k.comms_subshell()
        first = k.submit('%%skillrun kernel-skill.echo -o a\n{"k": 1}', allow_stdin=True)
        queued = [k.submit(f"L.append({x!r})", allow_stdin=True) for x in "BC"]
        started = tmp_path / "slow-started"
        slow = k.submit(
            f"L.append('S')\nopen({str(started)!r}, 'w').write('1')\ntime.sleep(30)\n"
            "L.append('S-end')",
            allow_stdin=True,
        )
        k.click(k.wait_for_button("Yes once", timeout=60), subshell=subshell)
        late = k.submit("L.append('E')", allow_stdin=True)  # right after the click
        wait_for_text(started, timeout=60)  # the slow cell runs now
        k.interrupt()
        r = k.collect(slow, timeout=60)
        assert r.reply.get("ename") == "KeyboardInterrupt", "the interrupt must reach it"
        assert k.collect(first, timeout=60).ok
        for msg_id in queued:
            assert k.collect(msg_id, timeout=60).ok
        assert k.collect(late, timeout=60).status == "aborted"  # Run All stops at the error
        r = k.execute("print(L)", allow_stdin=True)
        # B and C before S, and E (sent after the click) never ahead of them
        assert r.stdout.strip() == "['B', 'C', 'S']", r.stdout
