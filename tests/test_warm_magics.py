"""Warm start in the notebook: ``SkillMagics.warm_start``, ``%%skillrun --warm/--cold``, the
header and the approval panel saying how a run starts, ``%skills warm``, and the servers
stopping on ``%skills reload``, when the extension is unloaded and when the kernel exits.

A real IPython shell and a real Jupyter kernel (jupyter_client), real servers.
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest
from manager_support import posix_only

from skill_magics.core.run.launching import warm

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm start is Linux-only"),
]

pytest.importorskip("numpy")

RNG = "import json, random\nimport numpy as np\nprint(json.dumps([float(np.random.rand())]))\n"


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    make_skill(root, "numbers", scripts={"scripts/rng.py": RNG})
    return root


@pytest.fixture
def shell(ipython_shell, skills: Path):
    ip = ipython_shell(skills, auto_approve=True)
    ip.run_cell("%config SkillMagics.run_cwd = 'skill'")
    yield ip
    warm.stop_servers()


def _server_pids() -> set[int]:
    return {s.pid for s in warm.POOL.servers() if s.alive()}


def _gone(pids: set[int], within: float = 10) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != "zombie"]
        if not alive:
            return True
        time.sleep(0.05)
    return False


def test_warm_and_cold_flags_and_the_header_say_how_it_started(shell) -> None:
    hot = shell.run_cell("%%skillrun numbers.rng --warm\n{}").result
    assert hot.result.start == "warm" and hot.exit_code == 0
    assert " · warm · " in hot.text()
    cold = shell.run_cell("%%skillrun numbers.rng --cold\n{}").result
    assert cold.result.start == "cold" and " · cold · " in cold.text()
    both = shell.run_cell("%%skillrun numbers.rng --warm --cold\n{}")
    assert both.error_in_exec is not None and "exclude each other" in str(both.error_in_exec)


def test_the_warm_start_setting_reaches_the_runs(shell) -> None:
    magics = shell.magics_manager.registry["SkillMagics"]
    shell.run_cell("%config SkillMagics.warm_start = 'off'")
    assert magics.manager.settings.warm_start == "off"
    res = shell.run_cell("%%skillrun numbers.rng\n{}").result
    assert res.result.start == "cold"
    shell.run_cell("%config SkillMagics.warm_start = 'on'")
    shell.run_cell("%config SkillMagics.warm_idle_timeout = 30")
    assert magics.manager.settings.warm_idle_timeout == 30.0
    res = shell.run_cell("%%skillrun numbers.rng\n{}").result
    assert res.result.start == "warm"
    from traitlets import TraitError

    with pytest.raises(TraitError):
        magics.warm_start = "sometimes"
    with pytest.raises(TraitError, match="warm_idle_timeout"):
        magics.warm_idle_timeout = 0
    assert magics.manager.settings.warm_start == "on"


def test_the_approval_panel_says_how_it_will_start(shell) -> None:
    from skill_magics.notebook.approval.panel import summary_text

    magics = shell.magics_manager.registry["SkillMagics"]
    plan = magics.manager.plan("numbers", "rng", {}, warm=True)
    assert "Start: warm" in summary_text(plan.request)
    plan = magics.manager.plan("numbers", "rng", {}, warm=False)
    assert "Start: cold (warm start off for this run: --cold" in summary_text(plan.request)
    # The start is shown, never approved: the request's approval key does not change.
    assert (
        plan.request.content_hash == magics.manager.plan("numbers", "rng", {}).request.content_hash
    )


def test_skills_warm_lists_starts_and_stops_servers(shell, capsys) -> None:
    shell.run_cell("%skills warm --stop")
    capsys.readouterr()
    shell.run_cell("%skills warm")
    assert "No warm server is running" in capsys.readouterr().out
    shell.run_cell("%skills warm numbers")
    out = capsys.readouterr().out
    assert "scripts/rng.py: ready" in out and "preloaded: numpy" in out
    shell.run_cell("%skills warm")
    listed = capsys.readouterr().out
    assert "preloaded: numpy" in listed and "RSS" in listed and "idle" in listed
    pids = _server_pids()
    assert pids
    shell.run_cell("%skills warm --stop")
    assert "Stopped 1 warm server" in capsys.readouterr().out
    assert _gone(pids) and not _server_pids()


def test_reload_and_unload_stop_the_servers(shell) -> None:
    shell.run_cell("%%skillrun numbers.rng --warm\n{}")
    pids = _server_pids()
    assert pids
    shell.run_cell("%skills reload")
    assert _gone(pids)
    shell.run_cell("%%skillrun numbers.rng --warm\n{}")
    pids = _server_pids()
    assert pids
    shell.run_line_magic("unload_ext", "skill_magics")
    assert _gone(pids)
    shell.run_line_magic("load_ext", "skill_magics")  # the fixture unloads it at the end


@pytest.mark.kernel
def test_servers_stop_when_the_kernel_exits(skills: Path, tmp_path: Path) -> None:
    from kernel_fixtures import start_kernel

    with start_kernel() as k:
        setup = textwrap.dedent(
            f"""
            %load_ext skill_magics
            %config SkillMagics.skill_dirs = [{str(skills)!r}]
            %config SkillMagics.auto_approve = ["numbers"]
            %config SkillMagics.run_cwd = "skill"
            """
        )
        assert k.execute(setup, allow_stdin=False).ok
        r = k.execute("%%skillrun numbers.rng --warm -o res\n{}", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute(
            "from skill_magics.core.run.launching import warm\n"
            "print(res.result.start, [s.pid for s in warm.POOL.servers()][0])",
            allow_stdin=False,
        )
        start, pid = r.stdout.split()
        assert start == "warm"
        server = int(pid)
        assert psutil.pid_exists(server)
    assert _gone({server}, within=20)
