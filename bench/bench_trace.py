"""Tracing benchmark (prints figures; not a test): what the trace hooks cost while tracing is
off (core/trace/, docs/tracing.md), measured side by side.

    .venv/bin/python bench/bench_trace.py              # 3 rounds of 40 runs per case
    .venv/bin/python bench/bench_trace.py --runs 10    # quicker

1. The hooks alone: a million calls of each facade function a run passes while tracing is
   off (``hooks.root``, ``hooks.approval``, ``hooks.script_run``, ``hooks.launch``,
   ``trace.child_env``, ``trace.bind``) against calling the wrapped work directly; ns per call.
2. Real runs of a trivial Python script through ``manager.execute_skill_script``, tracing off,
   against the same runs with every hook replaced by a bare pass-through (the code as if the
   hooks were never there), interleaved A B B A; median wall times and their ratio. Also the
   same runs with tracing ON (an SDK provider with an in-memory exporter), for scale, and
   with tracing on exporting over OTLP/HTTP to a collector that never answers (a run never
   waits for the collector: docs/tracing.md).
3. ``sys.modules`` after the off runs: no ``opentelemetry`` module.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core import trace  # noqa: E402
from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.trace import hooks  # noqa: E402
from skill_magics.core.trace.noop import NOOP  # noqa: E402

LOOPS = 1_000_000


def per_call_ns(fn, loops: int = LOOPS) -> float:
    start = time.perf_counter()
    for _ in range(loops):
        fn()
    return (time.perf_counter() - start) / loops * 1e9


def hooks_alone() -> list[tuple[str, float, float]]:
    work = int  # a cheap callable
    env: dict[str, str] = {"PATH": "/usr/bin"}

    class Plan:
        def requests(self):
            return ()

    plan = Plan()
    cases = [
        ("hooks.root + end", lambda: hooks.root(plan).end(), lambda: NOOP.end()),
        ("hooks.approval", lambda: hooks.approval(plan, work), work),
        ("hooks.script_run", lambda: hooks.script_run(None, work), work),
        ("hooks.launch", lambda: hooks.launch(None, work), work),
        ("trace.child_env", lambda: trace.child_env(env), lambda: env),
        ("trace.bind", lambda: trace.bind(work, "batch item"), lambda: work),
    ]
    return [(name, per_call_ns(traced), per_call_ns(bare)) for name, traced, bare in cases]


@contextmanager
def without_hooks():
    """Every hook a bare pass-through: the code as if it had none."""
    saved = {
        "root": hooks.root,
        "approval": hooks.approval,
        "script_run": hooks.script_run,
        "launch": hooks.launch,
        "outcome": hooks.outcome,
    }
    saved_trace = {"child_env": trace.child_env, "bind": trace.bind}
    hooks.root = lambda plan, content=False: NOOP  # type: ignore[assignment]
    hooks.approval = lambda plan, decide: decide()  # type: ignore[assignment]
    hooks.script_run = lambda prepared, work: work()  # type: ignore[assignment]
    hooks.launch = lambda prepared, choose: choose()  # type: ignore[assignment]
    hooks.outcome = lambda span, result: None  # type: ignore[assignment]
    trace.child_env = lambda env: env  # type: ignore[assignment]
    trace.bind = lambda work, name="", attributes=None: work  # type: ignore[assignment]
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(hooks, name, value)
        for name, value in saved_trace.items():
            setattr(trace, name, value)


def timed_runs(manager: SkillManager, runs: int) -> float:
    start = time.perf_counter()
    for _ in range(runs):
        res = manager.execute_skill_script("noop", "ok", approver=None)
        assert res.exit_code == 0, res.stderr
    return (time.perf_counter() - start) / runs * 1000


def runs_to_a_hung_collector(manager: SkillManager, opts: argparse.Namespace) -> list[float]:
    """Runs with tracing on by the variables (our own provider, OTLP/HTTP), exporting to a
    collector that takes each request and never answers: the runs must not notice."""
    import socket
    import threading

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])  # read nothing, answer nothing
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] = f"http://127.0.0.1:{server.getsockname()[1]}"
    os.environ["OTEL_BSP_SCHEDULE_DELAY"] = "100"  # export often: always stuck in the collector
    times: list[float] = []
    try:
        trace.turn("auto")
        assert trace.enabled()
        for _ in range(opts.rounds):
            times.append(timed_runs(manager, opts.runs))
    finally:
        del os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"], os.environ["OTEL_BSP_SCHEDULE_DELAY"]
        trace.turn("auto")  # bounded: otel.CLOSE_S
        server.close()
        for conn in held:
            conn.close()
    return times


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    opts = parser.parse_args()
    for name in list(os.environ):
        if name.startswith("OTEL_"):
            del os.environ[name]
    trace.turn("auto")
    assert not trace.enabled()

    print(f"Python {platform.python_version()}, {os.cpu_count()} cores, load {os.getloadavg()}")
    print("\n1. hooks while tracing is off, ns per call (median of one million)")
    print(f"   {'hook':<20} {'off':>8} {'bare':>8} {'extra':>8}")
    for name, off, bare in hooks_alone():
        print(f"   {name:<20} {off:8.0f} {bare:8.0f} {off - bare:8.0f}")

    with tempfile.TemporaryDirectory() as tmp:
        skill = Path(tmp) / "noop"
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text("---\nname: noop\ndescription: Does nothing.\n---\n")
        (skill / "scripts" / "ok.py").write_text("print('ok')\n")
        manager = SkillManager([tmp], sandbox="off", warm_start="off")
        timed_runs(manager, 3)  # caches warm
        off: list[float] = []
        bare: list[float] = []
        for _ in range(opts.rounds):  # A B B A
            off.append(timed_runs(manager, opts.runs))
            with without_hooks():
                bare.append(timed_runs(manager, opts.runs))
                bare.append(timed_runs(manager, opts.runs))
            off.append(timed_runs(manager, opts.runs))
        loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry"))

        on: list[float] = []
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
        except ImportError:
            pass
        else:
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
            trace.turn("on", provider=provider)
            try:
                for _ in range(opts.rounds):
                    on.append(timed_runs(manager, opts.runs))
            finally:
                trace.turn("auto")
            hung = runs_to_a_hung_collector(manager, opts)

    m_off, m_bare = statistics.median(off), statistics.median(bare)
    print(f"\n2. a run of a trivial script, ms (median of {len(off)} rounds of {opts.runs})")
    print(f"   no hooks (pass-through):  {m_bare:7.2f}")
    print(f"   tracing off (the hooks):  {m_off:7.2f}   ratio off/no hooks {m_off / m_bare:.3f}")
    if on:
        m_on = statistics.median(on)
        print(f"   tracing on (in memory):   {m_on:7.2f}   ratio on/no hooks  {m_on / m_bare:.3f}")
        if hung:
            m_hung = statistics.median(hung)
            print(
                f"   tracing on, the collector hangs: {m_hung:7.2f}   "
                f"ratio hung/no hooks {m_hung / m_bare:.3f}"
            )
    print(f"\n3. opentelemetry modules imported while off: {loaded or 'none'}")


if __name__ == "__main__":
    main()
