"""LLM tool definitions and tool calls: names, shapes, approval, errors as tool results."""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import xml.etree.ElementTree as ET

import pytest
from manager_support import RecordingApprover, manager_for, posix_only

from skill_magics.core.base.errors import AmbiguousScriptError, ApprovalUnavailable
from skill_magics.core.prompt.tools import (
    NAME_RE,
    handle_tool_call,
    handle_tool_call_async,
    openai_tool_message,
    script_tool_name,
    tool_definitions,
    tool_specs,
)
from skill_magics.core.run.gating.approval import Decision

ECHO = (
    '"""Echo the JSON input and argv back."""\n'
    "import json, sys\n"
    "data = sys.stdin.read()\n"
    "print(json.dumps({'stdin': data, 'argv': sys.argv[1:]}))\n"
)
# Names of scripts whose stem is shared (extract.py twice, convert.sh/.py): hashed, stable.
EXTRACT = script_tool_name("pdf-extractor", "extract", "scripts/extract.py", unique_stem=False)
CONVERT_SH = script_tool_name("pdf-extractor", "convert", "scripts/convert.sh", unique_stem=False)
FAIL = "import sys\nsys.stderr.write('it broke\\n')\nsys.exit(2)\n"


@pytest.fixture
def tools_dir(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "pdf-extractor",
        {"name": "pdf-extractor", "description": "Extract text from PDFs."},
        {
            "scripts/extract.py": ECHO,
            "scripts/fail.py": FAIL,
            "scripts/convert.sh": "# Convert things\necho converted\n",
            "scripts/convert.py": "print('py convert')\n",
            "scripts/utils/extract.py": "print('nested')\n",
            "scripts/脚本.py": "print('unicode name')\n",
        },
        body="# PDF\nUse `scripts/extract.py`.\n",
    )
    make_skill(tmp_path, "plain", body="# Plain\nNo scripts.\n")
    return tmp_path


def test_names_valid_unique_and_stable(tools_dir):
    names = [t["name"] for t in tool_definitions(manager_for(tools_dir))]
    assert all(NAME_RE.match(n) for n in names), names
    assert len(names) == len(set(names))
    again = [t["name"] for t in tool_definitions(manager_for(tools_dir))]
    assert names == again
    assert names[:2] == ["activate_skill", "pdf-extractor"]
    assert "pdf-extractor__fail" in names
    # Duplicate stems use the path plus a hash of the exact (skill, path): a name that had to
    # be sanitised always carries its identity's hash, so no other script can take it over.
    specs = {s.script: s.name for s in tool_specs(manager_for(tools_dir)) if s.script}
    assert re.fullmatch(r"pdf-extractor__convert_sh_[0-9a-f]{8}", specs["scripts/convert.sh"])
    assert re.fullmatch(r"pdf-extractor__convert_py_[0-9a-f]{8}", specs["scripts/convert.py"])
    assert re.fullmatch(r"pdf-extractor__extract_py_[0-9a-f]{8}", specs["scripts/extract.py"])
    assert re.fullmatch(
        r"pdf-extractor__utils_extract_py_[0-9a-f]{8}", specs["scripts/utils/extract.py"]
    )
    # a name that cannot be mapped still gets a tool
    assert re.fullmatch(r"pdf-extractor__script_[0-9a-f]{8}", specs["scripts/脚本.py"])
    assert len(specs) == 6
    assert "plain" in names


def test_long_and_clashing_names_fit_64(tmp_path, make_skill):
    long = "a" * 60
    make_skill(tmp_path, long, scripts={"scripts/" + "b" * 50 + ".py": "print(1)\n"}, body="x")
    make_skill(tmp_path, "x-y", scripts={"scripts/z.py": "print(1)\n"}, body="x")
    make_skill(tmp_path, "x", scripts={"scripts/y__z.py": "print(1)\n"}, body="x")
    names = [t["name"] for t in tool_definitions(manager_for(tmp_path))]
    assert all(NAME_RE.match(n) for n in names), names
    assert len(names) == len(set(names))


