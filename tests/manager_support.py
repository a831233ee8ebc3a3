"""Helpers for tests that drive a real SkillManager or ScriptExecutor (no tests in here).

Real files in tmp dirs (conftest's ``make_skill``), a real SkillManager, real approvers (plain
callables that record), and short ways to read what the audit log recorded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from skill_magics.core.audit import AuditLog
from skill_magics.core.run.approval import (
    ApprovalRequest,
    Decision,
    ScriptToApprove,
    scripts_content_hash,
)

posix_only = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX files, symlinks, shebangs, signals and process groups"
)


class RecordingApprover:
    """An approver that answers ``decision`` (or raises ``error``) and remembers every request."""

    def __init__(
        self, decision: Decision | str = Decision.YES_ONCE, error: Exception | None = None
    ):
        self.decision = decision
        self.error = error
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision | str:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return self.decision


def manager_for(*dirs: Path, **kwargs):
    from skill_magics.core.manager import SkillManager

    return SkillManager([os.fspath(d) for d in dirs], **kwargs)


def outcomes(manager) -> list[str]:
    """The outcome of every audit record of ``manager``, oldest first."""
    return [r.outcome for r in manager.audit.records()]


def refusals(manager_or_log) -> list:
    """The ``refused`` audit records of a SkillManager (or of an AuditLog)."""
    log = manager_or_log if isinstance(manager_or_log, AuditLog) else manager_or_log.audit
    return [r for r in log.records() if r.outcome == "refused"]


def last(executor):
    """The newest audit record of a ScriptExecutor."""
    return executor.audit.records()[-1]


def request_for(skill_dir: Path, name: str = "demo") -> ApprovalRequest:
    """A request for scripts/a.py and scripts/b.sh of ``skill_dir`` (conftest's ``skill_dir``)."""
    scripts = ["scripts/a.py", "scripts/b.sh"]
    return ApprovalRequest(
        skill_name=name,
        scripts=tuple(ScriptToApprove(p, "python3") for p in scripts),
        arguments={"x": 1},
        content_hash=scripts_content_hash(skill_dir, scripts),
    )


class BadRepr:
    """A value whose repr() and str() raise: previews and messages must survive it."""

    def __repr__(self) -> str:
        raise RuntimeError("repr boom")

    __str__ = __repr__
