"""``%skills show NAME``: metadata, rendered SKILL.md, scripts with approval state, and for an
installed skill its source and whether its files still match its skills-lock.json."""

from __future__ import annotations

from typing import Any

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "NAME | LABEL/NAME: metadata, SKILL.md and scripts of one skill (LABEL: an MCP server)"

PARSER = SubcommandParser("show", "%skills show NAME")
PARSER.add_argument("name")


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.core.base.secrets import secret_forms
    from skill_magics.core.catalog.plugins import plugin_of
    from skill_magics.core.run.planning.plan import provenance_info
    from skill_magics.core.trust.installed import origin_of
    from skill_magics.notebook.render import skill_detail

    manager = magics.manager
    name = PARSER.parse(args).name
    if "/" in name:  # LABEL/NAME: a skill of an MCP server
        from skill_magics.notebook.cmd import _mcp

        shown = _mcp.show(magics, name)
        if shown is not None:
            return shown
    skill = manager.get_skill(name)
    try:
        approved = manager.approvals.is_approved(skill.name, skill.content_hash())
    except SkillMagicsError:  # cannot be fingerprinted, so never approved (it is refused)
        approved = False
    # What the scripts need, named before anything runs (core/catalog/requirements.py).
    return skill_detail(
        skill,
        approved=approved,
        secrets=manager.secret_status(skill.name),
        secret_forms=secret_forms(skill.current_metadata()),  # which form declared each
        requirements=manager.requirements(skill.name),
        provenance=provenance_info(skill.base_dir),  # installed: does it match its lock?
        signature=origin_of(skill.base_dir, skill.name).signature,  # who signed (core/trust)
        plugin=plugin_of(skill.base_dir),  # came in an Agent Plugin: its name, MCP servers
    )
