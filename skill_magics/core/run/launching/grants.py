"""Network grants: the skills given the network in their sandboxed runs this session, on
top of the ``sandbox_network`` setting (session state with a module of its own, like secret
values: docs/architecture.md, *Run settings*), and the one way a grant is given: checked
against the team policy, audited."""

from __future__ import annotations

import threading

from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.status import AuditOutcome


class NetworkGrants:
    """Skills given the network in sandboxed runs during this session (the approval panel,
    ``SkillManager.grant_network``), on top of the ``sandbox_network`` setting. Session
    state, like secret values: shared by the planner and the executor, which reads it again
    at spawn time, so a grant given while approving counts for that run. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def grant(self, skill: str) -> bool:
        """Give ``skill`` the network; False when it already had it."""
        with self._lock:
            if skill in self._names:
                return False
            self._names.add(skill)
            return True

    def has(self, skill: str) -> bool:
        with self._lock:
            return skill in self._names or "*" in self._names

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._names))

    def clear(self) -> None:
        with self._lock:
            self._names.clear()


def grant_network(grants: NetworkGrants, audit: AuditLog, skill_name: str, by: str) -> None:
    """Give ``skill_name`` the network in ``grants`` (audited, naming ``by``); a grant the
    team policy forbids (``[run] network = false``) raises PolicyError, audited."""
    from skill_magics.core.policy.runs import check_network_grant

    try:
        check_network_grant(skill_name)
    except SkillMagicsError as exc:
        audit.event(
            skill_name, "<sandbox>", "", AuditOutcome.REFUSED, reason=f"network grant: {exc}"
        )
        raise
    if grants.grant(skill_name):
        audit_grant(audit, skill_name, by)


def audit_grant(audit: AuditLog, skill_name: str, by: str) -> None:
    """Record that ``skill_name`` has the network in its sandboxed runs, given ``by``."""
    audit.event(
        skill_name,
        "<sandbox>",
        "",
        AuditOutcome.NETWORK_GRANTED,
        reason=f"network granted for sandboxed runs of '{skill_name}' by {by}",
    )


__all__ = ["NetworkGrants", "audit_grant", "grant_network"]
