"""``%skills reload``: rescan the directories (after adding or editing skills)."""

from __future__ import annotations

from typing import Any

HELP = "rescan the skills directories"


def run(magics: Any, args: list[str]) -> Any:
    magics.manager.reload()
    print(f"Reloaded: {len(magics.manager.list_skills())} skills")
    return None
