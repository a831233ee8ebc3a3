"""``%skills remove DIR``: stop searching a directory."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "DIR: stop searching a skills directory; mcp LABEL: close an MCP server"

PARSER = SubcommandParser("remove", "%skills remove DIR")
PARSER.add_argument("dir")


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.notebook.cmd import _mcp

    if _mcp.is_mcp(args):
        return _mcp.remove(magics, args)
    path = Path(PARSER.parse(args).dir).expanduser()
    if not magics.manager.remove_dir(path):
        dirs = ", ".join(str(d) for d in magics.manager.skill_dirs) or "none"
        raise UsageError(f"{path} is not a configured skills directory (configured: {dirs})")
    print(f"Removed {path}")
    return None
