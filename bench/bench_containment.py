"""Containment benchmark (prints figures; not a test): what the issue-39 containment costs.

    .venv/bin/python bench/bench_containment.py            # 200 runs per case
    .venv/bin/python bench/bench_containment.py --quick    # 40

Side by side, interleaved (ABBA) so machine load hits both equally:
1. a trivial Python run through ScriptExecutor with the run watcher told of it (two pipe
   writes per run; core/run/launching/containment.py) vs the same with the watcher off: median ratio
   (target <= 1.02);
2. the end of a run that leaves 3 daemons (setsid'd, sleeping) behind: the whole-run kill
   (stop, look again until nothing new, kill) vs one look and one SIGKILL, in ms (the
   one-pass kill is what ran before issue 39; it is kept here only to compare);
3. a trivial Python run, cold and warm, in a cgroup of its own (core/run/launching/cgroups.py: made,
   joined, killed and removed per run) vs the look-and-kill alone: median ratio per start
   (only where a cgroup can be made here; the report says why not otherwise).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.base.audit import AuditLog  # noqa: E402
from skill_magics.core.base.models import SkillMetadata  # noqa: E402
from skill_magics.core.run.executor import ScriptExecutor  # noqa: E402
from skill_magics.core.run.launching import containment, process, warm  # noqa: E402
from skill_magics.core.run.launching.cgroups import RUN_CGROUPS  # noqa: E402

DAEMONS = """
import os, time
for _ in range(3):
    if os.fork() == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
time.sleep(0.2)
"""


def _skill(root: Path) -> tuple[Path, SkillMetadata]:
    base = root / "bench-skill"
    (base / "scripts").mkdir(parents=True)
    (base / "SKILL.md").write_text("---\nname: bench-skill\ndescription: bench\n---\n")
    (base / "scripts" / "trivial.py").write_text("print('ok')\n")
    (base / "scripts" / "daemons.py").write_text(DAEMONS)
    return base, SkillMetadata(name="bench-skill", description="b", path=base / "SKILL.md")


def _abba(a, b, runs: int) -> tuple[list[float], list[float]]:
    at: list[float] = []
    bt: list[float] = []
    for i in range(runs):
        for fn in (a, b) if i % 2 == 0 else (b, a):
            start = time.perf_counter()
            fn()
            (at if fn is a else bt).append(time.perf_counter() - start)
    return at, bt


def per_run(base: Path, meta: SkillMetadata, runs: int) -> dict[str, float]:
    executor = ScriptExecutor(audit=AuditLog(keep=10))

    def watched() -> None:
        containment.WATCH.enabled = True
        executor.execute("scripts/trivial.py", {}, base, meta)

    def unwatched() -> None:
        containment.WATCH.enabled = False
        executor.execute("scripts/trivial.py", {}, base, meta)

    for _ in range(5):
        watched()
        unwatched()
    on, off = _abba(watched, unwatched, runs)
    containment.WATCH.enabled = True
    return {
        "watched_median_ms": statistics.median(on) * 1000,
        "unwatched_median_ms": statistics.median(off) * 1000,
        "median_ratio": statistics.median(on) / statistics.median(off),
    }


def per_run_cgroup(base: Path, meta: SkillMetadata, runs: int) -> dict[str, object]:
    """A trivial run with its own cgroup vs without, cold and warm (ABBA)."""
    if RUN_CGROUPS.base() is None:
        return {"cgroup": f"none here: {RUN_CGROUPS.why_not}"}
    executor = ScriptExecutor(audit=AuditLog(keep=10))
    out: dict[str, object] = {"cgroup": RUN_CGROUPS.base()}
    for start in ("cold", "warm"):

        def run(on: bool, start: str = start) -> None:
            RUN_CGROUPS.enabled = on
            res = executor.execute("scripts/trivial.py", {}, base, meta, warm=start == "warm")
            assert res.start == start, res.start_note

        for _ in range(5):
            run(True)
            run(False)
        on, off = _abba(lambda: run(True), lambda: run(False), runs)
        RUN_CGROUPS.enabled = True
        out[start] = {
            "cgroup_median_ms": statistics.median(on) * 1000,
            "looks_only_median_ms": statistics.median(off) * 1000,
            "median_ratio": statistics.median(on) / statistics.median(off),
        }
    warm.stop_servers()
    return out


def end_of_run(base: Path, runs: int) -> dict[str, float]:
    """Time of the end-of-run kill for a run leaving 3 daemons, the whole-run kill vs one
    pass (measured inside drive: the kill only, not the run)."""
    timings: dict[str, list[float]] = {"sweep": [], "one_pass": []}
    real = containment.kill_run

    def one_pass(child, held, exited, seen=None, kill_group=None, cgroup=None) -> None:
        held.collect(child.pid, exited=exited)
        process.kill_group(child.pid, 9)
        held.signal(9)

    def timed(kind, fn):
        def run(*args, **kwargs):
            start = time.perf_counter()
            fn(*args, **kwargs)
            timings[kind].append(time.perf_counter() - start)

        return run

    command = [sys.executable, str(base / "scripts" / "daemons.py")]
    for i in range(runs):
        kind = "sweep" if i % 2 == 0 else "one_pass"
        process.tree.kill_run = timed(kind, real if kind == "sweep" else one_pass)
        try:
            process.run_process(
                command, cwd=base, env=None, payload=None, timeout=30, max_output_size=1 << 20
            )
        finally:
            process.tree.kill_run = real
    return {
        "sweep_median_ms": statistics.median(timings["sweep"]) * 1000,
        "one_pass_median_ms": statistics.median(timings["one_pass"]) * 1000,
        "ratio": statistics.median(timings["sweep"]) / statistics.median(timings["one_pass"]),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    runs = 40 if args.quick else 200
    with tempfile.TemporaryDirectory() as tmp:
        base, meta = _skill(Path(tmp))
        report = {
            "per_run_trivial_python": per_run(base, meta, runs),
            "end_of_run_3_daemons": end_of_run(base, max(10, runs // 10)),
            "per_run_own_cgroup": per_run_cgroup(base, meta, runs),
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
