"""MCP servers' skills as their checked listings describe them, as SkillMetadata.

What ``manager.list_skills()`` adds to the local skills, and the prompt's catalog and the
model's tools list: ``LABEL/NAME``, ``location`` the SKILL.md URI on that server, ``origin``
``mcp:LABEL``. Nothing of a skill is fetched for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.base.loaded import loaded
from skill_magics.core.base.models import SkillMetadata

OPT_OUT_KEY = "disable-model-invocation"


@dataclass
class McpListed(SkillMetadata):
    """An MCP server's skill as its listing describes it (nothing of it fetched):
    ``location`` is its SKILL.md URI on that server, ``origin`` ``mcp:LABEL``."""

    location: str = ""
    origin: str = ""


def listed(owner: object) -> list[SkillMetadata]:
    """The skills of ``owner``'s (a SkillManager's) MCP servers, from their checked
    listings. No server was ever added while the servers module is not loaded: nothing to
    list, and nothing imported for it (``%load_ext`` stays light)."""
    servers = loaded("skill_magics.core.mcp.servers")
    if servers is None:
        return []
    out: list[SkillMetadata] = []
    for entry in servers.servers_of(owner).skills():
        fm = entry.frontmatter
        description = fm.get("description")
        raw = fm.get("metadata")
        extra: dict[str, Any] = dict(raw) if isinstance(raw, dict) else {}
        flags = {OPT_OUT_KEY: fm[OPT_OUT_KEY]} if OPT_OUT_KEY in fm else {}
        out.append(
            McpListed(
                name=entry.qualified_name,
                description=description if isinstance(description, str) else "",
                path=Path(entry.name) / "SKILL.md",  # never read: ``location`` is shown
                metadata={**extra, **flags},
                location=entry.uri,
                origin=f"mcp:{entry.label}",
            )
        )
    return out


__all__ = ["McpListed", "OPT_OUT_KEY", "listed"]
