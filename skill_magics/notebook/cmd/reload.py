"""``%skills reload``: rescan the directories (after adding or editing skills)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "rescan the skills directories (warm servers stop)"

PARSER = SubcommandParser("reload", "%skills reload")


def run(magics: SkillsHost, args: list[str]) -> Any:
    PARSER.parse(args)
    magics.manager.reload()  # the warm servers stop too (core/run/launching/warm/)
    print(f"Reloaded: {len(magics.manager.list_skills())} skills")
    return None
