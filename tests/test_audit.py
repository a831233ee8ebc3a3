"""core/audit.py: records, logging, bounded history, JSONL file."""

from __future__ import annotations

import json
import logging
import os
import stat
import threading
from pathlib import Path

from skill_magics.core.audit import AuditLog, AuditRecord, arguments_preview
from skill_magics.core.errors import PathSecurityError


def test_record_fields_and_truncation() -> None:
    rec = AuditRecord.now("pdf", "scripts/x.py", "a" * 1000, "completed", exit_code=0)
    assert len(rec.arguments) == 256 and rec.arguments.endswith("…")
    assert rec.timestamp.endswith("+00:00")  # ISO, UTC
    assert rec.to_dict()["exit_code"] == 0
    # Non-str arguments given directly are previewed, then truncated too.
    assert AuditRecord("t", "s", "x", {"k": "v" * 500}, "refused").arguments.startswith('{"k"')
    assert len(AuditRecord("t", "s", "x", {"k": "v" * 500}, "refused").arguments) == 256


def test_arguments_preview_never_fails() -> None:
    circular: dict = {}
    circular["self"] = circular
    assert arguments_preview(circular)  # falls back to a repr
    assert arguments_preview({"s": {1, 2}}) == '{"s": "{1, 2}"}'
    assert arguments_preview({"a": 1}, ["--x", "y z"]) == '{"a": 1} argv: --x y z'
    assert arguments_preview(None, None) == ""
    assert arguments_preview(None, None, encoded=b'{"big": "' + b"x" * 5000).startswith('{"big"')


def test_history_is_bounded_and_newest_last() -> None:
    log = AuditLog(keep=3)
    for i in range(5):
        log.event("s", f"scripts/{i}.sh", {}, "completed", exit_code=0)
    assert [r.script for r in log.records()] == ["scripts/2.sh", "scripts/3.sh", "scripts/4.sh"]
    assert len(log) == 3
    log.clear()
    assert log.records() == []


def test_logging_levels(caplog) -> None:
    log = AuditLog()
    with caplog.at_level(logging.INFO, logger="skill_magics.audit"):
        log.event("s", "a.sh", {}, "completed", exit_code=0, duration_ms=3.0)
        log.refused("s", "../x", {}, PathSecurityError("escapes: fix it"))
        log.event("s", "a.sh", {}, "timeout", exit_code=124)
        log.event("s", "a.sh", {}, "declined", reason="No")
        log.event("s", "a.sh", {}, "approved", reason="yes_once by button")
    levels = [(r.levelname, r.audit["outcome"]) for r in caplog.records]
    assert levels == [
        ("INFO", "completed"),
        ("WARNING", "refused"),
        ("WARNING", "timeout"),
        ("WARNING", "declined"),
        ("INFO", "approved"),
    ]
    refused = log.records()[1]
    assert refused.reason == "PathSecurityError: escapes: fix it"
    assert refused.exit_code is None


def test_jsonl_file_lines_are_whole_under_concurrency(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "audit.jsonl"
    log = AuditLog(path)

    def writer(n: int) -> None:
        for i in range(50):
            log.event("s", f"scripts/{n}.sh", {"i": i, "pad": "é" * 200}, "completed", exit_code=0)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 400
    assert all(json.loads(line)["outcome"] == "completed" for line in lines)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600  # arguments may be private


def test_unwritable_file_does_not_break_recording(tmp_path: Path, caplog) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    log = AuditLog(blocker / "audit.jsonl")  # parent is a file: cannot be created
    with caplog.at_level(logging.ERROR, logger="skill_magics.audit"):
        log.event("s", "a.sh", {}, "completed")
        log.event("s", "a.sh", {}, "completed")
    assert len(log.records()) == 2
    assert sum("Cannot append to audit file" in r.getMessage() for r in caplog.records) == 1
