"""The UI-free approval core: decisions, session store, content hash."""

from __future__ import annotations

import threading

import pytest

from skill_magics.core.approval import (
    ApprovalRequest,
    ApprovalStore,
    Decision,
    ScriptToApprove,
    coerce_decision,
    scripts_content_hash,
)
from skill_magics.core.errors import ApprovalDeclined, ApprovalUnavailable, SkillMagicsError


def _request(skill_dir, name="demo") -> ApprovalRequest:
    scripts = ["scripts/a.py", "scripts/b.sh"]
    return ApprovalRequest(
        skill_name=name,
        scripts=tuple(ScriptToApprove(p, "python3") for p in scripts),
        arguments={"x": 1},
        content_hash=scripts_content_hash(skill_dir, scripts),
    )


@pytest.fixture
def skill_dir(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts/a.py").write_text("print('a')\n")
    (tmp_path / "scripts/b.sh").write_text("echo b\n")
    return tmp_path


class CountingApprover:
    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        return self.answer


def test_no_approver_means_the_caller_decided(skill_dir):
    assert ApprovalStore().ask(None, _request(skill_dir)) is None


def test_yes_once_asks_every_time(skill_dir):
    store, approver = ApprovalStore(), CountingApprover("yes_once")
    assert store.ask(approver, _request(skill_dir)) is Decision.YES_ONCE
    assert store.ask(approver, _request(skill_dir)) is Decision.YES_ONCE
    assert approver.calls == 2
    assert store.approvals() == {}


def test_yes_in_session_is_remembered_until_a_script_changes(skill_dir):
    store, approver = ApprovalStore(), CountingApprover(Decision.YES_IN_SESSION)
    store.ask(approver, _request(skill_dir))
    store.ask(approver, _request(skill_dir))
    assert approver.calls == 1
    (skill_dir / "scripts/b.sh").write_text("echo changed\n")
    store.ask(approver, _request(skill_dir))
    assert approver.calls == 2


def test_session_approval_is_per_skill(skill_dir):
    store, approver = ApprovalStore(), CountingApprover("yes_in_session")
    store.ask(approver, _request(skill_dir, "one"))
    store.ask(approver, _request(skill_dir, "two"))
    assert approver.calls == 2
    assert set(store.approvals()) == {"one", "two"}


def test_no_raises_declined_with_a_message_that_names_the_fix(skill_dir):
    with pytest.raises(ApprovalDeclined, match="nothing ran.*Yes once"):
        ApprovalStore().ask(CountingApprover("no"), _request(skill_dir))


def test_unavailable_propagates(skill_dir):
    def approver(request):
        raise ApprovalUnavailable("headless: set SKILL_MAGICS_AUTO_APPROVE")

    with pytest.raises(ApprovalUnavailable):
        ApprovalStore().ask(approver, _request(skill_dir))


def test_revoke_and_clear(skill_dir):
    store = ApprovalStore()
    store.ask(CountingApprover("yes_in_session"), _request(skill_dir))
    assert store.revoke("demo") is True
    assert store.revoke("demo") is False
    store.ask(CountingApprover("yes_in_session"), _request(skill_dir))
    store.clear()
    assert store.approvals() == {}


def test_bad_decision_value_is_a_clear_error():
    with pytest.raises(ValueError, match="return one of 'yes_once'"):
        coerce_decision("maybe")


def test_decision_labels_are_the_three_buttons():
    assert [d.label for d in Decision] == ["Yes once", "Yes in session", "No"]


def test_content_hash_covers_names_bytes_and_the_set(skill_dir):
    base = scripts_content_hash(skill_dir, ["scripts/a.py", "scripts/b.sh"])
    assert base == scripts_content_hash(skill_dir, ["scripts/b.sh", "scripts/a.py"])
    assert base != scripts_content_hash(skill_dir, ["scripts/a.py"])
    (skill_dir / "scripts/a.py").write_text("print('a')  \n")
    assert base != scripts_content_hash(skill_dir, ["scripts/a.py", "scripts/b.sh"])
    # a vanished script still hashes (deterministically) instead of raising
    assert scripts_content_hash(skill_dir, ["gone.py"]) == scripts_content_hash(
        skill_dir, ["gone.py"]
    )


def test_store_is_thread_safe(skill_dir):
    store = ApprovalStore()
    errors = []

    def worker(i):
        try:
            for _ in range(200):
                store.approve(f"s{i}", "h")
                store.is_approved(f"s{i}", "h")
                store.revoke(f"s{i}")
        except Exception as exc:  # pragma: no cover - only on a race
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.approvals() == {}


def test_all_errors_share_one_root():
    assert issubclass(ApprovalDeclined, SkillMagicsError)
    assert issubclass(ApprovalUnavailable, SkillMagicsError)
