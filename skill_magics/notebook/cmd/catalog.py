"""``%skills catalog [NAME...]``: the <available_skills> block for a system prompt (H-ctx)."""

from __future__ import annotations

from typing import Any

HELP = "the <available_skills> block for a system prompt (skills-ref format)"


def run(magics: Any, args: list[str]) -> Any:
    from skill_magics.notebook.magics.context import catalog_command

    return catalog_command(magics, args)
