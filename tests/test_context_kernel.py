"""%skill_context and %%skillpy approval in real Jupyter kernels (jupyter_client, no mocks)."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel
from process_support import assert_group_gone, wait_for_text

pytestmark = pytest.mark.kernel

ECHO = "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"


@pytest.fixture
def skills_dir(tmp_path: Path, make_skill) -> Path:
    make_skill(
        tmp_path / "skills",
        "ctx-skill",
        {"name": "ctx-skill", "description": "Context kernel tests."},
        {"scripts/echo.py": ECHO},
        body="Run `python scripts/echo.py` first.\n",
        executable=False,
    )
    return tmp_path / "skills"


def _load(k) -> None:
    r = k.execute("%load_ext skill_magics", allow_stdin=False)
    assert r.ok, r.error_text


def _status(k, var: str = "ctx") -> str:
    code = (
        "import xml.etree.ElementTree as ET\n"
        f"print(ET.fromstring({var}).find('.//script_output').get('status'))"
    )
    r = k.execute(code, allow_stdin=True)
    assert r.ok, r.error_text
    return r.stdout.strip()


def test_headless_gives_approval_unavailable_at_once(skills_dir, tmp_path):
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills_dir)}, cwd=tmp_path) as k:
        _load(k)
        r = k.execute("ctx = %skill_context ctx-skill", allow_stdin=False, timeout=60)
        assert r.ok, r.error_text
        assert _status(k) == "approval_unavailable"


def _click_on_subshell() -> bool:
    """On ipykernel 7.0-7.3 click on a subshell, as JupyterLab >= 4.4 does by default (comms
    over subshells); the main shell elsewhere (tests/test_vscode_kernel.py clicks there on
    every kernel)."""
    return (7, 0) <= kernel_ipykernel_version() < (7, 4)


@pytest.mark.parametrize("label,status", [("Yes once", "completed"), ("No", "declined")])
def test_click_while_skill_context_waits(skills_dir, tmp_path, label, status):
    subshell = _click_on_subshell()
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills_dir)}, cwd=tmp_path) as k:
        _load(k)
        if subshell:
            k.comms_subshell()  # JupyterLab creates it when its widget manager starts
        msg_id = k.submit("ctx = %skill_context ctx-skill --args '{\"n\": 1}'", allow_stdin=True)
        button = k.wait_for_button(label, timeout=60)
        k.drain(0.5)
        assert not k._idle_seen(msg_id), "the cell must still be waiting for the click"
        k.click_until_handled(button, msg_id, subshell=subshell)
        r = k.collect(msg_id, timeout=60)
        assert r.duration_s < 60, "the click must end the wait, not approval_timeout"
        assert r.ok, r.error_text
        assert _status(k) == status


def test_skillpy_click_runs_in_the_venv(skills_dir, tmp_path):
    venv = skills_dir / "ctx-skill" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    subshell = _click_on_subshell()
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills_dir)}, cwd=tmp_path) as k:
        _load(k)
        if subshell:
            k.comms_subshell()
        code = "%%skillpy ctx-skill -o out\nimport sys\nprint(sys.prefix)"
        msg_id = k.submit(code, allow_stdin=True)
        k.click_while_waiting(msg_id, "Yes once", subshell=subshell)
        r = k.execute("print(out['stdout'].strip(), out['returncode'])", allow_stdin=True)
        prefix, code = r.stdout.split()
        assert Path(prefix).resolve() == venv.resolve() and code == "0"


SLEEPER = (
    "import json, os, pathlib, sys, time\n"
    "args = json.load(sys.stdin)\n"
    "pathlib.Path(args['pgid_file']).write_text(str(os.getpgid(0)))\n"
    "time.sleep(250)\n"
)


def test_interrupt_kills_a_running_context_script(tmp_path, make_skill):
    """Kernel > Interrupt while %skill_context runs a referenced script: its process group is
    killed (on ipykernel >= 7.4 the script runs in a worker thread of the awaited cell), the
    cell ends with an error and the kernel keeps working."""
    make_skill(
        tmp_path / "skills",
        "slow-ctx",
        {"name": "slow-ctx", "description": "A slow referenced script."},
        {"scripts/sleep.py": SLEEPER},
        body="Run `python scripts/sleep.py`.\n",
        executable=False,
    )
    pgid_file = tmp_path / "pgid"
    env = {"SKILL_MAGICS_PATH": str(tmp_path / "skills"), "SKILL_MAGICS_AUTO_APPROVE": "*"}
    with start_kernel(env=env, cwd=tmp_path) as k:
        _load(k)
        # Far beyond the test's patience: only the interrupt may end the script.
        k.execute("%config SkillMagics.timeout = 300", allow_stdin=True)
        args = json.dumps({"pgid_file": str(pgid_file)})
        msg_id = k.submit(f"ctx = %skill_context slow-ctx --args '{args}'", allow_stdin=True)
        pgid = int(wait_for_text(pgid_file))
        time.sleep(0.3)
        interrupted = time.monotonic()
        k.interrupt()
        r = k.collect(msg_id, timeout=200)
        assert not r.ok, "an interrupted cell ends with an error"
        assert time.monotonic() - interrupted < 20, "the cell waited for the script to end"
        assert_group_gone(pgid, within=10)
        r = k.execute("1 + 1", allow_stdin=True)
        assert r.ok and r.text_plain == "2"


def test_other_cell_magics_and_strings_keep_skill_context_text(skills_dir, tmp_path):
    """On ipykernel >= 7.4 top-level %skill_context lines become awaits; text in another cell
    magic's body or in a string is not a statement and must reach it unchanged."""
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills_dir)}, cwd=tmp_path) as k:
        _load(k)
        r = k.execute(
            "%%writefile howto.txt\nType this in a cell:\n%skill_context ctx-skill\n",
            allow_stdin=True,
            timeout=60,
        )
        assert r.ok, r.error_text
        assert (tmp_path / "howto.txt").read_text() == (
            "Type this in a cell:\n%skill_context ctx-skill\n"
        )
        r = k.execute("%%time\nx = %skill_context ctx-skill --no-run\n", allow_stdin=True)
        assert r.ok, r.error_text
        assert _status(k, "x") == "skipped"
        r = k.execute(
            'doc = """\n%skill_context ctx-skill\n"""\nprint(repr(doc))', allow_stdin=True
        )
        assert r.ok and r.stdout.strip() == repr("\n%skill_context ctx-skill\n"), r.error_text
        r = k.execute("ctx = %skill_context ctx-skill --no-run", allow_stdin=True, timeout=60)
        assert r.ok, r.error_text
        assert _status(k) == "skipped"
