"""Pre-approval from configuration: ``SkillMagics.auto_approve`` and ``SKILL_MAGICS_AUTO_APPROVE``.

Both take ``"*"`` (every skill) or skill names (a list, or a comma-separated string).

Example:
    >>> preapproved_by("pdf", ["pdf"], env={})
    'config SkillMagics.auto_approve'
    >>> preapproved_by("pdf", [], env={"SKILL_MAGICS_AUTO_APPROVE": "*"})
    'env SKILL_MAGICS_AUTO_APPROVE'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

AUTO_APPROVE_ENV = "SKILL_MAGICS_AUTO_APPROVE"


def parse_names(value: str | Iterable[str] | None) -> set[str]:
    """``"a, b"`` or ``["a", "b"]`` -> {"a", "b"}; blanks dropped."""
    if value is None:
        return set()
    if isinstance(value, str):
        value = value.split(",")
    return {name.strip() for name in value if name and name.strip()}


def preapproved_by(
    skill_name: str,
    config_value: str | Iterable[str] | None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Who pre-approved ``skill_name`` (for the audit trail), or None when nobody did."""
    names = parse_names(config_value)
    if "*" in names or skill_name in names:
        return "config SkillMagics.auto_approve"
    env = os.environ if env is None else env
    names = parse_names(env.get(AUTO_APPROVE_ENV))
    if "*" in names or skill_name in names:
        return f"env {AUTO_APPROVE_ENV}"
    return None


def unavailable_message(skill_names: str | Sequence[str], why: str) -> str:
    """One line for approval nobody can give, naming the two ways to pre-approve (every
    skill of the request: ``%skill_context a b`` asks for both at once)."""
    names = [skill_names] if isinstance(skill_names, str) else list(skill_names)
    return (
        f"Approval unavailable: {why}; nothing ran. To pre-approve, set "
        f"{AUTO_APPROVE_ENV}={','.join(names)} (or *) or "
        f"%config SkillMagics.auto_approve = {names!r}"
    )


__all__ = ["AUTO_APPROVE_ENV", "parse_names", "preapproved_by", "unavailable_message"]
