"""``%skills add DIR`` (or ``--examples``): search another directory (last in precedence)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost

HELP = "DIR | --examples [--first]: search another skills directory"


def run(magics: SkillsHost, args: list[str]) -> Any:
    first = "--first" in args
    rest = [a for a in args if a != "--first"]
    if rest == ["--examples"]:
        from skill_magics.core.manager import examples_dir

        path = examples_dir()
    elif len(rest) == 1 and not rest[0].startswith("--"):
        path = Path(rest[0]).expanduser()
    else:
        raise UsageError("Usage: %skills add DIR [--first]  or  %skills add --examples")
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory: give a folder that contains skill folders")
    added = magics.manager.add_dir(path, first=first)
    count = len(magics.manager.list_skills())
    print(f"Added {added} ({count} skills now; %skills to list them)")
    return None
