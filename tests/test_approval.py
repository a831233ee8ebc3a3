"""ApprovalRequest and Decision values: answers, labels, the content hash, combined requests.

What a decision does (the session store, who is asked, what lapses) is in test_gate.py.
"""

from __future__ import annotations

import pytest
from manager_support import request_for

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    ApprovalPending,
    ApprovalStale,
    ApprovalUnavailable,
    SkillMagicsError,
)
from skill_magics.core.run.gating.approval import (
    ApprovalRequest,
    Decision,
    coerce_decision,
    combine_requests,
    scripts_content_hash,
)


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


def test_all_errors_share_one_root():
    for error in (ApprovalDeclined, ApprovalUnavailable, ApprovalPending, ApprovalStale):
        assert issubclass(error, SkillMagicsError)


def test_combine_one_request_returns_it_unchanged(skill_dir):
    request = request_for(skill_dir)
    assert combine_requests([request]) is request
    assert request.parts == () and not request.is_combined
    assert request.requests == (request,) and request.skill_names == ("demo",)
    with pytest.raises(ValueError):
        combine_requests([])


def test_combined_request_lists_every_part_in_order(skill_dir):
    one, two = request_for(skill_dir, "one"), request_for(skill_dir, "two")
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
