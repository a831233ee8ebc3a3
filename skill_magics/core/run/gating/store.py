"""Session approvals: skill name -> the fingerprint approved with "Yes in session".

An approval also remembers the sandbox the approved run had: it covers later runs only when
they are confined no less (``approval.no_weaker``), so turning the sandbox off asks again;
and the managed environment the scripts ran with (``ApprovalRequest.environment``): after a
rebuild the next run asks again; and, for an MCP server's skill, the set of {uri, digest}
it was approved at (``ApprovalRequest.mcp.binding``): a server that changes any file asks again;
and the signer the skill had (``ApprovalRequest.signature``): another signer asks again.

Only the gate (gate.py) writes here; ``%skills approvals`` and ``%skills revoke`` read and
forget entries.

Example:
    >>> store = ApprovalStore()
    >>> store.approve("csv-profiler", "ab12...")
    >>> store.is_approved("csv-profiler", "ab12...")
    True
"""

from __future__ import annotations

import threading

from skill_magics.core.run.gating.approval import ApprovalRequest, SandboxInfo, no_weaker


class ApprovalStore:
    """Session approvals: skill name -> content hash approved with Yes in session. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._approved: dict[str, str] = {}
        self._sandbox: dict[str, SandboxInfo | None] = {}  # the isolation approved with it
        self._environment: dict[str, str] = {}  # the managed environment approved with it
        self._binding: dict[str, str] = {}  # an MCP skill's digest set approved with it

    @staticmethod
    def binding(part: ApprovalRequest) -> str:
        """See :func:`binding`."""
        return binding(part)

    def is_approved(self, skill_name: str, content_hash: str) -> bool:
        with self._lock:
            return self._approved.get(skill_name) == content_hash

    def covers(self, request: ApprovalRequest) -> bool:
        """Is every skill of ``request`` approved in session at the fingerprint it carries?"""
        with self._lock:
            return all(
                self._approved.get(part.skill_name) == part.content_hash
                and no_weaker(part.sandbox, self._sandbox.get(part.skill_name))
                and self._environment.get(part.skill_name, "") == part.environment
                and self._binding.get(part.skill_name, "") == self.binding(part)
                for part in request.requests
            )

    def approve(
        self,
        skill_name: str,
        content_hash: str,
        sandbox: SandboxInfo | None = None,
        environment: str = "",
        binding: str = "",
    ) -> None:
        """Remember "Yes in session" for ``skill_name`` at ``content_hash``, for runs confined
        at least as much as ``sandbox`` (None: the run had no sandbox) with the managed
        ``environment`` ("" for none)."""
        with self._lock:
            self._approved[skill_name] = content_hash
            self._sandbox[skill_name] = sandbox
            self._environment[skill_name] = environment
            self._binding[skill_name] = binding

    def rebase(self, skill_name: str, old_hash: str, new_hash: str) -> bool:
        """Move a session approval from ``old_hash`` to ``new_hash`` if it is still at
        ``old_hash`` (atomically); True when it moved. For files the approved run wrote."""
        with self._lock:
            if self._approved.get(skill_name) != old_hash:
                return False
            self._approved[skill_name] = new_hash
            return True

    def revoke(self, skill_name: str, content_hash: str | None = None) -> bool:
        """Forget a session approval; True when there was one. With ``content_hash``, only
        while the approval is still for that hash (atomically: a newer one stays)."""
        with self._lock:
            if content_hash is not None and self._approved.get(skill_name) != content_hash:
                return False
            self._sandbox.pop(skill_name, None)
            self._environment.pop(skill_name, None)
            self._binding.pop(skill_name, None)
            return self._approved.pop(skill_name, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._approved.clear()
            self._sandbox.clear()
            self._environment.clear()
            self._binding.clear()

    def approvals(self) -> dict[str, str]:
        """A copy of skill name -> approved content hash."""
        with self._lock:
            return dict(self._approved)


def binding(part: ApprovalRequest) -> str:
    """What else than the fingerprint a "Yes in session" for ``part`` is bound to: an MCP
    skill's digest set, and who signed the skill (the same bytes from another signer, or
    unsigned now, ask again)."""
    mcp = part.mcp.binding if part.mcp is not None else ""
    signer = part.signature.identity if part.signature is not None else ""
    return f"{mcp}|{signer}" if signer else mcp


__all__ = ["ApprovalStore"]
