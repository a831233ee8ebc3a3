"""Managed environments (core/base/envdirs.py, run/envbuild.py, run/envsetup.py): a real install
from PyPI into a venv outside the skill, through the gate, then the skill's script runs.

Network to PyPI is needed for the tests marked ``network``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from skill_magics.core.base import envdirs
from skill_magics.core.base.errors import ApprovalDeclined, EnvironmentBuildError
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.env import build as envbuild
from tests.real_layouts import write_pep

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def env_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "envs"
    monkeypatch.setenv(envdirs.ENV_DIR_VAR, str(root))
    return root


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "data.csv").write_text("city,km\nParis,0\nLyon,392\n")
    monkeypatch.chdir(work)
    return work


class Recorder:
    """An approver that answers ``answer`` and keeps the requests it saw."""

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


@pytest.mark.parametrize("installer", ["uv", "pip"])
def test_install_from_pypi_then_the_script_runs(
    tmp_path: Path, env_root: Path, workspace: Path, installer: str
) -> None:
    skills = tmp_path / f"skills-{installer}"
    base = write_pep(skills)
    manager = SkillManager([skills])
    assert manager.requirements("pep").missing == ["tabulate"]
    approver = Recorder("yes_once")
    chunks: list[tuple[str, str]] = []
    report = manager.prepare_env(
        "pep", approver=approver, installer=installer, on_output=lambda s, t: chunks.append((s, t))
    )
    assert report.status == "built" and report.installer == installer
    (request,) = approver.requests
    assert request.scripts == () and request.install.packages == ("tabulate>=0.9",)
    assert request.install.command[-1] == "tabulate>=0.9"
    assert request.install.target == str(report.path)
    assert chunks  # the installer's output streamed as it came
    assert str(report.path).startswith(str(env_root)) and not str(report.path).startswith(str(base))
    outcomes = [(r.script, r.outcome) for r in manager.audit.records()]
    assert outcomes == [("<install>", "approved"), ("<install>", "completed")]
    # Now: the managed env runs the skill's Python scripts, and nothing is missing.
    reqs = manager.requirements("pep")
    assert reqs.python_source == "managed env" and reqs.missing == []
    plan = manager.plan("pep", "table", argv=["data.csv"])
    assert plan.prepared.command[0] == reqs.python
    result = manager.run_planned(plan).script_result()
    assert result.success, result.stderr
    assert "Lyon" in result.stdout and "392" in result.stdout
    # The env sees the kernel's packages (yaml) without installing them.
    seen = subprocess.run(
        [reqs.python, "-c", "import yaml, tabulate; print(yaml.__file__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert not seen.stdout.startswith(str(report.path))
    again = manager.prepare_env("pep", approver=approver, installer=installer)
    assert again.status == "up to date" and len(approver.requests) == 1


def test_no_installs_nothing_and_is_audited(tmp_path: Path, env_root: Path) -> None:
    write_pep(tmp_path / "skills")
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(ApprovalDeclined):
        manager.prepare_env("pep", approver=Recorder("no"))
    assert not env_root.exists() or not any(env_root.rglob("bin"))
    assert [(r.script, r.outcome) for r in manager.audit.records()] == [("<install>", "declined")]
    assert manager.requirements("pep").python_source == "kernel"


def test_a_failed_build_keeps_nothing_and_ends_with_the_installer_lines(
    tmp_path: Path, env_root: Path
) -> None:
    write_pep(tmp_path / "skills", package="json", spec="skill-magics-no-such-package-xyz")
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(EnvironmentBuildError) as info:
        manager.prepare_env("pep", approver=None)
    message = str(info.value)
    assert "\n" not in message  # one message, one line (core/base/errors.py)
    assert message.startswith("Building the environment for skill 'pep' failed")
    head, tail = message.split("nothing was kept", 1)
    assert "Installer's last lines: " in tail  # the installer's own words end it
    assert "skill-magics-no-such-package-xyz" in tail.split("Installer's last lines: ", 1)[1]
    home = envdirs.skill_env_home(tmp_path / "skills" / "pep")
    assert not [p for p in home.iterdir() if p.name.startswith("env-")]
    assert not (home / envdirs.CURRENT).exists()
    assert manager.audit.records()[-1].outcome == "failed"


def test_python_order_skill_venv_then_managed_then_kernel(tmp_path: Path, env_root: Path) -> None:
    base = write_pep(tmp_path / "skills")
    assert envdirs.choose_python(base) == (sys.executable, "kernel")
    # A published managed env (a venv layout whose python is the kernel's).
    home = envdirs.skill_env_home(base)
    env = home / "env-test"
    (env / "bin").mkdir(parents=True)
    os.symlink(sys.executable, env / "bin" / "python")
    envbuild._publish(home, env)
    managed = str(home / "current" / "bin" / "python")
    assert envdirs.choose_python(base) == (managed, "managed env")
    manager = SkillManager([tmp_path / "skills"])
    assert manager.plan("pep", "table").prepared.command[0] == managed
    (base / ".venv" / "bin").mkdir(parents=True)
    os.symlink(sys.executable, base / ".venv" / "bin" / "python")
    assert envdirs.choose_python(base) == (str(base / ".venv" / "bin" / "python"), "skill venv")
    # The executor's cached plan notices the change of interpreter.
    assert manager.plan("pep", "table").prepared.command[0] == str(
        base / ".venv" / "bin" / "python"
    )
    report = manager.prepare_env("pep", approver=None)
    assert report.status == "skill venv" and "own venv" in report.message
