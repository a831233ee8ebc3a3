"""Batch benchmark (prints figures; not a test).

    .venv/bin/python bench/bench_batch.py              # 1,000 items per case, 10,000 for RSS
    .venv/bin/python bench/bench_batch.py --quick      # 200 items, 2,000 for RSS
    .venv/bin/python bench/bench_batch.py --no-dask    # skip the Dask LocalCluster case

Measures, for a trivial Python script and a trivial bash script (cold starts: warm starts
are bench_warm.py's):
1. local pool (``manager.map``, default workers = CPU count) against serial
   ``manager.execute_skill_script`` in a loop (target: >= 1.8x on 2 cores);
2. per-item overhead of the pool against a plain ``ThreadPoolExecutor`` (same worker count)
   running ``subprocess.run([interp, script], input=b"{}", capture_output=True)``: wall time
   ratio (target <= 1.10), pool and plain interleaved A B B A so load hits both alike; and,
   to tell the batch layer from the executor, the same pool running ``executor.execute``;
3. Dask ``LocalCluster`` (one worker process per CPU, one thread each) against the local pool
   for the same items (target <= 1.5x the wall time; cluster start-up not counted);
4. peak RSS of a fresh process that maps a bash script printing 1 KB over 10,000 items;
5. the code check a local batch makes before EVERY item (``gate.CodeWatch.current``): its
   cost per item on the stat fast path and as the full check (a walk; what every item pays
   while files are younger than ``fingerprint.RACY_NS``), for the bench skill and for one with
   2,000 files; and in a real batch: the bash pool with the check (approved by an approver)
   against the same pool without it (``approver=None``: the caller decided, nothing to
   check), interleaved A B B A (``--check-only`` runs just this case).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.manager import SkillManager  # noqa: E402

SCRIPTS = {"python": "trivial.py", "bash": "trivial.sh"}


def make_skill(root: Path) -> Path:
    base = root / "bench-batch"
    (base / "scripts").mkdir(parents=True)
    (base / "SKILL.md").write_text(  # naming the scripts makes them entry points
        "---\nname: bench-batch\ndescription: bench\n---\n"
        "Run `scripts/trivial.py`, `scripts/trivial.sh` or `scripts/kilobyte.sh`.\n"
    )
    (base / "scripts" / "trivial.py").write_text("print('ok')\n")
    (base / "scripts" / "trivial.sh").write_text("echo ok\n")
    (base / "scripts" / "kilobyte.sh").write_text("printf '%1023s\\n' x\n")
    return base


def serial(manager: SkillManager, script: str, n: int) -> float:
    start = time.perf_counter()
    for i in range(n):
        res = manager.execute_skill_script("bench-batch", script, {"i": i}, approver=None)
        assert res.exit_code == 0, res.stderr
    return time.perf_counter() - start


def pool(manager: SkillManager, script: str, n: int, backend=None) -> float:
    start = time.perf_counter()
    res = manager.map(
        "bench-batch", script, [{"i": i} for i in range(n)], pool=backend, approver=None
    )
    wall = time.perf_counter() - start
    assert res.ok, res.text()
    return wall


def plain(command: list[str], cwd: Path, n: int, workers: int) -> float:
    def one(i: int) -> int:
        payload = json.dumps({"i": i}).encode()
        return subprocess.run(command, input=payload, capture_output=True, cwd=cwd).returncode

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as tp:
        codes = list(tp.map(one, range(n)))
    wall = time.perf_counter() - start
    assert not any(codes)
    return wall


def _run_plain(command: list[str], cwd: str, i: int) -> int:
    payload = json.dumps({"i": i}).encode()
    return subprocess.run(command, input=payload, capture_output=True, cwd=cwd).returncode


def dask_plain(client, command: list[str], cwd: Path, n: int) -> float:
    """Dask itself, no skill_magics: one task per item running subprocess.run (the same
    bounded window of in-flight tasks is not applied: all n are submitted at once)."""
    start = time.perf_counter()
    futures = [client.submit(_run_plain, command, str(cwd), i, pure=False) for i in range(n)]
    codes = client.gather(futures)
    wall = time.perf_counter() - start
    assert not any(codes)
    return wall


def executor_pool(manager: SkillManager, script: str, n: int, workers: int) -> float:
    """A plain ThreadPoolExecutor running the single-run path (executor.execute): what the
    batch layer adds on top of the executor, without it."""
    skill = manager.get_skill("bench-batch")
    rel = f"scripts/{script}"
    ex = manager._executor

    def one(i: int) -> int:
        return ex.execute(rel, {"i": i}, skill.base_dir, skill.metadata).exit_code

    start = time.perf_counter()
    with ThreadPoolExecutor(workers) as tp:
        codes = list(tp.map(one, range(n)))
    wall = time.perf_counter() - start
    assert not any(codes)
    return wall


# VmHWM (peak resident set) of the child itself: ru_maxrss would carry over the parent's
# peak across fork + exec.
RSS_CHILD = """
import sys, time
sys.path.insert(0, {repo!r})
from skill_magics.core.manager import SkillManager

def hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])

manager = SkillManager([{root!r}], warm_start="off")
before = hwm()
start = time.perf_counter()
res = manager.map("bench-batch", "kilobyte", argv=[[str(i)] for i in range({n})], approver=None)
wall = time.perf_counter() - start
after = hwm()
kept = sum(len(item.stdout) for item in res)
print(before, after, wall, res.counts().get("completed", 0), kept)
"""


def check_cost(manager: SkillManager, skill: str, script: str, files: int) -> None:
    """Microseconds per item of the pre-item code check, fast path and full check."""
    request = manager.plan_map(skill, script, [{}]).request
    watch = manager._gate.watch(request)
    reps = 2000 if files < 100 else 200
    assert watch.current()
    start = time.perf_counter()
    for _ in range(reps):
        assert watch.current()
    fast = (time.perf_counter() - start) / reps * 1e6
    fast_full = watch.full_checks - 1
    start = time.perf_counter()
    for _ in range(reps // 10):
        assert manager._gate.is_current(request)
    full = (time.perf_counter() - start) / (reps // 10) * 1e6
    print(
        f"check  {skill} ({files:,} files): per item {fast:.1f} us on the stat fast path "
        f"({fast_full} of {reps} fell back to the full check) | full check {full:.0f} us"
    )


def check_in_batch(manager: SkillManager, n: int, rounds: int = 3) -> None:
    """Wall time of a bash batch with the per-item check against the same batch without."""

    def one(approver) -> float:
        start = time.perf_counter()
        res = manager.map("bench-batch", "trivial.sh", [{}] * n, approver=approver)
        wall = time.perf_counter() - start
        assert res.ok, res.text()
        return wall

    yes = lambda request: "yes_once"  # noqa: E731 - an approver that approves
    checked: list[float] = []
    unchecked: list[float] = []
    for _ in range(rounds):  # A B B A
        checked.append(one(yes))
        unchecked += [one(None), one(None)]
        checked.append(one(yes))
    c, u = sorted(checked)[len(checked) // 2], sorted(unchecked)[len(unchecked) // 2]
    cpus = os.cpu_count() or 1
    print(
        f"check  bash pool, {n} items, medians of {len(checked)}: with the per-item check "
        f"{c:.3f} s, without {u:.3f} s: ratio {c / u:.3f}; per item "
        f"{(c - u) / n * cpus * 1e6:+.0f} us of a worker"
    )


def wide_skill(root: Path, files: int) -> None:
    base = root / "bench-wide"
    (base / "scripts").mkdir(parents=True)
    (base / "SKILL.md").write_text(
        "---\nname: bench-wide\ndescription: bench\n---\nRun `scripts/trivial.sh`.\n"
    )
    (base / "scripts" / "trivial.sh").write_text("echo ok\n")
    for i in range(files):
        folder = base / "data" / f"d{i // 100}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f{i}.txt").write_text("x" * 200)


def aged(root: Path) -> None:
    """Wait until the files just written are older than the racy window (fast path)."""
    from skill_magics.core.base.fingerprint import RACY_NS

    newest = max(p.stat().st_ctime_ns for p in root.rglob("*"))
    time.sleep(max(0.0, (newest + RACY_NS - time.time_ns()) / 1e9 + 0.1))


def rss(root: Path, n: int) -> tuple[float, float, float, int, int]:
    code = RSS_CHILD.format(repo=str(REPO), root=str(root), n=n)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    before, after, wall, done, kept = out.stdout.split()
    return int(before) / 1024, int(after) / 1024, float(wall), int(done), int(kept)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--items", type=int, default=None)
    parser.add_argument("--no-dask", action="store_true")
    parser.add_argument("--only-dask", action="store_true", help="skip serial/plain cases")
    parser.add_argument("--check-only", action="store_true", help="only case 5")
    args = parser.parse_args()
    n = args.items or (200 if args.quick else 1000)
    n_rss = 2000 if args.quick else 10_000
    cpus = os.cpu_count() or 1
    print(f"Python {platform.python_version()}, {cpus} CPUs, load {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = make_skill(root)
        if args.check_only:
            wide_skill(root, 2000)
            manager = SkillManager([root], warm_start="off")  # bench_warm.py measures warm
            aged(root)
            check_cost(manager, "bench-batch", "trivial.sh", 4)
            check_cost(manager, "bench-wide", "trivial.sh", 2002)
            check_in_batch(manager, n)
            return
        manager = SkillManager([root], warm_start="off")  # bench_warm.py measures warm
        manager.audit.clear()
        commands = {
            "python": [sys.executable, str(base / "scripts" / "trivial.py")],
            "bash": ["bash", str(base / "scripts" / "trivial.sh")],
        }
        local: dict[str, float] = {}
        for kind, script in SCRIPTS.items():
            pool(manager, script, min(n, 50))  # warm caches
            if args.only_dask:
                local[kind] = pool(manager, script, n)
                print(f"{kind:6} {n} items: local pool {local[kind]:.2f} s")
                continue
            s = serial(manager, script, n)
            p1 = pool(manager, script, n)
            q1 = plain(commands[kind], base, n, cpus)
            q2 = plain(commands[kind], base, n, cpus)
            p2 = pool(manager, script, n)
            e1 = executor_pool(manager, script, n, cpus)
            p, q = (p1 + p2) / 2, (q1 + q2) / 2
            local[kind] = p
            print(
                f"{kind:6} {n} items: serial {s:.2f} s ({n / s:.0f}/s) | pool {p:.2f} s "
                f"({n / p:.0f}/s; runs {p1:.2f}, {p2:.2f}) | plain TPE+subprocess.run {q:.2f} s "
                f"(runs {q1:.2f}, {q2:.2f})"
            )
            print(
                f"       pool vs serial: {s / p:.2f}x faster (target >= 1.8x) | "
                f"pool / plain: {p / q:.3f} (target <= 1.10) | per item: pool "
                f"{p / n * cpus * 1000:.2f} ms, plain {q / n * cpus * 1000:.2f} ms of a worker"
            )
            print(
                f"       TPE + executor.execute (single-run path, no batch layer): {e1:.2f} s | "
                f"pool / that: {p / e1:.3f} | that / plain: {e1 / q:.3f}"
            )
        if not args.no_dask:
            from distributed import Client, LocalCluster

            t = time.perf_counter()
            with (
                LocalCluster(
                    n_workers=cpus, threads_per_worker=1, processes=True, dashboard_address=None
                ) as cluster,
                Client(cluster) as client,
            ):
                started = time.perf_counter() - t
                for kind, script in SCRIPTS.items():
                    pool(manager, script, min(n, 50), backend=client)  # ship + warm workers
                    d1 = pool(manager, script, n, backend=client)
                    d2 = pool(manager, script, n, backend=client)
                    r1 = dask_plain(client, commands[kind], base, n)
                    d = (d1 + d2) / 2
                    print(
                        f"dask   {kind:6} {n} items on LocalCluster({cpus} workers): {d:.2f} s "
                        f"(runs {d1:.2f}, {d2:.2f}; cluster start {started:.1f} s not counted) "
                        f"| dask / local pool: {d / local.get(kind, float('nan')):.2f} "
                        f"(target <= 1.5) | plain Dask + subprocess.run: {r1:.2f} s "
                        f"(ours / that: {d / r1:.2f})"
                    )
        wide_skill(root, 2000)
        manager = SkillManager([root])  # sees the new skill
        aged(root)
        check_cost(manager, "bench-batch", "trivial.sh", 4)
        check_cost(manager, "bench-wide", "trivial.sh", 2002)
        check_in_batch(manager, n)
        before, after, wall, done, kept = rss(root, n_rss)
        print(
            f"RSS    {n_rss:,} items printing 1 KB (bash): peak RSS {after:.1f} MiB "
            f"(at start {before:.1f} MiB, +{after - before:.1f} MiB); {done:,} completed in "
            f"{wall:.1f} s; {kept / 2**20:.1f} MiB of stdout kept on the result"
        )
    print(
        f"load after: {os.getloadavg()}; ru_maxrss of this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()
