"""A rebuilt skill environment ends that skill's "Yes in session" (issue 17, item 4;
core/run/gating/gate.py, store.py, envdirs.environment_id; docs/architecture.md *Real skills*).

The managed environment is outside the skill, so the skill's fingerprint does not see it;
yet a rebuild changes the packages the skill's code runs with. A session approval is bound to
the environment that was current when it was given (``ApprovalRequest.environment``): after
a build (here, or by another kernel sharing the cache folder) the next run asks again.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from skill_magics.core.base import envdirs, fingerprint
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.env import build as envbuild

WHERE = """\
# /// script
# dependencies = ["tabulate>=0.9"]
# ///
import json, sys
print(json.dumps({"python": sys.executable}))
"""


class Recorder:
    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


@pytest.fixture
def env_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "envs"
    monkeypatch.setenv(envdirs.ENV_DIR_VAR, str(root))
    return root


@pytest.fixture
def skill(make_skill, tmp_path: Path) -> Path:
    return make_skill(tmp_path / "skills", "envy", scripts={"scripts/where.py": WHERE})


def _run(manager: SkillManager, approver: Recorder) -> str:
    result = manager.execute_skill_script("envy", "where", approver=approver)
    assert result.success, result.stderr
    return json.loads(result.stdout)["python"]


def _publish_by_hand(skill: Path, name: str) -> Path:
    """What another kernel's build leaves: a new env folder, then ``current`` swapped."""
    home = envdirs.skill_env_home(skill)
    env = home / name
    (env / "bin").mkdir(parents=True)
    os.symlink(sys.executable, env / "bin" / "python")
    home.mkdir(parents=True, exist_ok=True)
    envbuild._publish(home, env)
    return env


def test_a_new_environment_published_elsewhere_asks_again(skill: Path, env_root: Path) -> None:
    manager = SkillManager([skill.parent], run_cwd="skill")
    approver = Recorder("yes_in_session")
    assert _run(manager, approver) == sys.executable
    _run(manager, approver)
    assert len(approver.requests) == 1  # the session approval covers the second run

    first = _publish_by_hand(skill, "env-aaaa-1")
    python = _run(manager, approver)
    assert python == str(envdirs.skill_env_home(skill) / "current" / "bin" / "python")
    assert len(approver.requests) == 2  # other packages: asked again
    assert [r.environment for r in approver.requests] == ["", first.name]
    _run(manager, approver)
    assert len(approver.requests) == 2

    _publish_by_hand(skill, "env-bbbb-2")  # rebuilt: asked again
    _run(manager, approver)
    assert len(approver.requests) == 3
    (envdirs.skill_env_home(skill) / "current").unlink()  # removed: the kernel runs it
    assert _run(manager, approver) == sys.executable
    assert len(approver.requests) == 4


def test_a_rebuild_between_the_yes_and_the_run_refuses_the_run(skill: Path, env_root: Path) -> None:
    manager = SkillManager([skill.parent], run_cwd="skill")
    plan = manager.plan("envy", "where")
    _publish_by_hand(skill, "env-cccc-3")  # while the panel was open
    verdict = manager.run_planned(plan, Recorder("yes_once")).verdict
    assert not verdict.allowed and "changed after the approval was asked" in verdict.message


def test_prepare_env_ends_the_session_approval(skill: Path, env_root: Path) -> None:
    """Through the public API with a real install (uv, from PyPI or its cache)."""
    manager = SkillManager([skill.parent], run_cwd="skill")
    approver = Recorder("yes_in_session")
    _run(manager, approver)
    assert manager.approvals.approvals() and len(approver.requests) == 1
    report = manager.prepare_env("envy", approver=None)
    assert report.status == "built", report.message
    assert manager.approvals.approvals() == {}
    lapsed = [r for r in manager.audit.records() if r.outcome == "approval_lapsed"]
    assert lapsed and "environment was rebuilt" in lapsed[-1].reason
    current = envdirs.skill_env_home(skill) / "current" / "bin" / "python"
    assert _run(manager, approver) == str(current)
    assert len(approver.requests) == 2  # asked again
    _run(manager, approver)
    assert len(approver.requests) == 2
    again = manager.prepare_env("envy", approver=None, rebuild=True)
    assert again.status == "built" and again.path != report.path
    _run(manager, approver)
    assert len(approver.requests) == 3


def test_a_rebuild_during_a_batch_stops_the_items_after_it(skill: Path, env_root: Path) -> None:
    """The batch's per-item code check sees the environment too (it lives outside the skill
    folder, so the folder's stat snapshot alone would not)."""
    old = 1_600_000_000  # files older than the racy-timestamp window: the stat fast path holds
    for path in [skill, *skill.rglob("*")]:
        os.utime(path, (old, old), follow_symlinks=False)
    manager = SkillManager([skill.parent], run_cwd="skill")
    published: list[Path] = []

    def rebuild_after_first(item) -> None:
        if not published:
            published.append(_publish_by_hand(skill, "env-dddd-4"))

    result = manager.map(
        "envy",
        "where",
        [{}] * 6,
        max_workers=1,
        approver=Recorder("yes_once"),
        on_result=rebuild_after_first,
    )
    statuses = [item.status for item in result.items]
    assert statuses[0] == "completed"
    assert all(s == "refused" for s in statuses[1:]), statuses
    pythons = {json.loads(item.stdout)["python"] for item in result.items if item.stdout}
    assert pythons == {sys.executable}  # nothing ran with the environment nobody approved


def test_the_per_item_check_sees_a_rebuild_on_its_fast_path(skill: Path, env_root: Path) -> None:
    # Files changed within the racy-timestamp window are always hashed again (fingerprint.py):
    # wait it out so the stat snapshot alone may answer.
    time.sleep(fingerprint.RACY_NS / 1e9 + 0.1)
    manager = SkillManager([skill.parent], run_cwd="skill")
    watch = manager._gate.watch(manager.plan("envy", "where").request)
    assert watch.current() and watch.current()
    assert watch.full_checks == 1  # the second answer came from the stat snapshot
    _publish_by_hand(skill, "env-eeee-5")
    assert not watch.current()
