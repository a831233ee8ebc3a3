"""The one call site (core/run/pipeline.py): every kind of plan through ``run_planned``, one
result shape, the approver rule, and the async twin. Real skills on disk, real processes."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from manager_support import RecordingApprover, manager_for, outcomes, posix_only

from skill_magics.core.base.errors import ApprovalDeclined, ApprovalStale, SecretMissingError
from skill_magics.core.base.status import RunStatus
from skill_magics.core.run.gating.approval import Answer, Caller, Decision
from skill_magics.core.run.pipeline import ActionPlan, BatchOptions, RunOutcome
from skill_magics.core.run.planning.plan import PlanGroup

pytestmark = posix_only

MARK = "import os, sys\nopen(f'ran-{os.path.basename(sys.argv[0])}', 'w').close()\nprint('ok')\n"


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    make_skill(root, "one", scripts={"scripts/a.py": MARK, "scripts/b.py": MARK})
    make_skill(root, "two", scripts={"scripts/c.py": MARK})
    make_skill(
        root,
        "keyed",
        {"name": "keyed", "description": "d", "metadata": {"secrets": "API_KEY"}},
        scripts={"scripts/k.py": MARK},
    )
    return root


def ran(skills: Path, skill: str, script: str) -> bool:
    return (skills / skill / f"ran-{script}").exists()


def test_a_single_run_gives_one_outcome_shape(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    outcome = manager.run_planned(manager.plan("one", "a"), lambda request: "yes_once")
    assert isinstance(outcome, RunOutcome) and outcome.allowed
    assert outcome.status is RunStatus.COMPLETED and outcome.result.stdout == "ok\n"
    assert outcome.script_result() is outcome.result and ran(skills, "one", "a.py")
    declined = manager.run_planned(manager.plan("one", "b"), lambda request: "no")
    assert not declined.allowed and declined.status is RunStatus.DECLINED
    assert declined.launches == () and not ran(skills, "one", "b.py")
    with pytest.raises(ApprovalDeclined):
        declined.raise_if_blocked()
    assert outcomes(manager) == ["approved", "completed", "declined"]


def test_a_refusal_at_launch_is_a_launch_with_its_error(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    outcome = manager.run_planned(manager.plan("keyed", "k"), None)
    (launch,) = outcome.launches
    assert outcome.allowed and launch.status is RunStatus.REFUSED
    assert isinstance(launch.error, SecretMissingError) and launch.result is None
    with pytest.raises(SecretMissingError):
        outcome.script_result()
    assert not ran(skills, "keyed", "k.py")


def test_the_approver_rule_at_the_call_site(skills: Path) -> None:
    asked = RecordingApprover("yes_once")
    manager = manager_for(skills, run_cwd="skill", approver=asked)
    assert manager.run_planned(manager.plan("one", "a")).allowed  # the manager's approver
    assert len(asked.requests) == 1
    assert manager.run_planned(manager.plan("one", "a"), None).allowed  # a person decided
    assert len(asked.requests) == 1
    refused = manager.run_planned(manager.plan("one", "a"), None, caller=Caller.MODEL)
    assert refused.status is RunStatus.APPROVAL_UNAVAILABLE and len(asked.requests) == 1
    by_model = manager.run_planned(manager.plan("one", "a"), caller="model")
    assert by_model.allowed and len(asked.requests) == 2  # the manager's approver asked


def test_a_group_asks_one_question_and_runs_each_allowed_plan(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    asked = RecordingApprover("yes_once")
    one = manager.plan("one", "a")
    two = manager.plan("two", "c")
    outcome = manager.run_planned(PlanGroup((one, two)), asked)
    assert len(asked.requests) == 1 and asked.requests[0].is_combined
    assert [p.status for p in outcome.parts] == [RunStatus.COMPLETED, RunStatus.COMPLETED]
    assert ran(skills, "one", "a.py") and ran(skills, "two", "c.py")


def test_cancel_before_a_launch_starts_nothing_more(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    cancel = threading.Event()
    cancel.set()
    outcome = manager.run_planned(manager.plan("one", "a"), None, cancel=cancel)
    assert outcome.status is RunStatus.INTERRUPTED and outcome.result is None
    assert not ran(skills, "one", "a.py")


def test_an_answer_given_later_is_settled_and_a_stale_one_refused(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    started = []
    plan = manager.plan("one", "a")
    outcome = manager.run_planned(
        plan, Answer(Decision.YES_ONCE, "button"), on_start=lambda: started.append(1)
    )
    assert outcome.status is RunStatus.COMPLETED and started == [1]
    stale = manager.plan("one", "b")
    (skills / "one" / "scripts" / "b.py").write_text("print('edited')\n")
    refused = manager.run_planned(stale, Answer(Decision.YES_ONCE, "button"))
    assert refused.status is RunStatus.REFUSED and not ran(skills, "one", "b.py")
    with pytest.raises(ApprovalStale):
        refused.raise_if_blocked()
    with pytest.raises(TypeError, match="one request"):
        manager.run_planned(PlanGroup((plan,)), Answer(Decision.YES_ONCE, "button"))


def test_an_action_acts_only_when_every_request_may_go_ahead(skills: Path) -> None:
    manager = manager_for(skills)
    requests = (manager.plan("one", "a").request, manager.plan("two", "c").request)
    acted: list[int] = []
    no = RecordingApprover("no")
    outcome = manager.run_planned(ActionPlan(requests, lambda: acted.append(1)), no)
    assert not outcome.allowed and acted == [] and len(no.requests) == 1
    yes = RecordingApprover("yes_once")
    outcome = manager.run_planned(ActionPlan(requests, lambda: acted.append(2) or "done"), yes)
    assert outcome.allowed and outcome.value == "done" and acted == [2]
    nothing = manager.run_planned(ActionPlan((), lambda: "nobody asked"), no)
    assert nothing.value == "nobody asked" and len(no.requests) == 1


def test_a_batch_and_an_empty_batch(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    asked = RecordingApprover("yes_once")
    outcome = manager.run_planned(
        manager.plan_map("one", "a", [{}, {}]), asked, batch=BatchOptions(max_workers=2)
    )
    assert outcome.value.ok and len(outcome.value) == 2
    empty = manager.run_planned(manager.plan_map("one", "a", []), asked)
    assert len(empty.value) == 0
    assert len(asked.requests) == 1  # nothing to run: nobody asked
    with pytest.raises(TypeError, match="BatchPlan"):
        manager.run_planned(manager.plan("one", "a"), None, batch=BatchOptions())


def test_the_async_twin_gives_the_same_outcome(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    seen: list[str] = []

    async def main() -> tuple[RunOutcome, RunOutcome]:
        done = await manager.run_planned_async(
            manager.plan("one", "a"),
            lambda request: "yes_once",
            on_output=lambda stream, text: seen.append(text),
        )
        declined = await manager.run_planned_async(manager.plan("one", "b"), lambda r: "no")
        return done, declined

    done, declined = asyncio.run(main())
    assert done.status is RunStatus.COMPLETED and seen == ["ok\n"]
    assert declined.status is RunStatus.DECLINED and not ran(skills, "one", "b.py")


def test_a_scope_is_decided_once_and_its_approver_answers_later_calls(
    skills: Path, tmp_path: Path
) -> None:
    from skill_magics.core.run.gating.approval import ScopeInfo
    from skill_magics.core.run.pipeline import ScopePlan

    manager = manager_for(skills, run_cwd="skill")
    work = tmp_path / "work"
    work.mkdir()
    scope = ScopeInfo(purpose="an evaluation", agent_runs=2)
    plan = manager.plan_scope("one", scope, cwd=str(work))
    assert isinstance(plan, ScopePlan)
    asked = RecordingApprover("yes_once")
    outcome = manager.run_planned(plan, asked, caller=Caller.MODEL)
    assert outcome.allowed and len(asked.requests) == 1 and callable(outcome.value)
    later = manager.run_planned(manager.plan("one", "a"), outcome.value, caller=Caller.MODEL)
    assert later.status is RunStatus.COMPLETED and len(asked.requests) == 1  # not asked again
    nobody = manager.run_planned(plan, None, caller=Caller.MODEL)
    assert nobody.status is RunStatus.APPROVAL_UNAVAILABLE


# -- a new kind of plan is one class --------------------------------------------------------


def test_a_new_kind_of_plan_is_one_class_run_like_every_other(skills: Path) -> None:
    """What the MCP host's plan will be: a Plan subclass saying what it asks the gate and how
    it launches; the call site runs it sync and async, asks once, and a No launches
    nothing. Its outcome's value is typed by the plan."""
    from dataclasses import dataclass

    from skill_magics.core.run.gating.approval import ApprovalRequest
    from skill_magics.core.run.planning.runplan import Decided, LaunchContext, Plan

    launched: list[str] = []

    @dataclass(frozen=True)
    class Fetched(Plan[str]):
        request: ApprovalRequest

        def requests(self) -> tuple[ApprovalRequest, ...]:
            return (self.request,)

        def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[str]:
            launched.append(self.request.skill_name)
            return RunOutcome(decided.verdict, f"fetched {self.request.skill_name}")

    manager = manager_for(skills, run_cwd="skill")
    plan = Fetched(manager.plan("one", "a").request)
    asked = RecordingApprover("yes_once")
    assert manager.run_planned(plan, asked).value == "fetched one"
    done = asyncio.run(manager.run_planned_async(plan, asked))
    assert done.value == "fetched one" and launched == ["one", "one"]
    assert len(asked.requests) == 2
    declined = manager.run_planned(plan, lambda request: "no")
    assert declined.status is RunStatus.DECLINED and launched == ["one", "one"]
    assert declined.why_not == (RunStatus.DECLINED, declined.verdict.message)
    assert manager.run_planned(plan, asked).why_not is None
    with pytest.raises(ApprovalDeclined):
        _ = declined.value  # nothing ran: no value, the reason raised
    with pytest.raises(TypeError, match="BatchPlan"):
        manager.run_planned(plan, None, batch=BatchOptions())


