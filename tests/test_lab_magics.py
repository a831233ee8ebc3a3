"""%%skillagent, %skills triggers and %skills evals in a real IPython shell, the real SDK
clients against the scripted local server (tests/model_server.py, never a model). Script
calls are approved by clicking the real approval panel's buttons."""

from __future__ import annotations

import asyncio
import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from lab_support import lab_skills, make_client
from magics_support import click_when_shown
from model_server import Call, Scripted, call, say

from skill_magics.core.lab import progress
from skill_magics.core.lab.evals import EvalReport
from skill_magics.core.lab.transcript import Transcript
from skill_magics.core.lab.triggers import TriggerReport
from skill_magics.notebook import compat
from skill_magics.notebook.extension import get_magics
from skill_magics.notebook.magics.rewrite import AWAITABLE, rewrite
from skill_magics.notebook.magics.skillagent import SkillAgentMagics, find_client


def script(c: Call) -> Scripted:
    if c.system.startswith("You grade"):
        return say(json.dumps({"expectations": [], "claims": []}))
    done = [name for name, _ in c.calls_made]
    if "<available_skills>" not in c.system:
        return say("no skills here")
    if not done:
        return call("activate_skill", {"name": "marker"})
    if len(done) == 1:
        return call("marker__mark", {"from": "magic"})
    return say("result: " + c.tool_results[-1]["content"].strip())


@pytest.fixture
def shell(tmp_path, monkeypatch, make_skill, server):
    monkeypatch.delenv("SKILL_MAGICS_AUTO_APPROVE", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_PATH", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("SkillMagics", None)
    skills = lab_skills(make_skill, tmp_path / "skills")
    ip.run_line_magic("load_ext", "skill_magics")
    ip.run_cell(f"%config SkillMagics.skill_dirs = [{str(skills)!r}]")
    ip.run_cell("%config SkillMagics.approval_ui = 'widgets'")
    server.script = script
    ip.user_ns["client"] = make_client("anthropic", server.url)
    ip.user_ns["oai"] = make_client("openai", server.url)
    ip.skills_root = skills
    yield ip
    ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)
    for name in ("client", "oai", "t", "rep", "ev", "queries", "desc", "aclient"):
        ip.user_ns.pop(name, None)


def test_skillagent_runs_the_cell_as_a_prompt_with_a_click(shell, server):
    clicker = click_when_shown(shell, "Yes once")
    result = shell.run_cell("%%skillagent --model m1 --client client -o t\nmark it please\n")
    clicker.join(10)
    assert result.error_in_exec is None, result.error_in_exec
    t = shell.user_ns["t"]
    assert isinstance(t, Transcript) and result.result is t
    assert t.activated == ["marker"] and t.final_text.startswith("result: {")
    assert t.tool_calls[-1].approval == "yes once by button 'Yes once'"
    assert (shell.skills_root / "marker" / "ran.marker").exists()
    panel = get_magics(shell).panels[-1]
    assert [s.path for s in panel.request.scripts] == ["scripts/mark.py"]
    # Issue 31 item 12: the panel says the model is asking, not the person.
    shown = panel._repr_mimebundle_()
    assert shown["text/plain"].startswith("The model is asking: it chose this script")
    assert "The model is asking" in shown["text/html"]
    assert server.calls[0].prompt == "mark it please" and server.calls[0].model == "m1"
    # It shows itself as the conversation in HTML, and as text.
    bundle, _ = shell.display_formatter.format(t)
    assert "skill-magics-transcript" in bundle["text/html"]
    assert "approval: yes once by button" in bundle["text/html"]
    assert bundle["text/plain"].startswith("Transcript · anthropic m1")


def test_skillagent_uses_the_configured_client_and_model(shell, server):
    shell.run_cell("%config SkillMagics.model_client = 'oai'")
    shell.run_cell("%config SkillMagics.model = 'cfg-model'")
    clicker = click_when_shown(shell, "No")
    result = shell.run_cell("%%skillagent --skills marker -o t\nmark it\n")
    clicker.join(10)
    assert result.error_in_exec is None, result.error_in_exec
    t = shell.user_ns["t"]
    assert t.provider == "openai" and t.model == "cfg-model"
    get_magics(shell).model_client = shell.user_ns["client"]  # the object, set in Python
    assert find_client(get_magics(shell), None) is shell.user_ns["client"]
    assert t.tool_calls[-1].is_error and "declined" in t.tool_calls[-1].result
    assert not (shell.skills_root / "marker" / "ran.marker").exists()


