"""Traces (core/trace/): real spans exported over real OTLP/HTTP to a receiver on 127.0.0.1
that decodes the protobuf (tests/trace_support.py), real runs, a real warm server.

docs/tracing.md: a root span per call, the approval, each run (cold or warm) with its
TRACEPARENT in the script's environment, a batch's items as children of the batch; no secret,
argument or output in any byte; tracing off imports no OpenTelemetry module.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from manager_support import manager_for
from trace_support import start_receiver

from skill_magics.core import trace
from skill_magics.core.trace import names as n

SECRET = "s3cr3t-VALUE-4f9a1c"
ARGUMENT = "ARGUMENT-VALUE-77e2"
OUTPUT = "OUTPUT-CONTENT-19bd"

SQUARE = """
import json, sys
d = json.load(sys.stdin)
print(json.dumps({"square": d["n"] ** 2}))
"""

# Joins the run's trace through TRACEPARENT with the OpenTelemetry SDK of its own.
OWN_SPANS = """
import json, os, sys
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

d = json.load(sys.stdin)
provider = TracerProvider(resource=Resource.create({"service.name": "the-script"}))
provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=d["endpoint"])))
parent = TraceContextTextMapPropagator().extract({"traceparent": os.environ["TRACEPARENT"]})
with provider.get_tracer("script").start_as_current_span("script work", context=parent):
    pass
