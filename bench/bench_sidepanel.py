"""Does a run cost more with the Skills side panel open? (issue 42)

One real kernel (jupyter_client, as JupyterLab starts it) runs the same pre-approved
``%%skillrun`` cell again and again, in rounds that alternate:

- closed: nobody asks the kernel's side panel channel anything;
- open: a thread asks ``state`` (what the tab polls) every POLL_S seconds, as the open tab
  does (1.5 s), and ``--stress`` asks 10 times a second on top.

Prints the median wall time of a cell per mode and the ratio open / closed (1.00: no cost),
and how many state requests the kernel answered. Rounds alternate so a busy machine slows
both modes alike.

Usage: .venv/bin/python bench/bench_sidepanel.py [--cells 20] [--rounds 3] [--stress]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))
sys.path.insert(0, str(REPO_ROOT / "tests"))

POLL_S = 1.5  # labextension/src/index.ts: POLL_MS


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=20, help="cells per round and mode")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--stress", action="store_true", help="also poll 10 times a second")
    opts = parser.parse_args()

    from kernel_fixtures import start_kernel

    from skill_magics.core.panel import channel

    work = Path(tempfile.mkdtemp(prefix="bench-side-"))
    cell = "%%skillrun demo-behaviours.touch_marker\n" + json.dumps({"path": str(work / "m")})
    times: dict[str, list[float]] = {"closed": [], "open": []}
    answered = 0
    try:
        with start_kernel(cwd=work) as k:
            setup = "%load_ext skill_magics\n%skills add --examples\n"
            setup += "%config SkillMagics.auto_approve = 'demo-behaviours'"
            assert k.execute(setup).ok
            assert k.execute(cell).ok  # warm up: the manager, the first run
            cf, key = k.km.connection_file, k.km.session.key
            for _round in range(opts.rounds):
                for mode in ("closed", "open"):
                    stop = threading.Event()
                    pollers: list[threading.Thread] = []
                    counts = [0]

                    def poll(every: float, stop: threading.Event = stop, n: list = counts) -> None:
                        # At once, then every `every` s, as an opened tab does: a round of
                        # 20 cells is shorter than one 1.5 s wait, and asked nothing.
                        while True:
                            channel.ask(cf, key, "state")
                            n[0] += 1
                            if stop.wait(every):
                                return

                    if mode == "open":
                        rates = [POLL_S] + ([0.1] if opts.stress else [])
                        pollers = [threading.Thread(target=poll, args=(r,)) for r in rates]
                        for t in pollers:
                            t.start()
                    for _ in range(opts.cells):
                        start = time.perf_counter()
                        r = k.execute(cell)
                        times[mode].append((time.perf_counter() - start) * 1000)
                        assert r.ok, r.error_text
                    stop.set()
                    for t in pollers:
                        t.join()
                    answered += counts[0]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    closed, opened = statistics.median(times["closed"]), statistics.median(times["open"])
    label = "open (1.5 s poll" + (" + 10/s stress)" if opts.stress else ")")
    print(f"cells per mode: {len(times['closed'])}, cpus: {os.cpu_count()}")
    print(f"median cell, panel closed: {closed:8.1f} ms")
    print(f"median cell, panel {label}: {opened:8.1f} ms")
    print(f"ratio open / closed: {opened / closed:.2f}   (state requests answered: {answered})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
