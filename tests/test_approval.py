"""The UI-free approval core: decisions, session store, content hash."""

from __future__ import annotations

import threading

import pytest

from skill_magics.core.errors import ApprovalDeclined, ApprovalUnavailable, SkillMagicsError
from skill_magics.core.run.approval import (
    ApprovalRequest,
    ApprovalStore,
    Decision,
    ScriptToApprove,
    coerce_decision,
    combine_requests,
    decides_alone,
    scripts_content_hash,
)


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


def test_combine_one_request_returns_it_unchanged(skill_dir):
    request = _request(skill_dir)
    assert combine_requests([request]) is request
    assert request.parts == () and not request.is_combined
    assert request.requests == (request,) and request.skill_names == ("demo",)
    with pytest.raises(ValueError):
        combine_requests([])


def test_combined_request_lists_every_part_in_order(skill_dir):
    one, two = _request(skill_dir, "one"), _request(skill_dir, "two")
    combined = combine_requests([one, two])
    assert combined.parts == (one, two) and combined.is_combined
    assert combined.skill_name == "one, two"
    assert combined.skill_names == ("one", "two")
    assert [s.path for s in combined.scripts] == [
        "one/scripts/a.py",
        "one/scripts/b.sh",
        "two/scripts/a.py",
        "two/scripts/b.sh",
    ]
    assert combined.arguments == {"x": 1} and combined.argv == ()
    assert combined.content_hash not in ("", one.content_hash)
    assert combined.request_id
    # Combining a combined request flattens it; different inputs are not summarised.
    three = ApprovalRequest("three", (), arguments={"y": 2}, argv=("-v",), content_hash="h3")
    again = combine_requests([combined, three])
    assert again.skill_names == ("one", "two", "three")
    assert again.arguments is None and again.argv == ()
    with pytest.raises(ValueError, match="skillpy"):
        combine_requests([one, ApprovalRequest("py", (), code="print(1)")])


def test_combined_yes_in_session_approves_each_skill_at_its_own_hash(skill_dir):
    store, approver = ApprovalStore(), CountingApprover("yes_in_session")
    one, two = _request(skill_dir, "one"), _request(skill_dir, "two")
    assert store.ask(approver, combine_requests([one, two])) is Decision.YES_IN_SESSION
    assert store.approvals() == {"one": one.content_hash, "two": two.content_hash}
    assert store.ask(approver, one) is Decision.YES_IN_SESSION  # as if approved separately
    assert store.ask(approver, combine_requests([one, two])) is Decision.YES_IN_SESSION
    assert approver.calls == 1
    store.revoke("two")
    assert not store.covers(combine_requests([one, two])) and store.covers(one)
    store.ask(approver, combine_requests([one, two]))
    assert approver.calls == 2


def test_combined_no_and_yes_once_remember_nothing(skill_dir):
    store = ApprovalStore()
    combined = combine_requests([_request(skill_dir, "one"), _request(skill_dir, "two")])
    assert store.ask(CountingApprover("yes_once"), combined) is Decision.YES_ONCE
    with pytest.raises(ApprovalDeclined, match=r"one, two \(one/scripts/a\.py.*nothing ran"):
        store.ask(CountingApprover("no"), combined)
    assert store.approvals() == {}


def test_decides_alone_is_an_optional_hint(skill_dir):
    request = _request(skill_dir)

    class Configured:
        def __call__(self, request):
            return "yes_once"

        def decides_alone(self, request):
            return request.skill_name == "demo"

    class Broken(Configured):
        def decides_alone(self, request):
            raise RuntimeError("boom")

    assert decides_alone(Configured(), request) is True
    assert decides_alone(Configured(), _request(skill_dir, "other")) is False
    assert decides_alone(lambda r: "yes_once", request) is False
    assert decides_alone(Broken(), request) is False
    assert decides_alone(None, request) is False
