"""What skills did, from the audit log: runs per skill and script, decisions, failure rate,
median and p95 duration, cold vs warm, last run (``%skills usage``, ``manager.usage()``).

The audit log (core/base/audit.py) holds one record per attempt and per decision. The rows
are read from its JSON-lines file when one is configured (every session that wrote it: its
newest :data:`MAX_BYTES`, at most :data:`MAX_RECORDS` records), else from the session's
records in memory. Memory stays bounded whatever the file holds: a line longer than
:data:`MAX_LINE` or that is not a record is skipped and counted (:class:`Usage.skipped`, the
note ``%skills usage`` shows). Names are shown with control and bidi characters made
visible. Nothing is run or asked. The chart is
:func:`skill_magics.core.usage.chart.usage_chart`.

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

import errno
import json
import logging
import math
import os
import re
import stat
import statistics
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime, timedelta
from typing import Any

from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.base.visible import visible

logger = logging.getLogger("skill_magics.usage")

MAX_RECORDS = 200_000  # of an audit file: the newest are kept (bounded memory)
MAX_BYTES = 64 * 1024 * 1024  # of an audit file: its newest bytes are read, no more
MAX_LINE = 1024 * 1024  # a longer line is no record the audit wrote: skipped, counted

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

_SINCE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-z]+)\s*(?:ago)?\s*$", re.IGNORECASE)
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# What a person types for each unit (``90s``, ``30 min``, ``2 hours``, ``1 week``).
_UNIT_WORDS = {
    **{w: "s" for w in ("s", "sec", "secs", "second", "seconds")},
    **{w: "m" for w in ("m", "min", "mins", "minute", "minutes")},
    **{w: "h" for w in ("h", "hr", "hrs", "hour", "hours")},
    **{w: "d" for w in ("d", "day", "days")},
    **{w: "w" for w in ("w", "wk", "wks", "week", "weeks")},
}
SINCE_FORMS = "30m, 12h, 7d, 2w (or 2 days) or a date like 2026-11-01"


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
    unit = _UNIT_WORDS.get(found[2].lower()) if found else None
    if found and unit is not None:
        try:
            return now - timedelta(seconds=float(found[1]) * _UNITS[unit])
        except OverflowError:  # further back than any date: everything
            return datetime.min.replace(tzinfo=UTC)
    try:
        when = datetime.fromisoformat(text.strip().replace(" ", "T", 1))
    except ValueError:
        raise ValueError(f"--since {visible(text)!r} is not a time: use {SINCE_FORMS}") from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


@dataclass
class Usage:
    """What :func:`read_usage` found: the rows, and how many lines of the audit file were
    skipped (torn, not JSON, not a record, longer than :data:`MAX_LINE`)."""

    rows: list[UsageRow]
    skipped: int = 0
    unreadable: str = ""  # why the audit file could not be read ("" it could, or none)

    @property
    def note(self) -> str:
        """One line about what was not counted ("" nothing)."""
        if self.unreadable:
            return self.unreadable
        if not self.skipped:
            return ""
        lines = "line was" if self.skipped == 1 else "lines were"
        return (
            f"{self.skipped} {lines} of the audit file skipped (torn, too long or not a "
            "record): the rest is counted"
        )


class _Skipped:
    count = 0
    unreadable = ""


def records(audit: AuditLog, skipped: _Skipped | None = None) -> Iterator[dict[str, Any]]:
    """The audit's records as dicts: its file when it has one, else those in memory;
    lines of the file that are no record are counted in ``skipped``. A file that cannot
    be read (a link left under its name, no permission) gives this session's records,
    and ``skipped.unreadable`` says why."""
    skipped = skipped or _Skipped()
    path = audit.jsonl_path
    if path is not None and os.path.lexists(path):
        try:
            lines = _tail_lines(os.fspath(path), skipped)
        except OSError as exc:
            skipped.unreadable = (
                f"The audit file {visible(os.fspath(path))} could not be read "
                f"({exc.strerror or exc}): this session's records only; check "
                "SkillMagics.audit_log"
            )
        else:
            yield from _parsed(lines, skipped)
            return
    for record in audit.records():
        yield record.to_dict()


def _tail_lines(path: str, skipped: _Skipped) -> deque[bytes]:
    """The newest lines of an audit file, in bounded memory: its last MAX_BYTES read
    (the first, partial line there dropped), each line at most MAX_LINE, the newest
    MAX_RECORDS kept. OSError: it cannot be read (or is no regular file)."""
    # Opened without following a link left under its name (the audit writes it so too),
    # without waiting on a FIFO put there.
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    kept: deque[bytes] = deque(maxlen=MAX_RECORDS)
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        start = max(info.st_size - MAX_BYTES, 0)
        if start:
            f.seek(start - 1)
            _rest_of_line(f)  # the line the window cuts (or the newline before it)
        budget = MAX_BYTES + MAX_LINE  # a file that grows while it is read: no further
        while budget > 0:
            line = f.readline(MAX_LINE + 1)
            if not line:
                break
            budget -= len(line)
            if len(line) > MAX_LINE:
                skipped.count += 1
                if not line.endswith(b"\n"):
                    budget -= _rest_of_line(f)
                continue
            kept.append(line)
    return kept


def _parsed(lines: deque[bytes], skipped: _Skipped) -> Iterator[dict[str, Any]]:
    for line in lines:
        try:
            data = json.loads(line.decode("utf-8", "replace"))
        except (ValueError, RecursionError):
            data = None  # a torn or foreign line: skipped, the rest still counts
        if isinstance(data, dict) and isinstance(data.get("skill"), str):
            yield data
        elif line.strip():
            skipped.count += 1


def _rest_of_line(f: Any) -> int:
    """Read past the end of the current line, MAX_LINE bytes at a time; bytes read."""
    read = 0
    while True:
        chunk = f.readline(MAX_LINE)
        read += len(chunk)
        if not chunk or chunk.endswith(b"\n"):
            return read


def usage_rows(
    audit: AuditLog | Iterable[AuditRecord | dict[str, Any]],
    since: str | datetime | timedelta | None = None,
) -> list[UsageRow]:
    """One :class:`UsageRow` per skill and script, busiest first."""
    return read_usage(audit, since).rows


def read_usage(
    audit: AuditLog | Iterable[AuditRecord | dict[str, Any]],
    since: str | datetime | timedelta | None = None,
) -> Usage:
    """:func:`usage_rows` and how many lines of the audit file were skipped."""
    start = parse_since(since)
    skipped = _Skipped()
    source = records(audit, skipped) if isinstance(audit, AuditLog) else _dicts(audit)
    rows: dict[tuple[str, str], UsageRow] = {}
    for data in source:
        stamp = str(data.get("timestamp", ""))[:64]
        if start is not None and not _after(stamp, start):
            continue
        try:
            outcome = AuditOutcome(str(data.get("outcome")))
        except ValueError:
            continue
        key = (visible(str(data["skill"])), visible(str(data.get("script", ""))))
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
        duration = _number(data.get("duration_ms"))
        if duration is not None:
            row.durations.append(duration)
    for row in rows.values():
        if row.durations:
            row.median_ms = round(statistics.median(row.durations), 3)
            row.p95_ms = round(percentile(row.durations, 95), 3)
    ordered = sorted(rows.values(), key=lambda r: (-r.runs, r.skill, r.script))
    return Usage(ordered, skipped.count, skipped.unreadable)


def _number(value: Any) -> float | None:
    """A finite duration, or None (a bool, a text, an integer too big for a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


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
    """:func:`usage_rows` as a pandas DataFrame when pandas is installed (the skipped
    lines' note in ``.attrs["note"]``), else the rows; skipped lines are also logged."""
    usage = read_usage(audit, since)
    if usage.note:
        logger.warning("%s", usage.note)
    try:
        import pandas as pd  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return usage.rows
    table = pd.DataFrame([row.as_dict() for row in usage.rows], columns=list(COLUMNS))
    table.attrs["note"] = usage.note
    return table


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
    "MAX_BYTES",
    "MAX_LINE",
    "MAX_RECORDS",
    "SINCE_FORMS",
    "Usage",
    "UsageRow",
    "parse_since",
    "percentile",
    "read_usage",
    "records",
    "usage_rows",
    "usage_table",
]
