"""``%skills available [NAME...] [--budget N] [--include PAT ...] [--exclude PAT ...]``: the
<available_skills> block for a system prompt, with its token counts and what was left out.
``%skills catalog`` is its deprecated old name (cmd/__init__.py, ``RENAMED``)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost

HELP = (
    "the <available_skills> block for a system prompt: [--budget TOKENS] [--include PAT ...] "
    "[--exclude PAT ...] [--layout skills-ref|guide]; token counts, what was left out"
)


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.notebook.magics.context import available_skills_command

    return available_skills_command(magics, args)
