"""The usage view (core/usage/, ``manager.usage()``, ``%skills usage``): real runs write the
audit log, the view reads it back (memory and the JSON-lines file), filtered by ``--since``."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from manager_support import manager_for

from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.errors import ApprovalDeclined
from skill_magics.core.usage import COLUMNS, parse_since, read_usage, usage_rows
from skill_magics.core.usage.chart import usage_chart

OK = "print('ok')\n"
BAD = "import sys\nsys.exit(2)\n"


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    make_skill(root, "alpha", scripts={"scripts/ok.py": OK, "scripts/bad.py": BAD})
    return root


def runs(manager) -> None:
    for _ in range(3):
        manager.execute_skill_script("alpha", "ok", approver=None)
    manager.execute_skill_script("alpha", "bad", approver=None)
    manager.execute_skill_script("alpha", "ok", approver=lambda r: "yes_once")
    with pytest.raises(ApprovalDeclined):
        manager.execute_skill_script("alpha", "bad", approver=lambda r: "no")


def test_rows_from_real_runs(skills: Path) -> None:
    manager = manager_for(skills, sandbox="off")
    runs(manager)
    table = manager.usage()
    assert isinstance(table, pd.DataFrame)
    assert list(table.columns) == list(COLUMNS)
    ok = table.set_index("script").loc["scripts/ok.py"]
    assert (ok.runs, ok.completed, ok.failed, ok.approved, ok.cold) == (4, 4, 0, 1, 4)
    assert ok.failure_rate == 0.0 and 0 < ok.median_ms <= ok.p95_ms
    bad = table.set_index("script").loc["scripts/bad.py"]
    assert (bad.runs, bad.failed, bad.declined, bad.failure_rate) == (1, 1, 1, 1.0)
    assert bad.last_run >= ok.last_run[:10]


def test_the_file_holds_every_session(skills: Path, tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    for _ in range(2):  # two sessions writing one file
        runs(manager_for(skills, sandbox="off", audit_log=log))
    with log.open("a") as f:
        f.write("{torn line\n")  # a torn line is skipped, the rest counts
    fresh = manager_for(skills, sandbox="off", audit_log=log)
    rows = {r.script: r for r in usage_rows(fresh.audit)}
    assert rows["scripts/ok.py"].runs == 8
    assert rows["scripts/bad.py"].declined == 2


def test_since_filters_by_time() -> None:
    now = datetime.now(UTC)
    old = AuditRecord(
        (now - timedelta(days=10)).isoformat(), "a", "s.py", "", "completed", 0, None, 5.0
    )
    new = AuditRecord(now.isoformat(), "a", "s.py", "", "failed", 1, None, 9.0, start="warm")
    (row,) = usage_rows([old, new])
    assert row.runs == 2
    (row,) = usage_rows([old, new], since="7d")
    assert (row.runs, row.failed, row.warm, row.median_ms) == (1, 1, 1, 9.0)
    assert usage_rows([old, new], since=(now + timedelta(days=1)).date().isoformat()) == []
    with pytest.raises(ValueError, match="30m, 12h, 7d"):
        parse_since("last tuesday")


def test_the_chart_draws_every_row(skills: Path) -> None:
    manager = manager_for(skills, sandbox="off")
    runs(manager)
    chart = usage_chart(usage_rows(manager.audit))
    svg = chart._repr_svg_()
    assert svg.startswith("<svg") and "alpha · scripts/ok.py" in svg and "4 runs" in svg
    assert "no runs recorded yet" in usage_chart([])


def test_no_pandas_gives_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas -> ImportError
    log = AuditLog()
    log.event("a", "s.py", "", "completed", exit_code=0, duration_ms=3.0)
    from skill_magics.core.usage import usage_table

    (row,) = usage_table(log)
    assert row.runs == 1 and json.dumps(row.as_dict())


def test_the_magic(skills: Path, ipython_shell) -> None:
    shell = ipython_shell(skills, auto_approve=True)
    shell.run_cell("%%skillrun alpha.ok\n")
    shell.run_cell("%%skillrun alpha.bad\n")
    view = shell.run_cell("%skills usage --since 1h").result
    text = repr(view)
    assert "scripts/ok.py" in text and "scripts/bad.py" in text
    assert "<svg" in view._repr_html_()
    bad = shell.run_cell("%skills usage --since yesterday-ish")
    assert "30m, 12h, 7d" in str(bad.error_in_exec)
    shell.run_cell("%skills trace off")
    shown = shell.run_cell("%skills trace")
    assert shown.error_in_exec is None
    shell.run_cell("%skills trace auto")  # as it was: the variables decide


def test_since_takes_what_a_person_types() -> None:
    now = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
    for text, back in [
        ("1h", timedelta(hours=1)),
        ("2d", timedelta(days=2)),
        ("2 days", timedelta(days=2)),
        ("30 min", timedelta(minutes=30)),
        ("90s", timedelta(seconds=90)),
        ("1 week ago", timedelta(weeks=1)),
        ("12 Hours", timedelta(hours=12)),
    ]:
        assert parse_since(text, now) == now - back, text
    assert parse_since("2026-11-01", now) == datetime(2026, 11, 1, tzinfo=UTC)
    assert parse_since("2026-11-01 10:00", now) == datetime(2026, 11, 1, 10, tzinfo=UTC)
    assert parse_since("2026-11-01T10:00Z", now) == datetime(2026, 11, 1, 10, tzinfo=UTC)
    # further back than any date: everything, not an OverflowError
    assert parse_since("99999999999999w", now) == datetime.min.replace(tzinfo=UTC)
    for garbage in ("yesterday-ish", "-1h", "1 fortnight", "", "\x1b[2J"):
        if not garbage:
            assert parse_since(garbage, now) is None
            continue
        with pytest.raises(ValueError) as bad:
            parse_since(garbage, now)
        message = str(bad.value)
        assert "30m, 12h, 7d" in message and "2026-11-01" in message
        assert "\n" not in message and "\x1b" not in message


def _record(skill: str = "a", script: str = "s.py", **extra) -> str:
    data = {
        "timestamp": datetime.now(UTC).isoformat(),
        "skill": skill,
        "script": script,
        "arguments": "",
        "outcome": "completed",
        "exit_code": 0,
        "duration_ms": 5.0,
        **extra,
    }
    return json.dumps(data) + "\n"


def test_a_corrupt_audit_file_is_read_and_its_bad_lines_counted(
    tmp_path: Path, ipython_shell, skills: Path
) -> None:
    """Every way a line can be wrong (torn, not JSON, nested past the parser, a number past
    a float, a name with controls, far too long) is skipped or shown safely, and said."""
    import xml.etree.ElementTree as ET

    log = tmp_path / "audit.jsonl"
    with log.open("w") as f:
        f.write(_record())
        f.write("{torn line\n")
        f.write("[" * 200_000 + "\n")  # past json's recursion limit
        f.write(_record(duration_ms=10**400))  # an int no float holds
        f.write(_record(duration_ms=True))
        f.write(_record(skill="evil\x1b[2J", script="scripts/a\u202ex\x01.py"))
        f.write('"just a string"\n')
        f.write(_record(arguments="x" * (3 * 1024 * 1024)))  # 3 MiB: longer than a record
        f.write(_record())
    usage = read_usage(AuditLog(log))
    rows = {(r.skill, r.script): r for r in usage.rows}
    assert rows[("a", "s.py")].runs == 4  # the two plain ones and the two odd durations
    assert rows[("a", "s.py")].median_ms == 5.0  # the odd durations are not durations
    evil = rows[("evil\\x1b[2J", "scripts/a⟨U+202E⟩x\\x01.py")]
    assert evil.runs == 1
    assert usage.skipped == 4 and "4 lines were" in usage.note
    ET.fromstring(str(usage_chart(usage.rows)))  # well-formed: no control character in it
    shell = ipython_shell(skills, auto_approve=True)
    assert shell.run_cell(f"%config SkillMagics.audit_log = {str(log)!r}").success
    view = shell.run_cell("%skills usage --since 2 days").result
    assert "4 lines were of the audit file skipped" in repr(view)
    assert "\x1b" not in repr(view) and "\x1b" not in view._repr_html_()


def test_a_huge_line_is_read_in_bounded_memory(tmp_path: Path) -> None:
    """One line of 32 MiB (a file gone wrong) never sits in memory whole."""
    import tracemalloc

    log = tmp_path / "audit.jsonl"
    with log.open("w") as f:
        f.write(_record())
        f.write('{"skill": "a", "arguments": "' + "x" * (32 * 1024 * 1024) + '"}\n')
        f.write(_record())
    tracemalloc.start()
    try:
        usage = read_usage(AuditLog(log))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    (row,) = usage.rows
    assert row.runs == 2 and usage.skipped == 1
    assert peak < 16 * 1024 * 1024, peak


def test_only_the_newest_bytes_of_a_big_file_are_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import skill_magics.core.usage as usage_module

    log = tmp_path / "audit.jsonl"
    lines = [_record(script=f"s{i}.py") for i in range(100)]
    log.write_text("".join(lines))
    window = sum(len(line) for line in lines[-10:]) + 5  # ten lines and part of one more
    monkeypatch.setattr(usage_module, "MAX_BYTES", window)
    usage = read_usage(AuditLog(log))
    assert sorted(r.script for r in usage.rows) == sorted(f"s{i}.py" for i in range(90, 100))
    assert usage.skipped == 0  # the line the window cut is outside it, not a bad line


def test_an_audit_file_that_cannot_be_read_gives_this_sessions_rows(
    tmp_path: Path, skills: Path
) -> None:
    """A link left under the audit file's name, or a FIFO: never followed, never waited
    on; the view says so in one line and counts this session's records."""
    target = tmp_path / "elsewhere.jsonl"
    target.write_text(_record(skill="followed"))
    for kind in ("link", "fifo"):
        log = tmp_path / f"audit-{kind}.jsonl"
        if kind == "link":
            log.symlink_to(target)
        else:
            os.mkfifo(log)
        audit = AuditLog(log)
        audit.event("mine", "s.py", "", "completed", exit_code=0, duration_ms=1.0)
        usage = read_usage(audit)
        assert "could not be read" in usage.note and "\n" not in usage.note
        assert "SkillMagics.audit_log" in usage.note
        assert [r.skill for r in usage.rows] == ["mine"]
