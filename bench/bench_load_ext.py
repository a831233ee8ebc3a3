"""How long ``%load_ext skill_magics`` takes in a fresh IPython process (target < 150 ms).

Each sample is a new Python process: IPython's InteractiveShell is created first (not timed,
every notebook has one already), then ``%load_ext skill_magics`` is timed with
``time.perf_counter``. The child also reports which heavy modules the load imported:
ipywidgets must not be among them (it loads on the first approval panel or result view).

Usage: .venv/bin/python bench/bench_load_ext.py [--runs 20] [--python PATH]
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
    "skill_magics.core.executor",
    "skill_magics.notebook.approval_ui",
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="fresh processes to time")
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
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
