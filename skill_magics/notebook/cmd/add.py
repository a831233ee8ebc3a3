"""``%skills add DIR`` (or ``--examples``): search another directory (last in precedence)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from skill_magics.core.catalog.hidden import hidden_message, hidden_skills
from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = (
    "DIR | --examples [--first]: search another skills directory; "
    "mcp LABEL -- COMMAND... | mcp LABEL URL: an MCP server's skills"
)


USAGE = "%skills add DIR [--first]  or  %skills add --examples [--first]"
PARSER = SubcommandParser("add", USAGE)
PARSER.add_argument("dir", nargs="?")
PARSER.add_argument("--examples", action="store_true")
PARSER.add_argument("--first", action="store_true")


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.notebook.cmd import _mcp

    if _mcp.is_mcp(args):
        return _mcp.add(magics, args)
    opts = PARSER.parse(args)
    first = opts.first
    if opts.examples and opts.dir is None:
        from skill_magics.core.manager import examples_dir

        path = examples_dir()
    elif opts.dir is not None and not opts.examples:
        path = Path(opts.dir).expanduser()
    else:
        raise UsageError(f"Usage: {USAGE}")
    if not path.is_dir():
        raise UsageError(f"{path} is not a directory: give a folder that contains skill folders")
    manager = magics.manager
    found = skills_under(manager, path)
    if not found:
        # Say so instead of "added": a folder with no skill would be searched for nothing.
        counts = hidden_skills(path)
        hint = (
            " " + hidden_message(path, counts)
            if counts
            else " Give the folder that holds skill folders (each with a SKILL.md)."
        )
        print(f"No skill found in {path} (nothing added).{hint}")
        return None
    added = manager.add_dir(path, first=first)
    names = sorted(m.name for m in manager.list_skills() if _inside(m.path, added))
    total = len(manager.list_skills())
    shown = ", ".join(names[:8]) + (f", +{len(names) - 8} more" if len(names) > 8 else "")
    print(
        f"Added {added}: {len(names)} skill{'s' if len(names) != 1 else ''} from it ({shown}); "
        f"{total} in all (%skills to list them)"
    )
    counts = hidden_skills(path)
    if counts:
        print(hidden_message(path, counts))
    return None


def skills_under(manager: Any, path: Path) -> list[Any]:
    """The skills a search of ``path`` finds (without adding it)."""
    from skill_magics.core.catalog.discovery import SkillFinder

    return SkillFinder([path]).list_skills()


def _inside(skill_md: Path, folder: Path) -> bool:
    try:
        skill_md.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True
