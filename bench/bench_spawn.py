"""What a cold run's start costs in a kernel that holds memory (prints figures; not a test).

    .venv/bin/python bench/bench_spawn.py            # 0, 400 and 2000 MiB held, 40 pairs each
    .venv/bin/python bench/bench_spawn.py --quick    # 0 and 400 MiB, 10 pairs

A run with a cgroup of its own (core/run/launching/cgroups.py) used to join it from the child,
in Popen's preexec_fn: Popen then fork()s the kernel, copying its page tables, instead of
vfork()ing. Now it starts held (core/run/launching/process/spawn.py): /bin/sh, moved into the
cgroup by the kernel, then exec'd into the command. Both ways side by side, in pairs (AB BA
...) so load hits both alike: wall and CPU (this process and its children) per run of
``/bin/true`` through ``run_process``, medians, and the ratio fork / held.
"""

from __future__ import annotations

import argparse
import importlib
import resource
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.run.launching.cgroups import RUN_CGROUPS  # noqa: E402
from skill_magics.core.run.launching.process import run_process  # noqa: E402

spawn = importlib.import_module("skill_magics.core.run.launching.process.spawn")
MiB = 2**20


def _cpu() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def one(held: bool) -> tuple[float, float]:
    """(wall s, CPU s) of one run, started held or joined from the child."""
    spawn._held_ok = _HELD_OK if held else (lambda command, env: False)
    cpu, start = _cpu(), time.perf_counter()
    out = run_process(
        ["/bin/true"], cwd="/", env={"PATH": "/usr/bin:/bin"}, payload=b"{}",
        timeout=30, max_output_size=1000,
    )  # fmt: skip
    assert out.returncode == 0
    return time.perf_counter() - start, _cpu() - cpu


_HELD_OK = spawn._held_ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="0 and 400 MiB, 10 pairs")
    args = parser.parse_args()
    if RUN_CGROUPS.base() is None:
        print(f"no run cgroups here ({RUN_CGROUPS.why_not}): every run starts by vfork already")
        return
    sizes, pairs = ([0, 400], 10) if args.quick else ([0, 400, 2000], 40)
    can = _HELD_OK(["/bin/true"], {})
    print(f"/bin/true through run_process, {pairs} pairs per size; held start here: {can}")
    head = ("held MiB", "held wall", "fork wall", "ratio", "held cpu", "fork cpu")
    print("{:>9} {:>10} {:>10} {:>6} {:>9} {:>9}".format(*head))
    ballast = bytearray()
    for size in sizes:
        ballast = bytearray(size * MiB)
        for i in range(0, len(ballast), 4096):  # touched: resident, as a kernel's data is
            ballast[i] = 1
        got: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
        for n in range(pairs):
            for held in (True, False) if n % 2 == 0 else (False, True):
                got[held].append(one(held))
        hw = statistics.median(w for w, _ in got[True])
        fw = statistics.median(w for w, _ in got[False])
        hc = statistics.median(c for _, c in got[True])
        fc = statistics.median(c for _, c in got[False])
        print(
            f"{size:>9} {hw * 1000:>8.1f}ms {fw * 1000:>8.1f}ms {fw / hw:>6.1f} "
            f"{hc * 1000:>7.1f}ms {fc * 1000:>7.1f}ms"
        )
    spawn._held_ok = _HELD_OK
    del ballast


if __name__ == "__main__":
    main()
