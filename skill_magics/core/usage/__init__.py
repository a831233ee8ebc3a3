"""What skills did, from the audit log: runs per skill and script, decisions, failure rate,
median and p95 duration, cold vs warm, last run (``%skills usage``, ``manager.usage()``).

The audit log (core/base/audit.py) holds one record per attempt and per decision. The rows
are read from its JSON-lines file when one is configured (every session that wrote it, at
most :data:`MAX_RECORDS` of the newest), else from the session's records in memory. Nothing
is run or asked. The chart is :func:`skill_magics.core.usage.chart.usage_chart`.

Example:
    >>> from skill_magics.core.base.audit import AuditLog
    >>> log = AuditLog()
    >>> _ = log.event("csv", "scripts/p.py", "", "completed", exit_code=0, duration_ms=40.0)
    >>> _ = log.event("csv", "scripts/p.py", "", "failed", exit_code=1, duration_ms=60.0)
    >>> (row,) = usage_rows(log)
    >>> row.runs, row.failed, row.failure_rate, row.median_ms
    (2, 1, 0.5, 50.0)
"""

from __future__ import annotations

import json
import math
import os
import re
import statistics
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.status import AuditOutcome

MAX_RECORDS = 200_000  # of an audit file: the newest are kept (bounded memory)

RUN_OUTCOMES = frozenset(
    {
        AuditOutcome.COMPLETED,
        AuditOutcome.FAILED,
        AuditOutcome.TIMEOUT,
        AuditOutcome.SIGNALED,
        AuditOutcome.INTERRUPTED,
    }
)
FAILED_OUTCOMES = frozenset({AuditOutcome.FAILED, AuditOutcome.TIMEOUT, AuditOutcome.SIGNALED})
# The decisions a record can tell (a "Yes in session" that covered a run is not audited).
DECISIONS = {
    AuditOutcome.APPROVED: "approved",
    AuditOutcome.DECLINED: "declined",
    AuditOutcome.REFUSED: "refused",
    AuditOutcome.APPROVAL_UNAVAILABLE: "unavailable",
}

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


@dataclass
class UsageRow:
    """One skill's script: how often it ran and how it went."""

    skill: str
    script: str
    runs: int = 0  # processes that started (completed, failed, timed out, signaled, stopped)
    completed: int = 0
    failed: int = 0  # non-zero exit, timeout or signal
    interrupted: int = 0
    approved: int = 0
    declined: int = 0
    refused: int = 0
    unavailable: int = 0  # nobody could be asked
    cold: int = 0
    warm: int = 0
    median_ms: float | None = None
    p95_ms: float | None = None
    last_run: str = ""  # ISO 8601, UTC: the newest record of it (a run or a decision)
    durations: list[float] = field(default_factory=list, repr=False)

    @property
    def failure_rate(self) -> float | None:
        """Failed runs over runs (None: it never ran)."""
        return round(self.failed / self.runs, 4) if self.runs else None

    def as_dict(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "durations"}
        data["failure_rate"] = self.failure_rate
        return data


COLUMNS = tuple(f.name for f in fields(UsageRow) if f.name != "durations") + ("failure_rate",)


def parse_since(
    since: str | datetime | timedelta | None, now: datetime | None = None
) -> datetime | None:
    """``--since``: ``30m``, ``12h``, ``7d``, ``2w``, an ISO date or time, a datetime or a
    timedelta; None: everything. A bad value raises ValueError naming the forms.

    >>> parse_since("2026-11-01").isoformat()
    '2026-11-01T00:00:00+00:00'
    """
    if since is None or since == "":
        return None
    now = now or datetime.now(UTC)
    if isinstance(since, timedelta):
        return now - since
    if isinstance(since, datetime):
        return since if since.tzinfo else since.replace(tzinfo=UTC)
    text = str(since)
    found = _SINCE.match(text)
    if found:
        return now - timedelta(seconds=float(found[1]) * _UNITS[found[2]])
    try:
        when = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"--since {text!r} is not a time: use 30m, 12h, 7d, 2w or a date like 2026-11-01"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def records(audit: AuditLog) -> Iterator[dict[str, Any]]:
    """The audit's records as dicts: its file when it has one, else those in memory."""
    path = audit.jsonl_path
    if path is not None and os.path.isfile(path):
        yield from _file_records(os.fspath(path))
        return
    for record in audit.records():
        yield record.to_dict()


