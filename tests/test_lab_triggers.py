"""evaluate_triggers: the real SDK clients against the scripted local server
(tests/model_server.py: replies written by the test, never a model)."""

from __future__ import annotations

import json
import threading
import xml.etree.ElementTree as ET
from collections import Counter

import pandas as pd
import pytest
from lab_support import (
    CLIENTS,
    lab_skills,
    make_client,
    run_lab,
)
from manager_support import manager_for
from model_server import Call, Scripted, call, catalog, say

from skill_magics import TriggerOptions, TriggerReport, evaluate_triggers
from skill_magics.core.lab.triggers import TriggerQuery, load_queries, split_holdout

# run_eval's output fields (skill-creator scripts/run_eval.py)
RUN_EVAL_KEYS = {"skill_name", "description", "results", "summary"}
RESULT_KEYS = {"query", "should_trigger", "trigger_rate", "triggers", "runs", "pass"}


@pytest.fixture
def manager(tmp_path, make_skill):
    return manager_for(lab_skills(make_skill, tmp_path / "skills"))


def scripted_rates(rules: dict[str, list]) -> object:
    """Per query, the n-th time it is asked: "hit" (activate marker), "other" (activate
    notes), "script" (call marker's script), "no" (plain text), or an HTTP status (int)."""
    seen: Counter[str] = Counter()
    lock = threading.Lock()

    def script(c: Call) -> Scripted:
        with lock:
            n = seen[c.prompt]
            seen[c.prompt] += 1
        plan = rules[c.prompt]
        step = plan[n % len(plan)]
        if isinstance(step, int):
            return Scripted(status=step, error="scripted failure")
        if step == "hit":
            return call("activate_skill", {"name": "marker"})
        if step == "other":
            return call("activate_skill", {"name": "notes"})
        if step == "script":
            return call("marker__mark", {"x": 1}, text="I'll mark it")
        return say("no skill needed")

    return script


QUERIES = [
    {"query": "always", "should_trigger": True},
    {"query": "two of three", "should_trigger": True},
    {"query": "script directly", "should_trigger": True},
    {"query": "never", "should_trigger": True},
    {"query": "neg quiet", "should_trigger": False},
    {"query": "neg hit once", "should_trigger": False},
    {"query": "neg other skill", "should_trigger": False},
]
RULES = {
    "always": ["hit"],
    "two of three": ["hit", "no", "hit"],
    "script directly": ["script"],
    "never": ["no"],
    "neg quiet": ["no"],
    "neg hit once": ["no", "hit", "no"],
    "neg other skill": ["other"],
}


@pytest.mark.parametrize("kind", CLIENTS)
def test_trigger_rates_per_query_and_the_summary(server, manager, kind):
    server.script = scripted_rates(RULES)
    asked = []
    manager.approver = lambda request: asked.append(request) or "yes_once"
    client = make_client(kind, server.url)
    report = run_lab(evaluate_triggers, client, manager, "marker", QUERIES, TriggerOptions("m"))
    assert isinstance(report, TriggerReport)
    rates = {r.query: (r.triggers, r.runs, r.passed) for r in report.results}
    assert rates == {
        "always": (3, 3, True),
        "two of three": (2, 3, True),
        "script directly": (3, 3, True),  # a call of one of its tools triggers too
        "never": (0, 3, False),
        "neg quiet": (0, 3, True),
        "neg hit once": (1, 3, True),
        "neg other skill": (0, 3, True),  # activating another skill is not a trigger
    }
    s = report.summary
    assert (s["passed"], s["total"], s["calls"], s["errors"]) == (6, 7, 21, 0)
    assert s["precision"] == 1.0 and s["recall"] == 0.75 and s["accuracy"] == 6 / 7
    assert s["tokens"] == report.input_tokens + report.output_tokens > 0
    # Only the first reply is read: nothing ran, nobody was asked, nothing was audited.
    assert asked == [] and manager.audit.records() == []
    assert all(c.turn == 1 for c in server.calls)


def test_errors_are_counted_apart_and_never_make_a_query_pass(server, manager):
    server.script = scripted_rates(
        {
            "neg all errors": [500],
            "neg one error": [503, "no", "no"],
            "pos one error": ["hit", 529, "hit"],
        }
    )
    queries = [
        {"query": "neg all errors", "should_trigger": False},
        {"query": "neg one error", "should_trigger": False},
        {"query": "pos one error", "should_trigger": True},
    ]
    report = evaluate_triggers(
        make_client("anthropic", server.url), manager, "marker", queries, model="m"
    )
    all_errors, one_error, pos = report.results
    # A failed request is not a non-trigger: the query with only errors does not pass.
    assert (all_errors.runs, all_errors.errors, all_errors.trigger_rate) == (0, 3, None)
    assert all_errors.passed is False
    assert (one_error.runs, one_error.errors, one_error.passed) == (2, 1, True)
    assert (pos.runs, pos.triggers, pos.errors, pos.trigger_rate) == (2, 2, 1, 1.0)
    s = report.summary
    assert (s["errors"], s["unanswered"], s["calls"]) == (5, 1, 9)
    assert s["accuracy"] == 1.0  # over the answered queries only
    frame = report.to_pandas()
    assert list(frame.columns[:7]) == [
        "query",
        "should_trigger",
        "runs",
        "triggers",
        "errors",
        "trigger_rate",
        "passed",
    ]
    assert frame.loc[0, "errors"] == 3


