#!/usr/bin/env python3
"""Sleep for N seconds ({"seconds": N}, default 5), printing a line every second."""

import json
import sys
import time

args = json.loads(sys.stdin.read() or "{}")
seconds = float(args.get("seconds", 5))
start = time.monotonic()
tick = 0
while (elapsed := time.monotonic() - start) < seconds:
    print(f"tick {tick}: {elapsed:.1f}s of {seconds:g}s", flush=True)
    tick += 1
    time.sleep(min(1.0, max(0.0, seconds - elapsed)))
print(json.dumps({"slept": round(time.monotonic() - start, 3)}), flush=True)
