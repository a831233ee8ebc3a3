"""``%skills policy``: the team policy file in force, how it was found, and what it says
(core/policy; docs/trust.md)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources

HELP = "the team policies in force (each file and its content)"
USAGE = "%skills policy"


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.core.policy.load import describe_policy

    _sources.parser(USAGE).parse(args)
    print(describe_policy())
    return None