def test_skillagent_errors_are_one_line_usage_errors(shell):
    m = shell.magics_manager.registry[SkillAgentMagics.__name__]
    with pytest.raises(UsageError, match="No model client"):
        m.skillagent("--model m", "hi")
    with pytest.raises(UsageError, match="no such variable"):
        m.skillagent("--model m --client nope", "hi")
    with pytest.raises(UsageError, match="No model name"):
        m.skillagent("--client client", "hi")
    with pytest.raises(UsageError, match="needs a prompt"):
        m.skillagent("--client client --model m", "  ")
    shell.user_ns["aclient"] = make_client("anthropic-async", "http://127.0.0.1:9")
    with pytest.raises(UsageError, match="is an async client"):
        m.skillagent("--client aclient --model m", "hi")
    shell.user_ns["rep"] = object()
    with pytest.raises(UsageError, match="pass an anthropic.Anthropic"):
        m.skillagent("--client rep --model m", "hi")


def test_skillagent_await_path_with_a_click_and_an_async_client(shell, server):
    """The await path (ipykernel >= 7.4): the cell awaits; the approval waits in a worker."""
    assert AWAITABLE["skillagent"] == "cell"
    (line,) = rewrite(["%%skillagent --model m\n", "mark it\n"])
    assert line.startswith("await get_ipython()._skill_magics_await('skillagent'")
    shell.user_ns["aclient"] = make_client("anthropic-async", server.url)
    m = shell.magics_manager.registry[SkillAgentMagics.__name__]
    clicker = click_when_shown(shell, "Yes once")
    t = asyncio.run(m.skillagent_async("--model m --client aclient", "mark it\n"))
    clicker.join(10)
    assert t.activated == ["marker"] and not t.tool_calls[-1].is_error


def test_skills_triggers_reports_rates_and_shows_a_chart(shell, server, capsys):
    shell.user_ns["queries"] = [
        {"query": "mark this", "should_trigger": True},
        {"query": "notes please", "should_trigger": False},
    ]
    server.script = lambda c: (
        call("activate_skill", {"name": "marker"}) if "mark" in c.prompt else say("no")
    )
    shell.user_ns["desc"] = "Marks things."
    result = shell.run_cell(
        "%skills triggers marker --queries queries --runs 2 --client client --model m "
        "--description desc -o rep"
    )
    assert result.error_in_exec is None, result.error_in_exec
    rep = shell.user_ns["rep"]
    assert isinstance(rep, TriggerReport) and rep.description == "Marks things."
    assert [r.trigger_rate for r in rep.results] == [1.0, 0.0]
    bundle, _ = shell.display_formatter.format(rep)
    assert "<svg" in bundle["text/html"] and "2/2 queries passed" in bundle["text/plain"]
    comparison, _ = shell.display_formatter.format(rep.compare(rep))
    assert "skill-magics-trigger-comparison" in comparison["text/html"]
    # The progress display (registered by %load_ext) printed its closing line.
    assert "triggers of marker: 2/2 queries passed" in capsys.readouterr().out
    with pytest.raises(UsageError, match="the following arguments are required: --queries"):
        shell.run_line_magic("skills", "triggers marker --client client --model m")
    with pytest.raises(UsageError, match="required: name: usage: %skills evals NAME"):
        shell.run_line_magic("skills", "evals")


def test_a_list_of_skills_reads_a_comma_like_a_space(shell, server):
    """--skills marker,notes was ONE unknown skill 'marker,notes'; now the one name-list
    parser (core/base/namelist.py) reads it as --skills marker notes, in %%skillagent and in
    %skills triggers, and a list of separators only is a one-line error."""
    server.script = lambda c: say("hi")
    seen = []
    for skills in ("marker,notes", "marker notes", "marker, notes", "marker --skills notes"):
        cell = f"%%skillagent --model m --client client --skills {skills} -o t\nhello\n"
        result = shell.run_cell(cell)
        assert result.error_in_exec is None, (skills, result.error_in_exec)
        call_ = server.calls[-1]
        seen.append((call_.system, sorted(call_.tools)))
    assert seen[0] == seen[1] == seen[2] == seen[3]
    assert "<name>\nnotes\n</name>" in seen[0][0] and "marker__mark" in seen[0][1]
    assert "<name>\nmarker\n</name>" in seen[0][0]
    shell.user_ns["queries"] = [{"query": "mark this", "should_trigger": False}]
    for skills in ("marker,notes", "marker notes"):
        result = shell.run_cell(
            f"%skills triggers marker --queries queries --client client --model m "
            f"--skills {skills} -o rep"
        )
        assert result.error_in_exec is None, (skills, result.error_in_exec)
        assert "<name>\nnotes\n</name>" in server.calls[-1].system
    from skill_magics.notebook.cmd import evals

    def configurations(*line: str) -> list[str]:
        return evals.parser().parse_known_args(["marker", *line])[0].configurations

    assert configurations() == ["with_skill", "without_skill"]  # the default
    assert configurations("--configurations", "with_skill") == ["with_skill"]  # replaced
    both = configurations("--configurations", "with_skill", "without_skill")
    assert configurations("--configurations", "with_skill,without_skill") == both
    m = shell.magics_manager.registry[SkillAgentMagics.__name__]
    with pytest.raises(UsageError, match=r"--skills ',' holds no name: give names as a,b"):
        m.skillagent("--model m --client client --skills ,", "hi")


