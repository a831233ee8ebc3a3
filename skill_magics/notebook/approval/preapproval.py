"""Pre-approval from configuration: ``SkillMagics.auto_approve`` and ``SKILL_MAGICS_AUTO_APPROVE``.

Both take skill names: a list, or one string of names separated by commas and/or spaces
(``core/base/namelist.py``, the one name-list parser). Patterns:

- ``"*"``: every LOCAL skill (those in skill folders), never an MCP server's: a wildcard
  written for your own skills must not pre-approve a skill a remote server adds later;
- ``"LABEL/*"``: every skill of the MCP server labelled ``LABEL`` (and of no other);
- ``"LABEL/NAME"``: that one MCP skill.

Example:
    >>> preapproved_by("pdf", ["pdf"], env={})
    'config SkillMagics.auto_approve'
    >>> preapproved_by("pdf", [], env={"SKILL_MAGICS_AUTO_APPROVE": "*"})
    'env SKILL_MAGICS_AUTO_APPROVE'
    >>> preapproved_by("team/pdf", "*", env={}) is None
    True
    >>> preapproved_by("team/pdf", "team/*", env={})
    'config SkillMagics.auto_approve'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from skill_magics.core.base.namelist import name_list
from skill_magics.core.catalog.discovery import is_qualified

AUTO_APPROVE_ENV = "SKILL_MAGICS_AUTO_APPROVE"


def preapproved_by(
    skill_name: str,
    config_value: str | Iterable[str] | None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Who pre-approved ``skill_name`` (for the audit trail), or None when nobody did."""
    if _matches(skill_name, name_list(config_value)):
        return "config SkillMagics.auto_approve"
    env = os.environ if env is None else env
    if _matches(skill_name, name_list(env.get(AUTO_APPROVE_ENV))):
        return f"env {AUTO_APPROVE_ENV}"
    return None


def _matches(skill_name: str, patterns: Sequence[str]) -> bool:
    """Does one of ``patterns`` name ``skill_name`` (see the module docstring)?"""
    if skill_name in patterns:
        return True
    if is_qualified(skill_name):  # an MCP server's skill: only its own label's wildcard
        return skill_name.partition("/")[0] + "/*" in patterns
    return "*" in patterns


def _wildcard(skill_name: str) -> str:
    """The wildcard that would pre-approve ``skill_name``: ``*``, or ``LABEL/*``."""
    return skill_name.partition("/")[0] + "/*" if is_qualified(skill_name) else "*"


def unavailable_message(skill_names: str | Sequence[str], why: str) -> str:
    """One line for approval nobody can give, naming the two ways to pre-approve (every
    skill of the request: ``%skill_context a b`` asks for both at once)."""
    names = [skill_names] if isinstance(skill_names, str) else list(skill_names)
    config = f"%config SkillMagics.auto_approve = {names!r}"
    if name_list(",".join(names)) != tuple(names):  # a (non-spec) name with a space or comma
        return f"Approval unavailable: {why}; nothing ran. To pre-approve, set {config}"
    wildcards = ",".join(dict.fromkeys(_wildcard(name) for name in names))
    return (
        f"Approval unavailable: {why}; nothing ran. To pre-approve, set "
        f"{AUTO_APPROVE_ENV}={','.join(names)} (or {wildcards}) or {config}"
    )


__all__ = ["AUTO_APPROVE_ENV", "preapproved_by", "unavailable_message"]
