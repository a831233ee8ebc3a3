"""The approval gate (core/run/gate.py): the one place that decides whether a run may start.

Real skills on disk, real fingerprints, a real audit log; approvers are plain callables.
"""

from __future__ import annotations

import threading

import pytest

from skill_magics.core.errors import (
    ApprovalDeclined,
    ApprovalPending,
    ApprovalStale,
    ApprovalUnavailable,
    RunInterrupted,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.approval import Answer, Decision, combine_requests
from skill_magics.core.run.store import ApprovalStore
from skill_magics.core.status import AuditOutcome, RunStatus


class CountingApprover:
    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
def manager(tmp_path, make_skill):
    for name in ("one", "two"):
        make_skill(tmp_path, name, scripts={"scripts/a.py": "print('a')\n"})
    return SkillManager([tmp_path])


def _request(manager, name="one"):
    return manager.plan(name, "a").request


def _outcomes(manager):
    return [(r.skill, r.outcome) for r in manager.audit.records()]


def test_no_approver_means_the_caller_decided(manager):
    verdict = manager.gate.decide(_request(manager), None)
    assert verdict.allowed and verdict.decision is None
    assert manager.audit.records() == []


def test_yes_once_asks_every_time_and_is_audited(manager):
    approver = CountingApprover("yes_once")
    for _ in range(2):
        verdict = manager.gate.decide(_request(manager), approver)
        assert verdict.allowed and verdict.decision is Decision.YES_ONCE
    assert approver.calls == 2
    assert manager.approvals.approvals() == {}
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVED)] * 2
    assert manager.audit.records()[0].reason == "yes_once by approver"


def test_yes_in_session_is_remembered_until_a_file_changes(manager, tmp_path):
    approver = CountingApprover(Answer(Decision.YES_IN_SESSION, "button 'Yes in session'"))
    manager.gate.decide(_request(manager), approver)
    verdict = manager.gate.decide(_request(manager), approver)
    assert verdict.allowed and verdict.by == "session approval"
    assert approver.calls == 1
    assert manager.audit.records()[-1].reason == "yes_in_session by button 'Yes in session'"
    (tmp_path / "one/scripts/a.py").write_text("print('changed')\n")
    manager.gate.decide(_request(manager), approver)
    assert approver.calls == 2


def test_session_approval_is_per_skill(manager):
    approver = CountingApprover("yes_in_session")
    manager.gate.decide(_request(manager, "one"), approver)
    manager.gate.decide(_request(manager, "two"), approver)
    assert approver.calls == 2
    assert set(manager.approvals.approvals()) == {"one", "two"}


def test_no_is_declined_audited_and_names_the_fix(manager):
    verdict = manager.gate.decide(_request(manager), CountingApprover("no"))
    assert verdict.status is RunStatus.DECLINED
    assert "was declined: nothing ran" in verdict.message
    assert "asked again" in verdict.message
    assert _outcomes(manager) == [("one", AuditOutcome.DECLINED)]
    with pytest.raises(ApprovalDeclined, match="nothing ran"):
        verdict.raise_if_blocked()


def test_unavailable_is_a_verdict_and_audited(manager):
    approver = CountingApprover(ApprovalUnavailable("headless: set SKILL_MAGICS_AUTO_APPROVE"))
    verdict = manager.gate.decide(_request(manager), approver)
    assert verdict.status is RunStatus.APPROVAL_UNAVAILABLE
    assert verdict.message == "headless: set SKILL_MAGICS_AUTO_APPROVE"
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVAL_UNAVAILABLE)]
    with pytest.raises(ApprovalUnavailable):
        verdict.raise_if_blocked()


def test_pending_is_not_audited_until_it_is_settled(manager):
    panel = object()
    verdict = manager.gate.decide(
        _request(manager), CountingApprover(ApprovalPending("waiting for a click", panel))
    )
    assert verdict.status is RunStatus.PENDING and verdict.pending is panel
    assert manager.audit.records() == []
    later = manager.gate.settle(_request(manager), Decision.YES_ONCE, "button 'Yes once'")
    assert later.allowed
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVED)]


def test_interrupted_wait_is_audited_and_raised(manager):
    with pytest.raises(RunInterrupted):
        manager.gate.decide(_request(manager), CountingApprover(RunInterrupted("stopped")))
    assert _outcomes(manager) == [("one", AuditOutcome.INTERRUPTED)]


def test_a_yes_for_files_that_changed_is_refused(manager, tmp_path):
    request = _request(manager)
    (tmp_path / "one/scripts/a.py").write_text("open('evil', 'w')\n")
    verdict = manager.gate.settle(request, Decision.YES_IN_SESSION, "button")
    assert verdict.status is RunStatus.REFUSED
    assert "changed after the approval was asked" in verdict.message
    assert manager.approvals.approvals() == {}  # nothing remembered for the old files
    assert _outcomes(manager) == [("one", AuditOutcome.REFUSED)]
    with pytest.raises(ApprovalStale):
        verdict.raise_if_blocked()


def test_decide_each_asks_once_and_skips_session_approved_skills(manager):
    approver = CountingApprover("yes_in_session")
    manager.gate.decide(_request(manager, "one"), approver)
    seen = []

    def recording(request):
        seen.append(request)
        return "yes_once"

    verdicts = manager.gate.decide_each(
        [_request(manager, "one"), _request(manager, "two")], recording
    )
    assert [v.allowed for v in verdicts] == [True, True]
    assert [r.skill_names for r in seen] == [("two",)]  # "one" was covered by the session


def test_combined_yes_in_session_approves_each_skill_at_its_own_hash(manager):
    approver = CountingApprover("yes_in_session")
    one, two = _request(manager, "one"), _request(manager, "two")
    verdicts = manager.gate.decide_each([one, two], approver)
    assert all(v.allowed for v in verdicts)
    assert manager.approvals.approvals() == {"one": one.content_hash, "two": two.content_hash}
    assert manager.gate.decide(one, approver).by == "session approval"  # as if separately
    assert approver.calls == 1
    manager.approvals.revoke("two")
    assert not manager.approvals.covers(combine_requests([one, two]))
    assert manager.approvals.covers(one)


def test_combined_no_declines_all_and_remembers_nothing(manager):
    verdicts = manager.gate.decide_each(
        [_request(manager, "one"), _request(manager, "two")], CountingApprover("no")
    )
    assert [v.status for v in verdicts] == [RunStatus.DECLINED] * 2
    assert "one, two (one/scripts/a.py, two/scripts/a.py) was declined" in verdicts[0].message
    assert manager.approvals.approvals() == {}
    assert sorted(_outcomes(manager)) == [
        ("one", AuditOutcome.DECLINED),
        ("two", AuditOutcome.DECLINED),
    ]


def test_for_agent_refuses_without_any_approver(manager):
    approver = manager.gate.for_agent(None, None)
    verdict = manager.gate.decide(_request(manager), approver)
    assert verdict.status is RunStatus.APPROVAL_UNAVAILABLE
    assert "No approver is configured" in verdict.message


def test_store_is_thread_safe():
    store = ApprovalStore()
    errors = []

    def worker(i):
        try:
            for _ in range(200):
                store.approve(f"s{i}", "h")
                store.is_approved(f"s{i}", "h")
                store.revoke(f"s{i}")
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.approvals() == {}