def _file_records(path: str) -> Iterator[dict[str, Any]]:
    # Opened without following a link left under its name (the audit writes it so too).
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    kept: deque[str] = deque(maxlen=MAX_RECORDS)
    with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as lines:
        kept.extend(lines)
    for line in kept:
        try:
            data = json.loads(line)
        except ValueError:
            continue  # a torn or foreign line: skipped, the rest still counts
        if isinstance(data, dict) and isinstance(data.get("skill"), str):
            yield data


def usage_rows(
    audit: AuditLog | Iterable[AuditRecord | dict[str, Any]],
    since: str | datetime | timedelta | None = None,
) -> list[UsageRow]:
    """One :class:`UsageRow` per skill and script, busiest first."""
    start = parse_since(since)
    source = records(audit) if isinstance(audit, AuditLog) else _dicts(audit)
    rows: dict[tuple[str, str], UsageRow] = {}
    for data in source:
        stamp = str(data.get("timestamp", ""))
        if start is not None and not _after(stamp, start):
            continue
        try:
            outcome = AuditOutcome(str(data.get("outcome")))
        except ValueError:
            continue
        key = (str(data["skill"]), str(data.get("script", "")))
        row = rows.get(key)
        if row is None:
            row = rows[key] = UsageRow(*key)
        row.last_run = max(row.last_run, stamp)
        if outcome in DECISIONS:
            name = DECISIONS[outcome]
            setattr(row, name, getattr(row, name) + 1)
            continue
        if outcome not in RUN_OUTCOMES:
            continue
        row.runs += 1
        if outcome is AuditOutcome.COMPLETED:
            row.completed += 1
        elif outcome is AuditOutcome.INTERRUPTED:
            row.interrupted += 1
        else:
            row.failed += 1
        if data.get("start") == "warm":
            row.warm += 1
        elif data.get("start") == "cold":
            row.cold += 1
        duration = data.get("duration_ms")
        if isinstance(duration, (int, float)) and math.isfinite(duration):
            row.durations.append(float(duration))
    for row in rows.values():
        if row.durations:
            row.median_ms = round(statistics.median(row.durations), 3)
            row.p95_ms = round(percentile(row.durations, 95), 3)
    return sorted(rows.values(), key=lambda r: (-r.runs, r.skill, r.script))


def percentile(values: list[float], p: float) -> float:
    """The nearest-rank ``p``-th percentile of ``values`` (not empty).

    >>> percentile([1.0, 2.0, 3.0, 4.0, 100.0], 95)
    100.0
    """
    ordered = sorted(values)
    rank = max(1, math.ceil(p / 100 * len(ordered)))
    return ordered[rank - 1]


def usage_table(
    audit: AuditLog | Iterable[AuditRecord | dict[str, Any]],
    since: str | datetime | timedelta | None = None,
) -> Any:
    """:func:`usage_rows` as a pandas DataFrame when pandas is installed, else the rows."""
    rows = usage_rows(audit, since)
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return rows
    return pd.DataFrame([row.as_dict() for row in rows], columns=list(COLUMNS))


def _dicts(items: Iterable[AuditRecord | dict[str, Any]]) -> Iterator[dict[str, Any]]:
    for item in items:
        yield item.to_dict() if isinstance(item, AuditRecord) else dict(item)


def _after(stamp: str, start: datetime) -> bool:
    try:
        when = datetime.fromisoformat(stamp)
    except ValueError:
        return False
    return (when if when.tzinfo else when.replace(tzinfo=UTC)) >= start


__all__ = [
    "COLUMNS",
    "MAX_RECORDS",
    "UsageRow",
    "parse_since",
    "percentile",
    "records",
    "usage_rows",
    "usage_table",
]
