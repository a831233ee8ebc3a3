"""The gate's scope decision (ApprovalGate.decide_scope): ONE question for the runs a model
will choose during an evaluation, and what that answer does and does not cover."""

from __future__ import annotations

import sys
from pathlib import Path

from lab_support import lab_skills
from manager_support import RecordingApprover, manager_for

from skill_magics.core.base.status import RunStatus
from skill_magics.core.run.gating.approval import SandboxInfo, ScopeInfo, no_weaker_within

SCOPE = ScopeInfo(purpose="output evaluation of 'marker' (iteration-1)", agent_runs=3)


def setup(tmp_path, make_skill, decision="yes_once"):
    skills = lab_skills(make_skill, tmp_path / "skills")
    work = tmp_path / "iteration-1"
    work.mkdir()
    manager = manager_for(skills)
    plan = manager.plan_scope("marker", SCOPE, cwd=str(work))
    asked = RecordingApprover(decision)
    verdict, scoped = manager._gate.decide_scope(plan.request, asked)
    return manager, skills, work, verdict, scoped, asked


def call_request(manager, work, skill="marker", script="scripts/mark.py", **kw):
    run_dir = work / "eval-1" / "with_skill" / "run-1"
    run_dir.mkdir(parents=True, exist_ok=True)
    return manager.plan(skill, script, {"x": 1}, cwd=str(run_dir), **kw).request


def test_one_answer_covers_every_call_inside_the_scope(tmp_path, make_skill):
    manager, _, work, verdict, scoped, asked = setup(tmp_path, make_skill)
    assert verdict.allowed and len(asked.requests) == 1
    assert asked.requests[0].scope == SCOPE
    for script in ("scripts/mark.py", "scripts/report.py", "scripts/mark.py"):
        v = manager._gate.decide(call_request(manager, work, script=script), scoped)
        assert v.allowed and v.by == f"approver for {SCOPE.purpose}"
    assert len(asked.requests) == 1  # never asked again


def test_a_no_declines_every_call(tmp_path, make_skill):
    manager, _, work, verdict, scoped, _ = setup(tmp_path, make_skill, "no")
    assert verdict.status is RunStatus.DECLINED
    v = manager._gate.decide(call_request(manager, work), scoped)
    assert v.status is RunStatus.DECLINED
    assert [r.outcome for r in manager.audit.records()][-1] == "declined"


def test_what_the_scope_does_not_cover_is_refused_never_asked(tmp_path, make_skill):
    manager, skills, work, _, scoped, asked = setup(tmp_path, make_skill)
    other = manager.plan("hidden-skill", "scripts/x.py", cwd=str(work)).request
    v = manager._gate.decide(other, scoped)
    assert v.status is RunStatus.APPROVAL_UNAVAILABLE and "outside the approval" in v.message
    skill = manager.get_skill("marker")
    python = Path(sys.executable)
    code = manager.plan_code(skill, python, "print(1)").request
    assert manager._gate.decide(code, scoped).status is RunStatus.APPROVAL_UNAVAILABLE
    # Data the skill's folder gained meanwhile does not matter; changed code does.
    (skills / "marker" / "notes.txt").write_text("data\n")
    assert manager._gate.decide(call_request(manager, work), scoped).allowed
    (skills / "marker" / "scripts" / "mark.py").write_text("print('other code')\n")
    v = manager._gate.decide(call_request(manager, work), scoped)
    assert v.status is RunStatus.APPROVAL_UNAVAILABLE and "changed after the approval" in v.message
    assert len(asked.requests) == 1


def test_an_unanswered_scope_refuses_its_calls(tmp_path, make_skill):
    from skill_magics.core.base.errors import ApprovalUnavailable

    skills = lab_skills(make_skill, tmp_path / "skills")
    work = tmp_path / "iteration-1"
    work.mkdir()
    manager = manager_for(skills)
    plan = manager.plan_scope("marker", SCOPE, cwd=str(work))
    nobody = RecordingApprover(error=ApprovalUnavailable("headless: nobody can click"))
    verdict, scoped = manager._gate.decide_scope(plan.request, nobody)
    assert verdict.status is RunStatus.APPROVAL_UNAVAILABLE
    v = manager._gate.decide(call_request(manager, work), scoped)
    assert v.status is RunStatus.APPROVAL_UNAVAILABLE and "no approval was given" in v.message


def test_no_weaker_within_a_folder():
    scope = SandboxInfo("workspace-write", False, ("/w/iteration-1", "<private TMPDIR>"))
    run_dir = "/w/iteration-1/eval-a/run-1"
    inside = SandboxInfo("workspace-write", False, (run_dir, "<private TMPDIR>"))
    assert no_weaker_within(inside, scope)
    assert not no_weaker_within(SandboxInfo("workspace-write", False, ("/w/other",)), scope)
    assert not no_weaker_within(SandboxInfo("workspace-write", False, ("/w/iteration-10",)), scope)
    assert not no_weaker_within(SandboxInfo("workspace-write", True, ("/w/iteration-1",)), scope)
    assert not no_weaker_within(None, scope)
    assert no_weaker_within(None, None) and no_weaker_within(inside, SandboxInfo("off"))
