"""What the model sees of the skills: the system prompt with the available skills, and the tools.

Built from the same parts a real client gives a model (docs/architecture.md, *The available
skills block*, *Activation*): the ``<available_skills>`` block
(core/prompt/available_skills.py) in the system prompt after a short note on how to use it,
the ``activate_skill`` tool returning ``<skill_content>`` (core/prompt/activation.py) and the
skills' script tools (core/prompt/tools.py). A
``descriptions`` override replaces a skill's description in every one of those places (the
skill's ``<available_skills>`` entry, the activation tool's list is names only, each script
tool's text), so a new description can be tried without editing SKILL.md. No skills
(``skills=[]``): no ``<available_skills>`` block, no tools, the system prompt as given.
``Offer.available_skills`` is that block (``Offer.catalog`` its deprecated old name:
``core/catalog/`` is the skills on disk, not this).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skill_magics.core.base.deprecation import deprecation_message
from skill_magics.core.lab.clients import Provider
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.available_skills import available_skills, model_visible, opted_out
from skill_magics.core.prompt.tools import ACTIVATION_TOOL, ToolSpec, tool_specs

SKILLS_NOTE = (
    "Skills are folders of instructions, scripts and resources for particular tasks. The "
    "skills available to you are listed below, each with a description of when to use it. "
    f"When a task matches a skill's description, call the {ACTIVATION_TOOL} tool with the "
    "skill's name before you start: it returns the skill's full instructions. A skill's "
    "scripts are tools named <skill>__<script>; a person approves each run first, and a run "
    "that is declined or fails comes back as an error."
)


@dataclass(frozen=True)
class Offer:
    """The skills offered to a model: the system prompt (with ``available_skills``, the
    ``<available_skills>`` block in it) and the tool specs."""

    skills: tuple[str, ...]
    system: str
    available_skills: str
    specs: tuple[ToolSpec, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)

    @property
    def catalog(self) -> str:
        """Deprecated: the old name of ``available_skills`` (a DeprecationWarning)."""
        message = deprecation_message("Offer.catalog", "Offer.available_skills")
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.available_skills

    def tools(self, provider: Provider) -> list[dict[str, Any]]:
        return provider.tool_definitions(self.specs)

    def spec(self, name: str) -> ToolSpec | None:
        return next((s for s in self.specs if s.name == name), None)

    def target(self, name: str, input: Any) -> tuple[str, str | None, str | None]:
        """(kind, skill, script) a tool call names: ``activation`` with the skill asked for,
        ``script`` with its skill and path, or ``unknown``."""
        spec = self.spec(name)
        if spec is None:
            return "unknown", None, None
        if spec.kind == "activation":
            wanted = input.get("name") if isinstance(input, dict) else None
            return "activation", wanted if isinstance(wanted, str) else None, None
        return spec.kind, spec.skill, spec.script


def make_offer(
    manager: SkillManager,
    skills: Sequence[str] | None = None,
    *,
    system: str | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> Offer:
    """The :class:`Offer` of ``skills`` (None: every skill a model may use; a skill with
    ``disable-model-invocation: true`` is never offered). An unknown name raises
    SkillNotFoundError; a description for a skill not offered raises ValueError."""
    if skills is None:
        names = model_visible(manager)
    else:
        names = []
        for name in dict.fromkeys(skills):
            meta = manager.get_skill(name).metadata  # SkillNotFoundError for a typo
            if not opted_out(meta):
                names.append(name)
    overrides = {str(k): str(v) for k, v in (descriptions or {}).items()}
    stray = sorted(set(overrides) - set(names))
    if stray:
        raise ValueError(
            f"A description was given for {', '.join(map(repr, stray))}, which the model is "
            f"not offered here: offer it (skills=[...]) or drop the description"
        )
    for name, text in overrides.items():
        if not text.strip():
            raise ValueError(f"The description for {name!r} is empty: give its text")
    head = (system or "").strip()
    if not names:
        return Offer((), head, "", (), overrides)
    block = str(available_skills(manager, names, descriptions=overrides))
    specs = tuple(
        s for s in tool_specs(manager, names, overrides) if s.kind in ("activation", "script")
    )
    parts = [p for p in (head, SKILLS_NOTE, block) if p]
    return Offer(tuple(names), "\n\n".join(parts), block, specs, overrides)


__all__ = ["SKILLS_NOTE", "Offer", "make_offer"]