provider.shutdown()
print(os.environ["TRACEPARENT"])
"""

ENV = "import os\nprint(os.environ.get('TRACEPARENT', ''))\n"

# Prints its TRACEPARENT, then sleeps (argv[1] seconds): a run to time out, stop or cancel.
NAP = (
    "import os, sys, time\nprint(os.environ.get('TRACEPARENT', ''), flush=True)\n"
    "time.sleep(float(sys.argv[1]))\n"
)

# A script whose name and output hold a terminal escape and a bidi override.
HOSTILE_NAME = "scripts/we\u202eird\x1b.py"
HOSTILE_OUTPUT = "import sys\nprint('\\x1b[2Jred\\u202eflipped')\nsys.exit(4)\n"

LEAKY = f"""
import json, os, sys
d = json.load(sys.stdin)
print("{OUTPUT}", os.environ["TRACE_TEST_TOKEN"], d)
print(os.environ["TRACE_TEST_TOKEN"], file=sys.stderr)
sys.exit(3)
"""


@pytest.fixture(scope="module")
def skills(tmp_path_factory: pytest.TempPathFactory, make_skill) -> Path:
    root = tmp_path_factory.mktemp("trace-skills")
    make_skill(
        root,
        "mathx",
        scripts={
            "scripts/square.py": SQUARE,
            "scripts/own_spans.py": OWN_SPANS,
            "scripts/env.py": ENV,
            "scripts/nap.py": NAP,
            HOSTILE_NAME: HOSTILE_OUTPUT,
        },
    )
    make_skill(
        root,
        "secretive",
        frontmatter={"description": "Leaks.", "metadata": {"secrets": "TRACE_TEST_TOKEN"}},
        scripts={"scripts/leak.py": LEAKY},
    )
    return root


@pytest.fixture
def receiver(monkeypatch: pytest.MonkeyPatch):
    """Tracing on, exporting to a real OTLP/HTTP receiver; off again afterwards."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server, received, endpoint = start_receiver()
    provider = TracerProvider(resource=Resource.create({"service.name": "skill-magics-test"}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    trace.turn("on", provider=provider)
    received.endpoint = endpoint  # type: ignore[attr-defined]
    try:
        yield received
    finally:
        trace.turn("auto")
        provider.shutdown()
        server.shutdown()


def exported(received) -> list[dict]:
    assert trace.flush(30)
    return received.spans()


def parent_of(stdout: str) -> tuple[str, str]:
    """(trace id, span id) of a W3C traceparent a script printed (flags vary: 01, 03)."""
    version, trace_id, span_id, _flags = stdout.strip().split("-")
    assert version == "00"
    return trace_id, span_id


def by_name(spans: list[dict], name: str) -> list[dict]:
    return [s for s in spans if s["name"] == name]


def test_a_batch_of_20_is_one_tree(skills: Path, receiver) -> None:
    manager = manager_for(skills, sandbox="off")
    result = manager.map("mathx", "square", [{"n": i} for i in range(20)], approver=None)
    assert all(item.result.exit_code == 0 for item in result.items)
    spans = exported(receiver)
    (root,) = by_name(spans, "skillrun --map mathx")
    assert root["parent"] == ""
    assert root["attributes"][n.BATCH_ITEMS] == 20
    items = by_name(spans, "batch item")
    assert len(items) == 20
    assert {s["parent"] for s in items} == {root["id"]}
    assert sorted(s["attributes"][n.BATCH_INDEX] for s in items) == list(range(20))
    runs = by_name(spans, "run mathx")
    assert len(runs) == 20
    assert {s["parent"] for s in runs} == {s["id"] for s in items}  # one run per item
    assert {s["trace"] for s in spans} == {root["trace"]}
    for run in runs:
        assert run["attributes"][n.SKILL_NAME] == "mathx"
        assert run["attributes"][n.SCRIPT_PATH] == "scripts/square.py"
        assert run["attributes"][n.SCRIPT_EXIT_CODE] == 0
        assert run["attributes"][n.STDOUT_BYTES] > 0


def test_a_scripts_own_span_joins_the_run(skills: Path, receiver) -> None:
    manager = manager_for(skills, sandbox="off")
    res = manager.execute_skill_script(
        "mathx",
        "own_spans",
        {"endpoint": receiver.endpoint},
        approver=lambda request: "yes_once",
    )
    assert res.exit_code == 0, res.stderr
    spans = exported(receiver)
    (root,) = by_name(spans, "skillrun mathx")
    (approval,) = by_name(spans, "approval")
    (run,) = by_name(spans, "run mathx")
    (own,) = by_name(spans, "script work")
    assert approval["parent"] == root["id"] and run["parent"] == root["id"]
    assert approval["attributes"][n.DECISION] == "yes_once"
    assert approval["attributes"][n.DECIDED_BY] == "approver"
    assert approval["attributes"][n.WAIT_MS] >= 0
    assert len(approval["attributes"][n.DIGESTS]) == 1
    assert own["service"] == "the-script"
    assert own["parent"] == run["id"] and own["trace"] == run["trace"]
    assert parent_of(res.stdout) == (run["trace"], run["id"])


def test_warm_and_cold_runs_get_their_own_traceparent(skills: Path, receiver) -> None:
    from skill_magics.core.run.launching import warm

    manager = manager_for(skills, sandbox="off", run_cwd="skill")
    warm.stop_servers()  # an earlier test's run (auto) may have started this skill's server
    try:
        cold = manager.execute_skill_script("mathx", "env", approver=None, warm=False)
        hot = manager.execute_skill_script("mathx", "env", approver=None, warm=True)
        hot2 = manager.execute_skill_script("mathx", "env", approver=None, warm=True)
    finally:
        warm.stop_servers()
    assert (cold.start, hot.start, hot2.start) == ("cold", "warm", "warm"), hot.start_note
    spans = exported(receiver)
    runs = by_name(spans, "run mathx")
    assert [r["attributes"][n.START] for r in runs] == ["cold", "warm", "warm"]
    launches = by_name(spans, "launch")
    assert [s["parent"] for s in launches] == [r["id"] for r in runs]
    # One server, started for the first warm run; its span ends when start() returns on the
    # starter thread, which may be after the run (generous deadline: a loaded machine).
    deadline = time.monotonic() + 120
    while not by_name(spans, "warm server start") and time.monotonic() < deadline:
        time.sleep(0.5)
        spans = exported(receiver)
    (started,) = by_name(spans, "warm server start")
    assert started["parent"] == launches[1]["id"] and started["trace"] == runs[1]["trace"]
    for res, run in zip((cold, hot, hot2), runs, strict=True):
        assert parent_of(res.stdout) == (run["trace"], run["id"])
    assert len({r["trace"] for r in runs}) == 3  # three calls, three traces


def test_no_secret_argument_or_output_in_any_byte(skills: Path, receiver) -> None:
    manager = manager_for(skills, sandbox="off")
    manager.provide_secret("secretive", "TRACE_TEST_TOKEN", SECRET)
    res = manager.execute_skill_script(
        "secretive", "leak", {"note": ARGUMENT, "again": SECRET}, approver=None
    )
    assert res.exit_code == 3 and OUTPUT in res.stdout  # it printed them all
    spans = exported(receiver)
    (run,) = by_name(spans, "run secretive")
    assert run["status"] == 2  # STATUS_CODE_ERROR
    assert "exit code 3" in run["message"]
    assert run["attributes"][n.SCRIPT_EXITED_WITH_ERROR] is True
    raw = receiver.all_bytes()
    assert raw  # something was exported
    for value in (SECRET, ARGUMENT, OUTPUT):
        assert value.encode() not in raw


def test_a_decline_is_recorded_with_who_declined(skills: Path, receiver) -> None:
    from skill_magics.core.base.errors import ApprovalDeclined

    manager = manager_for(skills, sandbox="off")
    with pytest.raises(ApprovalDeclined):
        manager.execute_skill_script("mathx", "square", {"n": 2}, approver=lambda r: "no")
    spans = exported(receiver)
    (root,) = by_name(spans, "skillrun mathx")
    (declined,) = by_name(spans, "approval")
    assert declined["attributes"][n.DECISION] == "no"
    assert declined["attributes"][n.DECIDED_BY] == "approver"
    assert root["attributes"][n.STATUS] == "declined"
    assert not by_name(spans, "run mathx")  # nothing ran


def test_the_standard_variables_send_to_a_collector(
    skills: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a team does: point OTEL_EXPORTER_OTLP_ENDPOINT at a collector; our own provider
    (service name from OTEL_SERVICE_NAME) exports there, nothing else set up."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server, received, endpoint = start_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.removesuffix("/v1/traces"))
    monkeypatch.setenv("OTEL_SERVICE_NAME", "team-notebooks")
    try:
        assert "on" in trace.turn("auto") and trace.enabled()
        manager = manager_for(skills, sandbox="off")
        manager.execute_skill_script("mathx", "square", {"n": 4}, approver=None)
        spans = exported(received)
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
        monkeypatch.delenv("OTEL_SERVICE_NAME")
        trace.turn("auto")
        server.shutdown()
    assert not trace.enabled()  # the variables gone: off again, our provider shut down
    (run,) = by_name(spans, "run mathx")
    assert run["service"] == "team-notebooks"


OFF = """
import json, sys
from skill_magics.core.manager import SkillManager
from skill_magics.core import trace
m = SkillManager([sys.argv[1]], sandbox="off")
res = m.execute_skill_script("mathx", "square", {"n": 3}, approver=None)
batch = m.map("mathx", "square", [{"n": i} for i in range(3)], approver=None)
print(json.dumps({
    "exit": res.exit_code,
    "traceparent": "TRACEPARENT" in res.stdout,
    "enabled": trace.enabled(),
    "otel": sorted(name for name in sys.modules if name.startswith("opentelemetry")),
}))
"""


def test_tracing_off_imports_no_opentelemetry(skills: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(OFF), os.fspath(skills)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=True,
    )
    found = json.loads(out.stdout.strip().splitlines()[-1])
    assert found == {"exit": 0, "traceparent": False, "enabled": False, "otel": []}


def test_the_variables_turn_it_on_and_off() -> None:
    from skill_magics.core.trace.switch import asked_by_env

    assert asked_by_env({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert asked_by_env({"OTEL_TRACES_EXPORTER": "otlp"})
    assert asked_by_env({"OTEL_SERVICE_NAME": "notebooks"})
    # what must NOT turn it on
    assert not asked_by_env({})
    assert not asked_by_env({"OTEL_TRACES_EXPORTER": "none", "OTEL_SERVICE_NAME": "x"})
    assert not asked_by_env({"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"})
    assert not asked_by_env({"OTEL_METRICS_EXPORTER": "otlp"})


def test_turn_on_off_auto() -> None:
    assert "off" in trace.turn("off")
    assert trace.root("x") is trace.NOOP
    assert "on" in trace.turn("on") and trace.enabled()
    assert "off" in trace.turn("auto") or trace.enabled()
    trace.turn("auto")
    with pytest.raises(ValueError):
        trace.turn("maybe")


def test_an_agent_is_one_trace_with_genai_model_spans(
    server, tmp_path: Path, make_skill, receiver
) -> None:
    from lab_support import by_turn, lab_skills, make_client
    from model_server import call, say

    from skill_magics import run_agent

    manager = manager_for(lab_skills(make_skill, tmp_path / "skills"))
    server.script = by_turn(
        call("activate_skill", {"name": "marker"}),
        call("marker__mark", {"note": ARGUMENT}),
        lambda c: say("done"),
    )
    client = make_client("anthropic", server.url)
    run_agent(client, manager, "mark it", model="m-1", approver=lambda r: "yes_once")
    spans = exported(receiver)
    (agent,) = by_name(spans, "skillagent")
    assert agent["parent"] == ""
    chats = by_name(spans, "chat m-1")
    assert len(chats) == 3 and {c["parent"] for c in chats} == {agent["id"]}
    first = chats[0]["attributes"]
    assert first[n.OPERATION] == "chat" and first[n.PROVIDER] == "anthropic"
    assert first[n.REQUEST_MODEL] == "m-1" and first[n.RESPONSE_MODEL]
    assert first[n.INPUT_TOKENS] > 0 and first[n.OUTPUT_TOKENS] >= 1
    assert first[n.TOOL_CALLS] == 1 and first[n.TOOL_NAMES] == ["activate_skill"]
    assert chats[1]["attributes"][n.TOOL_NAMES] == ["marker__mark"]
    last = chats[2]["attributes"]
    assert last[n.TOOL_CALLS] == 0 and n.TOOL_NAMES not in last and last[n.FINISH_REASONS]
    (root,) = by_name(spans, "skillrun marker")
    (run,) = by_name(spans, "run marker")
    assert root["parent"] == agent["id"] and run["parent"] == root["id"]
    assert ARGUMENT.encode() not in receiver.all_bytes()  # the tool call's argument


def test_a_sandboxed_run_gets_its_traceparent(skills: Path, receiver, bwrap: str) -> None:
    manager = manager_for(skills, sandbox="read-only")
    res = manager.execute_skill_script("mathx", "env", approver=None)
    assert res.exit_code == 0, res.stderr
    spans = exported(receiver)
    (run,) = by_name(spans, "run mathx")
    assert run["attributes"][n.SANDBOX] == "read-only"
    assert parent_of(res.stdout) == (run["trace"], run["id"])
    (setup,) = by_name(spans, "launch")  # the sandbox's set-up, under its run
    assert setup["parent"] == run["id"] and setup["attributes"][n.SANDBOX] == "read-only"
    assert setup["attributes"][n.NETWORK] is False


@pytest.mark.mcp
def test_mcp_host_calls_are_client_spans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, receiver
) -> None:
    from skill_magics.core.manager import SkillManager

    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "served" / "hello-mcp"
    (served / "scripts").mkdir(parents=True)
    (served / "SKILL.md").write_text("---\nname: hello-mcp\ndescription: Says hello.\n---\n")
    (served / "scripts" / "hello.py").write_text("print('hello')\n")
    (tmp_path / "local").mkdir()
    manager = SkillManager([tmp_path / "local"], sandbox="off")
    command = [sys.executable, "-m", "skill_magics.mcp", "serve", str(served.parent)]
    manager.add_mcp_server("team", command=command)
    try:
        res = manager.execute_skill_script("team/hello-mcp", "hello", approver=None)
    finally:
        manager.remove_mcp_server("team")
    assert res.exit_code == 0, res.stderr
    spans = exported(receiver)
    reads = [s for s in spans if s["attributes"].get(n.MCP_METHOD) == "resources/read"]
    assert reads and all(s["attributes"][n.MCP_SERVER] == "team" for s in reads)
    assert all(s["attributes"][n.MCP_BYTES] > 0 for s in reads)
    (run,) = by_name(spans, "run team/hello-mcp")
    assert run["attributes"][n.ORIGIN] == "team"


def test_without_the_sdk_one_line_names_the_extra(
    skills: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from skill_magics.core.base.errors import TracingUnavailable

    monkeypatch.setitem(sys.modules, "opentelemetry.sdk", None)  # import -> ImportError
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.resources", None)
    # Run from this checkout: the extra installs from it (tests/test_install_hints.py)
    checkout = f"pip install -e '{Path(__file__).resolve().parents[1]}[otel]'"
    with pytest.raises(TracingUnavailable, match=re.escape(checkout)):
        trace.turn("on")
    assert not trace.enabled()
    # Asked by the variables: said once, and runs go on untraced.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    try:
        assert "off" in trace.turn("auto")
        res = manager_for(skills, sandbox="off").execute_skill_script(
            "mathx", "square", {"n": 5}, approver=None
        )
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
        trace.turn("auto")
    assert res.exit_code == 0
    assert [r for r in caplog.records if checkout in r.getMessage()]


def test_a_context_and_an_install_are_roots(tmp_path: Path, make_skill, receiver) -> None:
    from skill_magics.core.prompt.context import build_skill_context
    from skill_magics.core.sources.install import install_skills

    root = tmp_path / "skills"
    make_skill(
        root,
        "ctx",
        scripts={"scripts/info.py": "print('info')\n"},
        body="Run `scripts/info.py` first.\n",
    )
    manager = manager_for(root, sandbox="off")
    text = build_skill_context(manager, "ctx", approver=None)
    assert "info" in text
    into = tmp_path / "installed"
    install_skills(root, into=into, manager=manager, approver=lambda r: "yes_once")
    assert (into / "ctx" / "SKILL.md").is_file()
    spans = exported(receiver)
    (context,) = by_name(spans, "skill_context ctx")
    (run,) = by_name(spans, "run ctx")
    assert context["parent"] == "" and run["parent"] == context["id"]
    (install,) = by_name(spans, "install ctx")
    assert install["parent"] == "" and install["attributes"][n.CALL] == "install"
    (decided,) = [s for s in by_name(spans, "approval") if s["parent"] == install["id"]]
    # one question for the skills of an install: the answer and who gave it, not "allowed"
    assert decided["attributes"][n.DECISION] == "yes_once"
    assert decided["attributes"][n.DECIDED_BY] == "approver"
    assert len(decided["attributes"][n.DIGESTS]) == 1


# -- in memory: the real SDK, spans kept in the process ----------------------------------------


@pytest.fixture
def memory():
    """Tracing on into OpenTelemetry's in-memory exporter (real SDK spans, no wire)."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.turn("on", provider=provider)
    try:
        yield exporter
    finally:
        trace.turn("auto")
        provider.shutdown()


def finished(exporter, name: str) -> list:
    return [s for s in exporter.get_finished_spans() if s.name == name]


def span_id(span) -> str:
    return f"{span.context.span_id:016x}"


def test_content_only_when_a_run_opts_in_and_redacted_first(skills: Path, memory) -> None:
    from opentelemetry.trace import StatusCode

    manager = manager_for(skills, sandbox="off")
    manager.provide_secret("secretive", "TRACE_TEST_TOKEN", SECRET)
    args = {"note": ARGUMENT, "again": SECRET}
    manager.execute_skill_script("secretive", "leak", args, approver=None)
    manager.execute_skill_script("secretive", "leak", args, approver=None, trace_content=True)
    plain, opted = finished(memory, "run secretive")
    # Default: names, codes and sizes; no argument and no output (what must NOT be recorded)
    assert not {n.RUN_INPUT, n.RUN_STDOUT, n.RUN_STDERR} & set(plain.attributes)
    assert ARGUMENT not in repr(dict(plain.attributes))
    # Opted in: the argument and the output, with the secret masked before anything else
    assert ARGUMENT in opted.attributes[n.RUN_INPUT]
    assert OUTPUT in opted.attributes[n.RUN_STDOUT]
    assert "****" in opted.attributes[n.RUN_STDERR]
    for span in memory.get_finished_spans():
        assert SECRET not in repr(dict(span.attributes or {}))
    assert opted.status.status_code is StatusCode.ERROR  # exit code 3, as without content
    (root,) = [s for s in memory.get_finished_spans() if s.attributes.get(n.CONTENT)]
    assert opted.parent.span_id == root.context.span_id and root.parent is None


def test_a_refusal_at_plan_time_is_a_span_with_its_one_line(skills: Path, memory) -> None:
    from opentelemetry.trace import StatusCode

    from skill_magics.core.base.errors import SkillMagicsError

    manager = manager_for(skills, sandbox="off")
    with pytest.raises(SkillMagicsError) as refused:
        manager.execute_skill_script("mathx", "../../../etc/passwd", approver=None)
    with pytest.raises(ValueError):
        manager.execute_skill_script("mathx", "square", {"n": 1}, approver=None, timeout=0)
    first, second = finished(memory, "refused mathx")
    assert first.status.status_code is StatusCode.ERROR
    assert str(refused.value).splitlines()[0] in first.status.description
    assert first.attributes[n.ERROR_TYPE] == type(refused.value).__name__
    assert first.attributes[n.STATUS] == "refused" and first.parent is None
    assert "\n" not in second.status.description and "timeout" in second.status.description
    # What must NOT make a refusal span: a run that is allowed.
    memory.clear()
    manager.execute_skill_script("mathx", "square", {"n": 3}, approver=None)
    assert not [s for s in memory.get_finished_spans() if s.name.startswith("refused")]
    assert finished(memory, "run mathx")


def test_a_policy_refusal_in_an_agents_turn_is_a_child_span(
    skills: Path, memory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text("[run]\nnetwork = false\n")
    policy.chmod(0o600)
    monkeypatch.setenv("SKILL_MAGICS_POLICY", str(policy))
    from skill_magics.core.policy import PolicyError

    manager = manager_for(skills, sandbox="off")
    with trace.span("caller's own") as outer, pytest.raises(PolicyError):
        manager.execute_skill_script("mathx", "square", {"n": 1}, approver=None)
    assert outer.recording
    (refusal,) = finished(memory, "refused mathx")
    (parent,) = finished(memory, "caller's own")
    assert refusal.parent.span_id == parent.context.span_id
    assert "[run] network in" in refusal.status.description


@pytest.mark.parametrize("start", ["spawn", "fork"])
def test_items_in_a_process_pool_are_children_of_their_batch(
    skills: Path, memory, start: str
) -> None:
    """Fresh (spawn) or forked workers: neither traces (no OTEL_* variables; a forked one
    does not keep the kernel's tracer, which it could not flush), the script joins the item."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    manager = manager_for(skills, sandbox="off")
    context = multiprocessing.get_context(start)
    with ProcessPoolExecutor(max_workers=2, mp_context=context) as pool:
        result = manager.map("mathx", "env", [{} for _ in range(6)], approver=None, pool=pool)
    assert all(item.ok for item in result.items), [i.message for i in result.items]
    (root,) = finished(memory, "skillrun --map mathx")
    items = finished(memory, "batch item")
    assert len(items) == 6
    assert {s.parent.span_id for s in items} == {root.context.span_id}
    assert {s.attributes[n.BATCH_WHERE] for s in items} == {"process pool"}
    by_index = {s.attributes[n.BATCH_INDEX]: s for s in items}
    for item in result.items:
        trace_id, parent = parent_of(item.result.stdout)  # the script's TRACEPARENT
        span = by_index[item.index]
        assert trace_id == f"{root.context.trace_id:032x}" and parent == span_id(span)
        assert span.attributes[n.SCRIPT_EXIT_CODE] == 0 and span.attributes[n.BATCH_WORKER]


def test_items_on_dask_are_children_of_their_batch(skills: Path, memory) -> None:
    import distributed

    manager = manager_for(skills, sandbox="off")
    with (
        distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        result = manager.map("mathx", "env", [{} for _ in range(4)], approver=None, pool=client)
    assert all(item.ok for item in result.items), [i.message for i in result.items]
    (root,) = finished(memory, "skillrun --map mathx")
    items = {s.attributes[n.BATCH_INDEX]: s for s in finished(memory, "batch item")}
    assert {s.parent.span_id for s in items.values()} == {root.context.span_id}
    for item in result.items:
        trace_id, parent = parent_of(item.result.stdout)
        assert trace_id == f"{root.context.trace_id:032x}"
        assert parent == span_id(items[item.index])


def test_the_lab_calls_are_roots(server, tmp_path: Path, make_skill, memory) -> None:
    from lab_support import lab_skills, make_client
    from model_server import say
    from opentelemetry.trace import StatusCode

    from skill_magics import evaluate_triggers, run_evals

    manager = manager_for(lab_skills(make_skill, tmp_path / "skills"))
    server.script = lambda c: say("no skill needed")
    client = make_client("anthropic", server.url)
    queries = [{"query": "hello", "should_trigger": False}]
    evaluate_triggers(client, manager, "marker", queries, model="m-2", runs=1)
    (root,) = finished(memory, "evaluate_triggers marker")
    assert root.parent is None and root.attributes[n.CALL] == "evaluate_triggers"
    assert root.attributes[n.SKILL_NAME] == "marker"
    chats = finished(memory, "chat m-2")
    assert chats and {c.parent.span_id for c in chats} == {root.context.span_id}
    with pytest.raises(Exception) as failed:  # marker has no evals: one line, a failed root
        run_evals(client, manager, "marker", model="m-2", workspace=tmp_path / "ws")
    (evals,) = finished(memory, "run_evals marker")
    assert evals.status.status_code is StatusCode.ERROR
    assert str(failed.value).splitlines()[0] in evals.status.description


def test_skillrun_trace_content_opts_one_cell_in(skills: Path, memory, ipython_shell) -> None:
    shell = ipython_shell(skills, auto_approve=True)
    shell.run_cell(f'%%skillrun mathx.square --sandbox off\n{{"n": 7, "tag": "{ARGUMENT}"}}')
    shell.run_cell('%%skillrun mathx.square --sandbox off --trace-content\n{"n": 8}')
    plain, opted = finished(memory, "run mathx")
    assert n.RUN_INPUT not in plain.attributes and n.RUN_STDOUT not in plain.attributes
    assert '"n": 8' in opted.attributes[n.RUN_INPUT]
    assert json.loads(opted.attributes[n.RUN_STDOUT]) == {"square": 64}
    assert ARGUMENT not in repr([dict(s.attributes or {}) for s in memory.get_finished_spans()])


def test_a_worker_that_traces_puts_its_run_under_the_item(
    skills: Path, memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Workers whose own OTEL_* variables turn tracing on export their run spans (to a real
    OTLP receiver here) as children of the item spans the kernel made."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server, received, endpoint = start_receiver()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
        monkeypatch.setenv("OTEL_SERVICE_NAME", "a-worker")
        manager = manager_for(skills, sandbox="off")
        context = multiprocessing.get_context("spawn")  # the workers read the variables
        with ProcessPoolExecutor(max_workers=1, mp_context=context) as pool:
            result = manager.map("mathx", "env", [{} for _ in range(3)], approver=None, pool=pool)
        assert all(item.ok for item in result.items)
        items = {span_id(s): s for s in finished(memory, "batch item")}
        deadline = time.monotonic() + 30
        while len(by_name(received.spans(), "run mathx")) < 3 and time.monotonic() < deadline:
            time.sleep(0.1)  # the worker's exporter sends when the worker exits
        runs = by_name(received.spans(), "run mathx")
        assert len(runs) == 3 and {r["parent"] for r in runs} == set(items)
        # and each script's TRACEPARENT is then the worker's run span
        printed = {parent_of(item.result.stdout)[1] for item in result.items}
        assert printed == {r["id"] for r in runs}
    finally:
        server.shutdown()


# -- the seams: a collector that misbehaves, runs side by side, cancelled, hostile text ----------


def _within(work, seconds: float):
    """(finished, value): ``work()`` on a thread, waited for at most ``seconds`` (a hang is
    a failed assertion, not a stuck test run)."""
    import threading

    box: list = []
    thread = threading.Thread(target=lambda: box.append(work()), daemon=True)
    thread.start()
    thread.join(seconds)
    return (not thread.is_alive(), box[0] if box else None)


@pytest.fixture
def bad_collector(request, monkeypatch: pytest.MonkeyPatch):
    """Tracing on by the standard variables, pointed at a collector that misbehaves as
    ``request.param`` says (trace_support.BadCollector); the exporter would wait 60 s."""
    from trace_support import BadCollector

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    collector = BadCollector(request.param)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.endpoint)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "60")
    try:
        assert "on" in trace.turn("auto")
        yield collector
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")
        _within(lambda: trace.turn("auto"), 30)
        collector.close()


@pytest.mark.parametrize("bad_collector", ["hang", "trickle", "500", "503", "down"], indirect=True)
def test_a_collector_that_fails_never_holds_the_kernel(skills: Path, bad_collector) -> None:
    """Runs go on, and what waits for the collector (a flush, %skills trace off) gives up
    after its bounded time: never the exporter's 60 s, never forever (a trickle)."""
    manager = manager_for(skills, sandbox="off")
    for i in range(3):
        res = manager.execute_skill_script("mathx", "square", {"n": i}, approver=None)
        assert res.exit_code == 0, res.stderr
    done, taken = _within(lambda: trace.flush(0.5), 20)
    assert done  # returned: True when the exporter gave up at once (a 500), else False
    assert taken is (bad_collector.mode == "500")
    done, said = _within(lambda: trace.turn("off"), 20)
    assert done and "off" in said and not trace.enabled()


@pytest.mark.parametrize("bad_collector", ["huge"], indirect=True)
def test_a_collector_answering_a_huge_body_is_not_read(skills: Path, bad_collector) -> None:
    manager = manager_for(skills, sandbox="off")
    manager.execute_skill_script("mathx", "square", {"n": 2}, approver=None)
    assert trace.flush(30)  # a 200: taken
    assert bad_collector.done.wait(30)
    # The kernel read the start of the answer (64 KiB) and closed the connection: what the
    # collector got out is that and the sockets' buffers, not the 128 MiB it offered.
    assert bad_collector.sent < 32 * 1024 * 1024, bad_collector.sent


def test_a_kernel_with_spans_pending_shuts_down_in_bounded_time(
    skills: Path, tmp_path: Path
) -> None:
    """A real kernel exporting to a collector that trickles its answer forever: asked to
    shut down, it exits by itself (spans not taken are dropped after otel.EXIT_S), well
    before the SDK's own exit handler would have let it (30 s)."""
    from kernel_fixtures import start_kernel
    from trace_support import BadCollector

    collector = BadCollector("trickle")
    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": collector.endpoint,
        "OTEL_BSP_SCHEDULE_DELAY": "200",  # the exporter's thread is stuck in the collector
        "HTTP_PROXY": "",
        "http_proxy": "",
    }
    cell = textwrap.dedent(
        f"""
        from skill_magics.core.manager import SkillManager
        from skill_magics.core import trace
        m = SkillManager([{str(skills)!r}], sandbox="off")
        for i in range(5):
            res = m.execute_skill_script("mathx", "square", {{"n": i}}, approver=None)
            assert res.exit_code == 0, res.stderr
        import time; time.sleep(1)  # the first export is under way, and stuck
        print(trace.enabled())
        """
    )
    try:
        with start_kernel(env=env, cwd=tmp_path) as kernel:
            result = kernel.execute(cell)
            assert result.ok, result.error_text
            assert "True" in result.stdout  # tracing was on, by the variables
            kernel.km.request_shutdown()
            deadline = time.monotonic() + 20
            while kernel.km.is_alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            assert not kernel.km.is_alive(), "the kernel still waits for the collector"
    finally:
        collector.close()


def test_a_root_names_its_skill_when_nobody_is_asked(skills: Path, memory) -> None:
    """approver=None builds no request (nobody is asked): the root still names the skill."""
    manager = manager_for(skills, sandbox="off")
    manager.execute_skill_script("mathx", "square", {"n": 2}, approver=None)
    (root,) = finished(memory, "skillrun mathx")
    assert root.attributes[n.SKILL_NAME] == "mathx"
    assert tuple(root.attributes[n.SKILLS]) == ("mathx",)
    (approval,) = finished(memory, "approval")
    assert tuple(approval.attributes[n.SKILLS]) == ("mathx",)


def test_control_and_bidi_characters_are_shown_not_sent(skills: Path, memory) -> None:
    """A script's name and (opted-in) output reach a collector's UI: an escape or a U+202E
    is shown as such, never sent raw."""
    manager = manager_for(skills, sandbox="off")
    res = manager.execute_skill_script("mathx", HOSTILE_NAME, approver=None, trace_content=True)
    assert res.exit_code == 4 and "\x1b[2J" in res.stdout
    (run,) = finished(memory, "run mathx")
    assert run.attributes[n.SCRIPT_PATH] == "scripts/we⟨U+202E⟩ird\\x1b.py"
    assert run.attributes[n.RUN_STDOUT] == "\\x1b[2Jred⟨U+202E⟩flipped\n"
    for span in memory.get_finished_spans():
        texts = [span.name, span.status.description or ""]
        texts += [str(v) for v in (span.attributes or {}).values()]
        assert not any(c in t for t in texts for c in "\x1b\u202e"), span.name


def test_two_runs_on_two_threads_keep_their_own_trees(skills: Path, receiver) -> None:
    import threading

    manager = manager_for(skills, sandbox="off")
    results: dict[int, list] = {0: [], 1: []}

    def runs(which: int) -> None:
        for _ in range(3):
            res = manager.execute_skill_script("mathx", "env", approver=None)
            results[which].append(res)

    threads = [threading.Thread(target=runs, args=(i,)) for i in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    spans = exported(receiver)
    roots = {s["id"]: s for s in by_name(spans, "skillrun mathx")}
    runs_by_id = {s["id"]: s for s in by_name(spans, "run mathx")}
    assert len(roots) == 6 and len(runs_by_id) == 6
    for res in results[0] + results[1]:
        trace_id, span = parent_of(res.stdout)
        run = runs_by_id[span]  # each script got its own run's context
        assert run["trace"] == trace_id and roots[run["parent"]]["trace"] == trace_id
    assert len({s["trace"] for s in roots.values()}) == 6  # six calls, six traces


def test_a_timeout_and_a_stop_end_their_spans_with_a_status(skills: Path, memory) -> None:
    import threading

    from opentelemetry.trace import StatusCode

    manager = manager_for(skills, sandbox="off")
    res = manager.execute_skill_script("mathx", "nap", argv=["30"], timeout=1, approver=None)
    assert res.timed_out
    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()
    plan = manager.plan("mathx", "nap", argv=["30"])
    stopped = manager.run_planned(plan, None, cancel=stop).script_result()
    assert stopped.exit_code != 0
    timed_out, halted = finished(memory, "run mathx")
    assert timed_out.status.status_code is StatusCode.ERROR
    assert "timed out" in timed_out.status.description
    assert timed_out.attributes[n.TIMED_OUT] is True
    assert halted.status.status_code is StatusCode.ERROR
    assert halted.attributes[n.TIMED_OUT] is False and halted.attributes[n.SIGNAL]
    assert len(finished(memory, "skillrun mathx")) == 2  # both roots ended


def test_a_cancelled_async_run_ends_its_root_with_a_status(skills: Path, memory) -> None:
    """A cell's task cancelled while its script runs (Stop, Kernel > Interrupt with the
    await strategy): the root ends failed, the run ends when its process is killed."""
    import asyncio

    from opentelemetry.trace import StatusCode

    manager = manager_for(skills, sandbox="off")
    started = []

    async def cancelled() -> None:
        plan = manager.plan("mathx", "nap", argv=["30"])
        task = asyncio.ensure_future(
            manager.run_planned_async(plan, None, on_start=lambda: started.append(1))
        )
        while not started:
            await asyncio.sleep(0.05)
        await asyncio.sleep(1.0)  # the script is running
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(cancelled())
    deadline = time.monotonic() + 60
    while not finished(memory, "run mathx") and time.monotonic() < deadline:
        time.sleep(0.1)
    (root,) = finished(memory, "skillrun mathx")
    assert root.status.status_code is StatusCode.ERROR
    assert "CancelledError" in root.status.description
    (run,) = finished(memory, "run mathx")
    assert run.status.status_code is StatusCode.ERROR and run.parent.span_id == root.context.span_id


def test_a_traceparent_of_someone_elses_is_never_passed_on(
    skills: Path, memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Garbage TRACEPARENT in the kernel's environment, passed through on purpose: a traced
    run gets its own; a carrier of garbage (a batch item's) makes roots, never an error."""
    monkeypatch.setenv("TRACEPARENT", "00-garbage\x1b-0-01")
    monkeypatch.setenv("TRACESTATE", "evil=1")
    manager = manager_for(skills, sandbox="off", env_passthrough="TRACEPARENT,TRACESTATE")
    res = manager.execute_skill_script("mathx", "env", approver=None)
    (run,) = finished(memory, "run mathx")
    assert parent_of(res.stdout) == (f"{run.context.trace_id:032x}", span_id(run))
    with trace.joined({"TRACEPARENT": "00-zz-yy-01", "TRACESTATE": "\x00"}):
        with trace.span("joined garbage"):
            pass
    (joined,) = finished(memory, "joined garbage")
    assert joined.parent is None


def test_a_secret_in_an_error_message_never_reaches_the_export(skills: Path, receiver) -> None:
    """A refusal naming the secret (a script asked for by it), an approver whose error
    holds it: every status and attribute has it masked, in every byte sent."""
    from skill_magics.core.base.errors import SkillMagicsError

    manager = manager_for(skills, sandbox="off")
    manager.provide_secret("secretive", "TRACE_TEST_TOKEN", SECRET)
    with pytest.raises(SkillMagicsError):
        manager.execute_skill_script("secretive", SECRET, approver=None)

    def approver(request):
        raise RuntimeError(f"could not ask: token {SECRET} expired")

    with pytest.raises(RuntimeError):
        manager.execute_skill_script("secretive", "leak", approver=approver)
    spans = exported(receiver)
    (refused,) = by_name(spans, "refused secretive")
    (approval,) = by_name(spans, "approval")
    (root,) = by_name(spans, "skillrun secretive")
    assert "****" in refused["message"] and "****" in approval["message"]
    assert root["status"] == 2 and "****" in root["message"]
    assert SECRET.encode() not in receiver.all_bytes()


def test_tracing_turned_off_while_a_batch_runs(
    skills: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """%skills trace off in the middle of a batch (its own provider, by the variables): the
    batch finishes untouched, the items started after it get no TRACEPARENT, and what was
    exported before is one tree."""
    import threading

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)
    server, received, endpoint = start_receiver()
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", endpoint)
    try:
        assert "on" in trace.turn("auto")
        manager = manager_for(skills, sandbox="off")
        out: list = []
        batch = threading.Thread(
            target=lambda: out.append(
                manager.map("mathx", "nap", argv=[["0.5"]] * 8, approver=None, max_workers=2)
            )
        )
        batch.start()
        time.sleep(1.2)  # a few items ran
        said = trace.turn("off")
        batch.join(120)
    finally:
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        trace.turn("auto")
        server.shutdown()
    assert "off" in said
    (result,) = out
    assert all(item.ok for item in result.items), [i.message for i in result.items]
    printed = [item.result.stdout.strip() for item in result.items]
    assert printed[-1] == ""  # started after tracing went off: nothing to join
    items = {s["id"]: s for s in by_name(received.spans(), "batch item")}
    for line in filter(None, printed):
        trace_id, _ = parent_of(line)
        assert {s["trace"] for s in items.values()} <= {trace_id}


@pytest.mark.mcp
def test_an_mcp_read_says_verified_or_refused(memory) -> None:
    """Each read of the host is verified against the listing inside its span: verified, or
    refused with the one line (a server that lies about a file's digest)."""
    from opentelemetry.trace import StatusCode

    from skill_magics.core.base.errors import McpSkillMismatchError
    from skill_magics.core.mcp.connection import connect
    from skill_magics.core.mcp.host import McpSkillsHost

    hostile = Path(__file__).resolve().parent / "mcp_servers" / "hostile.py"
    with connect("evil", command=[sys.executable, str(hostile)], timeout=5) as conn:
        host = McpSkillsHost(conn)
        (entry,) = host.list_skills()
        assert [f.path for f in host.fetch_all(entry)]
        lying = host.get_skill("skill://digest-lie/SKILL.md")
        with pytest.raises(McpSkillMismatchError) as refused:
            for _ in host.fetch_all(lying):
                pass
    reads = finished(memory, "resources/read evil")
    good = [r for r in reads if r.attributes.get(n.MCP_VERIFIED)]
    bad = [r for r in reads if r.attributes.get(n.MCP_REFUSED)]
    assert len(good) >= 2 and all(r.attributes[n.MCP_BYTES] > 0 for r in good)
    (lie,) = bad
    assert lie.status.status_code is StatusCode.ERROR and n.MCP_VERIFIED not in lie.attributes
    assert lie.attributes[n.ERROR_TYPE] == "McpSkillMismatchError"
    assert str(refused.value).splitlines()[0][:80] in lie.status.description
    assert "digest" in lie.status.description


def test_an_environment_build_is_a_span_and_its_failure_its_status(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memory
) -> None:
    """A real managed-environment build (its installer, a package that does not exist):
    the call's root, the approval and the build, failed with the build's one line."""
    from opentelemetry.trace import StatusCode

    from skill_magics.core.base import envdirs
    from skill_magics.core.base.errors import EnvironmentBuildError
    from skill_magics.core.manager import SkillManager
    from tests.real_layouts import write_pep

    monkeypatch.setenv(envdirs.ENV_DIR_VAR, str(tmp_path / "envs"))
    write_pep(tmp_path / "skills", package="json", spec="skill-magics-no-such-package-xyz")
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(EnvironmentBuildError) as failed:
        manager.prepare_env("pep", approver=None)
    (build,) = finished(memory, "env build")
    assert build.attributes[n.SKILL_NAME] == "pep" and build.attributes[n.PACKAGES] == 1
    assert build.attributes[n.INSTALLER]
    assert build.status.status_code is StatusCode.ERROR
    assert str(failed.value)[:60] in build.status.description
    (root,) = finished(memory, "env install pep")
    assert build.parent.span_id == root.context.span_id and root.parent is None
    assert root.status.status_code is StatusCode.ERROR


PROVIDER_SET = """
import json, sys
from opentelemetry import trace as api
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from skill_magics.core import trace
from skill_magics.core.manager import SkillManager

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
api.set_tracer_provider(provider)  # an auto-instrumented kernel, or the user's own code
m = SkillManager([sys.argv[1]], sandbox="off")
res = m.execute_skill_script("mathx", "env", approver=None)
print(json.dumps({
    "status": trace.status(),
    "names": sorted(s.name for s in exporter.get_finished_spans()),
    "traceparent": res.stdout.strip(),
}))
"""


def test_a_tracer_provider_set_in_the_process_turns_tracing_on(skills: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parents[1])
    out = subprocess.run(
        [sys.executable, "-c", PROVIDER_SET, str(skills)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    seen = json.loads(out.stdout)
    assert "the process's tracer provider" in seen["status"]
    assert {"skillrun mathx", "approval", "launch", "run mathx"} <= set(seen["names"])
    assert seen["traceparent"].startswith("00-")


def test_a_skillagent_cell_is_one_trace(server, tmp_path: Path, make_skill, memory, ipython_shell):
    """%%skillagent in a real IPython shell: the cell's root, its GenAI model calls and the
    run the model asked for (pre-approved) beneath it."""
    from lab_support import by_turn, lab_skills, make_client
    from model_server import call, say

    shell = ipython_shell(lab_skills(make_skill, tmp_path / "skills"), auto_approve=True)
    server.script = by_turn(
        call("activate_skill", {"name": "marker"}),
        call("marker__mark", {"note": ARGUMENT}),
        lambda c: say("done"),
    )
    shell.user_ns["trace_client"] = make_client("anthropic", server.url)
    try:
        ran = shell.run_cell("%%skillagent --model m-3 --client trace_client\nmark it\n")
    finally:
        shell.user_ns.pop("trace_client", None)
    assert ran.error_in_exec is None, ran.error_in_exec
    (agent,) = finished(memory, "skillagent")
    assert agent.parent is None and agent.attributes[n.REQUEST_MODEL] == "m-3"
    chats = finished(memory, "chat m-3")
    assert len(chats) == 3 and {c.parent.span_id for c in chats} == {agent.context.span_id}
    (root,) = finished(memory, "skillrun marker")
    assert root.parent.span_id == agent.context.span_id
    (approval,) = [
        s for s in finished(memory, "approval") if s.parent.span_id == root.context.span_id
    ]
    assert approval.attributes[n.DECISION] and approval.attributes[n.DECIDED_BY]
    (run,) = finished(memory, "run marker")
    assert run.parent.span_id == root.context.span_id
    assert ARGUMENT not in repr([dict(s.attributes or {}) for s in memory.get_finished_spans()])


def test_ctrl_c_during_a_run_ends_its_spans_failed(skills: Path, memory) -> None:
    """Kernel > Interrupt (SIGINT) while a script runs: the group is killed, the run and
    the root end failed with the interrupt, nothing stays open."""
    import signal
    import threading

    from opentelemetry.trace import StatusCode

    manager = manager_for(skills, sandbox="off")
    assert threading.current_thread() is threading.main_thread()
    threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(KeyboardInterrupt):
        manager.execute_skill_script("mathx", "nap", argv=["30"], approver=None)
    (run,) = finished(memory, "run mathx")
    (root,) = finished(memory, "skillrun mathx")
    for span in (run, root):
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "KeyboardInterrupt"