def test_anthropic_and_openai_shapes(tools_dir):
    manager = manager_for(tools_dir)
    anthropic = tool_definitions(manager, skills=["pdf-extractor"])
    tool = next(t for t in anthropic if t["name"] == "pdf-extractor__fail")
    assert set(tool) == {"name", "description", "input_schema"}
    schema = tool["input_schema"]
    assert schema["type"] == "object"
    assert schema["properties"]["argv"] == {
        "type": "array",
        "items": {"type": "string"},
        "description": schema["properties"]["argv"]["description"],
    }
    openai = tool_definitions(manager, api="openai", skills=["pdf-extractor"])
    assert openai[0]["type"] == "function"
    assert set(openai[0]["function"]) == {"name", "description", "parameters"}
    assert [t["function"]["name"] for t in openai] == [t["name"] for t in anthropic]
    json.dumps(openai)  # plain JSON
    with pytest.raises(ValueError, match="anthropic"):
        tool_definitions(manager, api="gemini")


def test_descriptions_use_docstrings(tools_dir):
    tools = {t["name"]: t for t in tool_definitions(manager_for(tools_dir))}
    extract = tools[EXTRACT]
    assert extract["description"].startswith("Echo the JSON input and argv back.")
    assert "Extract text from PDFs." in extract["description"]
    assert "pdf-extractor" in tools["pdf-extractor"]["description"]
    assert all(len(t["description"]) <= 1024 for t in tools.values())


def test_call_success_argv_and_stdin(tools_dir):
    manager = manager_for(tools_dir)
    approver = RecordingApprover()
    block = handle_tool_call(
        manager,
        EXTRACT,
        {"file": "a.pdf", "argv": ["-v"]},
        "tu_1",
        approver=approver,
    )
    assert block["type"] == "tool_result" and block["tool_use_id"] == "tu_1"
    assert block["is_error"] is False
    out = json.loads(block["content"])
    assert json.loads(out["stdin"]) == {"file": "a.pdf"}
    assert out["argv"] == ["-v"]
    assert len(approver.requests) == 1
    assert approver.requests[0].scripts[0].path == "scripts/extract.py"


def test_openai_json_string_input(tools_dir):
    manager = manager_for(tools_dir, approver=RecordingApprover())
    block = handle_tool_call(manager, EXTRACT, '{"x": 1}', "c1")
    assert json.loads(json.loads(block["content"])["stdin"]) == {"x": 1}
    message = openai_tool_message(block)
    assert message == {"role": "tool", "tool_call_id": "c1", "content": block["content"]}


def test_failure_is_error_with_stderr(tools_dir):
    manager = manager_for(tools_dir, approver=RecordingApprover())
    block = handle_tool_call(manager, "pdf-extractor__fail", {}, "tu_2")
    assert block == {
        "type": "tool_result",
        "tool_use_id": "tu_2",
        "content": "it broke",
        "is_error": True,
    }


def test_decline_and_unavailable_are_errors_and_nothing_runs(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "marker", scripts={"scripts/mark.py": MARK}, body="x")
    manager = manager_for(tmp_path)
    block = handle_tool_call(
        manager, "marker__mark", {}, "t", approver=RecordingApprover(Decision.NO)
    )
    assert block["is_error"] and "declined" in block["content"]
    unavailable = RecordingApprover(error=ApprovalUnavailable("No one to ask: run interactively"))
    block = handle_tool_call(manager, "marker__mark", {}, "t", approver=unavailable)
    assert block["is_error"] and block["content"] == "No one to ask: run interactively"
    manager.approver = RecordingApprover(Decision.NO)  # the manager's approver is the default
    assert handle_tool_call(manager, "marker__mark", {}, "t")["is_error"]
    assert not (skill_dir / "ran").exists()


