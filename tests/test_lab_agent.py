"""run_agent: the real anthropic and openai SDK clients (sync and async) against a local
server that speaks their wire formats with scripted replies (tests/model_server.py, a test
fixture, not a model). Scripts really run, through the real gate, with real approvers."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from pathlib import Path

import anthropic
import openai
import pytest
from lab_support import (
    CLIENTS,
    SYNC_CLIENTS,
    by_turn,
    lab_skills,
    make_client,
    provider_of,
    run_lab,
)
from manager_support import RecordingApprover, manager_for, outcomes
from model_server import Scripted, call, say

from skill_magics import AgentOptions, evaluate_triggers, run_agent, run_agent_async
from skill_magics.core.base.errors import ModelAuthError
from skill_magics.core.lab.clients import provider_for
from skill_magics.core.lab.offer import SKILLS_NOTE
from skill_magics.core.lab.transcript import STAND_IN_LABEL, ErrorStep, ModelStep, ToolStep


@pytest.fixture
def skills(tmp_path, make_skill):
    return lab_skills(make_skill, tmp_path / "skills")


@pytest.fixture
def manager(skills):
    return manager_for(skills)


def marker(skills: Path) -> Path:
    return skills / "marker" / "ran.marker"


def activate_then_mark(final: str = "done") -> object:
    return by_turn(
        call("activate_skill", {"name": "marker"}),
        call("marker__mark", {"note": "hello"}),
        lambda c: say(f"{final}: {c.tool_results[-1]['content'].strip()}"),
    )


# -- what the model sees ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_the_model_sees_the_catalog_the_activation_tool_and_the_script_tools(server, manager, kind):
    server.script = lambda c: say("hi")
    run_agent(make_client(kind, server.url), manager, "hello", model="m-1", system="Be brief.")
    (seen,) = server.calls
    assert seen.provider == provider_of(kind) and seen.model == "m-1"
    assert seen.system.startswith("Be brief.\n\n" + SKILLS_NOTE)
    assert "<available_skills>" in seen.system
    for name in ("marker", "notes"):
        assert f"<name>\n{name}\n</name>" in seen.system
    assert "hidden-skill" not in seen.system  # disable-model-invocation: never offered
    tools = seen.tools
    assert sorted(tools) == ["activate_skill", "marker__fail", "marker__mark", "marker__report"]
    enum = seen.tool_schemas["activate_skill"]["properties"]["name"]["enum"]
    assert enum == ["marker", "notes"]
    assert "Marks a run on disk" in tools["marker__mark"]


def test_skills_limits_what_is_offered(server, manager):
    server.script = lambda c: say("hi")
    run_agent(make_client("anthropic", server.url), manager, "x", model="m", skills=["notes"])
    seen = server.calls[0]
    assert list(seen.tools) == ["activate_skill"]
    assert "<name>\nmarker\n</name>" not in seen.system
    # No skills at all: no catalog, no tools, the system prompt as given.
    run_agent(make_client("openai", server.url), manager, "x", model="m", skills=[], system="S")
    assert server.calls[1].system == "S" and server.calls[1].tools == {}


# -- a script runs only after approval, and its result reaches the model -------------------------


@pytest.mark.parametrize("kind", CLIENTS)
def test_a_script_runs_only_after_approval_and_its_result_reaches_the_model(
    server, manager, skills, kind
):
    server.script = activate_then_mark()
    seen_before: list[bool] = []

    def approver(request):
        seen_before.append(marker(skills).exists())  # asked before anything ran
        assert [s.path for s in request.scripts] == ["scripts/mark.py"]
        assert request.arguments == {"note": "hello"}
        return "yes_once"

    client = make_client(kind, server.url)
    t = run_lab(run_agent, client, manager, "mark it", AgentOptions("m"), approver=approver)
    assert seen_before == [False]
    assert marker(skills).read_text() == "ran\n"
    # The third request carried the script's stdout back as the tool result.
    result = server.calls[2].tool_results[-1]
    assert result["is_error"] is False
    assert json.loads(result["content"])["echo"] == {"note": "hello"}
    assert t.activated == ["marker"]
    assert t.final_text.startswith('done: {"echo": {"note": "hello"}')
    assert t.stop_reason in ("end_turn", "stop")
    kinds = [s.kind for s in t.steps]
    assert kinds == ["model", "tool", "model", "tool", "model"]
    activation, script = t.tool_calls
    assert activation.target == "activation" and activation.skill == "marker"
    assert activation.result.startswith('<skill_content name="marker">')
    assert script.target == "script" and script.script == "scripts/mark.py"
    assert script.approval == "yes once by approver" and script.ran
    assert all(s.seconds >= 0 and re.match(r"\d{4}-\d\d-\d\dT", s.started_at) for s in t.steps)
    assert outcomes(manager) == ["approved", "completed"]


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_a_declined_call_goes_back_as_an_error_and_nothing_runs(server, manager, skills, kind):
    server.script = activate_then_mark("after the decline")
    approver = RecordingApprover("no")
    t = run_agent(make_client(kind, server.url), manager, "mark it", model="m", approver=approver)
    assert len(approver.requests) == 1
    assert not marker(skills).exists()
    result = server.calls[2].tool_results[-1]
    assert result["is_error"] is True and "declined: nothing ran" in result["content"]
    step = t.tool_calls[-1]
    assert step.is_error and not step.ran and step.approval == "no by approver"
    assert t.final_text.startswith("after the decline")
    assert outcomes(manager) == ["declined"]


def test_a_model_made_call_never_runs_unasked(server, manager, skills):
    """No approver anywhere, or approver=None: refused (audited), the model is told."""
    server.script = activate_then_mark()
    client = make_client("anthropic", server.url)
    t = run_agent(client, manager, "mark it", model="m")  # manager.approver is None
    assert t.tool_calls[-1].is_error and "No approver is configured" in t.tool_calls[-1].result
    manager.approver = lambda request: "yes_once"
    t = run_agent(client, manager, "mark it", model="m", approver=None)
    assert t.tool_calls[-1].is_error
    assert not marker(skills).exists()
    assert outcomes(manager) == ["approval_unavailable", "approval_unavailable"]
    # The default is the manager's approver.
    t = run_agent(client, manager, "mark it", model="m")
    assert not t.tool_calls[-1].is_error and marker(skills).exists()


def test_a_failed_script_is_an_error_result_with_its_stderr(server, manager):
    server.script = by_turn(call("marker__fail", {}), lambda c: say(c.tool_results[-1]["content"]))
    t = run_agent(
        make_client("openai", server.url), manager, "x", model="m", approver=lambda r: "yes_once"
    )
    step = t.tool_calls[0]
    assert step.is_error and step.ran and "bad input: no such unit" in step.result
    assert server.calls[1].tool_results[0]["content"].startswith("Error: bad input")


def test_tools_of_skills_not_offered_are_unknown(server, manager, skills):
    server.script = by_turn(
        Scripted(
            tool_calls=(
                ("marker__mark", {}),
                ("activate_skill", {"name": "marker"}),
                ("activate_skill", {"name": "hidden-skill"}),
                ("hidden-skill__x", {}),
            )
        ),
        say("ok"),
    )
    approver = RecordingApprover("yes_once")
    t = run_agent(
        make_client("anthropic", server.url),
        manager,
        "x",
        model="m",
        skills=["notes"],
        approver=approver,
    )
    assert [s.is_error for s in t.tool_calls] == [True, True, True, True]
    assert "Unknown tool 'marker__mark'" in t.tool_calls[0].result
    assert "activate_skill needs" in t.tool_calls[1].result
    assert t.tool_calls[0].target == "unknown" and t.activated == []
    assert approver.requests == [] and not marker(skills).exists()


# -- endings ----------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_an_api_error_ends_the_conversation_with_an_error_step(server, manager, kind):
    server.queue(call("activate_skill", {"name": "notes"}), Scripted(status=500, error="boom"))
    t = run_agent(make_client(kind, server.url), manager, "x", model="m")
    assert t.stop_reason == "error" and "HTTP 500" in t.error
    assert isinstance(t.steps[-1], ErrorStep) and t.steps[-1].error == "status"
    assert t.activated == ["notes"] and t.errors == 1


def test_a_client_without_a_key_is_one_line_naming_the_fix_before_any_request(
    server, manager, monkeypatch
):
    # Issue 31: anthropic.Anthropic() is made without a key; the SDK's TypeError came out of
    # every lab cell as a 21,000-character traceback through our frames.
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    keyless = anthropic.Anthropic(base_url=server.url, max_retries=0)
    with pytest.raises(ModelAuthError) as err:
        run_agent(keyless, manager, "x", model="m")
    text = str(err.value)
    assert "\n" not in text and len(text) < 300, text
    assert "ANTHROPIC_API_KEY" in text and "base_url=" in text and "Ollama or vLLM" in text
    with pytest.raises(ModelAuthError):
        evaluate_triggers(
            keyless, manager, "marker", [{"query": "q", "should_trigger": True}], model="m"
        )
    assert server.calls == []  # found before any request
    # What must NOT be refused: a key-less SDK client given a key explicitly works.
    server.script = lambda c: say("hi")
    keyed = anthropic.Anthropic(base_url=server.url, api_key="local", max_retries=0)
    assert run_agent(keyed, manager, "x", model="m").final_text == "hi"


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_a_rejected_key_stops_the_lab_at_once_with_one_line(server, manager, kind):
    server.script = lambda c: Scripted(status=401, error="invalid x-api-key")
    with pytest.raises(ModelAuthError) as err:
        run_agent(make_client(kind, server.url), manager, "x", model="m")
    assert "rejected the key (HTTP 401" in str(err.value) and "base_url=" in str(err.value)
    queries = [{"query": f"q{i}", "should_trigger": True} for i in range(4)]
    with pytest.raises(ModelAuthError):
        evaluate_triggers(make_client(kind, server.url), manager, "marker", queries, model="m")
    assert len(server.calls) == 2, "one request each, not one failure per query and run"


def test_a_timeout_is_an_error_step(server, manager):
    server.queue(Scripted(text="late", delay=3))
    t = run_agent(make_client("openai", server.url, timeout=0.5), manager, "x", model="m")
    assert t.stop_reason == "error" and t.steps[0].error == "timeout"


def test_max_turns_stops_a_model_that_keeps_calling_tools(server, manager):
    server.script = lambda c: call("activate_skill", {"name": "notes"})
    t = run_agent(make_client("anthropic", server.url), manager, "x", model="m", max_turns=3)
    assert t.stop_reason == "max_turns" and t.turns == 3 and len(server.calls) == 3


# -- the transcript ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", SYNC_CLIENTS)
def test_messages_are_in_the_provider_format_and_can_be_sent_again(server, manager, kind):
    server.script = activate_then_mark()
    client = make_client(kind, server.url)
    t = run_agent(client, manager, "mark it", model="m", approver=lambda r: "yes_once")
    server.script = lambda c: say("you're welcome")
    follow = {"role": "user", "content": "thanks"}
    if kind == "anthropic":
        client.messages.create(
            model="m", max_tokens=10, system=t.system, messages=[*t.messages, follow]
        )
        assert [m["role"] for m in t.messages] == ["user", "assistant"] * 3
        assert t.messages[2]["content"][0]["type"] == "tool_result"
    else:
        client.chat.completions.create(model="m", messages=[*t.messages, follow])
        roles = [m["role"] for m in t.messages]
        assert roles == ["system", "user", "assistant", "tool", "assistant", "tool", "assistant"]
    resent = server.calls[-1]
    assert resent.body["messages"][-1] == follow
    assert resent.calls_made == [
        ("activate_skill", {"name": "marker"}),
        ("marker__mark", {"note": "hello"}),
    ]


def test_transcript_views_usage_and_pandas(server, manager):
    server.script = activate_then_mark()
    server.script = by_turn(
        Scripted(tool_calls=(("activate_skill", {"name": "marker"}),), input_tokens=100),
        Scripted(tool_calls=(("marker__mark", {"n": 1}),), input_tokens=200, output_tokens=7),
        Scripted(text="all done", input_tokens=300, output_tokens=5),
    )
    t = run_agent(
        make_client("anthropic", server.url),
        manager,
        "mark it",
        model="m",
        approver=lambda r: "yes_in_session",
    )
    assert t.usage.input_tokens == 600 and t.usage.total == 600 + t.usage.output_tokens
    assert t.final_text == "all done"
    frame = t.to_pandas()
    assert list(frame["kind"]) == ["user", "model", "tool", "model", "tool", "model"]
    assert frame.loc[4, "approval"] == "yes in session by approver"
    assert frame.loc[2, "skill"] == "marker"
    text = t.text()
    assert "activated: marker" in text and "approval: yes in session by approver" in text
    md = t.to_markdown()
    assert "## Tool result `marker__mark` (ok" in md and "Approval: yes in session" in md
    json.dumps(t.to_dict())  # JSON-able
    assert isinstance(t.steps[0], ModelStep) and isinstance(t.steps[1], ToolStep)


def test_run_agent_async_drives_a_sync_client_too(server, manager, skills):
    server.script = activate_then_mark()
    t = asyncio.run(
        run_agent_async(
            make_client("openai", server.url),
            manager,
            "mark it",
            model="m",
            approver=lambda r: "yes_once",
        )
    )
    assert t.activated == ["marker"] and marker(skills).exists()


# -- clients -------------------------------------------------------------------------------------


def test_clients_are_recognised_by_type_without_importing_both():
    class MyAnthropic(anthropic.Anthropic):
        pass

    azure = openai.AzureOpenAI(api_key="k", api_version="2024-06-01", azure_endpoint="http://x")
    assert provider_for(MyAnthropic(api_key="k")).name == "anthropic"
    assert (provider_for(azure).name, provider_for(azure).is_async) == ("openai", False)
    assert provider_for(openai.AsyncOpenAI(api_key="k")).is_async
    with pytest.raises(TypeError, match="pass an anthropic.Anthropic"):
        provider_for(object())


def test_using_one_sdk_never_imports_the_other():
    """Measured in a fresh process: an Anthropic client's agent run loads no openai."""
    code = (
        "import sys, anthropic\n"
        "from skill_magics.core.lab.clients import provider_for\n"
        "from skill_magics.core.lab import agent, triggers, evals\n"
        "provider_for(anthropic.Anthropic(api_key='k'))\n"
        "print('openai' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_bad_arguments_fail_before_anything_is_sent(server, manager):
    client = make_client("anthropic", server.url)
    with pytest.raises(ValueError, match="model= is required"):
        run_agent(client, manager, "x", model="")
    with pytest.raises(ValueError, match="The prompt is empty"):
        run_agent(client, manager, "  ", model="m")
    with pytest.raises(ValueError, match="max_turns=0"):
        run_agent(client, manager, "x", model="m", max_turns=0)
    assert server.calls == []


def test_a_scripted_or_recorded_reply_is_labelled_wherever_it_is_shown(server, manager):
    # Issue 31: a replayed reply is never presented as a model's.
    server.script = lambda c: say("26.2188 mi")
    client = make_client("anthropic", server.url)
    t = run_agent(client, manager, "x", model="scripted-demo")  # the server echoes the name
    (step,) = t.model_steps
    assert step.answered_by == "scripted-demo" and step.label == STAND_IN_LABEL
    assert t.stand_in
    label = "a recording or scripted, not a model's answers"
    assert label in t.text() and STAND_IN_LABEL in t.text()
    assert label in t.to_markdown()
    from skill_magics.notebook.render.lab import step_html, transcript_header_html

    assert label in transcript_header_html(t) and STAND_IN_LABEL in step_html(step)
    # What must NOT be labelled: a reply under any other model name.
    real = run_agent(client, manager, "x", model="m-1")
    assert not real.stand_in and real.model_steps[0].label == "model"
    assert "not a model" not in real.text()
