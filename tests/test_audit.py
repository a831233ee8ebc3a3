"""core/base/audit.py: records, logging, bounded history, JSONL file.

And the records the manager and the executor write: one line each that newlines cannot forge,
arguments capped, previews that never raise, scripts named relative to the skill, a duration
on every refusal.
"""

from __future__ import annotations

import io
import json
import logging
import os
import stat
import threading
import time
from pathlib import Path

import pytest
from manager_support import BadRepr, manager_for, posix_only, refusals, run_plan

from skill_magics.core.base.audit import (
    ARGUMENTS_PREVIEW_CHARS,
    AuditLog,
    AuditRecord,
    arguments_preview,
)
from skill_magics.core.base.errors import (
    CommandError,
    InterpreterNotAllowedError,
    PathSecurityError,
    ScriptNotFoundError,
    ToolRestrictionError,
)
from skill_magics.core.manager import SkillManager


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


# -- what the manager and the executor record -------------------------------------------------


@posix_only
def test_jsonl_audit_is_one_line_per_record_and_arguments_are_capped(make_skill, tmp_path):
    make_skill(tmp_path / "s", "aud", scripts={"scripts/a.sh": "echo hi\n"})
    jsonl = tmp_path / "audit.jsonl"
    manager = manager_for(tmp_path / "s", audit_log=jsonl)
    forged = '\n{"timestamp":"x","skill":"aud","outcome":"completed"}\n'
    manager.execute_skill_script("aud", "a", {"k": forged * 50}, argv=[forged])
    with pytest.raises(PathSecurityError):
        manager.execute_skill_script("aud", "../" + forged)
    lines = jsonl.read_text().splitlines()
    assert len(lines) == 2
    for line in lines:
        rec = json.loads(line)
        assert len(rec["arguments"]) <= ARGUMENTS_PREVIEW_CHARS
    assert oct(jsonl.stat().st_mode & 0o777) == oct(0o600)


@posix_only
def test_text_audit_log_cannot_be_forged_with_newlines(make_skill, tmp_path):
    make_skill(tmp_path / "s", "aud", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path / "s")
    buf = io.StringIO()
    handler = logging.StreamHandler(buf)
    handler.setFormatter(logging.Formatter("%(message)s"))
    log = logging.getLogger("skill_magics.audit")
    old = log.level
    log.addHandler(handler)
    log.setLevel(logging.INFO)
    try:
        fake = "x\nskill=aud script=scripts/a.sh outcome=completed exit_code=0 FORGED"
        manager.execute_skill_script("aud", "a", argv=[fake])
    finally:
        log.removeHandler(handler)
        log.setLevel(old)
    lines = buf.getvalue().splitlines()
    assert len(lines) == 1, lines


@posix_only
@pytest.mark.parametrize(
    ("arguments", "argv"),
    [({"a": BadRepr()}, None), (None, [BadRepr()]), (None, 5), (BadRepr(), None), (None, "")],
)
def test_arguments_preview_never_raises(arguments, argv):
    assert isinstance(arguments_preview(arguments, argv), str)


