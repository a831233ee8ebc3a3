"""``%skills add mcp LABEL -- COMMAND...`` / ``%skills add mcp LABEL URL`` and
``%skills remove mcp LABEL``: the skills of an MCP server (SEP-2640), named ``LABEL/skill``.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from skill_magics.core.errors import McpError
from skill_magics.notebook.cmd import SkillsHost

ADD_USAGE = "%skills add mcp LABEL -- COMMAND [ARG...]  or  %skills add mcp LABEL URL"
REMOVE_USAGE = "%skills remove mcp LABEL"


def is_mcp(args: list[str]) -> bool:
    """``mcp LABEL ...``: a lone ``mcp`` stays a folder name (``%skills add mcp``)."""
    return len(args) >= 2 and args[0] == "mcp"


def add(magics: SkillsHost, args: list[str]) -> Any:
    label, rest = args[1], args[2:]
    if rest[:1] == ["--"] and len(rest) > 1:
        where: dict[str, Any] = {"command": rest[1:]}
    elif len(rest) == 1 and rest[0].startswith(("http://", "https://")):
        where = {"url": rest[0]}
    else:
        raise UsageError(f"Usage: {ADD_USAGE}")
    try:
        skills = magics.manager.add_mcp_server(label, **where)
    except McpError as exc:
        raise UsageError(exc.magic_text()) from None
    names = [e.qualified_name for e in skills]
    shown = ", ".join(names[:8]) + (f", +{len(names) - 8} more" if len(names) > 8 else "")
    print(
        f"Added MCP server '{label}': {len(names)} skill{'s' if len(names) != 1 else ''}"
        f"{' (' + shown + ')' if names else ''}, listed with their origin in %skills; "
        "their files are read only when needed, and their scripts cannot run yet"
    )
    return None


def remove(magics: SkillsHost, args: list[str]) -> Any:
    if len(args) != 2:
        raise UsageError(f"Usage: {REMOVE_USAGE}")
    if not magics.manager.remove_mcp_server(args[1]):
        raise UsageError(f"No MCP server is labelled {args[1]!r} (%skills lists them)")
    print(f"Removed MCP server '{args[1]}'")
    return None
