"""An MCP server's skill as the run machinery sees it: the verified cached copy (core/mcp/
cache.py) loaded like a skill folder, named ``LABEL/NAME``, carrying its origin and the
digest-set binding a "Yes in session" is tied to (``ApprovalRequest.mcp``)."""

from __future__ import annotations

from dataclasses import replace

from skill_magics.core.base.models import SkillMetadata
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.mcp.origin import McpOriginInfo


class McpSkill(Skill):
    """A cached MCP skill. Its name is always ``LABEL/NAME`` (never the bare name a local
    skill could have: approvals, secrets and audit records stay apart)."""

    def __init__(
        self,
        metadata: SkillMetadata,
        qualified: str,
        origin: McpOriginInfo,
        *,
        detector: ScriptDetector | None = None,
    ) -> None:
        self.qualified = qualified
        super().__init__(metadata, detector=detector)
        self.origin = origin
        self.binding = origin.binding

    # Skill re-parses SKILL.md into ``metadata`` when it changes: keep the qualified name.
    @property
    def metadata(self) -> SkillMetadata:
        return self._metadata

    @metadata.setter
    def metadata(self, value: SkillMetadata) -> None:
        self._metadata = replace(value, name=self.qualified)

    @property
    def name(self) -> str:
        return self.qualified

    def current_metadata(self) -> SkillMetadata:
        return replace(super().current_metadata(), name=self.qualified)
