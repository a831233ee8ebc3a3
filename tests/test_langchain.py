"""LangChain adapter: real StructuredTools (langchain-core), sync and non-blocking async."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time

import pytest
from langchain_core.tools import StructuredTool
from manager_support import RecordingApprover, manager_for
from process_support import assert_group_gone

from skill_magics.core.prompt.tools import NAME_RE
from skill_magics.core.run.gating.approval import Decision
from skill_magics.langchain import create_tools

ECHO = "import json, sys\nprint(json.dumps({'in': json.load(sys.stdin), 'argv': sys.argv[1:]}))\n"
SLEEP = (
    '"""Sleep a little, then say so."""\n'
    "import json, sys, time\n"
    "time.sleep(json.load(sys.stdin).get('seconds', 1))\n"
    "print('slept')\n"
)
HOLD = (
    '"""Write my pid to a file, then sleep long."""\n'
    "import json, os, sys, time\n"
    "path = json.load(sys.stdin)['pidfile']\n"
    "open(path + '.tmp', 'w').write(str(os.getpid()))\n"
    "os.rename(path + '.tmp', path)\n"
    "time.sleep(60)\n"
)


@pytest.fixture
def manager(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "helper",
        scripts={
            "scripts/echo.py": ECHO,
            "scripts/sleep.py": SLEEP,
            "scripts/fail.py": "import sys\nsys.stderr.write('nope')\nsys.exit(1)\n",
            "scripts/hold.py": HOLD,
        },
        body="# Helper\nRun `scripts/echo.py`.\n",
    )
    # The tools run model-chosen scripts: they need an approver (here: yes to everything).
    return manager_for(tmp_path, approver=RecordingApprover())


def by_name(tools):
    return {t.name: t for t in tools}


def test_tools_are_structured_tools_with_valid_names(manager):
    tools = create_tools(manager)
    assert all(isinstance(t, StructuredTool) for t in tools)
    assert [t.name for t in tools] == [
        "activate_skill",
        "helper",
        "helper__echo",
        "helper__fail",
        "helper__hold",
        "helper__sleep",
    ]
    assert all(NAME_RE.match(t.name) for t in tools)
    assert by_name(tools)["helper__sleep"].description.startswith("Sleep a little")


def test_sync_invoke_passes_json_and_argv(manager):
    tool = by_name(create_tools(manager))["helper__echo"]
    out = tool.invoke({"city": "Oslo", "argv": ["--fast"]})
    assert out == '{"in": {"city": "Oslo"}, "argv": ["--fast"]}\n'


def test_failure_and_decline_become_tool_errors(manager):
    tools = by_name(create_tools(manager))
    assert tools["helper__fail"].invoke({}) == "nope"
    declined = by_name(create_tools(manager, approver=RecordingApprover(Decision.NO)))
    assert "declined" in declined["helper__echo"].invoke({})


def test_prompt_tool(manager):
    out = by_name(create_tools(manager))["helper"].invoke({})
    assert out.startswith('<skill_context id="helper">')


def test_async_path_does_not_block_the_event_loop(manager):
    tool = by_name(create_tools(manager))["helper__sleep"]

    async def main():
        ticks = 0
        stop = asyncio.Event()

        async def ticker():
            nonlocal ticks
            while not stop.is_set():
                ticks += 1
                await asyncio.sleep(0.05)

        task = asyncio.create_task(ticker())
        start = time.monotonic()
        out = await tool.ainvoke({"seconds": 1.0})
        elapsed = time.monotonic() - start
        stop.set()
        await task
        return out, ticks, elapsed

    out, ticks, elapsed = asyncio.run(main())
    assert out == "slept\n"
    assert elapsed >= 1.0
    # The ticker ran throughout: at 50 ms per tick a blocked loop would give ~1 tick.
    assert ticks >= 5


def test_cancelling_ainvoke_kills_the_script(manager, tmp_path):
    """The async path is the tool's own coroutine (not LangChain's run-sync-in-a-thread
    fallback): cancelling it kills the script's process group at once."""
    tool = by_name(create_tools(manager))["helper__hold"]
    assert tool.coroutine is not None
    pidfile = tmp_path / "pid"

    async def main() -> int:
        task = asyncio.create_task(tool.ainvoke({"pidfile": str(pidfile)}))
        deadline = time.monotonic() + 30
        while not pidfile.exists():
            assert time.monotonic() < deadline, "the script never started"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return int(pidfile.read_text())

    start = time.monotonic()
    pid = asyncio.run(main())
    assert_group_gone(pid)  # the script led its own group
    assert time.monotonic() - start < 30  # not the script's 60 s
    assert manager.audit.records()[-1].outcome in ("cancelled", "interrupted")


