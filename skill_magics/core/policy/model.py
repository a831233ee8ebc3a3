"""The :class:`Policy` value: what one policy file says, or why it cannot be read."""

from __future__ import annotations

from dataclasses import dataclass

from skill_magics.core.base.errors import SkillMagicsError


class PolicyError(SkillMagicsError, PermissionError):
    """A team policy refused an install, an add or a run (one line naming the rule and file)."""


@dataclass(frozen=True)
class Policy:
    """One policy file. ``broken`` ("" when it was read) is why it could not be: a broken
    policy refuses everything. Paths are absolute."""

    path: str
    text: str = ""
    broken: str = ""
    sources_allow: tuple[str, ...] | None = None  # None: any source
    require_signatures: bool = False
    allowed_signers: str | None = None
    openpgp_signers: tuple[str, ...] = ()  # OpenPGP primary-key fingerprints (upper-case hex)
    sigstore_signers: tuple[str, ...] = ()  # "IDENTITY ISSUER" of sigstore certificates
    sigstore_root: str | None = None  # a sigstore trusted_root.json (None: the public one)
    block: tuple[str, ...] = ()
    # The least confinement a run may get, a sandbox profile's name (None: any); the policy
    # sits below the run machinery, so the run checks pass the profiles' ranks in.
    max_sandbox: str | None = None
    network: bool | None = None  # False: no run gets network

    def rule(self, name: str) -> str:
        """``[table] key in FILE`` for a refusal."""
        return f"{name} in {self.path}"


__all__ = ["Policy", "PolicyError"]
