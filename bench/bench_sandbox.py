"""Sandbox benchmark (prints figures; not a test).

    .venv/bin/python bench/bench_sandbox.py             # 200 interleaved runs per case
    .venv/bin/python bench/bench_sandbox.py --runs 60   # a smoke check
    .venv/bin/python bench/bench_sandbox.py --batch 1000  # also a batch (manager.map)

Measures the per-run cost of bubblewrap for a trivial bash script (``echo ok``) through
``ScriptExecutor.execute``: sandbox off vs ``workspace-write`` vs ``read-only``, interleaved in
rotating order so machine load hits every case equally; median and p95 per case and the
sandboxed median minus the unsandboxed one (target: at most +10 ms per run). For reference it
also times bare ``bwrap`` around ``bash`` with ``subprocess.run`` (the floor of any bwrap
wrapper here), with and without ``--new-session``, and the command line ``wrap()`` builds
(only the folders a run is given, core/run/launching/sandbox_mounts.py) against the same namespaces
with the whole filesystem bound read-only (``--ro-bind / /``, the layout before issue 17):
the cost of the mount layout alone. ``--python`` adds a trivial Python script (the kernel's
interpreter: more folders given) off and in ``workspace-write``. With ``--batch N`` it then
runs N items through ``SkillManager.map`` (the local pool, CPU-count workers) with the
sandbox off and ``workspace-write``, alternating, three rounds each: wall time and the
per-item difference.
"""

from __future__ import annotations

import argparse
import os
import platform
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

from skill_magics.core.base.audit import AuditLog  # noqa: E402
from skill_magics.core.base.models import SkillMetadata  # noqa: E402
from skill_magics.core.run.executor import ScriptExecutor  # noqa: E402
from skill_magics.core.run.launching import sandbox as sandboxing  # noqa: E402

TARGET_MS = 10.0


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def load_text() -> str:
    try:
        one, five, fifteen = os.getloadavg()
    except OSError:
        return "load average unknown"
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f}"


