"""Eval file formats (agentskills PR #506): ``expectations`` is written; ``expectations``,
``assertions`` (evals.json) and ``assertion_results`` (a grader's reply, a grading.json) are
all read."""

from __future__ import annotations

import json

import pytest

from skill_magics.core.lab.evals import FORMAT_HINT, load_evals
from skill_magics.core.lab.grading import load_grading, read_grading


def write_evals(skill_dir, evals) -> None:
    (skill_dir / "evals").mkdir(parents=True, exist_ok=True)
    (skill_dir / "evals" / "evals.json").write_text(json.dumps({"skill_name": "s", "evals": evals}))


@pytest.mark.parametrize("key", ["expectations", "assertions"])
def test_evals_json_reads_either_name(tmp_path, key):
    write_evals(tmp_path, [{"id": 1, "prompt": "p", key: ["says hi", {"text": "says bye"}]}])
    (case,) = load_evals(tmp_path, "s")
    assert case.expectations == ("says hi", "says bye")


def test_both_names_in_one_eval_are_merged_once(tmp_path):
    write_evals(
        tmp_path, [{"id": 1, "prompt": "p", "assertions": ["a"], "expectations": ["a", "b"]}]
    )
    (case,) = load_evals(tmp_path, "s")
    assert case.expectations == ("a", "b")


def test_the_format_hint_names_expectations():
    assert '"expectations"' in FORMAT_HINT and "assertions" not in FORMAT_HINT


@pytest.mark.parametrize(
    ("key", "text_key"), [("expectations", "text"), ("assertion_results", "assertion")]
)
def test_a_graders_reply_is_read_under_either_name(key, text_key):
    reply = json.dumps(
        {
            key: [
                {text_key: "says bye", "passed": False, "evidence": "no bye"},
                {text_key: "says hi", "passed": True, "evidence": "line 1"},
            ]
        }
    )
    verdicts, _claims, problem = read_grading(reply, ["says hi", "says bye"])
    assert problem == ""
    assert verdicts == [
        {"text": "says hi", "passed": True, "evidence": "line 1"},
        {"text": "says bye", "passed": False, "evidence": "no bye"},
    ]


def test_an_older_grading_json_reads_as_expectations(tmp_path):
    old = tmp_path / "grading.json"
    old.write_text(
        json.dumps(
            {
                "assertion_results": [
                    {"assertion": "a", "passed": True, "evidence": "e"},
                    {"assertion": "b", "passed": "maybe", "evidence": ""},
                ],
                "timing": {"total_duration_seconds": 3},
            }
        )
    )
    data = load_grading(old)
    assert data["expectations"] == [
        {"text": "a", "passed": True, "evidence": "e"},
        {"text": "b", "passed": None, "evidence": ""},
    ]
    assert "assertion_results" not in data and data["timing"] == {"total_duration_seconds": 3}
    assert data["summary"]["passed"] == 1 and data["summary"]["total"] == 2
    old.write_text("{}")
    with pytest.raises(ValueError, match="no 'expectations'"):
        load_grading(old)