def test_the_call_site_does_not_dispatch_on_the_plans_type() -> None:
    """Every kind is run the same way: no isinstance() on a plan in pipeline.py."""
    import ast

    import skill_magics.core.run.pipeline as pipeline

    tree = ast.parse(Path(pipeline.__file__).read_text(encoding="utf-8"))
    checked = [
        ast.unparse(node.args[1])
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "isinstance"
    ]
    assert checked == ["Answer", "Answer"]  # the approver's kind, never the plan's


def test_a_blocked_batch_raises_its_reason_from_value(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    outcome = manager.run_planned(manager.plan_map("one", "a", [{}]), lambda request: "no")
    assert outcome.status is RunStatus.DECLINED
    with pytest.raises(ApprovalDeclined):
        _ = outcome.value
    assert not ran(skills, "one", "a.py")


# -- settings resolved once --------------------------------------------------------------


def test_per_run_overrides_become_the_runs_settings(skills: Path, tmp_path: Path) -> None:
    from skill_magics.core.run.planning.settings import RunOverrides, RunSettings

    base = RunSettings(run_cwd="skill", sandbox="off", warm_start="auto")
    assert base.for_run() is base  # nothing overridden: the same value
    assert base.for_run(RunOverrides()) is base
    run = base.for_run(timeout=5, cwd=str(tmp_path), warm=False)
    # The keywords and the typed value are one thing.
    assert base.for_run(RunOverrides(5, None, str(tmp_path), False)) == run
    assert (run.timeout, run.run_cwd, run.warm_start, run.sandbox) == (
        5,
        str(tmp_path),
        "off",
        "off",
    )
    assert base.for_run(warm=True).warm_start == "on" and base.timeout == 30
    with pytest.raises(ValueError, match="out of range"):
        base.for_run(timeout=0)
    manager = manager_for(skills, run_cwd="skill")
    prepared = manager.plan("one", "a", timeout=7, cwd=str(tmp_path), warm=False).prepared
    assert (prepared.timeout, prepared.cwd, prepared.warm_start) == (7, tmp_path.resolve(), "off")
    assert manager.settings.timeout == 30  # the manager's own settings stay


def test_a_bad_per_run_override_is_refused_audited_before_anything(skills: Path) -> None:
    manager = manager_for(skills, run_cwd="skill")
    with pytest.raises(ValueError, match="out of range"):
        manager.execute_skill_script("one", "a", timeout=0, approver=None)
    record = manager.audit.records()[-1]
    assert (record.skill, record.script, record.outcome) == ("one", "a", "refused")
    assert not ran(skills, "one", "a.py")


def test_a_batch_plan_is_built_by_keyword_and_carries_one_settings_value(skills: Path) -> None:
    import dataclasses

    from skill_magics.core.run.batch.runner import BatchPlan

    manager = manager_for(skills, run_cwd="skill")
    plan = manager.plan_map("one", "a", [{}], timeout=9, warm=False)
    assert (plan.settings.timeout, plan.settings.warm_start) == (9, "off")
    names = {f.name for f in dataclasses.fields(BatchPlan)}
    assert not names & {"timeout", "sandbox", "cwd", "warm"}
    with pytest.raises(TypeError):
        BatchPlan(plan.plan, plan.request, plan.items, plan.mode, plan.settings)  # type: ignore[misc]
    assert manager.run_planned(plan, None).value.ok