@posix_only
def test_refusal_audit_record_names_the_script_relative(make_skill, tmp_path):
    make_skill(tmp_path, "rel", scripts={"scripts/run": "#!/bin/rm -rf\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(InterpreterNotAllowedError):
        manager.execute_skill_script("rel", "run")
    assert refusals(manager)[-1].script == "scripts/run"


@posix_only
def test_refusal_records_name_scripts_relative_to_the_skill(make_skill, tmp_path):
    skill = make_skill(tmp_path, "rel", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path], allowed_interpreters=["python3"])
    with pytest.raises(Exception, match="not allowed"):
        manager.execute_skill_script("rel", "a")
    with pytest.raises(Exception, match="not allowed"):
        manager._planner.checks.script(
            manager.settings,
            skill / "scripts" / "a.sh",
            {},
            skill,
            manager.get_skill("rel").metadata,
        )
    assert [r.script for r in manager.audit.records()] == ["scripts/a.sh", "scripts/a.sh"]
    assert not Path(manager.audit.records()[0].script).is_absolute()


@posix_only
def test_every_refusal_records_a_duration(make_skill, tmp_path):
    make_skill(tmp_path / "skills", "s", scripts={"scripts/ok.py": "print(1)\n"})
    make_skill(
        tmp_path / "skills",
        "locked",
        {"name": "locked", "description": "d", "allowed-tools": "Read"},
        scripts={"scripts/ok.py": "print(1)\n"},
    )
    manager = SkillManager([tmp_path / "skills"])
    with pytest.raises(ScriptNotFoundError):  # refused by the manager, before the executor
        manager.execute_skill_script("s", "nope")
    with pytest.raises(ToolRestrictionError):  # refused by the executor
        manager.execute_skill_script("locked", "ok")
    with pytest.raises(PathSecurityError):
        manager.execute_skill_script("s", "../../etc/passwd")
    plan = manager.plan("s", "ok")
    (tmp_path / "skills" / "s" / "scripts" / "ok.py").write_text("print(2)  # edited\n")
    with pytest.raises(Exception, match="changed"):  # re-checked at run time
        run_plan(manager, plan)
    refused = refusals(manager)
    assert len(refused) == 4
    assert all(r.duration_ms is not None and r.duration_ms > 0 for r in refused), refused


@posix_only
def test_command_refusal_records_a_duration(make_skill, tmp_path):
    skill = make_skill(tmp_path, "s")
    manager = SkillManager([tmp_path])
    meta = manager.get_skill("s").metadata
    with pytest.raises(CommandError):
        manager._planner.checks.command(
            manager.settings,
            ["python3", "-c", "1"],
            skill_base_dir=skill,
            skill_metadata=meta,
            label="<python -c>",
        )
    assert manager.audit.records()[-1].duration_ms > 0


def test_record_timestamps_are_iso_utc_with_milliseconds_as_datetime_writes_them():
    """utc_now formats the second once per second; what it gives must be what
    datetime.now(UTC).isoformat(timespec="milliseconds") gives."""
    import re
    from datetime import UTC, datetime, timedelta

    from skill_magics.core.base.audit import utc_now

    before = datetime.now(UTC).replace(microsecond=0)
    stamps = [utc_now() for _ in range(3)] + [
        AuditLog().event("s", "x.sh", "", "completed").timestamp
    ]
    after = datetime.now(UTC) + timedelta(milliseconds=1)
    for stamp in stamps:
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", stamp), stamp
        parsed = datetime.fromisoformat(stamp)
        assert parsed.tzinfo == UTC and before <= parsed <= after
        assert parsed.isoformat(timespec="milliseconds") == stamp


def test_a_secret_known_only_while_the_run_goes_is_masked_before_the_cut(make_skill, tmp_path):
    """The record's argument text is made while the script runs (executor: _texts); a value
    that becomes a known secret meanwhile, straddling the 256-character cut, must still be
    masked whole: the text is made again, redacted first and then cut."""
    from skill_magics.core.base.secrets import REDACTED, SecretStore

    value = "tok-" + "9" * 20
    marker = tmp_path / "running"
    wait = f"touch {marker}; while [ ! -e {marker}.go ]; do sleep 0.01; done\necho ok\n"
    make_skill(tmp_path / "s", "late", scripts={"scripts/wait.sh": wait})
    manager = manager_for(tmp_path / "s")
    store = SecretStore()  # another store of this process: its values are masked everywhere
    arguments = {"pad": "x" * 230, "key": value}  # the value crosses character 256

    def provide() -> None:
        deadline = time.monotonic() + 10
        while not marker.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        store.provide("other", "TOKEN", value)
        (tmp_path / "running.go").touch()

    helper = threading.Thread(target=provide)
    helper.start()
    result = manager.execute_skill_script("late", "wait", arguments)
    helper.join()
    assert result.stdout == "ok\n", result.stderr
    record = manager.audit.records()[-1]
    assert record.outcome == "completed"
    assert value[:4] not in record.arguments and "999" not in record.arguments
    assert REDACTED[:2] in record.arguments or record.arguments.endswith("…")
