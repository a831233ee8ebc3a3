"""``%skills catalog [NAME...]``: the <available_skills> block for a system prompt."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost

HELP = "the <available_skills> block for a system prompt (skills-ref format)"


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.notebook.magics.context import catalog_command

    return catalog_command(magics, args)
