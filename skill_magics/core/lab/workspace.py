"""The evaluation workspace on disk, in the layout the Agent Skills guide and skill-creator use.

::

    <skill>-workspace/
    └── iteration-N/
        ├── eval-<name>/
        │   ├── eval_metadata.json          {eval_id, eval_name, prompt, assertions}
        │   ├── with_skill/
        │   │   └── run-1/
        │   │       ├── eval_metadata.json  (again: skill-creator's viewer looks here)
        │   │       ├── outputs/            the run's working folder: input files, what the
        │   │       │                       scripts wrote, response.md, transcript.md,
        │   │       │                       metrics.json
        │   │       ├── timing.json         {total_tokens, duration_ms, ...}
        │   │       └── grading.json        {expectations: [{text, passed, evidence}], ...}
        │   └── without_skill/ ...
        ├── benchmark.json                  {metadata, runs, run_summary, notes}
        └── benchmark.md

Field names are skill-creator's (``references/schemas.md``); the viewer reads them exactly.
Every file is written whole or not at all and never through a link (core/base/safefs.py).
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from skill_magics.core.base import safefs

ITERATION_RE = re.compile(r"^iteration-(\d+)$")
VIEWER_SKIPS = frozenset({"transcript.md", "user_notes.md", "metrics.json"})  # not outputs


def write_json(path: Path, data: Any) -> Path:
    """``data`` as indented UTF-8 JSON at ``path``, atomically."""
    return write_text(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def write_text(path: Path, text: str) -> Path:
    """``text`` at ``path``, whole or not at all and never through a link: a run's
    ``outputs/`` is the script's to change (core/base/safefs.py)."""
    safefs.write_file(path.parent, path.name, text)
    return path


def new_iteration(workspace: Path) -> Path:
    """Create and return the next ``iteration-N`` folder (1 + the highest there)."""
    workspace.mkdir(parents=True, exist_ok=True)
    taken = [
        int(m.group(1))
        for entry in workspace.iterdir()
        if entry.is_dir() and (m := ITERATION_RE.match(entry.name))
    ]
    number = max(taken, default=0) + 1
    while True:
        path = workspace / f"iteration-{number}"
        try:
            path.mkdir()  # exclusive: a concurrent evaluation takes the next number
            return path
        except FileExistsError:
            number += 1


def slug(text: str, limit: int = 60) -> str:
    """A folder-safe name: lowercase letters, digits and dashes."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return cleaned[:limit].strip("-") or "eval"


def stats(values: Sequence[float]) -> dict[str, float]:
    """mean, sample standard deviation (0 for one value), min and max, rounded to 4."""
    if not values:
        return {"mean": 0.0, "stddev": 0.0, "min": 0.0, "max": 0.0}
    n = len(values)
    mean = sum(values) / n
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return {
        "mean": round(mean, 4),
        "stddev": round(spread, 4),
        "min": round(min(values), 4),
        "max": round(max(values), 4),
    }


def run_summary(rows: Sequence[Mapping[str, Any]], configurations: Sequence[str]) -> dict:
    """``run_summary`` of benchmark.json from its ``runs``: per configuration ``pass_rate``
    (graded runs only; left out when none was graded), ``time_seconds`` and ``tokens``;
    then ``delta`` (first configuration minus second) as signed strings."""
    summary: dict[str, Any] = {}
    for config in configurations:
        mine = [r["result"] for r in rows if r["configuration"] == config]
        entry: dict[str, Any] = {}
        rates = [r["pass_rate"] for r in mine if r["pass_rate"] is not None]
        if rates:
            entry["pass_rate"] = stats(rates)
        entry["time_seconds"] = stats([r["time_seconds"] for r in mine])
        entry["tokens"] = stats([r["tokens"] for r in mine])
        summary[config] = entry
    if len(configurations) >= 2:
        first, second = summary[configurations[0]], summary[configurations[1]]
        delta: dict[str, str] = {}
        if "pass_rate" in first and "pass_rate" in second:
            delta["pass_rate"] = f"{first['pass_rate']['mean'] - second['pass_rate']['mean']:+.2f}"
        delta["time_seconds"] = (
            f"{first['time_seconds']['mean'] - second['time_seconds']['mean']:+.1f}"
        )
        delta["tokens"] = f"{first['tokens']['mean'] - second['tokens']['mean']:+.0f}"
        summary["delta"] = delta
    return summary


def benchmark_markdown(benchmark: Mapping[str, Any]) -> str:
    """A short human-readable ``benchmark.md``."""
    meta = benchmark["metadata"]
    summary = benchmark["run_summary"]
    configs = [k for k in summary if k != "delta"]
    delta = summary.get("delta", {})
    lines = [
        f"# Benchmark: {meta['skill_name']}",
        "",
        f"- model: {meta['executor_model']}",
        f"- grader: {meta.get('analyzer_model') or 'none (not graded)'}",
        f"- date: {meta['timestamp']}",
        f"- evals: {', '.join(map(str, meta['evals_run']))} "
        f"({meta['runs_per_configuration']} runs per configuration)",
        "",
        "| metric | " + " | ".join(configs) + (" | delta |" if delta else " |"),
        "|---" * (len(configs) + 1 + bool(delta)) + "|",
    ]
    for key, label, pct in (
        ("pass_rate", "pass rate", True),
        ("time_seconds", "time (s)", False),
        ("tokens", "tokens", False),
    ):
        cells = []
        for config in configs:
            stat = summary[config].get(key)
            if stat is None:
                cells.append("—")
            elif pct:
                cells.append(f"{stat['mean']:.0%} ± {stat['stddev']:.0%}")
            else:
                cells.append(f"{stat['mean']:,.1f} ± {stat['stddev']:,.1f}")
        row = f"| {label} | " + " | ".join(cells)
        row += f" | {delta.get(key, '—')} |" if delta else " |"
        lines.append(row)
    if benchmark.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {note}" for note in benchmark["notes"]]
    return "\n".join(lines) + "\n"


def output_files(outputs: Path) -> dict[str, tuple[int, int]]:
    """Relative path -> (size, mtime_ns) of every file under ``outputs``."""
    found = {}
    for root, dirs, files in os.walk(outputs):  # never into a linked folder
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            try:
                st = path.lstat()  # a link is not the run's file: never followed
            except OSError:
                continue
            if stat.S_ISREG(st.st_mode):
                found[path.relative_to(outputs).as_posix()] = (st.st_size, st.st_mtime_ns)
    return found


__all__ = [
    "VIEWER_SKIPS",
    "benchmark_markdown",
    "new_iteration",
    "output_files",
    "run_summary",
    "slug",
    "stats",
    "write_json",
    "write_text",
]
