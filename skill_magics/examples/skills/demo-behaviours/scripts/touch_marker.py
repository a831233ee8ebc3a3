#!/usr/bin/env python3
"""Write a marker file at the path given as {"path": "..."}: proof that the script ran."""

import datetime
import json
import os
import sys

args = json.loads(sys.stdin.read() or "{}")
path = args.get("path")
if not path:
    sys.exit('pass {"path": "/some/where/marker"} as JSON on stdin')
with open(path, "w", encoding="utf-8") as fh:
    fh.write(f"ran at {datetime.datetime.now().isoformat()} pid {os.getpid()}\n")
print(json.dumps({"marker": os.path.abspath(path)}))