def test_unknown_tool_and_bad_input(tools_dir):
    manager = manager_for(tools_dir)
    block = handle_tool_call(manager, EXTRACT.replace("extract", "extrct"), {}, "t")
    assert block["is_error"] and f"did you mean {EXTRACT}" in block["content"]
    block = handle_tool_call(manager, EXTRACT, {"argv": "-v"}, "t")
    assert block["is_error"] and "list of strings" in block["content"]
    block = handle_tool_call(manager, EXTRACT, "[1, 2]", "t")
    assert block["is_error"] and "JSON object" in block["content"]
    block = handle_tool_call(manager, EXTRACT, "{nope", "t")
    assert block["is_error"] and "not valid JSON" in block["content"]


def test_prompt_tool_returns_envelope_and_script_tools(tools_dir):
    manager = manager_for(tools_dir)
    approver = RecordingApprover()
    block = handle_tool_call(manager, "pdf-extractor", {}, "t", approver=approver)
    assert block["is_error"] is False
    envelope, _, table = block["content"].partition("\n\nScript tools")
    root = ET.fromstring(envelope)
    assert root.find("instructions").text == manager.get_skill("pdf-extractor").content
    assert "pdf-extractor__fail" in table
    assert approver.requests == []  # loading instructions runs nothing
    plain = handle_tool_call(manager, "plain", None, "t")["content"]
    assert ET.fromstring(plain).get("id") == "plain"


def test_async_call(tools_dir):
    manager = manager_for(tools_dir)

    async def main():
        ok = await handle_tool_call_async(
            manager, CONVERT_SH, {}, "a", approver=RecordingApprover()
        )
        bad = await handle_tool_call_async(
            manager, "pdf-extractor__fail", {}, "b", approver=RecordingApprover()
        )
        no = await handle_tool_call_async(
            manager, "pdf-extractor__fail", {}, "c", approver=RecordingApprover(Decision.NO)
        )
        return ok, bad, no

    ok, bad, no = asyncio.run(main())
    assert ok["content"] == "converted\n" and not ok["is_error"]
    assert bad["is_error"] and bad["content"] == "it broke"
    assert no["is_error"] and "declined" in no["content"]
    assert ("scripts/fail.py", "declined") in [
        (r.script, r.outcome) for r in manager.audit.records()
    ]


MARK = (  # a program: a main guard (a module of definitions only is never a tool)
    "import os\nif __name__ == '__main__':\n"
    "    open(os.path.join(os.environ['SKILL_BASE_DIR'], 'ran'), 'w').write('1')\n"
)


def test_without_any_approver_a_model_chosen_script_does_not_run(tmp_path, make_skill):
    # The model picked the script, not the Python caller: with no approver anywhere the call
    # is refused (is_error), audited, and the message names the fix.
    skill_dir = make_skill(tmp_path, "marker", scripts={"scripts/mark.py": MARK}, body="x")
    manager = manager_for(tmp_path)
    assert manager.approver is None
    block = handle_tool_call(manager, "marker__mark", {}, "t1")
    assert block["is_error"] is True
    assert "approver=lambda request: 'yes_once'" in block["content"]
    async_block = asyncio.run(handle_tool_call_async(manager, "marker__mark", {}, "t2"))
    assert async_block["is_error"] is True and "approver=" in async_block["content"]
    assert not (skill_dir / "ran").exists()
    outcomes = [(r.script, r.outcome) for r in manager.audit.records()]
    assert outcomes == [("scripts/mark.py", "approval_unavailable")] * 2
    # An explicit approver (here: unattended) is the way to let the agent run scripts.
    ok = handle_tool_call(manager, "marker__mark", {}, "t3", approver=lambda request: "yes_once")
    assert ok["is_error"] is False and (skill_dir / "ran").exists()


def test_prompt_content_makes_no_false_promise_about_asking_a_person(tools_dir):
    block = handle_tool_call(manager_for(tools_dir), "pdf-extractor", {}, "t")
    assert "asks a person" not in block["content"]
    assert "must be approved" in block["content"]


