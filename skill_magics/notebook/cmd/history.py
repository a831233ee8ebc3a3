"""``%skills history``: this session's audit records (runs, refusals, declines)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "this session's audit records as a table"

PARSER = SubcommandParser("history", "%skills history")


def run(magics: SkillsHost, args: list[str]) -> Any:
    PARSER.parse(args)
    from skill_magics.notebook.render import history_table

    return history_table(magics.manager.audit.records())
