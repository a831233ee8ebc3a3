"""``%skills`` / ``%skills list``: the skills table with warnings beneath."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

LIST_WAIT_S = 3.0  # how long %skills waits for MCP servers to list their skills again
HELP = "table of skills (name, description, scripts, location) and warnings"

PARSER = SubcommandParser("list", "%skills [list]")


def run(magics: SkillsHost, args: list[str]) -> Any:
    PARSER.parse(args)
    from skill_magics.notebook.render import skills_table

    manager = magics.manager
    skills: list[Any] = []  # Skill, or the SkillMetadata of one that cannot load
    for meta in manager.local_skills():  # MCP servers' skills: their own section
        try:
            skills.append(manager.get_skill(meta.name))
        except Exception:  # listed but unloadable: show its frontmatter row anyway
            skills.append(meta)
    return skills_table(
        skills,
        manager.warnings,
        dirs=manager.skill_dirs,
        plugins=_plugins(skills),
        mcp=_mcp_servers(manager),
        signatures=_signatures(skills),
    )


def _signatures(skills: list[Any]) -> dict[str, str] | None:
    """Skill name -> who signed it (core/trust/installed.py), when any listed skill is an
    installed one (a lock beside it); None when all are local folders (all unsigned)."""
    from skill_magics.core.installed.lock import lock_path
    from skill_magics.core.trust.installed import origin_of

    metas = [getattr(skill, "metadata", skill) for skill in skills]
    folders = [Path(meta.path).parent for meta in metas]
    if not any(lock_path(folder.parent).is_file() for folder in folders):
        return None
    return {
        meta.name: origin_of(folder, meta.name).signature.describe()
        for meta, folder in zip(metas, folders, strict=True)
    }


def _mcp_servers(manager: Any) -> list[Any]:
    """The MCP servers added to this manager, each listed again now (a skill added or
    removed on a server shows; none added: the SDK is never imported)."""
    from skill_magics.core.mcp.servers import servers_of

    servers = servers_of(manager)
    servers.refresh(wait=LIST_WAIT_S)  # a slow server does not hold the table back
    return servers.servers()


def _plugins(skills: list[Any]) -> list[tuple[Any, list[str]]]:
    """(Plugin, its skills' names) for the skills that came in an Agent Plugin."""
    from skill_magics.core.catalog.plugins import group_by_plugin

    # a Skill, or the SkillMetadata of one that cannot load: both know their SKILL.md
    metas = [getattr(skill, "metadata", skill) for skill in skills]
    return group_by_plugin((meta.name, Path(meta.path).parent) for meta in metas)