def test_tool_names_never_change_meaning_when_skills_or_scripts_are_added(tmp_path, make_skill):
    make_skill(
        tmp_path, "a_b", scripts={"scripts/c.sh": "echo 1\n", "scripts/d.sh": "echo d\n"}, body="x"
    )
    make_skill(tmp_path, "plain", scripts={"scripts/run.sh": "echo 1\n"}, body="x")
    manager = manager_for(tmp_path)
    before = {s.name: (s.skill, s.script) for s in tool_specs(manager)}
    assert before["plain__run"] == ("plain", "scripts/run.sh")  # exact names stay readable
    assert "a_b" not in before  # "a_b" needs a hash: "a.b" would sanitise to the same text
    make_skill(tmp_path, "a.b", scripts={"scripts/c.sh": "echo 2\n"}, body="x")
    make_skill(
        tmp_path, "plain", scripts={"scripts/run.py": "print(2)\n"}, body="x"
    )  # shares the stem
    manager.reload()
    after = {s.name: (s.skill, s.script) for s in tool_specs(manager)}
    for name, target in before.items():
        assert after.get(name, target) == target  # kept, or gone: never someone else's
    assert "plain__run" not in after  # two scripts share the stem now: both hashed


def test_root_script_tool_runs_when_scripts_has_the_same_file_name(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "sk",
        scripts={
            "run.py": "print('root run')\n",
            "scripts/run.py": "print('scripts run')\n",
            "setup.sh": "echo root setup\n",
            "scripts/setup.py": "print('py setup')\n",
        },
        body="x",
    )
    manager = manager_for(tmp_path)
    out = {
        spec.script: handle_tool_call(manager, spec.name, {}, "t", approver=RecordingApprover())
        for spec in tool_specs(manager)
        if spec.kind == "script"
    }
    assert {k: (v["is_error"], v["content"]) for k, v in out.items()} == {
        "run.py": (False, "root run\n"),
        "scripts/run.py": (False, "scripts run\n"),
        "setup.sh": (False, "root setup\n"),
        "scripts/setup.py": (False, "py setup\n"),
    }
    # A bare file name that two scripts share still asks for the path, and says which.
    with pytest.raises(AmbiguousScriptError, match="matches 2 scripts"):
        manager.get_skill("sk").find_script("run")


LOUD = "import sys\nsys.stdout.write('a' * 250_000)\nsys.stderr.write('e' * 300)\nsys.exit({})\n"


def test_long_results_are_capped_with_a_truthful_note(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "loud",
        scripts={"scripts/ok.py": LOUD.format(0), "scripts/bad.py": LOUD.format(1)},
        body="x",
    )
    manager = manager_for(tmp_path, approver=RecordingApprover())
    block = handle_tool_call(manager, "loud__ok", {}, "t")
    assert not block["is_error"]
    head, note = block["content"].split("\n[... truncated: ", 1)
    assert head == "a" * 100_000
    assert note == (
        "150,000 more characters not shown; tool results are capped at 100,000 characters "
        "(max_result_chars)]"
    )
    full = handle_tool_call(manager, "loud__ok", {}, "t", max_result_chars=None)
    assert full["content"] == "a" * 250_000
    bad = handle_tool_call(manager, "loud__bad", {}, "t", max_result_chars=100)
    assert bad["is_error"] and bad["content"].startswith("e" * 100 + "\n[... truncated: 200 more")
    small = asyncio.run(handle_tool_call_async(manager, "loud__ok", {}, "t", max_result_chars=10))
    assert small["content"].startswith("a" * 10 + "\n[... truncated: 249,990 more characters")


