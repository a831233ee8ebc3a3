"""run_evals: a skill's evals/evals.json through the agent loop with the real SDK clients
against the scripted local server (tests/model_server.py, never a model); the workspace
files checked against the field lists of skill-creator's references/schemas.md."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lab_support import CLIENTS, lab_skills, make_client, run_lab
from manager_support import RecordingApprover, manager_for
from model_server import Call, Scripted, call, say

from skill_magics import EvalOptions, EvalReport, run_evals

ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")

# skill-creator references/schemas.md, field by field.
EVAL_METADATA = {"eval_id", "eval_name", "prompt", "expectations"}
GRADING = {
    "expectations",
    "summary",
    "execution_metrics",
    "timing",
    "claims",
    "user_notes_summary",
}
EXPECTATION = {"text", "passed", "evidence"}
GRADING_SUMMARY = {"passed", "failed", "total", "pass_rate"}
EXECUTION_METRICS = {
    "tool_calls",
    "total_tool_calls",
    "total_steps",
    "errors_encountered",
    "output_chars",
    "transcript_chars",
}
GRADING_TIMING = {"executor_duration_seconds", "grader_duration_seconds", "total_duration_seconds"}
USER_NOTES = {"uncertainties", "needs_review", "workarounds"}
METRICS = EXECUTION_METRICS | {"files_created"}
TIMING = {
    "total_tokens",
    "duration_ms",
    "total_duration_seconds",
    "executor_start",
    "executor_end",
    "executor_duration_seconds",
    "grader_start",
    "grader_end",
    "grader_duration_seconds",
}
BENCHMARK = {"metadata", "runs", "run_summary", "notes"}
BENCHMARK_METADATA = {
    "skill_name",
    "skill_path",
    "executor_model",
    "analyzer_model",
    "timestamp",
    "evals_run",
    "runs_per_configuration",
}
BENCHMARK_RUN = {"eval_id", "eval_name", "configuration", "run_number", "result", "expectations"}
BENCHMARK_RESULT = {
    "pass_rate",
    "passed",
    "failed",
    "total",
    "time_seconds",
    "tokens",
    "tool_calls",
    "errors",
}
STAT = {"mean", "stddev", "min", "max"}

EVALS = {
    "skill_name": "marker",
    "evals": [
        {
            "id": 1,
            "name": "Rows report",
            "prompt": "Make a report of the 3 rows in rows.csv",
            "expected_output": "report.txt saying rows: 3",
            "files": ["evals/files/rows.csv"],
            "assertions": ["The report says 'rows: 3'", "The answer mentions 'report.txt'"],
        },
        {
            "id": 2,
            "prompt": "Mark this run",
            "expected_output": "A marker",
            "expectations": [{"text": "The answer says 'marked'"}],
        },
    ],
}


def grader_reply(c: Call) -> Scripted:
    """A scripted grader: an expectation passes when its quoted text is in the material."""
    material, _, tail = c.prompt.partition("## Expectations")
    material = material.partition("## Transcript")[2]  # what the run did, not the task
    verdicts = []
    for line in tail.strip().splitlines():
        text = line.split(". ", 1)[1]
        needle = re.search(r"'([^']+)'", text).group(1)
        passed = needle in material
        verdicts.append({"text": text, "passed": passed, "evidence": f"looked for {needle!r}"})
    claims = [{"claim": "3 rows", "type": "factual", "verified": True, "evidence": "rows.csv"}]
    return say("```json\n" + json.dumps({"expectations": verdicts, "claims": claims}) + "\n```")


def agent_script(c: Call) -> Scripted:
    """with_skill: activate, run the right script, answer with its output; without: guess."""
    if c.system.startswith("You grade"):
        return grader_reply(c)
    if "<available_skills>" not in c.system:
        return say("I cannot run anything here.")
    done = [name for name, _ in c.calls_made]
    if not done:
        return call("activate_skill", {"name": "marker"})
    if len(done) == 1:
        if "report" in c.prompt:
            return call("marker__report", {"rows": 3})
        return call("marker__mark", {"what": "run"})
    result = c.tool_results[-1]
    if result["is_error"]:
        return say(f"failed: {result['content']}")
    word = "marked" if "Mark" in c.prompt else result["content"].strip()
    return say(f"{word}; see report.txt" if "report" in c.prompt else word)


@pytest.fixture
def skill_root(tmp_path, make_skill):
    root = lab_skills(make_skill, tmp_path / "skills")
    evals = root / "marker" / "evals"
    (evals / "files").mkdir(parents=True)
    (evals / "files" / "rows.csv").write_text("a\n1\n2\n3\n")
    (evals / "evals.json").write_text(json.dumps(EVALS))
    return root


@pytest.fixture
def manager(skill_root):
    return manager_for(skill_root)


def load(path: Path) -> dict:
    return json.loads(path.read_text())


@pytest.mark.parametrize("kind", CLIENTS)
def test_run_evals_writes_the_workspace_skill_creator_reads(
    server, manager, skill_root, tmp_path, kind
):
    server.script = agent_script
    client = make_client(kind, server.url)
    approver = RecordingApprover("yes_once")
    options = EvalOptions(model="m", runs=2, workspace=tmp_path / "ws")
    report = run_lab(
        run_evals, client, manager, "marker", options, grader=client, approver=approver
    )
    assert isinstance(report, EvalReport)
    iteration = tmp_path / "ws" / "iteration-1"
    assert report.iteration_dir == iteration
    assert sorted(p.name for p in iteration.iterdir()) == [
        "benchmark.json",
        "benchmark.md",
        "eval-2",
        "eval-rows-report",
    ]
    for eval_dir, eval_id in ((iteration / "eval-rows-report", 1), (iteration / "eval-2", 2)):
        meta = load(eval_dir / "eval_metadata.json")
        assert set(meta) == EVAL_METADATA and meta["eval_id"] == eval_id
        for config in ("with_skill", "without_skill"):
            for k in (1, 2):
                run_dir = eval_dir / config / f"run-{k}"
                assert load(run_dir / "eval_metadata.json") == meta  # where the viewer looks
                grading = load(run_dir / "grading.json")
                assert set(grading) == GRADING
                assert set(grading["summary"]) == GRADING_SUMMARY
                assert set(grading["execution_metrics"]) == EXECUTION_METRICS
                assert set(grading["timing"]) == GRADING_TIMING
                assert set(grading["user_notes_summary"]) == USER_NOTES
                for exp in grading["expectations"]:
                    assert set(exp) == EXPECTATION and isinstance(exp["passed"], bool)
                timing = load(run_dir / "timing.json")
                assert set(timing) == TIMING
                assert timing["total_tokens"] > 0 and timing["duration_ms"] >= 0
                for key in ("executor_start", "executor_end", "grader_start", "grader_end"):
                    assert ISO.match(timing[key])
                metrics = load(run_dir / "outputs" / "metrics.json")
                assert set(metrics) == METRICS
                transcript = (run_dir / "outputs" / "transcript.md").read_text()
                assert "## Eval Prompt\n\n" + meta["prompt"] in transcript
    bench = load(iteration / "benchmark.json")
    assert set(bench) == BENCHMARK and set(bench["metadata"]) == BENCHMARK_METADATA
    assert bench["metadata"]["evals_run"] == [1, 2]
    assert bench["metadata"]["runs_per_configuration"] == 2
    assert ISO.match(bench["metadata"]["timestamp"])
    assert len(bench["runs"]) == 8
    for run in bench["runs"]:
        assert BENCHMARK_RUN <= set(run) and set(run["result"]) == BENCHMARK_RESULT
        assert run["configuration"] in ("with_skill", "without_skill")
    summary = bench["run_summary"]
    assert set(summary) == {"with_skill", "without_skill", "delta"}
    for config in ("with_skill", "without_skill"):
        assert set(summary[config]) == {"pass_rate", "time_seconds", "tokens"}
        assert all(set(stat) == STAT for stat in summary[config].values())
    # The skill made the difference: every assertion passed with it, none without.
    assert summary["with_skill"]["pass_rate"]["mean"] == 1.0
    assert summary["without_skill"]["pass_rate"]["mean"] == 0.0
    assert summary["delta"]["pass_rate"] == "+1.00"
    assert re.match(r"^[+-]\d+\.\d$", summary["delta"]["time_seconds"])
    assert re.match(r"^[+-]\d+$", summary["delta"]["tokens"])
    assert "| pass rate | 100% ± 0% | 0% ± 0% | +1.00 |" in (iteration / "benchmark.md").read_text()
    # ONE approval for the whole evaluation, listing the skill's scripts and the scope.
    assert len(approver.requests) == 1
    (request,) = approver.requests
    assert request.scope is not None and request.scope.agent_runs == 4
    assert [s.path for s in request.scripts] == [
        "scripts/fail.py",
        "scripts/mark.py",
        "scripts/report.py",
    ]
    approved = [r for r in manager.audit.records() if r.outcome == "approved"]
    assert len(approved) == 3 + 4  # the scope (one record per script), then each call
    assert [r.script for r in approved[:3]] == [s.path for s in request.scripts]
    assert all(r.reason == "yes_once by approver" for r in approved[:3])
    scoped = "yes_once by approver for output evaluation of 'marker' (iteration-1)"
    assert all(r.reason == scoped for r in approved[3:])
    assert [r.outcome for r in manager.audit.records()].count("completed") == 4


def test_each_run_works_in_its_own_folder_with_the_eval_files(server, manager, tmp_path):
    server.script = agent_script
    client = make_client("anthropic", server.url)
    report = run_evals(
        client,
        manager,
        "marker",
        model="m",
        configurations=("with_skill",),
        workspace=tmp_path / "ws",
        approver=lambda r: "yes_once",
    )
    run = report.runs[0]
    outputs = run.run_dir / "outputs"
    assert (outputs / "rows.csv").read_text() == "a\n1\n2\n3\n"  # evals/files/ dropped
    assert (outputs / "report.txt").read_text() == "rows: 3\n"  # the script's cwd
    assert run.metrics["files_created"] == ["report.txt"]  # inputs and our files left out
    assert (outputs / "response.md").read_text().startswith("wrote report.txt with rows=3")
    assert run.metrics["tool_calls"] == {"activate_skill": 1, "marker__report": 1}
    assert run.transcript.activated == ["marker"]


def test_without_skill_the_model_gets_no_catalog_and_no_tools(server, manager, tmp_path):
    server.script = agent_script
    run_evals(
        make_client("openai", server.url),
        manager,
        "marker",
        model="m",
        configurations=("without_skill",),
        workspace=tmp_path / "ws",
    )
    assert len(server.calls) == 2
    assert all(c.tools == {} and "<available_skills>" not in c.system for c in server.calls)


def test_a_declined_evaluation_runs_no_script_and_asks_once(server, manager, skill_root, tmp_path):
    server.script = agent_script
    approver = RecordingApprover("no")
    report = run_evals(
        make_client("anthropic", server.url),
        manager,
        "marker",
        model="m",
        runs=2,
        configurations=("with_skill",),
        workspace=tmp_path / "ws",
        approver=approver,
    )
    assert len(approver.requests) == 1
    assert "not approved" in report.approval
    assert not (skill_root / "marker" / "ran.marker").exists()
    scripts = [s for r in report.runs for s in r.transcript.tool_calls if s.target == "script"]
    assert len(scripts) == 4 and all(s.is_error and "declined" in s.result for s in scripts)
    assert all(r.status == "completed" for r in report.runs)  # the model was told, went on


def test_without_an_approver_script_calls_are_refused(server, manager, skill_root, tmp_path):
    server.script = agent_script
    report = run_evals(
        make_client("anthropic", server.url),
        manager,
        "marker",
        model="m",
        configurations=("with_skill",),
        workspace=tmp_path / "ws",
    )
    assert "not approved" in report.approval and "No approver is configured" in report.approval
    assert not (skill_root / "marker" / "ran.marker").exists()
    outcomes = [r.outcome for r in manager.audit.records()]
    assert outcomes == ["approval_unavailable"] * (3 + 2)  # the scope's 3 scripts, 2 calls


def test_without_a_grader_assertions_stay_ungraded(server, manager, tmp_path):
    server.script = agent_script
    report = run_evals(
        make_client("anthropic", server.url),
        manager,
        "marker",
        model="m",
        workspace=tmp_path / "ws",
        approver=lambda r: "yes_once",
    )
    grading = report.runs[0].grading
    assert all(e["passed"] is None for e in grading["expectations"])
    assert grading["expectations"][0]["evidence"] == "not graded: no grader client was given"
    assert grading["summary"] == {"passed": 0, "failed": 0, "total": 2, "pass_rate": None}
    summary = report.run_summary
    assert "pass_rate" not in summary["with_skill"] and "pass_rate" not in summary["delta"]
    assert report.benchmark["metadata"]["analyzer_model"] is None
    assert report.benchmark["notes"][0].startswith("Not graded")
    assert "not graded" in report.headline()


def test_max_calls_caps_agent_runs_and_grading(server, manager, tmp_path):
    server.script = agent_script
    client = make_client("anthropic", server.url)
    report = run_evals(
        client,
        manager,
        "marker",
        model="m",
        workspace=tmp_path / "ws",
        grader=client,
        max_calls=5,
        approver=lambda r: "yes_once",
    )
    assert len(server.calls) == 5 and report.calls == 5
    statuses = [(r.eval_name, r.configuration, r.status) for r in report.runs]
    assert statuses == [
        ("rows-report", "with_skill", "completed"),  # 3 agent turns + 1 grading
        ("rows-report", "without_skill", "completed"),  # 1 turn; no call left for grading
        ("2", "with_skill", "not_run"),
        ("2", "without_skill", "not_run"),
    ]
    assert report.stopped == "max_calls=5 reached"
    assert not (report.iteration_dir / "eval-2" / "with_skill").exists()
    assert len(report.benchmark["runs"]) == 2
    assert any("2 runs were not run: max_calls=5 reached" in n for n in report.benchmark["notes"])
    graded = report.runs[1].grading["expectations"]
    assert graded[0]["passed"] is None and "max_calls=5 reached" in graded[0]["evidence"]


def test_a_grader_reply_that_cannot_be_read_leaves_assertions_ungraded(server, manager, tmp_path):
    def script(c: Call) -> Scripted:
        if c.system.startswith("You grade"):
            return say("I think it went fine.")
        return agent_script(c)

    server.script = script
    client = make_client("openai", server.url)
    report = run_evals(
        client,
        manager,
        "marker",
        model="m",
        configurations=("without_skill",),
        workspace=tmp_path / "ws",
        grader=client,
        grader_model="judge-1",
    )
    exp = report.runs[0].grading["expectations"]
    assert [e["passed"] for e in exp] == [None, None]
    assert "held no JSON object" in exp[0]["evidence"]
    assert report.benchmark["metadata"]["analyzer_model"] == "judge-1"
    assert server.calls[-1].model == "judge-1"


def test_each_evaluation_gets_the_next_iteration(server, manager, tmp_path):
    server.script = agent_script
    client = make_client("anthropic", server.url)
    options = EvalOptions("m", configurations=("without_skill",), workspace=tmp_path / "ws")
    for expected in ("iteration-1", "iteration-2"):
        report = run_evals(client, manager, "marker", options)
        assert report.iteration_dir.name == expected


def test_bad_evals_fail_before_anything_is_sent_or_written(server, manager, skill_root, tmp_path):
    client = make_client("anthropic", server.url)
    evals = skill_root / "marker" / "evals" / "evals.json"
    cases = [
        ({"evals": [{"id": 1}]}, "has no 'prompt' text"),
        ({"evals": [{"id": 1, "prompt": "p", "files": ["../../x.csv"]}]}, "outside the skill"),
        ({"evals": [{"id": 1, "prompt": "p", "files": ["evals/none.csv"]}]}, "does not exist"),
        ({"evals": [{"id": 1, "prompt": "p"}, {"id": 1, "prompt": "q"}]}, "repeats id 1"),
        ({"evals": [{"id": 1, "prompt": "p", "assertions": [""]}]}, "write each as a sentence"),
        ({"evals": []}, "lists no evals"),
    ]
    options = EvalOptions(model="m", workspace=tmp_path / "ws")
    for data, message in cases:
        evals.write_text(json.dumps(data))
        with pytest.raises(ValueError, match=message):
            run_evals(client, manager, "marker", options)
    evals.unlink()
    with pytest.raises(ValueError, match="has no evals/evals.json"):
        run_evals(client, manager, "marker", options)
    with pytest.raises(ValueError, match="configurations="):
        run_evals(client, manager, "notes", model="m", configurations=("old_skill",))
    assert server.calls == [] and not (tmp_path / "ws").exists()


def test_report_views(server, manager, tmp_path):
    server.script = agent_script
    client = make_client("anthropic", server.url)
    report = run_evals(
        client,
        manager,
        "marker",
        model="m",
        workspace=tmp_path / "ws",
        grader=client,
        approver=lambda r: "yes_once",
    )
    frame = report.to_pandas()
    assert list(frame["configuration"]) == ["with_skill", "without_skill"] * 2
    assert list(frame["pass_rate"]) == [1.0, 0.0, 1.0, 0.0]
    text = report.text()
    assert "with_skill     pass rate 100% ± 0%" in text and "delta          pass_rate +1.00" in text
    assert report.benchmark_path == report.iteration_dir / "benchmark.json"
