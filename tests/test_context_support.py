"""Helpers shared by the context/tools/catalog/skillpy tests (no tests in here).

Real files in tmp dirs, a real SkillManager, real approvers (plain callables that record).
"""

from __future__ import annotations

import os
from pathlib import Path

from skill_magics.core.run.approval import ApprovalRequest, Decision


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


PRINT_STDIN_PY = "import sys\nsys.stdout.write(sys.stdin.read())\n"
