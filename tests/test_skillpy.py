"""run_python_in_skill (%%skillpy): code runs with the skill's own venv, cwd = skill folder."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from manager_support import RecordingApprover, manager_for, posix_only

from skill_magics.core.base.errors import ApprovalUnavailable
from skill_magics.core.run.env.skillpy import run_python_in_skill, run_python_in_skill_async
from skill_magics.core.run.gating.approval import Decision


@pytest.fixture(scope="module")
def venv_skills(tmp_path_factory, make_skill):
    """A skills dir with 'calculator' (own venv, created for real) and 'no-venv'."""
    root = tmp_path_factory.mktemp("skills")
    calc = make_skill(
        root,
        "calculator",
        scripts={"scripts/where.py": "import sys\nprint(sys.prefix)\n"},
        body="python scripts/where.py\n",
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(calc / "venv")], check=True)
    make_skill(root, "no-venv", body="# none\n")
    broken = make_skill(root, "broken-venv", body="# broken\n")
    (broken / ".venv" / "bin").mkdir(parents=True)
    return root


def test_runs_in_the_skill_venv_with_skill_cwd(venv_skills):
    manager = manager_for(venv_skills)
    code = "import os, sys\nprint(sys.prefix)\nprint(os.getcwd())"
    result = run_python_in_skill(manager, "calculator", code)
    assert set(result) == {"skill_name", "stdout", "stderr", "returncode", "timed_out"}
    prefix, cwd = result["stdout"].splitlines()
    venv = venv_skills / "calculator" / "venv"
    assert os.path.realpath(prefix) == os.path.realpath(venv)
    assert os.path.realpath(cwd) == os.path.realpath(venv_skills / "calculator")
    assert result["returncode"] == 0 and result["timed_out"] is False


def test_py_scripts_of_a_venv_skill_use_the_venv(venv_skills):
    manager = manager_for(venv_skills)
    result = manager.execute_skill_script("calculator", "where", approver=None)
    assert os.path.realpath(result.stdout.strip()) == os.path.realpath(
        venv_skills / "calculator" / "venv"
    )


def test_documented_examples(venv_skills):
    manager = manager_for(venv_skills)
    ok = run_python_in_skill(manager, "calculator", "result = 2 + 2\nprint(f'Result: {result}')")
    assert ok == {
        "skill_name": "calculator",
        "stdout": "Result: 4\n",
        "stderr": "",
        "returncode": 0,
        "timed_out": False,
    }
    syntax = run_python_in_skill(manager, "calculator", "print(2 + )")
    assert syntax["returncode"] == 1 and "SyntaxError" in syntax["stderr"]
    zero = run_python_in_skill(manager, "calculator", "x = 1 / 0")
    assert zero["returncode"] == 1 and "ZeroDivisionError: division by zero" in zero["stderr"]
    wrote = run_python_in_skill(
        manager, "calculator", "open('output.txt', 'w').write('Result: 42')\nprint('File written')"
    )
    assert wrote["stdout"] == "File written\n"
    assert (venv_skills / "calculator" / "output.txt").read_text() == "Result: 42"


def test_timeout(venv_skills):
    manager = manager_for(venv_skills)
    code = "import time\nprint('start', flush=True)\nwhile True:\n    time.sleep(0.1)"
    result = run_python_in_skill(manager, "calculator", code, timeout=1)
    assert result["timed_out"] is True
    assert result["returncode"] == 124  # TIMEOUT_EXIT_CODE, as for every run
    assert result["error"] == "Script execution exceeded timeout of 1 seconds"
    assert result["stdout"] == "start\n"


def test_timeout_message_names_the_managers_setting(venv_skills):
    """No timeout= given: the message names the limit that applied, the manager's setting
    (not the default 30 s)."""
    manager = manager_for(venv_skills, timeout=2)
    code = "import time\nwhile True:\n    time.sleep(0.1)"
    result = run_python_in_skill(manager, "calculator", code, approver=None)
    assert result["timed_out"] is True
    assert result["error"] == "Script execution exceeded timeout of 2 seconds"


@pytest.mark.parametrize("name", ["../../../etc", "a/b", "a\\b", ".."])
def test_invalid_names(venv_skills, name):
    result = run_python_in_skill(manager_for(venv_skills), name, "print(1)")
    assert result == {
        "error": f"Invalid skill name: '{name}'. Skill names must not contain '/', '\\', or '..'"
    }


def test_no_venv_and_unknown_skill(venv_skills):
    manager = manager_for(venv_skills)
    assert run_python_in_skill(manager, "no-venv", "print(1)") == {
        "error": "Skill 'no-venv' does not have a venv. Cannot execute script."
    }
    broken = run_python_in_skill(manager, "broken-venv", "print(1)")
    assert broken["error"].startswith(
        "Python interpreter not found in venv for skill 'broken-venv'"
    )
    unknown = run_python_in_skill(manager, "calculater", "print(1)")
    assert unknown["error"].startswith("Skill 'calculater' not found in skills folder")
    assert "calculator" in unknown["error"]


def test_approval_shows_the_code_and_decline_runs_nothing(venv_skills):
    manager = manager_for(venv_skills)
    marker = venv_skills / "calculator" / "declined-marker"
    code = f"open({str(marker)!r}, 'w').write('ran')"
    approver = RecordingApprover(Decision.NO)
    result = run_python_in_skill(manager, "calculator", code, approver=approver)
    assert approver.requests[0].code == code
    assert approver.requests[0].skill_name == "calculator"
    assert result["outcome"] == "declined" and "declined" in result["error"]
    assert not marker.exists()
    unavailable = RecordingApprover(error=ApprovalUnavailable("nobody to ask"))
    result = run_python_in_skill(manager, "calculator", code, approver=unavailable)
    assert result == {
        "skill_name": "calculator",
        "error": "nobody to ask",
        "outcome": "approval_unavailable",
    }
    assert not marker.exists()
    outcomes = [r.outcome for r in manager.audit.records()]
    assert "declined" in outcomes and "approval_unavailable" in outcomes
    declined = next(r for r in manager.audit.records() if r.outcome == "declined")
    assert declined.script == "<python -c>" and declined.arguments.startswith("python -c open(")


def test_yes_in_session_covers_the_same_code_only(venv_skills):
    manager = manager_for(venv_skills)
    approver = RecordingApprover(Decision.YES_IN_SESSION)
    for _ in range(2):
        assert (
            run_python_in_skill(manager, "calculator", "print(1)", approver=approver)["stdout"]
            == "1\n"
        )
    assert len(approver.requests) == 1
    run_python_in_skill(manager, "calculator", "print(2)", approver=approver)
    assert len(approver.requests) == 2


def test_async(venv_skills):
    manager = manager_for(venv_skills)
    result = asyncio.run(run_python_in_skill_async(manager, "calculator", "print('async')"))
    assert result["stdout"] == "async\n"


def test_audited(venv_skills):
    manager = manager_for(venv_skills)
    run_python_in_skill(manager, "calculator", "print(1)")
    record = manager.audit.records()[-1]
    assert record.skill == "calculator" and record.outcome == "completed"
    assert Path(record.script).name == "<python -c>" or record.script == "<python -c>"


def test_async_cancel_event_stops_the_run_and_returns_it(venv_skills):
    """A Stop (the cancel Event set from another thread) kills the code's process group and
    the skillpy result dict comes back; it is not an error raised at the caller."""
    manager = manager_for(venv_skills)
    cancel = threading.Event()
    code = "import time\nprint('up', flush=True)\ntime.sleep(60)"

    async def stop_soon() -> dict:
        asyncio.get_running_loop().call_later(1.0, cancel.set)
        return await run_python_in_skill_async(manager, "calculator", code, cancel=cancel)

    started = time.monotonic()
    result = asyncio.run(stop_soon())
    assert time.monotonic() - started < 20
    assert result["returncode"] == -15 and result["error"] == "Python was killed by SIGTERM"
    assert result["stdout"] == "up\n"
    assert manager.audit.records()[-1].outcome == "interrupted"


# -- the skill's venv -------------------------------------------------------------------------


@posix_only
def test_skillpy_venv_python_is_whatever_the_skill_ships(make_skill, tmp_path):
    # NOTE (by design, and documented): %%skillpy trusts the skill's venv: its
    # bin/python (here a shell script), site-packages, .pth files and sitecustomize all run
    # with the approved code. The approval shows the code only.
    from skill_magics.core.run.env.skillpy import run_python_in_skill

    make_skill(tmp_path, "vv", scripts={"venv/bin/python": '#!/bin/sh\necho "sh got: $*"\n'})
    manager = manager_for(tmp_path, approver=RecordingApprover(), allowed_interpreters=["python3"])
    out = run_python_in_skill(manager, "vv", "print(1)")
    assert out["stdout"] == "sh got: -c print(1)\n"
