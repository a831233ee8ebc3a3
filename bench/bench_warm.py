"""Warm start benchmark (prints figures; not a test). docs/architecture.md, *Warm start*.

    .venv/bin/python bench/bench_warm.py            # the default sizes (a few minutes)
    .venv/bin/python bench/bench_warm.py --quick    # fewer runs, for a smoke check
    .venv/bin/python bench/bench_warm.py --full     # the cold batch at 1,000 rows too (slow)
    .venv/bin/python bench/bench_warm.py --bash     # only section 5 (full sizes, ~15 s)

Side by side, in one process, every ratio from runs interleaved (A B B A) so the machine's
load hits both sides alike:

1. a script importing pandas, per run (median wall time of ``execute_skill_script``):
   warm vs cold (target >= 20x); the same in a ``workspace-write`` sandbox (no target: the
   run's own namespaces and mounts cost a few forks and mounts more);
2. a 1,000-row ``map`` of that script on 2 workers, items per second warm vs cold (target
   >= 20x; the cold rate is measured on ``--cold-rows`` rows, 1,000 with ``--full``);
3. a warm run against the bare minimum: ``os.fork()`` + ``runpy.run_path`` in this process,
   which has imported pandas too, with pipes for stdin/stdout/stderr (target <= 1.5x);
4. memory: RSS of the server, and RSS and PSS of a run (what it really adds: PSS counts
   pages shared with the server in part);
5. bash: ``execute_skill_script`` against a bare ``subprocess.run`` (target <= 1.10x), and a
   1,000-item bash ``map`` on 2 workers against the serial loop (target >= 1.8x).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.run.launching import warm  # noqa: E402

PANDAS_SCRIPT = """\
import json, os, sys
import pandas as pd

row = json.load(sys.stdin)
frame = pd.DataFrame([row])
frame["total"] = frame["price"] * frame["qty"]
print(frame.to_json(orient="records"))
if os.environ.get("BENCH_MEMORY"):
    def field(path, name):
        with open(path) as fh:
            for line in fh:
                if line.startswith(name):
                    return int(line.split()[1]) * 1024
    print(json.dumps({"rss": field("/proc/self/status", "VmRSS:"),
                      "pss": field("/proc/self/smaps_rollup", "Pss:")}))
