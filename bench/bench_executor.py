"""Executor benchmark (prints figures; not a test).

    .venv/bin/python bench/bench_executor.py            # full: 300 runs per case, 100 timeouts
    .venv/bin/python bench/bench_executor.py --quick    # fewer runs, for a smoke check

Measures:
1. per-call overhead of ScriptExecutor.execute vs raw
   ``subprocess.run([interp, path], input=..., capture_output=True)`` on trivial bash and
   python scripts, interleaved (ABBA order) so machine load hits both equally; median, p95 and
   their ratios (targets: median ratio <= 1.15 bash, <= 1.03 python);
2. peak RSS growth of a process that runs a script printing 200 MB (target < 3x the 10 MiB cap);
3. timeout overshoot: how long after the limit the result comes back, for a bash script whose
   background child holds the pipes (target p99 <= 50 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.base.audit import AuditLog  # noqa: E402
from skill_magics.core.base.models import SkillMetadata  # noqa: E402
from skill_magics.core.run.executor import ScriptExecutor  # noqa: E402

MiB = 2**20


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def make_skill(root: Path) -> tuple[Path, SkillMetadata]:
    base = root / "bench-skill"
    (base / "scripts").mkdir(parents=True)
    (base / "SKILL.md").write_text("---\nname: bench-skill\ndescription: bench\n---\n")
    (base / "scripts" / "trivial.sh").write_text("echo ok\n")
    (base / "scripts" / "trivial.py").write_text("print('ok')\n")
    (base / "scripts" / "hang.sh").write_text("sleep 30 &\nsleep 30\n")
    (base / "scripts" / "small.sh").write_text("echo\n")
    (base / "scripts" / "big.py").write_text(
        "import sys\nblock = b'x' * 1000000\nout = sys.stdout.buffer\n"
        "for _ in range(200):\n    out.write(block)\n"
    )
    return base, SkillMetadata(name="bench-skill", description="bench", path=base / "SKILL.md")


def overhead(base: Path, meta: SkillMetadata, runs: int) -> dict[str, dict[str, float]]:
    executor = ScriptExecutor(audit=AuditLog(keep=10))
    payload = {"x": 1}
    data = json.dumps(payload).encode()
    cases = {
        "bash": (shutil.which("bash"), "scripts/trivial.sh"),
        "python": (sys.executable, "scripts/trivial.py"),
    }
    report: dict[str, dict[str, float]] = {}
    for name, (interp, rel) in cases.items():
        script = str(base / rel)

        def raw(interp: str = interp, script: str = script) -> None:
            subprocess.run([interp, script], input=data, capture_output=True, cwd=base)

        def ours(rel: str = rel) -> None:
            executor.execute(rel, payload, base, meta)

        for _ in range(10):  # warm caches (interpreter lookup, page cache)
            raw()
            ours()
        raw_t: list[float] = []
        our_t: list[float] = []
        for i in range(runs):
            order = (raw, ours) if i % 2 == 0 else (ours, raw)
            for fn in order:
                start = time.perf_counter()
                fn()
                (raw_t if fn is raw else our_t).append(time.perf_counter() - start)
        report[name] = {
            "raw_median_ms": statistics.median(raw_t) * 1000,
            "ours_median_ms": statistics.median(our_t) * 1000,
            "raw_p95_ms": percentile(raw_t, 95) * 1000,
            "ours_p95_ms": percentile(our_t, 95) * 1000,
        }
        r = report[name]
        r["median_ratio"] = r["ours_median_ms"] / r["raw_median_ms"]
        r["p95_ratio"] = r["ours_p95_ms"] / r["raw_p95_ms"]
    return report


RSS_PROBE = """\
import json, resource, sys
from pathlib import Path
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.base.models import SkillMetadata
base = Path(sys.argv[1])
meta = SkillMetadata(name="bench-skill", description="b", path=base / "SKILL.md")
ex = ScriptExecutor()
ex.execute("scripts/small.sh", {}, base, meta)
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
r = ex.execute("scripts/big.py", {}, base, meta)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
scale = 1 if sys.platform == "darwin" else 1024
print(json.dumps({"growth": (after - before) * scale, "seconds": r.execution_time_ms / 1000,
                  "bytes": r.stdout_bytes, "kept": len(r.stdout)}))
"""


def rss(base: Path) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", RSS_PROBE, str(base)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return json.loads(out.stdout)


def overshoot(base: Path, meta: SkillMetadata, samples: int, parallel: int) -> list[float]:
    executor = ScriptExecutor(audit=AuditLog(keep=10))
    results: list[float] = []
    lock = threading.Lock()

    def one() -> None:
        start = time.monotonic()
        result = executor.execute("scripts/hang.sh", {}, base, meta, timeout=1)
        late = time.monotonic() - start - 1.0
        assert result.timed_out
        with lock:
            results.append(late)

    done = 0
    while done < samples:
        batch = [threading.Thread(target=one) for _ in range(min(parallel, samples - done))]
        for t in batch:
            t.start()
        for t in batch:
            t.join()
        done += len(batch)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke check)")
    parser.add_argument("--runs", type=int, help="overhead runs per case (default 300)")
    args = parser.parse_args()
    runs = args.runs or (60 if args.quick else 300)
    samples = 20 if args.quick else 100

    try:
        load = os.getloadavg()
    except OSError:
        load = (float("nan"),) * 3
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base, meta = make_skill(Path(tmp))

        print(f"\n1. per-call time, {runs} interleaved runs each (ms)")
        print(
            f"   {'case':<7}{'raw med':>9}{'ours med':>10}{'ratio':>7}{'raw p95':>10}"
            f"{'ours p95':>10}{'ratio':>7}  target"
        )
        for name, r in overhead(base, meta, runs).items():
            target = 1.15 if name == "bash" else 1.03
            verdict = "ok" if r["median_ratio"] <= target else "MISSED"
            print(
                f"   {name:<7}{r['raw_median_ms']:9.2f}{r['ours_median_ms']:10.2f}"
                f"{r['median_ratio']:7.3f}{r['raw_p95_ms']:10.2f}{r['ours_p95_ms']:10.2f}"
                f"{r['p95_ratio']:7.3f}  median <= {target} {verdict}"
            )

        r = rss(base)
        growth = r["growth"] / MiB
        print("\n2. 200 MB of stdout with the 10 MiB cap")
        print(
            f"   peak RSS growth {growth:.1f} MiB = {growth / 10:.2f}x the cap (target < 3x), "
            f"{r['bytes']:,} bytes seen, {r['kept']:,} kept, {r['seconds']:.2f} s"
        )

        late = [x * 1000 for x in overshoot(base, meta, samples, parallel=10)]
        print(f"\n3. timeout overshoot, {samples} runs of a 1 s timeout (10 at a time), ms")
        print(
            f"   p50 {percentile(late, 50):.1f}  p90 {percentile(late, 90):.1f}  "
            f"p99 {percentile(late, 99):.1f}  max {max(late):.1f}  (target p99 <= 50)"
        )


if __name__ == "__main__":
    main()