def test_async_errors(manager):
    tools = by_name(create_tools(manager))
    assert asyncio.run(tools["helper__fail"].ainvoke({})) == "nope"


def test_without_an_approver_script_tools_refuse_and_name_the_fix(manager):
    manager.approver = None
    tools = by_name(create_tools(manager))
    assert "approver=lambda request: 'yes_once'" in tools["helper__echo"].invoke({})
    out = asyncio.run(tools["helper__echo"].ainvoke({}))
    assert "approver=" in out
    assert [r.outcome for r in manager.audit.records()] == ["approval_unavailable"] * 2
    assert tools["helper"].invoke({}).startswith("<skill_context")  # prompt tools still work


def test_missing_langchain_gives_one_line_install_hint():
    code = (
        "import sys\n"
        "sys.modules['langchain_core'] = sys.modules['langchain_core.tools'] = None\n"
        "from skill_magics.langchain import create_tools\n"
        "try:\n    create_tools(None)\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == (
        "skill_magics.langchain needs langchain-core: pip install langchain-core"
    )


def test_results_are_capped_on_both_paths(tmp_path, make_skill):
    make_skill(tmp_path, "loud", scripts={"scripts/talk.py": "print('x' * 5000)\n"}, body="x")
    manager = manager_for(tmp_path, approver=RecordingApprover())
    tool = by_name(create_tools(manager, max_result_chars=1000))["loud__talk"]
    for out in (tool.invoke({}), asyncio.run(tool.ainvoke({}))):
        head, note = out.split("\n[... truncated: ", 1)
        assert head == "x" * 1000 and note.startswith("4,001 more characters not shown")
    default = by_name(create_tools(manager))["loud__talk"].invoke({})
    assert default == "x" * 5000 + "\n"  # under the default 100,000


def test_ainvoke_hashes_the_skill_off_the_event_loop(manager, monkeypatch):
    """The approval request's fingerprint reads every file of the skill: a worker's job."""
    from skill_magics.core.base import fingerprint

    threads: list[str] = []
    real_fingerprint = fingerprint.skill_entries

    def watched_fingerprint(base_dir):
        threads.append(threading.current_thread().name)
        return real_fingerprint(base_dir)

    monkeypatch.setattr(fingerprint, "skill_entries", watched_fingerprint)
    tool = by_name(create_tools(manager))["helper__echo"]

    async def main():
        return await tool.ainvoke({"a": 1}), threading.current_thread().name

    out, loop_thread = asyncio.run(main())
    assert out == '{"in": {"a": 1}, "argv": []}\n'
    assert threads and loop_thread not in threads


def test_input_too_deep_for_langchain_is_a_refused_tool_error(manager):
    """LangChain prints a tool's input before calling it; input deep enough to raise
    RecursionError there is refused first (a tool error, audited), on both paths."""
    deep: object = 0
    for _ in range(3000):
        deep = {"a": deep}
    tools = by_name(create_tools(manager))
    tool = tools["helper__echo"]
    for call in (
        lambda: tool.invoke({"x": deep}),
        lambda: asyncio.run(tool.ainvoke({"x": deep})),
        lambda: tool.invoke(
            {"type": "tool_call", "id": "c1", "name": tool.name, "args": {"x": deep}}
        ),
    ):
        out = call()
        text = out if isinstance(out, str) else out.content
        assert "flatter JSON object" in text
        if not isinstance(out, str):
            assert out.status == "error"
    assert "flatter JSON object" in tools["activate_skill"].invoke({"name": deep})
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert [r.script for r in refused] == ["scripts/echo.py"] * 3
    # Input a model may send is not refused: the same tool still runs a normal call.
    assert tool.invoke({"x": {"y": [1, {"z": 2}]}}).startswith('{"in": {"x"')