def test_a_timeout_is_an_error_of_its_query(server, manager):
    server.script = lambda c: Scripted(text="slow", delay=3)
    report = evaluate_triggers(
        make_client("openai", server.url, timeout=0.4),
        manager,
        "marker",
        [{"query": "q", "should_trigger": False}],
        model="m",
        runs=1,
    )
    (result,) = report.results
    assert (result.errors, result.runs, result.passed) == (1, 0, False)
    assert "timed out" in report.runs[0].error


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_a_description_override_reaches_every_place_the_model_sees(server, manager, tmp_path, kind):
    skill_md = tmp_path / "skills" / "marker" / "SKILL.md"
    before = skill_md.read_bytes()
    original = "Marks a run on disk and echoes its input."
    new = "Zebra-stripe tallies for quarterly audits."
    server.script = lambda c: say("no")
    report = evaluate_triggers(
        make_client(kind, server.url),
        manager,
        "marker",
        [{"query": "q", "should_trigger": True}],
        model="m",
        runs=2,
        description=new,
    )
    assert len(server.calls) == 2
    for seen in server.calls:
        listed = catalog(seen.system)
        assert listed["marker"] == new  # the catalog entry
        assert listed["notes"] == "Write meeting notes in a fixed layout."  # others untouched
        assert original not in seen.system
        scripts = [name for name in seen.tools if name.startswith("marker__")]
        assert scripts and all(new in seen.tools[name] for name in scripts)  # each script tool
        assert all(original not in text for text in seen.tools.values())
    assert skill_md.read_bytes() == before  # SKILL.md untouched
    assert report.description == new and report.to_json()["description"] == new
    # Without an override the model sees SKILL.md's description.
    one = [{"query": "q", "should_trigger": True}]
    evaluate_triggers(make_client(kind, server.url), manager, "marker", one, model="m", runs=1)
    assert original in catalog(server.calls[-1].system)["marker"]


def test_max_calls_is_a_hard_cap(server, manager):
    server.script = lambda c: call("activate_skill", {"name": "marker"})
    queries = [{"query": f"q{i}", "should_trigger": True} for i in range(3)]
    report = evaluate_triggers(
        make_client("anthropic", server.url),
        manager,
        "marker",
        queries,
        model="m",
        runs=3,
        max_calls=4,
    )
    assert len(server.calls) == 4 and report.calls == 4
    assert report.stopped == "max_calls=4 reached"
    assert report.summary["not_run"] == 5
    # Round by round: every query got a run before any got a second.
    assert [r.runs for r in report.results] == [2, 1, 1]
    assert [r.not_run for r in report.results] == [1, 2, 2]


def test_max_tokens_total_is_a_hard_cap_and_lowers_max_tokens(server, manager):
    server.script = lambda c: Scripted(text="no", input_tokens=100, output_tokens=10)
    report = evaluate_triggers(
        make_client("openai", server.url),
        manager,
        "marker",
        [{"query": "q", "should_trigger": False}],
        model="m",
        runs=5,
        max_tokens_total=250,
    )
    assert len(server.calls) == 3  # 0, 110, 220 tokens used before each; 330 stops it
    assert report.summary["tokens"] == 330 and report.summary["not_run"] == 2
    assert "max_tokens_total=250 reached" in report.stopped
    limits = [c.body["max_completion_tokens"] for c in server.calls]
    assert limits == [250, 140, 30]


def test_holdout_is_a_stratified_seeded_split_with_summaries_for_both(server, manager):
    def script(c: Call) -> Scripted:
        return call("activate_skill", {"name": "marker"}) if "pos" in c.prompt else say("no")

    server.script = script
    queries = [{"query": f"pos {i}", "should_trigger": True} for i in range(10)]
    queries += [{"query": f"neg {i}", "should_trigger": False} for i in range(5)]
    report = evaluate_triggers(
        make_client("anthropic", server.url),
        manager,
        "marker",
        queries,
        model="m",
        runs=1,
        holdout=0.4,
        seed=7,
    )
    parts = Counter((q.should_trigger, q.part) for q in report.queries)
    assert parts == {(True, "test"): 4, (True, "train"): 6, (False, "test"): 2, (False, "train"): 3}
    s = report.summary
    assert s["train"]["total"] == 9 and s["test"]["total"] == 6
    assert s["train"]["calls"] + s["test"]["calls"] == s["calls"] == 15
    data = report.to_json()
    assert data["holdout"] == 0.4 and data["test_total"] == 6 and len(data["train_results"]) == 9
    # Seeded: the same seed gives the same split, another seed another one.
    items = load_queries(queries)
    assert split_holdout(items, 0.4, 7) == split_holdout(items, 0.4, 7)
    assert split_holdout(items, 0.4, 7) != split_holdout(items, 0.4, 8)
    # A class of one stays in train; a class never goes wholly to test.
    few = [TriggerQuery("a", True), TriggerQuery("b", False), TriggerQuery("c", False)]
    lone = split_holdout(few, 0.9, 1)
    assert [q.part for q in lone].count("test") == 1 and lone[0].part == "train"