def test_skills_evals_asks_once_and_writes_the_workspace(shell, server, tmp_path):
    evals = shell.skills_root / "marker" / "evals"
    evals.mkdir()
    (evals / "evals.json").write_text(
        json.dumps(
            {
                "skill_name": "marker",
                "evals": [
                    {"id": 1, "prompt": "mark one", "assertions": ["says result"]},
                    {"id": 2, "prompt": "mark two", "assertions": ["says result"]},
                ],
            }
        )
    )
    clicker = click_when_shown(shell, "Yes once")
    result = shell.run_cell(
        f"%skills evals marker --client client --model m --grader client "
        f"--workspace {tmp_path / 'ws'} -o ev"
    )
    clicker.join(10)
    assert result.error_in_exec is None, result.error_in_exec
    ev = shell.user_ns["ev"]
    assert isinstance(ev, EvalReport)
    panels = get_magics(shell).panels
    assert len(panels) == 1 and panels[0].request.scope.agent_runs == 2
    assert (tmp_path / "ws" / "iteration-1" / "benchmark.json").is_file()
    assert [r.status for r in ev.runs] == ["completed"] * 4
    bundle, _ = shell.display_formatter.format(ev)
    assert "skill-magics-evals" in bundle["text/html"]
    assert AWAITABLE["skills evals"] == "line" and AWAITABLE["skills triggers"] == "line"


def test_unload_removes_the_lab_progress_display(shell):
    assert progress._display is not None
    shell.run_line_magic("unload_ext", "skill_magics")
    assert progress._display is None
    shell.run_line_magic("load_ext", "skill_magics")


def test_the_transcript_widget_has_the_conversation_messages_and_system_prompt(shell):
    from skill_magics.notebook.render.lab import transcript_widget

    clicker = click_when_shown(shell, "Yes once")
    shell.run_cell("%%skillagent --model m --client client -o t\nmark it\n")
    clicker.join(10)
    box = transcript_widget(shell.user_ns["t"])
    header, tabs = box.children
    assert "activated: <strong>marker</strong>" in header.value
    assert compat.tab_titles(tabs) == ["conversation", "messages (6)", "system prompt"]
    conversation, messages, system = tabs.children
    assert "marker__mark" in conversation.value and "tool_result" in messages.value
    assert "&lt;available_skills&gt;" in system.value


def test_interrupting_skillagent_while_it_waits_for_approval_runs_nothing(shell):
    """The await path: a kernel interrupt (a cancellation) ends the approval wait at once."""
    import time

    shell.run_cell("%config SkillMagics.approval_timeout = 60")
    m = get_magics(shell)
    agent = shell.magics_manager.registry[SkillAgentMagics.__name__]
    seen = len(m.panels)

    async def interrupt_while_waiting() -> None:
        task = asyncio.ensure_future(agent.skillagent_async("--model m --client client", "mark"))
        deadline = time.monotonic() + 20
        while len(m.panels) <= seen:
            assert time.monotonic() < deadline, "no approval panel was shown"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(interrupt_while_waiting())
    assert time.monotonic() - started < 10, "the worker kept waiting for a click"
    # The abandoned worker notices the interrupt and records it (join=False: shortly after).
    deadline = time.monotonic() + 5
    while not m.manager.audit.records() and time.monotonic() < deadline:
        time.sleep(0.02)
    last = m.manager.audit.records()[-1]
    assert (last.outcome, last.script) == ("interrupted", "scripts/mark.py")
    assert not (shell.skills_root / "marker" / "ran.marker").exists()
