"""Approval in a frontend that never uses subshells (VS Code), on every approval path.

VS Code's kernel proxy reports ``supportsSubshells: false`` and sends a widget's ``comm_msg``
on the ordinary shell channel, with no ``subshell_id`` in its header, while the cell still
runs (microsoft/vscode-jupyter#17360). The client here does exactly that: it never sends a
``create_subshell_request`` and clicks with :meth:`KernelSession.click` (``subshell=False``),
on each path clicking No, Yes once and Yes in session in turn, each while the cell waits.

The kernel decides how the cell waits (docs/architecture.md, *Waiting for a click*): on
ipykernel >= 7.4 each path runs awaited (the default) and blocking (``%autoawait off``: the
comm relay, approval/relay.py); 7.0-7.3 block (the relay); 6.x pumps. The matrix
(scripts/kernel-matrix.sh) runs this file on each.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from kernel_fixtures import KernelSession, kernel_ipykernel_version, start_kernel
from lab_support import lab_skills
from model_server import Call, Scripted, call, say
from sources_support import make_collection

from tests.real_layouts import write_pep

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

ECHO = "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"
ORDER = ("No", "Yes once", "Yes in session")  # the three buttons, each clicked once
DECISION = {"No": "no", "Yes once": "yes_once", "Yes in session": "yes_in_session"}
MODES = ["await", "blocking"] if kernel_ipykernel_version() >= (7, 4) else ["blocking"]
LAST_PANEL = (
    "from skill_magics.notebook.extension import get_magics\n"
    "_p = get_magics(get_ipython()).panels\n"
    "print(len(_p), _p[-1].decision.value if _p and _p[-1].decision else None)"
)


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    make_skill(
        tmp_path / "skills",
        "vs-skill",
        {"name": "vs-skill", "description": "Scripts for the VS Code wire tests."},
        {"scripts/echo.py": ECHO},
        body="Run `python scripts/echo.py` first.\n",
        executable=False,
    )
    return tmp_path / "skills"


def _start(k: KernelSession, mode: str) -> None:
    r = k.execute("%load_ext skill_magics", allow_stdin=False)
    assert r.ok, r.error_text
    if mode == "blocking" and kernel_ipykernel_version() >= (7, 4):
        r = k.execute("%autoawait off", allow_stdin=False)  # the magics then block: the relay
        assert r.ok, r.error_text
    probe = (
        "from skill_magics.notebook.approval import waiting\n"
        "print(waiting.choose(get_ipython(), in_coroutine=%s).value)"
        % ("True" if mode == "await" else "False")
    )
    r = k.execute(probe, allow_stdin=True)
    want = {"await": "await", "blocking": "relay"}[mode]
    if kernel_ipykernel_version() < (7,):
        want = "pump"
    assert r.stdout.strip() == want, (r.stdout, r.error_text)


def _click(k: KernelSession, code: str, label: str, *, ok: bool | None = True) -> None:
    """Run ``code``; when its (new) panel shows, click ``label`` the VS Code way; the cell
    must then finish because of the click and record that decision."""
    before = len(k.buttons_all("No"))
    msg_id = k.submit(code, allow_stdin=True)
    while len(k.buttons_all("No")) <= before:
        k.wait_for_button("No", timeout=60)
        k.drain(0.2)
    button = k.buttons_all(label)[-1]
    k.drain(0.5)
    assert not k._idle_seen(msg_id), "the cell must still be waiting for the click"
    k.click_until_handled(button, msg_id, subshell=False)  # no subshell_id, ever
    r = k.collect(msg_id, timeout=300)
    assert r.duration_s < 250, "the click must end the wait, not approval_timeout"
    if ok:
        assert r.ok, r.error_text
    check = k.execute(LAST_PANEL, allow_stdin=False)
    assert check.stdout.split()[1] == DECISION[label], check.stdout


def _value(k: KernelSession, expr: str) -> str:
    r = k.execute(f"print({expr})", allow_stdin=False)
    assert r.ok, r.error_text
    return r.stdout.strip()


def _no_new_panel(k: KernelSession, code: str) -> None:
    """After Yes in session: the same run goes ahead without asking."""
    before = _value(k, "len(get_magics(get_ipython()).panels)")
    r = k.execute(code, allow_stdin=True, timeout=120)
    assert r.ok, r.error_text
    assert _value(k, "len(get_magics(get_ipython()).panels)") == before


@pytest.mark.parametrize("mode", MODES)
def test_skillrun(skills: Path, tmp_path: Path, mode: str) -> None:
    cell = '%%skillrun vs-skill.echo -o res\n{"k": 1}'
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        _start(k, mode)
        for label, status in zip(ORDER, ("declined", "completed", "completed"), strict=True):
            _click(k, cell, label)
            assert _value(k, "res.status") == status
        _no_new_panel(k, cell)
        assert _value(k, "res.status, res.json()") == "completed {'k': 1}"


@pytest.mark.parametrize("mode", MODES)
def test_map_batch(skills: Path, tmp_path: Path, mode: str) -> None:
    cell = "%%skillrun vs-skill.echo --map rows --workers 2 -o res\n"
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        _start(k, mode)
        assert k.execute("rows = [{'k': i} for i in range(3)]").ok
        for label in ORDER:
            _click(k, cell, label, ok=label != "No")
            if label != "No":
                assert _value(k, "res.counts()") == "{'completed': 3}"
        _no_new_panel(k, cell)


@pytest.mark.parametrize("mode", MODES)
def test_skill_context(skills: Path, tmp_path: Path, mode: str) -> None:
    line = "ctx = %skill_context vs-skill --args '{\"n\": 1}'"
    status = (
        "__import__('xml.etree.ElementTree', fromlist=['x'])"
        ".fromstring(ctx).find('.//script_output').get('status')"
    )
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        _start(k, mode)
        for label, want in zip(ORDER, ("declined", "completed", "completed"), strict=True):
            _click(k, line, label)
            assert _value(k, status) == want
        _no_new_panel(k, line)


@pytest.mark.parametrize("mode", MODES)
def test_skills_install(tmp_path: Path, mode: str) -> None:
    repo = make_collection(tmp_path / "collection")
    project = tmp_path / "project"
    project.mkdir()
    line = f"%skills install file://{repo} --skill pdf"
    installed = project / ".agents" / "skills" / "pdf" / "SKILL.md"
    with start_kernel(cwd=project) as k:
        _start(k, mode)
        for label in ORDER:
            shutil.rmtree(project / ".agents", ignore_errors=True)
            _click(k, line, label, ok=label != "No")
            assert installed.is_file() == (label != "No")


@pytest.mark.parametrize("mode", MODES)
def test_skills_env(tmp_path: Path, mode: str) -> None:
    skills = tmp_path / "skills"
    write_pep(skills)
    envs = tmp_path / "envs"
    env = {"SKILL_MAGICS_PATH": str(skills), "SKILL_MAGICS_ENV_DIR": str(envs)}
    with start_kernel(env=env, cwd=tmp_path) as k:
        _start(k, mode)
        for label, line in zip(ORDER, ("", "", " --rebuild"), strict=True):
            _click(k, "%skills env pep" + line, label, ok=label != "No")
            built = bool(list(envs.rglob("bin")))
            assert built == (label != "No")


# -- the lab: a model's script calls (%%skillagent) and an evaluation (%skills evals) -----


def lab_script(c: Call) -> Scripted:
    """The model: activate ``marker``, call its script, then report what came back."""
    if c.system.startswith("You grade"):
        return say(json.dumps({"expectations": [], "claims": []}))
    done = [name for name, _ in c.calls_made]
    if "<available_skills>" not in c.system:
        return say("no skills here")
    if not done:
        return call("activate_skill", {"name": "marker"})
    if len(done) == 1:
        return call("marker__mark", {"from": "vscode"})
    return say("result: " + c.tool_results[-1]["content"].strip())


def _lab_kernel(tmp_path: Path, make_skill, server, mode: str):
    skills = lab_skills(make_skill, tmp_path / "skills")
    server.script = lab_script
    k = start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path)
    return (
        k,
        skills,
        (
            "import anthropic\n"
            f"client = anthropic.Anthropic(base_url={server.url!r}, "
            "api_key='test-key-not-a-secret', max_retries=0, timeout=20)"
        ),
    )


# The lab waits for its clicks through the same strategy as %%skillrun, which the matrix
# proves on every ipykernel; the main venv runs the lab in both modes (a model server
# and a whole agent loop per test: a minute each).
@pytest.mark.main_only
@pytest.mark.parametrize("mode", MODES)
def test_skillagent(tmp_path: Path, make_skill, server, mode: str) -> None:
    cell = "%%skillagent --model m1 --client client -o t\nmark it please\n"
    kernel, skills, make_client = _lab_kernel(tmp_path, make_skill, server, mode)
    with kernel as k:
        _start(k, mode)
        assert k.execute(make_client).ok
        for label in ORDER:
            (skills / "marker" / "ran.marker").unlink(missing_ok=True)
            _click(k, cell, label)
            approval = _value(k, "t.tool_calls[-1].approval")
            assert approval.startswith(DECISION[label].replace("_", " ")), approval
            assert (skills / "marker" / "ran.marker").exists() == (label != "No")
        _no_new_panel(k, cell)
        assert _value(k, "t.tool_calls[-1].approval").startswith("not asked (an approval given")


# The lab waits for its clicks through the same strategy as %%skillrun, which the matrix
# proves on every ipykernel; the main venv runs the lab in both modes (a model server
# and a whole agent loop per test: a minute each).
@pytest.mark.main_only
@pytest.mark.parametrize("mode", MODES)
def test_skills_evals(tmp_path: Path, make_skill, server, mode: str) -> None:
    kernel, skills, make_client = _lab_kernel(tmp_path, make_skill, server, mode)
    evals = skills / "marker" / "evals"
    evals.mkdir()
    prompts = [{"id": 1, "prompt": "mark one", "assertions": ["says result"]}]
    (evals / "evals.json").write_text(json.dumps({"skill_name": "marker", "evals": prompts}))
    with kernel as k:
        _start(k, mode)
        assert k.execute(make_client).ok
        for n, label in enumerate(ORDER):
            line = (
                "%skills evals marker --client client --model m --grader client "
                f"--workspace {tmp_path / f'ws{n}'} -o ev"
            )
            _click(k, line, label, ok=label != "No")
            if label != "No":
                assert _value(k, "[r.status for r in ev.runs]") == "['completed', 'completed']"


@pytest.mark.parametrize("mode", MODES)
def test_skillpy(skills: Path, tmp_path: Path, mode: str) -> None:
    venv = skills / "vs-skill" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    cell = "%%skillpy vs-skill -o out\nimport sys\nprint(sys.prefix)"
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        _start(k, mode)
        for label in ORDER:
            _click(k, cell, label, ok=label != "No")
            if label != "No":
                prefix = _value(k, "out['stdout'].strip()")
                assert Path(prefix).resolve() == venv.resolve()
        _no_new_panel(k, cell)


@pytest.mark.parametrize("mode", MODES)
def test_a_forged_click_decides_nothing(skills: Path, tmp_path: Path, mode: str) -> None:
    """A click signed with another key (someone who can reach the port but lacks the
    connection file's key) is dropped, relayed or not; the real click still decides."""
    from jupyter_client.session import Session

    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        _start(k, mode)
        msg_id = k.submit('%%skillrun vs-skill.echo -o res\n{"k": 1}', allow_stdin=True)
        yes = k.wait_for_button("Yes once", timeout=60)
        forger = Session(key=b"not-the-kernel-key", session=k.kc.session.session)
        forged = forger.msg(
            "comm_msg",
            {"comm_id": yes, "data": {"method": "custom", "content": {"event": "click"}}},
        )
        forger.send(k.kc.shell_channel.socket, forged)
        k.drain(3.0)
        assert not k._idle_seen(msg_id), "a forged click must not end the wait"
        k.click_until_handled(k.buttons_all("No")[-1], msg_id)
        r = k.collect(msg_id, timeout=120)
        assert r.ok, r.error_text
        assert _value(k, "res.status") == "declined"
