#!/usr/bin/env python3
"""Print N megabytes to stdout ({"mb": N}, default 20) to show output capping."""

import json
import sys

args = json.loads(sys.stdin.read() or "{}")
total = int(float(args.get("mb", 20)) * 1024 * 1024)
line = b"0123456789abcdef" * 4 + b"\n"  # 65 bytes
chunk = line * 1008  # ~64 KiB per write
out = sys.stdout.buffer
written = 0
while written + len(chunk) <= total:
    out.write(chunk)
    written += len(chunk)
out.write((line * (total // len(line) + 1))[: total - written])
out.flush()
print(f"flood wrote {total} bytes", file=sys.stderr)