def measure(cases: dict[str, Callable[[], object]], runs: int) -> dict[str, list[float]]:
    names = list(cases)
    for _ in range(5):  # warm: interpreter lookup, page cache, the bwrap probe
        for name in names:
            cases[name]()
    times: dict[str, list[float]] = {name: [] for name in names}
    for i in range(runs):
        shift = i % len(names)
        for name in names[shift:] + names[:shift]:  # rotate the order every round
            start = time.perf_counter()
            cases[name]()
            times[name].append((time.perf_counter() - start) * 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200, help="runs per case (default 200)")
    parser.add_argument("--batch", type=int, default=0, help="items of a manager.map batch")
    parser.add_argument("--python", action="store_true", help="also a trivial .py script")
    args = parser.parse_args()
    why = sandboxing.unavailable_reason()
    if why:
        sys.exit(f"bench_sandbox: cannot sandbox here: {why}")
    bwrap = sandboxing.find_bwrap()
    assert bwrap is not None
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python "
        f"{platform.python_version()}, {load_text()} (before)"
    )
    version = subprocess.run([bwrap, "--version"], capture_output=True, text=True).stdout.strip()
    print(f"bubblewrap: {bwrap} ({version})")
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "bench-skill"
        (base / "scripts").mkdir(parents=True)
        (base / "SKILL.md").write_text("---\nname: bench-skill\ndescription: bench\n---\n")
        (base / "scripts" / "trivial.sh").write_text("echo ok\n")
        py_main = 'if __name__ == "__main__":\n    print("ok")\n'
        (base / "scripts" / "trivial.py").write_text(py_main)
        meta = SkillMetadata(name="bench-skill", description="bench", path=base / "SKILL.md")
        workspace = Path(tmp) / "ws"
        workspace.mkdir()
        os.chdir(workspace)
        executor = ScriptExecutor(audit=AuditLog(keep=10))

        def run(mode: str, script: str = "scripts/trivial.sh") -> Callable[[], object]:
            def one() -> None:
                res = executor.execute(script, {}, base, meta, sandbox=mode)
                assert res.stdout == "ok\n", res.stderr

            return one

        bash = shutil.which("bash") or "/bin/bash"
        script = str(base / "scripts" / "trivial.sh")
        bare = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                "--unshare-pid", "--unshare-net", "--die-with-parent"]  # fmt: skip

        def raw(argv: list[str] | tuple[str, ...]) -> Callable[[], object]:
            return lambda: subprocess.run(argv, capture_output=True, check=True)

        # The command line a workspace-write run gets, and the same with / bound read-only
        # instead of the given folders (namespaces, /dev, /proc, private /tmp alike).
        prepared = executor.prepare("scripts/trivial.sh", {}, base, meta, sandbox="workspace-write")
        assert prepared.sandbox_profile is not None
        given = sandboxing.wrap(
            prepared.sandbox_profile, prepared.command, prepared.env, str(prepared.cwd)
        ).argv
        whole = [bwrap, *sandboxing._namespace_args(network=False), "--ro-bind", "/", "/",
                 "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--bind", str(workspace), str(workspace), "--ro-bind", str(base), str(base),
                 "--chdir", str(workspace), "--", *prepared.command]  # fmt: skip

        cases = {
            "off": run("off"),
            "workspace-write": run("workspace-write"),
            "read-only": run("read-only"),
            "raw bash": raw([bash, script]),
            "raw bwrap bash": raw([*bare, "--", bash, script]),
            "raw bwrap --new-session": raw([*bare, "--new-session", "--", bash, script]),
            "raw wrap(): given folders": raw(given),
            "raw bwrap: whole / ro": raw(whole),
        }
        if args.python:
            cases["off (python)"] = run("off", "scripts/trivial.py")
            cases["workspace-write (python)"] = run("workspace-write", "scripts/trivial.py")
        times = measure(cases, args.runs)
        batch = measure_batch(Path(tmp), base, args.batch) if args.batch else {}
    print(f"\nper-run time, {args.runs} rotated runs per case (ms); {load_text()} (after)")
    print(f"   {'case':<26}{'median':>8}{'p95':>8}{'min':>8}")
    for name, values in times.items():
        print(
            f"   {name:<26}{statistics.median(values):8.2f}{percentile(values, 95):8.2f}"
            f"{min(values):8.2f}"
        )
    off = statistics.median(times["off"])
    print("\nsandbox overhead per run (median minus 'off' median)")
    for name in ("workspace-write", "read-only"):
        delta = statistics.median(times[name]) - off
        verdict = "ok" if delta <= TARGET_MS else "MISSED"
        print(f"   {name:<16} +{delta:.2f} ms  (target <= +{TARGET_MS:g} ms) {verdict}")
    raw_delta = statistics.median(times["raw bwrap bash"]) - statistics.median(times["raw bash"])
    session = statistics.median(times["raw bwrap --new-session"]) - statistics.median(
        times["raw bwrap bash"]
    )
    print(f"   bare bwrap around bash: +{raw_delta:.2f} ms; --new-session adds {session:+.2f} ms")
    layout = statistics.median(times["raw wrap(): given folders"]) - statistics.median(
        times["raw bwrap: whole / ro"]
    )
    print(f"   given folders instead of / read-only (raw command lines): {layout:+.2f} ms")
    if args.python:
        py = statistics.median(times["workspace-write (python)"]) - statistics.median(
            times["off (python)"]
        )
        print(f"   workspace-write (python)  +{py:.2f} ms over off (python)")
    if batch:
        print(f"\nbatch of {args.batch} items (manager.map, local pool), 3 rounds; {load_text()}")
        for name, walls in batch.items():
            rounds = ", ".join(f"{w:.2f}" for w in walls)
            print(f"   {name:<16} wall {statistics.median(walls):6.2f} s median ({rounds})")
        extra = statistics.median(batch["workspace-write"]) - statistics.median(batch["off"])
        per_item = extra / args.batch * 1000
        print(f"   sandbox cost in a batch: {per_item:+.2f} ms per item (wall, all workers)")


def measure_batch(tmp: Path, base: Path, items: int) -> dict[str, list[float]]:
    """Wall seconds of ``manager.map`` over ``items`` trivial bash runs, per sandbox mode."""
    from skill_magics.core.manager import SkillManager

    manager = SkillManager([str(base.parent)], approver=None, audit_log=None)
    argv = [["x"] for _ in range(items)]
    walls: dict[str, list[float]] = {"off": [], "workspace-write": []}
    manager.map("bench-skill", "trivial", argv=argv[:20], sandbox="workspace-write")  # warm
    for _ in range(3):
        for mode in walls:
            started = time.perf_counter()
            result = manager.map("bench-skill", "trivial", argv=argv, sandbox=mode)
            walls[mode].append(time.perf_counter() - started)
            assert result.counts().get("completed") == items, result.counts()
    return walls


if __name__ == "__main__":
    main()
