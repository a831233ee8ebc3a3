"""Helpers shared by the context/tools/catalog/skillpy tests (no tests in here).

Real files in tmp dirs, a real SkillManager, real approvers (plain callables that record).
"""

from __future__ import annotations

import os
import stat
import textwrap
from pathlib import Path

from skill_magics.core.run.approval import ApprovalRequest, Decision


def make_skill(
    root: Path,
    name: str,
    body: str = "# Skill\n",
    files: dict[str, str | bytes] | None = None,
    *,
    description: str | None = None,
    extra_frontmatter: str = "",
) -> Path:
    """Write ``root/name/SKILL.md`` plus ``files`` (relative path -> text/bytes); return the dir."""
    skill_dir = root / name
    skill_dir.mkdir(parents=True, exist_ok=True)
    desc = description if description is not None else f"The {name} skill for tests."
    front = f"---\nname: {name}\ndescription: {desc}\n{extra_frontmatter}---\n"
    (skill_dir / "SKILL.md").write_text(front + textwrap.dedent(body), encoding="utf-8")
    for rel, content in (files or {}).items():
        path = skill_dir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        if path.suffix in (".sh", ".py"):
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return skill_dir


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
