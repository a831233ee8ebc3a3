"""``%skills reload``: rescan the directories (after adding or editing skills)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, no_args

HELP = "rescan the skills directories"


def run(magics: SkillsHost, args: list[str]) -> Any:
    no_args(args, "%skills reload")
    magics.manager.reload()
    print(f"Reloaded: {len(magics.manager.list_skills())} skills")
    return None
