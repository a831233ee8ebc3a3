"""Pre-approval from configuration: ``SkillMagics.auto_approve`` and ``SKILL_MAGICS_AUTO_APPROVE``.

Both take ``"*"`` (every skill) or skill names: a list, or one string of names separated by
commas and/or spaces (``core/base/namelist.py``, the one name-list parser).

Example:
    >>> preapproved_by("pdf", ["pdf"], env={})
    'config SkillMagics.auto_approve'
    >>> preapproved_by("pdf", [], env={"SKILL_MAGICS_AUTO_APPROVE": "*"})
    'env SKILL_MAGICS_AUTO_APPROVE'
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from skill_magics.core.base.namelist import name_list

AUTO_APPROVE_ENV = "SKILL_MAGICS_AUTO_APPROVE"


def preapproved_by(
    skill_name: str,
    config_value: str | Iterable[str] | None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """Who pre-approved ``skill_name`` (for the audit trail), or None when nobody did."""
    names = set(name_list(config_value))
    if "*" in names or skill_name in names:
        return "config SkillMagics.auto_approve"
    env = os.environ if env is None else env
    names = set(name_list(env.get(AUTO_APPROVE_ENV)))
    if "*" in names or skill_name in names:
        return f"env {AUTO_APPROVE_ENV}"
    return None


def unavailable_message(skill_names: str | Sequence[str], why: str) -> str:
    """One line for approval nobody can give, naming the two ways to pre-approve (every
    skill of the request: ``%skill_context a b`` asks for both at once)."""
    names = [skill_names] if isinstance(skill_names, str) else list(skill_names)
    config = f"%config SkillMagics.auto_approve = {names!r}"
    if name_list(",".join(names)) != tuple(names):  # a (non-spec) name with a space or comma
        return f"Approval unavailable: {why}; nothing ran. To pre-approve, set {config}"
    return (
        f"Approval unavailable: {why}; nothing ran. To pre-approve, set "
        f"{AUTO_APPROVE_ENV}={','.join(names)} (or *) or {config}"
    )


__all__ = ["AUTO_APPROVE_ENV", "preapproved_by", "unavailable_message"]
