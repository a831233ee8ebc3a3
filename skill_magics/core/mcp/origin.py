"""Where an MCP server's skill came from, as its approval request carries it (a value: the
run machinery reads it, so it sits here, below everything of core/mcp that runs)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class McpOriginInfo:
    """An MCP server's skill (SEP-2640): where its files came from, the value a "Yes in
    session" binds to (``core.mcp.wire.binding``: the full set of {uri, digest}) and what
    changed since the copy cached before ("added x", "changed y", "removed z")."""

    origin: str  # "mcp:LABEL"
    server: str  # the command line or URL the label stands for
    binding: str
    changes: tuple[str, ...] = ()


__all__ = ["McpOriginInfo"]
