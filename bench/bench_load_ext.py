"""How long ``%load_ext skill_magics`` takes in a fresh IPython process (target < 150 ms).

Each sample is a new Python process: IPython's InteractiveShell is created first (not timed,
every notebook has one already), then ``%load_ext skill_magics`` is timed with
``time.perf_counter``. The child also reports which heavy modules the load imported:
ipywidgets must not be among them (it loads on the first approval panel or result view).

A second figure times the same call inside real, freshly started ipykernel processes (what a
notebook user sees; asyncio and friends are already imported there).

Usage: .venv/bin/python bench/bench_load_ext.py [--runs 20] [--kernels 5] [--python PATH]
Exit code 1 when the median misses the target or ipywidgets was imported.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_MS = 150.0
WATCHED = (
    "ipywidgets",
    "skill_magics.core.run.executor",
    "skill_magics.notebook.approval.panel",
    "skill_magics.notebook.result",
    "yaml",
    "langchain_core",
)

CHILD = r"""
import json, sys, time
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
before = set(sys.modules)
start = time.perf_counter()
shell.run_line_magic("load_ext", "skill_magics")
elapsed = (time.perf_counter() - start) * 1000
new = set(sys.modules) - before
watched = WATCHED
print(json.dumps({
    "ms": elapsed,
    "new_modules": len(new),
    "loaded": [m for m in watched if m in sys.modules],
    "magics": sorted(shell.magics_manager.magics["line"].keys() & {"skills", "skill_context"}),
}))
"""


def sample(python: str, env: dict[str, str]) -> dict:
    code = CHILD.replace("WATCHED", repr(WATCHED))
    out = subprocess.run(
        [python, "-c", code], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    if out.returncode != 0:
        raise SystemExit(f"child failed (exit {out.returncode}): {out.stderr.strip()[-500:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


KERNEL_CELL = """\
import sys, time
_before = "ipywidgets" in sys.modules
_t = time.perf_counter()
get_ipython().run_line_magic("load_ext", "skill_magics")
print((time.perf_counter() - _t) * 1000, _before, "ipywidgets" in sys.modules)
"""


def kernel_samples(count: int, python: str) -> list[tuple[float, bool]]:
    """(ms, ipywidgets imported by the load) in ``count`` fresh kernels."""
    sys.path.insert(0, str(REPO_ROOT / "tests"))
    from kernel_fixtures import start_kernel

    samples = []
    for _ in range(count):
        with start_kernel(python) as k:
            r = k.execute(KERNEL_CELL)
            if not r.ok:
                raise SystemExit(f"kernel sample failed: {r.error_text}")
            ms, before, after = r.stdout.split()
            samples.append((float(ms), after == "True" and before == "False"))
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="fresh processes to time")
    parser.add_argument("--kernels", type=int, default=5, help="fresh kernels to time (0: skip)")
    parser.add_argument("--python", default=sys.executable, help="interpreter to measure")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="bench-load-ext-") as tmp:
        env = dict(os.environ)
        env["IPYTHONDIR"] = tmp  # no profile/startup files of the developer
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
        sample(args.python, env)  # warm the page cache and .pyc files; not counted
        results = [sample(args.python, env) for _ in range(args.runs)]

    times = sorted(r["ms"] for r in results)
    median = statistics.median(times)
    p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
    loaded = sorted({m for r in results for m in r["loaded"]})
    magics = results[-1]["magics"]
    print(f"%load_ext skill_magics, {args.runs} fresh processes ({args.python})")
    print(f"  median {median:.1f} ms  min {times[0]:.1f} ms  p90 {p90:.1f} ms  max {times[-1]:.1f}")
    print(f"  target < {TARGET_MS:.0f} ms: {'OK' if median < TARGET_MS else 'MISSED'}")
    print(
        f"  modules imported by the load (median count): "
        f"{statistics.median(r['new_modules'] for r in results):.0f}"
    )
    print(f"  watched heavy modules loaded: {', '.join(loaded) or 'none'}")
    print(f"  ipywidgets imported: {'YES (should not be)' if 'ipywidgets' in loaded else 'no'}")
    print(f"  line magics registered: {', '.join(magics)}")
    ok = median < TARGET_MS and "ipywidgets" not in loaded and "skills" in magics
    if args.kernels:
        kernel = kernel_samples(args.kernels, args.python)
        kernel_ms = sorted(ms for ms, _ in kernel)
        widgets = any(w for _, w in kernel)
        print(f"%load_ext skill_magics inside {args.kernels} fresh ipykernel processes")
        print(
            f"  median {statistics.median(kernel_ms):.1f} ms  min {kernel_ms[0]:.1f} ms  "
            f"max {kernel_ms[-1]:.1f} ms; ipywidgets imported: {'YES' if widgets else 'no'}"
        )
        ok = ok and statistics.median(kernel_ms) < TARGET_MS and not widgets
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