def test_async_call_keeps_lookup_checks_and_hashing_off_the_event_loop(
    tmp_path, monkeypatch, make_skill
):
    """The approval request hashes every file of the skill (its fingerprint) and reads previews:
    on the loop thread that stalls every other task. A real ticker on the loop must keep
    ticking while the fingerprint is computed, which happens on a worker thread."""
    from skill_magics.core.base import fingerprint

    make_skill(tmp_path, "sk", scripts={"scripts/a.py": "print('ok')\n"}, body="x")
    manager = manager_for(tmp_path)
    ticks: list[float] = []
    seen: list[tuple[str, int]] = []
    real_fingerprint = fingerprint.skill_entries

    def watched_fingerprint(base_dir):
        # Wait (bounded) for the loop's ticker: it only ticks if this is not the loop thread.
        before = len(ticks)
        deadline = time.monotonic() + 10
        while len(ticks) < before + 3 and time.monotonic() < deadline:
            time.sleep(0.005)
        seen.append((threading.current_thread().name, len(ticks) - before))
        return real_fingerprint(base_dir)

    monkeypatch.setattr(fingerprint, "skill_entries", watched_fingerprint)
    approver_threads: list[str] = []

    def approver(request):
        approver_threads.append(threading.current_thread().name)
        return "yes_once"

    async def main():
        stop = asyncio.Event()

        async def ticker():
            while not stop.is_set():
                ticks.append(time.monotonic())
                await asyncio.sleep(0.001)

        task = asyncio.create_task(ticker())
        block = await handle_tool_call_async(manager, "sk__a", {}, "t", approver=approver)
        stop.set()
        await task
        return block, threading.current_thread().name

    block, loop_thread = asyncio.run(main())
    assert block == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": "ok\n",
        "is_error": False,
    }
    assert seen and all(name != loop_thread for name, _ in seen)
    assert all(advanced >= 3 for _, advanced in seen), "the loop was blocked while hashing"
    assert approver_threads and loop_thread not in approver_threads


# -- tool calls need an approver; hostile names -----------------------------------------------


@posix_only
def test_llm_tool_call_without_an_approver_does_not_run(make_skill, tmp_path):
    marker = tmp_path / "ran"
    make_skill(tmp_path / "s", "tooly", scripts={"scripts/a.sh": f"touch {marker}\necho ran\n"})
    manager = manager_for(tmp_path / "s")  # approver=None: the library default
    block = handle_tool_call(manager, "tooly__a", {}, "toolu_1")
    assert not marker.exists()
    assert block["is_error"] is True


@posix_only
def test_llm_tool_call_goes_through_the_managers_approver(make_skill, tmp_path):
    marker = tmp_path / "ran"
    make_skill(tmp_path / "s", "tooly", scripts={"scripts/a.sh": f"touch {marker}\n"})
    recorder = RecordingApprover("no")
    manager = manager_for(tmp_path / "s", approver=recorder)
    block = handle_tool_call(manager, "tooly__a", {"argv": ["--x"]}, "toolu_1")
    assert block["is_error"] is True and not marker.exists()
    assert recorder.requests[-1].argv == ("--x",)
    block = handle_tool_call(manager, "tooly__a", {"argv": "rm -rf /"}, "toolu_2")
    assert block["is_error"] is True and not marker.exists()


@posix_only
def test_tool_names_valid_and_unique_for_hostile_names(make_skill, tmp_path):
    names = ["PDF", "pdf", "a.b", "a_b", "a__b", "a" * 100, "ü", "x y"]
    for i, skill_name in enumerate(names):
        make_skill(
            tmp_path,
            skill_name,
            frontmatter={"name": skill_name, "description": "d"},
            scripts={
                "scripts/c.sh": "echo\n",
                "scripts/C.sh": "echo\n",
                "scripts/ü.sh": "echo\n",
                "scripts/" + "s" * 80 + ".sh": "echo\n",
                "scripts/sub/c.sh": "echo\n",
            },
            dirname=f"d{i}",
        )
    specs = tool_specs(manager_for(tmp_path))
    tool_names = [s.name for s in specs]
    assert len(tool_names) == len(set(tool_names)) == len(names) * 6 + 1  # + activate_skill
    assert all(NAME_RE.match(n) for n in tool_names)
    assert len({(s.skill, s.script) for s in specs}) == len(specs)


@posix_only
def test_tool_name_keeps_meaning_when_a_colliding_skill_is_added(make_skill, tmp_path):
    make_skill(
        tmp_path,
        "a_b",
        frontmatter={"name": "a_b", "description": "d"},
        scripts={"scripts/c.sh": ""},
    )
    manager = manager_for(tmp_path)
    before = {s.name: (s.skill, s.script) for s in tool_specs(manager)}
    make_skill(
        tmp_path,
        "a.b",
        frontmatter={"name": "a.b", "description": "d"},
        scripts={"scripts/c.sh": ""},
    )
    manager.reload()
    after = {s.name: (s.skill, s.script) for s in tool_specs(manager)}
    for name, target in before.items():
        assert after.get(name) == target


