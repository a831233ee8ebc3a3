"""The usage view (core/usage/, ``manager.usage()``, ``%skills usage``): real runs write the
audit log, the view reads it back (memory and the JSON-lines file), filtered by ``--since``."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest
from manager_support import manager_for

from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.errors import ApprovalDeclined
from skill_magics.core.usage import COLUMNS, parse_since, usage_rows
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
