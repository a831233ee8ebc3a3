"""The lab's options objects and entry points (issue 30): choices checked once, in one line;
keywords fill or replace an options object's fields; a sync entry point always returns its
value, an async client goes to the ``*_async`` twin. Real SDK clients against the local
server speaking the wire format (tests/model_server.py)."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

import numpy as np
import pytest
from lab_support import lab_skills, make_client
from manager_support import manager_for
from model_server import call, say

from skill_magics import (
    AgentOptions,
    EvalOptions,
    TriggerOptions,
    evaluate_triggers,
    evaluate_triggers_async,
    run_agent,
    run_evals,
)

QUERIES = [
    {"query": "mark this", "should_trigger": True},
    {"query": "say hi", "should_trigger": False},
]


@pytest.fixture
def manager(tmp_path, make_skill):
    return manager_for(lab_skills(make_skill, tmp_path / "skills"))


def hits_marker(c):
    if "mark" in c.prompt:
        return call("activate_skill", {"name": "marker"})
    return say("hello")


# -- sync and async entry points ----------------------------------------------------------------


@pytest.mark.parametrize("kind", ["anthropic-async", "openai-async"])
def test_sync_entry_points_refuse_an_async_client_naming_the_twin(server, manager, kind):
    """Before, these returned a coroutine for an async client (a report or a coroutine
    depending on the client); now one line names the coroutine to await, nothing is sent."""
    client = make_client(kind, server.url)
    calls = [
        ("run_agent", lambda: run_agent(client, manager, "x", model="m")),
        ("evaluate_triggers", lambda: evaluate_triggers(client, manager, "marker", [], model="m")),
        ("run_evals", lambda: run_evals(client, manager, "marker", model="m")),
    ]  # fmt: skip
    for name, go in calls:
        with pytest.raises(TypeError, match=rf"async client: use await {name}_async\(") as info:
            go()
        assert "\n" not in str(info.value)
    assert server.calls == []


def test_run_evals_refuses_an_async_grader_too(server, manager):
    client = make_client("anthropic", server.url)
    grader = make_client("openai-async", server.url)
    with pytest.raises(TypeError, match=r"await run_evals_async\("):
        run_evals(client, manager, "marker", model="m", grader=grader)
    assert server.calls == []


@pytest.mark.parametrize("kind", ["anthropic", "anthropic-async"])
def test_the_async_twin_takes_either_client_with_the_same_options(server, manager, kind):
    server.script = hits_marker
    options = TriggerOptions(model="m", runs=2)
    client = make_client(kind, server.url)
    report = asyncio.run(evaluate_triggers_async(client, manager, "marker", QUERIES, options))
    assert [(r.triggers, r.runs) for r in report.results] == [(2, 2), (0, 2)]
    assert len(server.calls) == 4


# -- options given whole, or as keywords --------------------------------------------------------


def test_options_built_once_serve_two_calls_and_keywords_replace_a_field(server, manager):
    server.script = hits_marker
    client = make_client("openai", server.url)
    options = TriggerOptions(model="m", runs=1, max_calls=10)
    a = evaluate_triggers(client, manager, "marker", QUERIES, options)
    b = evaluate_triggers(client, manager, "marker", QUERIES, options, description="Marks runs.")
    assert (a.description_overridden, b.description_overridden) == (False, True)
    assert b.description == "Marks runs." and b.runs_per_query == a.runs_per_query == 1
    assert options.description is None  # the options themselves are unchanged
    assert {c.model for c in server.calls} == {"m"}
    # keywords alone still read as before: they make the options
    c = evaluate_triggers(client, manager, "marker", QUERIES, model="m2", runs=1)
    assert c.model == "m2" and server.calls[-1].model == "m2"


def test_options_are_frozen_values():
    options = EvalOptions(model="m", configurations=["with_skill"], workspace=Path("ws"))
    assert options.configurations == ("with_skill",)  # a list is kept as a tuple
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.runs = 3  # type: ignore[misc]
    assert AgentOptions("m", skills=["marker", "notes"]).skills == ("marker", "notes")


@pytest.mark.parametrize(
    ("make", "fix"),
    [
        (lambda: TriggerOptions(model=""), "model= is required"),
        (lambda: TriggerOptions(model="m", runs=0), "runs=0: use a whole number of 1 or more"),
        (lambda: TriggerOptions(model="m", runs=True), "runs=True: use a whole number"),
        (lambda: TriggerOptions(model="m", threshold=0), "threshold=0: use a rate above 0"),
        (lambda: TriggerOptions(model="m", threshold="0.5"), "threshold='0.5': use a rate"),
        (lambda: TriggerOptions(model="m", holdout=1.0), "holdout=1.0: use a fraction between"),
        (lambda: TriggerOptions(model="m", description="  "), "description= is empty"),
        (lambda: TriggerOptions(model="m", skills="marker"), "give a list of skill names"),
        (lambda: TriggerOptions(model="m", max_calls=0), "max_calls=0: use a whole number"),
        (lambda: TriggerOptions(model="m", seed=1.5), "seed=1.5: use a whole number"),
        (lambda: TriggerOptions(model="m", max_tokens=0), "max_tokens=0: use a whole number"),
        (lambda: EvalOptions(model="m", configurations=["both"]), "use one or both of"),
        (lambda: EvalOptions(model="m", configurations="with_skill"), "use one or both of"),
        (lambda: EvalOptions(model="m", max_turns=0), "max_turns=0: use a whole number"),
        (lambda: EvalOptions(model="m", workspace=3), "workspace=3: give a folder's path"),
        (lambda: AgentOptions(model="m", system=["x"]), "system= is a list: give text"),
        (lambda: AgentOptions(model=None), "model= is required"),  # type: ignore[arg-type]
    ],
)
def test_a_bad_choice_is_one_line_naming_the_fix(make, fix):
    with pytest.raises(ValueError, match=fix.replace("(", r"\(")) as info:
        make()
    assert "\n" not in str(info.value)


def test_good_choices_are_not_refused():
    """What the checks must let through: the edges of each range, ints for rates, any
    sequence of names, an empty list of skills (no other skill offered), a Path."""
    assert TriggerOptions(model="m", threshold=1).threshold == 1.0
    assert TriggerOptions(model="m", holdout=0.01, seed=0, skills=[]).skills == ()
    assert TriggerOptions(model="m", max_calls=1, max_tokens_total=1, max_tokens=1).runs == 3
    assert EvalOptions(model="m", configurations=("without_skill",), workspace="ws").runs == 1
    assert AgentOptions(model="m", max_turns=1, max_tokens=1, system="").system == ""
    from_numpy = TriggerOptions(model="m", threshold=np.float64(0.7), holdout=np.float32(0.5))
    assert (from_numpy.threshold, from_numpy.holdout) == (0.7, 0.5)


def test_keywords_are_checked_by_name_and_options_by_type(server, manager):
    client = make_client("anthropic", server.url)
    with pytest.raises(ValueError, match=r"Unknown option rnus: TriggerOptions takes model, runs"):
        evaluate_triggers(client, manager, "marker", QUERIES, model="m", rnus=2)
    with pytest.raises(ValueError, match="model= is required"):
        evaluate_triggers(client, manager, "marker", QUERIES, runs=2)
    with pytest.raises(
        ValueError, match=r"options=EvalOptions\(...\): pass TriggerOptions\(model=...\)"
    ):
        evaluate_triggers(client, manager, "marker", QUERIES, EvalOptions(model="m"))
    with pytest.raises(ValueError, match="runs=0"):  # a replaced field is checked again
        evaluate_triggers(client, manager, "marker", QUERIES, TriggerOptions("m"), runs=0)
    assert server.calls == []
