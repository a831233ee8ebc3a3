#!/usr/bin/env python3
"""Profile CSV data column by column and print the profile as JSON.

Reads JSON on stdin: {"csv": "<text>"} or {"path": "mine.csv"}, with optional "delimiter"
and "top". Flag --top N overrides "top". A relative path is looked up in the folder the run
starts in (the caller's: a notebook's folder), then in the skill folder (its bundled
data/sample.csv); a path outside both is refused.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import re
import sys
from collections import Counter

NULLS = {"", "na", "n/a", "null", "none", "nan", "-"}
BOOLS = {"true", "false", "yes", "no"}
DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def guess(value: str) -> str:
    low = value.lower()
    if low in BOOLS:
        return "boolean"
    try:
        int(value)
        return "integer"
    except ValueError:
        pass
    try:
        float(value)
        return "float"
    except ValueError:
        pass
    return "date" if DATE_RE.match(value) else "string"


def column_type(types: set[str]) -> str:
    if not types:
        return "empty"
    if len(types) == 1:
        return types.pop()
    if types <= {"integer", "float"}:
        return "float"
    return "string"


def profile_column(name: str, values: list[str], top: int) -> dict:
    present = [v.strip() for v in values if v.strip().lower() not in NULLS]
    kind = column_type({guess(v) for v in present})
    out = {"name": name, "count": len(present), "nulls": len(values) - len(present), "type": kind}
    if kind in ("integer", "float"):
        numbers = [float(v) for v in present]
        cast = int if kind == "integer" else float
        out["min"] = cast(min(numbers))
        out["max"] = cast(max(numbers))
        out["mean"] = round(sum(numbers) / len(numbers), 6)
    elif kind == "date":
        out["min"], out["max"] = min(present), max(present)
    out["unique"] = len(set(present))
    out["top"] = dict(Counter(present).most_common(top))
    return out


def load_text(args: dict) -> str:
    if "csv" in args:
        return str(args["csv"])
    if "path" in args:
        with open(find_file(str(args["path"])), encoding="utf-8-sig", newline="") as fh:
            return fh.read()
    sys.exit('pass {"csv": "<text>"} or {"path": "mine.csv"} as JSON on stdin')


def find_file(path: str) -> str:
    """``path`` in the run's folder (the caller's), else in the skill folder; refused outside
    both, so a caller (or a model) cannot make the profiler read the rest of the disk."""
    folders = [os.path.realpath(os.getcwd())]
    skill = os.environ.get("SKILL_BASE_DIR")
    if skill and os.path.realpath(skill) not in folders:
        folders.append(os.path.realpath(skill))
    for base in folders:
        target = os.path.realpath(os.path.join(base, path))
        inside = any(os.path.commonpath([f, target]) == f for f in folders)
        if inside and os.path.isfile(target):
            return target
    sys.exit(
        f"no file {path!r} in {' or '.join(folders)}: pass a path inside your folder "
        '(e.g. {"path": "mine.csv"}) or the CSV text as {"csv": ...}'
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--top", type=int, default=None, help="frequent values to show")
    flags = parser.parse_args()
    raw = sys.stdin.read().strip() or "{}"
    try:
        args = json.loads(raw)
    except json.JSONDecodeError as exc:
        sys.exit(f'stdin is not JSON ({exc}); send an object like {{"path": "data/sample.csv"}}')
    if not isinstance(args, dict):
        sys.exit("stdin JSON must be an object")
    text = load_text(args)
    top = flags.top if flags.top is not None else int(args.get("top", 5))
    delimiter = args.get("delimiter")
    if not delimiter:
        try:
            delimiter = csv.Sniffer().sniff(text[:4096], delimiters=",;\t|").delimiter
        except csv.Error:
            delimiter = ","
    rows = list(csv.reader(io.StringIO(text), delimiter=delimiter))
    if not rows:
        print(json.dumps({"rows": 0, "columns": []}))
        return
    header, data = rows[0], rows[1:]
    columns = []
    for i, name in enumerate(header):
        values = [row[i] if i < len(row) else "" for row in data]
        columns.append(profile_column(name, values, top))
    print(json.dumps({"rows": len(data), "columns": columns}, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
