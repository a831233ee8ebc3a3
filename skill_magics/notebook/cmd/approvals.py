"""``%skills approvals``: this session's 'Yes in session' approvals."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "session approvals (and whether the scripts changed since)"

PARSER = SubcommandParser("approvals", "%skills approvals")


def run(magics: SkillsHost, args: list[str]) -> Any:
    PARSER.parse(args)
    from skill_magics.notebook.render import approvals_table

    manager = magics.manager
    approvals = manager.approvals.approvals()
    current = {}
    for name in approvals:
        try:
            current[name] = manager.get_skill(name).content_hash()
        except Exception:  # skill gone since: shown without a state
            pass
    return approvals_table(approvals, current=current)