def test_cancelling_an_async_call_while_the_approver_decides_does_not_block_the_loop(
    tmp_path, make_skill
):
    """A person (or an approver asking through this loop) may take long: cancelling the call
    returns at once, the loop keeps running, and the abandoned answer never runs anything."""
    skill_dir = make_skill(
        tmp_path,
        "slowask",
        scripts={
            "scripts/mark.py": "import os\n"
            "open(os.path.join(os.environ['SKILL_BASE_DIR'], 'ran'), 'w').write('1')\n"
        },
    )
    manager = manager_for(tmp_path)
    answered = threading.Event()

    def person(request):
        time.sleep(3)
        answered.set()
        return "yes_once"

    async def main():
        started = time.monotonic()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(
                handle_tool_call_async(manager, "slowask__mark", {}, "t", approver=person), 0.5
            )
        return time.monotonic() - started

    took = asyncio.run(main())
    assert took < 2.5, f"the event loop was blocked for {took:.1f} s by the approver"
    assert answered.wait(10)
    time.sleep(0.5)
    assert not (skill_dir / "ran").exists()


def _nested(depth: int, leaf: object = 0) -> dict:
    value: object = leaf
    for _ in range(depth):
        value = {"a": value}
    assert isinstance(value, dict)
    return value


DEEP_INPUTS = [
    _nested(2000),  # a dict from an SDK (Anthropic's block.input)
    {"items": [[[[[[]]]]]] * 3, "deep": _nested(150)},
    '{"a": ' * 2000 + "0" + "}" * 2000,  # JSON text, as OpenAI sends it
    "[" * 5000 + "]" * 5000,
    {"argv": [_nested(3000)]},
]


@pytest.mark.parametrize("value", DEEP_INPUTS, ids=["dict", "mixed", "json", "list", "argv"])
def test_input_nested_too_deep_is_an_audited_error_result(tools_dir, value):
    """handle_tool_call never raises for bad input: RecursionError-deep input included."""
    manager = manager_for(tools_dir, approver=lambda request: "yes_once")
    for name in (EXTRACT, "activate_skill", "pdf-extractor"):
        block = handle_tool_call(manager, name, value, "t1")
        assert block["is_error"] is True, name
        assert "\n" not in block["content"] and "flatter JSON object" in block["content"]
        block = asyncio.run(handle_tool_call_async(manager, name, value, "t2"))
        assert block["is_error"] is True and "flatter JSON object" in block["content"]
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    # The script tool's two refusals are audited (nothing of the others was a run).
    assert [(r.skill, r.script) for r in refused] == [("pdf-extractor", "scripts/extract.py")] * 2
    assert all("flatter JSON object" in (r.reason or "") for r in refused)
    assert all(len(r.arguments) <= 256 for r in refused)


def test_deep_but_reasonable_input_still_runs(tools_dir):
    """What must not be refused: nesting a real payload has (99 levels), lists of records."""
    manager = manager_for(tools_dir, approver=lambda request: "yes_once")
    payload = {"doc": _nested(98, "leaf"), "rows": [{"a": [1, 2, {"b": None}]}] * 500}
    block = handle_tool_call(manager, EXTRACT, payload, "t1")
    assert block["is_error"] is False, block["content"]
    assert json.loads(json.loads(block["content"])["stdin"]) == payload


def test_context_arguments_nested_too_deep_are_a_refused_status(tools_dir):
    """build_skill_context takes model-chosen arguments too: deep ones refuse the script
    (status="refused", audited), they never raise."""
    from skill_magics.core.prompt.context import build_skill_context

    manager = manager_for(tools_dir, approver=lambda request: "yes_once")
    deep = _nested(3000)
    for kwargs in ({"arguments": deep}, {"argv": [deep]}, {"argv": {"scripts/extract.py": [deep]}}):
        xml = build_skill_context(manager, "pdf-extractor", **kwargs)
        node = ET.fromstring(xml).find(".//script_output")
        assert node is not None and node.get("status") == "refused", xml
    assert [r.outcome for r in manager.audit.records()] == ["refused"] * 3


