"""The :class:`Signature` of a skill: who signed what, or why it counts as unsigned.

Example:
    >>> key = "SHA256:N7NQ4k/w7cvO55zldzusYUw+b/9SsjdlqB9nw0CXgo0"
    >>> s = Signature.signed("ssh", "alice@example.com", key, "tag v1 (commit 1234)")
    >>> print(s.describe().replace(key, "KEY"))
    signed by alice@example.com (ssh key KEY; tag v1 (commit 1234))
    >>> Signature.unsigned("local").describe()
    'unsigned (local)'
    >>> Signature.from_json(s.to_json()) == s
    True
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.visible import visible

NAMESPACE = "skill-magics"  # the ssh-keygen -Y namespace of a detached archive signature
METHODS = ("ssh", "openpgp", "sigstore")
_KEY = re.compile(r"^(SHA256:[A-Za-z0-9+/=]{20,64}|[0-9A-F]{16,64})$")
_MAX_TEXT = 300


class SignatureState(enum.StrEnum):
    """What verification found."""

    SIGNED = "signed"  # a valid signature by a key the allowed signers (or keyring) trust
    UNSIGNED = "unsigned"  # no signature (a folder, an MCP server, an unsigned commit)
    UNKNOWN = "unknown-signer"  # a valid signature by a key nobody allowed (or not checkable)
    BAD = "bad"  # a signature that does not verify over these bytes: always refused


@dataclass(frozen=True)
class Anchors:
    """What a verification trusts besides the allowed-signers file (the team policy's
    ``[signatures]``): OpenPGP primary-key fingerprints, sigstore ``"IDENTITY ISSUER"``
    entries, and a sigstore ``trusted_root.json`` (None: the public-good one)."""

    openpgp: tuple[str, ...] = ()
    sigstore: tuple[str, ...] = ()
    sigstore_root: str | None = None


NO_ANCHORS = Anchors()


@dataclass(frozen=True)
class Signature:
    """One verification's result. ``subject`` says what was signed (``tag v1 (commit
    ...)``, ``commit ...``, ``archive sha256:...``); ``note`` why it is not signed."""

    state: SignatureState
    method: str = ""  # "ssh" or "openpgp" ("" when unsigned)
    principal: str = ""
    key: str = ""  # SHA256:... (ssh), the OpenPGP fingerprint, the sigstore cert's SHA-256
    subject: str = ""
    note: str = ""

    @classmethod
    def signed(cls, method: str, principal: str, key: str, subject: str) -> Signature:
        return cls(SignatureState.SIGNED, method, principal, key, subject)

    @classmethod
    def unsigned(cls, note: str) -> Signature:
        return cls(SignatureState.UNSIGNED, note=note)

    @property
    def is_signed(self) -> bool:
        return self.state is SignatureState.SIGNED

    @property
    def identity(self) -> str:
        """What a "Yes in session" binds to: the signer (method, principal, key) or the
        state; the same bytes from another signer ask again."""
        if self.is_signed:
            return f"{self.method}:{self.principal}:{self.key}"
        return f"{self.state.value}:{self.key}"

    def describe(self) -> str:
        """One line for a person: ``signed by P (ssh key K; subject)`` or ``unsigned (why)``."""
        if self.is_signed:
            return visible(
                f"signed by {self.principal} ({self.method} key {self.key}; {self.subject})"
            )
        if self.state is SignatureState.UNKNOWN:
            key = f" {self.key}" if self.key else ""
            return visible(f"unsigned: signature by unknown key{key} ({self.note or self.subject})")
        if self.state is SignatureState.BAD:
            return visible(f"BAD signature ({self.note})")
        return visible(f"unsigned ({self.note})" if self.note else "unsigned")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"state": self.state.value}
        for name in ("method", "principal", "key", "subject", "note"):
            value = getattr(self, name)
            if value:
                out[name] = value
        return out

    @classmethod
    def from_json(cls, data: Any) -> Signature:
        """A signature read back from a lock or a record (untrusted): ValueError when any
        field is not what verification writes."""
        if not isinstance(data, dict):
            raise ValueError("signature is not an object")
        try:
            state = SignatureState(str(data.get("state")))
        except ValueError:
            raise ValueError(f"signature state {data.get('state')!r}") from None
        fields = {}
        for name in ("method", "principal", "key", "subject", "note"):
            value = data.get(name, "")
            if not isinstance(value, str) or len(value) > _MAX_TEXT or "\n" in value:
                raise ValueError(f"signature {name} is not one short line")
            fields[name] = value
        if state is SignatureState.SIGNED:
            if fields["method"] not in METHODS or not fields["principal"]:
                raise ValueError("a signed entry names no method or principal")
            if not _KEY.match(fields["key"]):
                raise ValueError(f"signature key {fields['key']!r}")
        return cls(state, **fields)


__all__ = ["NAMESPACE", "NO_ANCHORS", "Anchors", "Signature", "SignatureState"]
