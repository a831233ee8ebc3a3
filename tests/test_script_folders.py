"""The kernel never follows a link a script left in a folder it can write: the audit file,
shipped copies (core/run/batch/ship.py), environment builds (core/base/safefs.py)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import PathSecurityError
from skill_magics.core.run.batch import ship


def test_the_audit_never_appends_through_a_link(tmp_path: Path, caplog) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("mine\n")
    (tmp_path / "audit.jsonl").symlink_to(victim)
    log = AuditLog(tmp_path / "audit.jsonl")
    with caplog.at_level(logging.ERROR, logger="skill_magics.audit"):
        log.event("s", "a.sh", {}, "completed")
    assert victim.read_text() == "mine\n"
    assert len(log.records()) == 1  # recorded in memory; the file problem is logged


def test_the_audit_still_appends_to_its_own_file(tmp_path: Path) -> None:
    log = AuditLog(tmp_path / "audit.jsonl")
    log.event("s", "a.sh", {}, "completed")
    assert (tmp_path / "audit.jsonl").read_text().count("\n") == 1


def test_a_shipped_file_swapped_for_a_link_is_never_read_through_it(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("TOP SECRET\n")
    (tmp_path / "f").symlink_to(secret)
    with pytest.raises(PathSecurityError, match="no longer a regular file"):
        ship._open_regular(str(tmp_path / "f"))
    (tmp_path / "g").write_text("ok\n")
    with ship._open_regular(str(tmp_path / "g")) as fh:
        assert fh.read() == b"ok\n"