def test_the_sync_and_async_calls_give_the_same_blocks_and_audit(tools_dir, make_skill):
    """handle_tool_call and handle_tool_call_async are one generator with two drivers: the
    same calls give the same tool_result blocks, ask the approver the same requests and
    leave the same audit records, for every kind of answer (ran, failed, declined, approval
    unavailable, unknown tool, bad input, a deep input, prompt and activation tools)."""
    unavailable = ApprovalUnavailable("No one to ask: run interactively")
    calls = [
        (EXTRACT, {"file": "a.pdf", "argv": ["-v"]}, {}),
        (EXTRACT, '{"x": 1}', {}),
        (CONVERT_SH, {}, {}),
        ("pdf-extractor__fail", {}, {}),
        ("pdf-extractor__fail", {}, {"approver": RecordingApprover(Decision.NO)}),
        (EXTRACT, {}, {"approver": RecordingApprover(error=unavailable)}),
        (EXTRACT, {}, {"approver": None}),
        (EXTRACT.replace("extract", "extrct"), {}, {}),
        (EXTRACT, {"argv": "-v"}, {}),
        (EXTRACT, "{nope", {}),
        (EXTRACT, DEEP_INPUTS[0], {}),  # too deep: an audited refusal
        ("activate_skill", DEEP_INPUTS[2], {}),
        ("activate_skill", {"name": "pdf-extractor"}, {}),
        ("activate_skill", {"name": "nope"}, {}),
        ("pdf-extractor", {}, {}),
        ("plain", None, {}),
        (EXTRACT, {"x": 1}, {"skills": ["plain"]}),  # a tool of a skill not offered
        ("pdf-extractor__fail", {}, {"tools": [EXTRACT]}),  # a tool the request left out
        (CONVERT_SH, {}, {"max_result_chars": 4}),
    ]

    def run_all(use_async: bool):
        manager = manager_for(tools_dir)
        approver = RecordingApprover()
        blocks = []
        for i, (name, value, options) in enumerate(calls):
            options = {"approver": approver, **options}
            if use_async:
                block = asyncio.run(
                    handle_tool_call_async(manager, name, value, f"t{i}", **options)
                )
            else:
                block = handle_tool_call(manager, name, value, f"t{i}", **options)
            blocks.append(block)
        asked = [(r.skill_name, [s.path for s in r.scripts]) for r in approver.requests]
        audit = [(r.skill, r.script, r.outcome) for r in manager.audit.records()]
        return blocks, asked, audit

    sync_blocks, sync_asked, sync_audit = run_all(use_async=False)
    async_blocks, async_asked, async_audit = run_all(use_async=True)
    assert async_blocks == sync_blocks
    assert async_asked == sync_asked and async_audit == sync_audit
    kinds = [(b["is_error"], b["content"][:20]) for b in sync_blocks]
    assert len(set(kinds)) > 10, kinds  # the calls cover many different answers


def test_skills_given_as_one_string_is_a_name_list_not_letters(tools_dir):
    """tool_definitions(manager, skills="pdf-extractor") looked for skills 'p', 'd', 'f', ...
    (SkillNotFoundError); a string is a name list (core/base/namelist.py), as in every setting."""
    manager = manager_for(tools_dir)
    one = tool_definitions(manager, skills=["pdf-extractor"])
    assert tool_definitions(manager, skills="pdf-extractor") == one
    both = tool_definitions(manager, skills=["pdf-extractor", "plain"])
    assert tool_definitions(manager, skills="pdf-extractor, plain") == both
    assert tool_definitions(manager, skills="pdf-extractor plain") == both
    block = handle_tool_call(
        manager, EXTRACT, {}, "t", skills="plain", approver=RecordingApprover()
    )
    assert block["is_error"] and "Unknown tool" in block["content"]  # not offered: unknown