"""


def make_skill(root: Path) -> Path:
    base = root / "bench-warm"
    (base / "scripts").mkdir(parents=True)
    (base / "SKILL.md").write_text(
        "---\nname: bench-warm\ndescription: bench\n---\n"
        "Run `scripts/total.py` (a row on stdin) or `scripts/trivial.sh`.\n"
    )
    (base / "scripts" / "total.py").write_text(PANDAS_SCRIPT)
    (base / "scripts" / "trivial.sh").write_text("echo ok\n")
    return base


def load() -> str:
    one, five, _ = os.getloadavg()
    return f"load {one:.2f}/{five:.2f}"


def median_ms(times: list[float]) -> float:
    return statistics.median(times) * 1000


def interleaved(a: Callable[[], object], b: Callable[[], object], runs: int) -> tuple:
    """Wall times of ``a`` and ``b``, run A B B A ... so load hits both alike."""
    ta: list[float] = []
    tb: list[float] = []
    for i in range(runs):
        for fn in (a, b) if i % 2 == 0 else (b, a):
            start = time.perf_counter()
            fn()
            (ta if fn is a else tb).append(time.perf_counter() - start)
    return ta, tb


ROW = {"item": "widget", "price": 2.5, "qty": 4}


def per_run(manager: SkillManager, runs: int) -> dict[str, float]:
    def cold() -> None:
        res = manager.execute_skill_script("bench-warm", "total", ROW, approver=None, warm=False)
        assert res.exit_code == 0 and res.start == "cold", res.stderr

    def hot() -> None:
        res = manager.execute_skill_script("bench-warm", "total", ROW, approver=None, warm=True)
        assert res.exit_code == 0 and res.start == "warm", res.start_note or res.stderr

    hot()  # the server is up (its start is not a run's cost here)
    t_cold, t_warm = interleaved(cold, hot, runs)
    # The warm side gets more samples: its median is the figure that matters.
    t_warm += interleaved(hot, hot, runs * 2)[0]
    return {"cold": median_ms(t_cold), "warm": median_ms(t_warm)}


def batch_rate(manager: SkillManager, rows: int, warm_start: bool) -> float:
    items = [{"item": f"w{i}", "price": i * 0.5, "qty": i % 7} for i in range(rows)]
    start = time.perf_counter()
    res = manager.map("bench-warm", "total", items, max_workers=2, approver=None, warm=warm_start)
    seconds = time.perf_counter() - start
    assert res.counts() == {"completed": rows}, res.text()
    starts = {item.result.start for item in res}
    assert starts == {"warm" if warm_start else "cold"}, starts
    return rows / seconds


def bare_fork(script: str, runs: int) -> list[float]:
    """fork + runpy.run_path in this process (pandas imported): stdin/stdout/stderr pipes,
    read to EOF, waitpid; the child ends with os._exit after flushing."""
    import pandas  # noqa: F401 - the same preload the server has

    payload = json.dumps(ROW).encode()
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        in_r, in_w = os.pipe()
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.dup2(in_r, 0)
            os.dup2(out_w, 1)
            os.dup2(err_w, 2)
            os.closerange(3, 4096)
            sys.stdin = open(0, closefd=False)  # noqa: SIM115
            sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
            sys.argv = [script]
            try:
                runpy.run_path(script, run_name="__main__")
            finally:
                sys.stdout.flush()
                os._exit(0)
        for fd in (in_r, out_w, err_w):
            os.close(fd)
        os.write(in_w, payload)
        os.close(in_w)
        while os.read(out_r, 65536):
            pass
        while os.read(err_r, 65536):
            pass
        os.close(out_r)
        os.close(err_r)
        os.waitpid(pid, 0)
        times.append(time.perf_counter() - start)
    return times


def memory(manager: SkillManager) -> dict[str, float]:
    os.environ["BENCH_MEMORY"] = "1"
    try:
        manager.configure(env_passthrough=["BENCH_MEMORY"])
        res = manager.execute_skill_script("bench-warm", "total", ROW, approver=None, warm=True)
        assert res.start == "warm", res.start_note
        run = json.loads(res.stdout.splitlines()[-1])
        server = max(warm.servers(), key=lambda s: s.rss_bytes)
    finally:
        del os.environ["BENCH_MEMORY"]
        manager.configure(env_passthrough=[])
    return {"server_rss": server.rss_bytes, "run_rss": run["rss"], "run_pss": run["pss"]}


def bash(manager: SkillManager, base: Path, runs: int, items: int) -> dict[str, float]:
    interp = shutil.which("bash")
    script = str(base / "scripts" / "trivial.sh")
    data = json.dumps({"x": 1}).encode()
    executor = manager._executor
    meta = manager.get_skill("bench-warm").metadata

    def raw() -> None:
        subprocess.run([interp, script], input=data, capture_output=True, cwd=base)

    def ours() -> None:  # the executor, as bench_executor.py measures it
        executor.execute("scripts/trivial.sh", {"x": 1}, base, meta)

    def whole() -> None:  # the whole public path: plan, call site, executor
        manager.execute_skill_script("bench-warm", "trivial.sh", {"x": 1}, approver=None)

    for _ in range(20):
        raw()
        ours()
        whole()
    t_raw, t_ours = interleaved(raw, ours, runs)
    t_raw2, t_whole = interleaved(raw, whole, runs)

    def serial() -> None:
        for i in range(items):
            manager.execute_skill_script("bench-warm", "trivial.sh", {"i": i}, approver=None)

    def pool() -> None:
        res = manager.map(
            "bench-warm",
            "trivial.sh",
            [{"i": i} for i in range(items)],
            max_workers=2,
            approver=None,
        )
        assert res.counts() == {"completed": items}

    t_serial, t_pool = interleaved(serial, pool, 2)
    return {
        "raw": median_ms(t_raw),
        "ours": median_ms(t_ours),
        "raw2": median_ms(t_raw2),
        "whole": median_ms(t_whole),
        "serial": statistics.mean(t_serial),
        "pool": statistics.mean(t_pool),
    }


def verdict(ok: bool) -> str:
    return "ok" if ok else "MISSED"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs (smoke check)")
    parser.add_argument("--full", action="store_true", help="the cold batch at 1,000 rows")
    parser.add_argument("--runs", type=int, help="per-run samples (default 20; quick 6)")
    parser.add_argument("--cold-rows", type=int, help="rows of the cold batch (default 60)")
    parser.add_argument("--bash", action="store_true", help="only section 5 (bash)")
    args = parser.parse_args()
    runs = args.runs or (6 if args.quick else 20)
    rows = 200 if args.quick else 1000
    cold_rows = args.cold_rows or (rows if args.full else (20 if args.quick else 60))
    bash_runs, bash_items = (60, 200) if args.quick else (300, 1000)

    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, {load()} (shared with other sessions)"
    )
    with tempfile.TemporaryDirectory() as tmp:
        base = make_skill(Path(tmp))
        manager = SkillManager([tmp], run_cwd="skill", warm_start="on")
        try:
            if not args.bash:
                pandas_sections(manager, base, tmp, runs, rows, cold_rows)
            b = bash(manager, base, bash_runs, bash_items)
            ratio = b["ours"] / b["raw"]
            speedup = b["serial"] / b["pool"]
            print(f"\n5. bash ({load()})")
            print(
                f"   ScriptExecutor.execute {b['ours']:.2f} ms vs subprocess.run {b['raw']:.2f} "
                f"ms · {ratio:.3f}x (target <= 1.10x: {verdict(ratio <= 1.10)})"
            )
            print(
                f"   (manager.execute_skill_script, plan + call site + executor: "
                f"{b['whole']:.2f} ms vs {b['raw2']:.2f} ms · {b['whole'] / b['raw2']:.3f}x)"
            )
            print(
                f"   {bash_items:,} items: serial {b['serial']:.2f} s · map on 2 workers "
                f"{b['pool']:.2f} s · {speedup:.2f}x (target >= 1.8x: {verdict(speedup >= 1.8)})"
            )
        finally:
            warm.stop_servers()
    print(f"\n{load()}")


def pandas_sections(
    manager: SkillManager, base: Path, tmp: str, runs: int, rows: int, cold_rows: int
) -> None:
    """Sections 1-4: the pandas script cold and warm, its batch, the bare fork, memory."""
    t = per_run(manager, runs)
    ratio = t["cold"] / t["warm"]
    print(f"\n1. pandas script per run ({runs} cold, {runs * 5} warm; {load()})")
    print(
        f"   cold {t['cold']:.1f} ms · warm {t['warm']:.2f} ms · {ratio:.1f}x "
        f"(target >= 20x: {verdict(ratio >= 20)})"
    )

    from skill_magics.core.run.launching.sandbox import unavailable_reason

    if not unavailable_reason():
        boxed = SkillManager([tmp], run_cwd="skill", warm_start="on", sandbox="workspace-write")
        here = os.getcwd()
        os.chdir(tmp)  # the workspace: the temp folder, never the repository
        try:
            t = per_run(boxed, max(4, runs // 2))
        finally:
            os.chdir(here)
        print(
            f"   sandboxed (workspace-write): cold {t['cold']:.1f} ms · warm "
            f"{t['warm']:.2f} ms · {t['cold'] / t['warm']:.1f}x"
        )

    hot = batch_rate(manager, rows, True)
    cold = batch_rate(manager, cold_rows, False)
    hot2 = batch_rate(manager, rows, True)
    hot = (hot + hot2) / 2
    ratio = hot / cold
    print(f"\n2. map of the pandas script on 2 workers ({load()})")
    print(
        f"   cold {cold:.1f} items/s ({cold_rows} rows) · warm {hot:.0f} items/s "
        f"({rows} rows, twice) · {ratio:.1f}x (target >= 20x: {verdict(ratio >= 20)})"
    )

    script = str(base / "scripts" / "total.py")
    t_bare = bare_fork(script, runs * 3)

    def hot_run() -> None:
        manager.execute_skill_script("bench-warm", "total", ROW, approver=None, warm=True)

    t_ours = interleaved(hot_run, hot_run, runs * 3)[0]
    t_bare += bare_fork(script, runs * 3)
    ratio = median_ms(t_ours) / median_ms(t_bare)
    print(f"\n3. warm run vs bare fork + runpy.run_path in one process ({load()})")
    print(
        f"   bare {median_ms(t_bare):.2f} ms · warm run {median_ms(t_ours):.2f} ms · "
        f"{ratio:.2f}x (target <= 1.5x: {verdict(ratio <= 1.5)})"
    )

    m = memory(manager)
    print("\n4. memory")
    print(
        f"   server RSS {m['server_rss'] / 2**20:.0f} MiB · a run: RSS "
        f"{m['run_rss'] / 2**20:.0f} MiB, PSS {m['run_pss'] / 2**20:.1f} MiB "
        "(most of its RSS is the server's pages, shared)"
    )


if __name__ == "__main__":
    main()