def test_to_json_is_run_evals_output_format(server, manager, tmp_path):
    server.script = scripted_rates(RULES)
    report = evaluate_triggers(
        make_client("anthropic", server.url), manager, "marker", QUERIES, model="m", runs=3
    )
    data = report.to_json()
    assert RUN_EVAL_KEYS <= set(data)
    assert data["skill_name"] == "marker"
    assert data["summary"] == {"total": 7, "passed": 6, "failed": 1}
    for result in data["results"]:
        assert RESULT_KEYS <= set(result)
        assert isinstance(result["trigger_rate"], float) and isinstance(result["pass"], bool)
    saved = report.save_json(tmp_path / "out.json")
    assert json.loads(saved.read_text()) == data


def test_queries_from_a_dataframe_a_file_and_bad_ones(server, manager, tmp_path):
    server.script = lambda c: say("no")
    frame = pd.DataFrame(QUERIES[:2])
    client = make_client("anthropic", server.url)
    once = TriggerOptions(model="m", runs=1)
    report = evaluate_triggers(client, manager, "marker", frame, once)
    assert [q.should_trigger for q in report.queries] == [True, True]
    path = tmp_path / "eval_set.json"
    path.write_text(json.dumps(QUERIES[:3]))
    report = evaluate_triggers(client, manager, "marker", str(path), once)
    assert len(report.queries) == 3
    calls = len(server.calls)
    for bad, message in [
        ([{"query": "x"}], "'should_trigger' is None"),
        ([{"query": "", "should_trigger": True}], "has no 'query' text"),
        ([], "No queries given"),
        ({"query": "x"}, "must be a list"),
        (str(tmp_path / "missing.json"), "No queries file"),
    ]:
        with pytest.raises(ValueError, match=message):
            evaluate_triggers(client, manager, "marker", bad, once)
    with pytest.raises(ValueError, match="disable-model-invocation"):
        evaluate_triggers(client, manager, "hidden-skill", QUERIES, once)
    with pytest.raises(ValueError, match="max_calls=0"):
        evaluate_triggers(client, manager, "marker", QUERIES, model="m", max_calls=0)
    assert len(server.calls) == calls  # nothing was sent for a bad call


def test_compare_two_descriptions_side_by_side(server, manager):
    def script(c: Call) -> Scripted:
        if "tallies" in catalog(c.system)["marker"] and "tally" in c.prompt:
            return call("activate_skill", {"name": "marker"})
        return say("no")

    server.script = script
    client = make_client("anthropic", server.url)
    queries = [
        {"query": "tally the audit", "should_trigger": True},
        {"query": "write notes", "should_trigger": False},
    ]
    options, tallies = TriggerOptions(model="m", runs=1), "Counts tallies."
    a = evaluate_triggers(client, manager, "marker", queries, options)
    b = evaluate_triggers(client, manager, "marker", queries, options, description=tallies)
    comparison = a.compare(b)
    rows = comparison.rows()
    assert rows[0]["change"] == "fixed in B" and rows[1]["change"] == "same"
    assert dict((m, (x, y)) for m, x, y in comparison.metrics())["recall"] == (0.0, 1.0)
    assert "fixed in B: tally the audit" in comparison.text()
    assert list(comparison.to_pandas().columns) == [
        "query",
        "should_trigger",
        "rate_a",
        "rate_b",
        "passed_a",
        "passed_b",
        "change",
    ]


def test_the_chart_is_an_svg_with_one_bar_per_query(server, manager, tmp_path):
    server.script = scripted_rates(RULES)
    report = evaluate_triggers(
        make_client("openai", server.url), manager, "marker", QUERIES, model="m", runs=3
    )
    svg = report.chart()
    root = ET.fromstring(str(svg))
    rects = root.findall("{http://www.w3.org/2000/svg}rect")
    assert len(rects) == 2 * len(QUERIES)  # a background and a bar per query
    widths = [float(r.get("width")) for r in rects[1::2]]
    assert widths[0] == 300.0 and widths[3] == 0.0 and widths[1] == pytest.approx(200.0)
    assert svg._repr_svg_() == str(svg)
    assert svg.save(tmp_path / "c.svg").read_text() == str(svg)


def test_progress_is_reported_after_every_run(server, manager):
    server.script = scripted_rates({"a": ["hit"], "b": [500]})
    seen = []
    evaluate_triggers(
        make_client("anthropic", server.url),
        manager,
        "marker",
        [{"query": "a", "should_trigger": True}, {"query": "b", "should_trigger": False}],
        model="m",
        runs=2,
        on_progress=seen.append,
    )
    assert [(p.done, p.failed, p.total) for p in seen] == [
        (1, 0, 4),
        (2, 1, 4),
        (3, 1, 4),
        (4, 2, 4),
    ]
    assert "4/4 runs · 2 errors" in seen[-1].line()
