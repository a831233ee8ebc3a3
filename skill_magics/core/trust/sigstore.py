"""A sigstore bundle beside an artifact (``FILE.sigstore.json`` or ``FILE.sigstore``), checked
with the ``sigstore`` package (the ``[sigstore]`` extra) when it is installed, offline.

What runs, all on this machine (docs/trust.md says what is and is not covered):

1. ``sigstore.verify.Verifier.verify_artifact(bytes, bundle, policy)`` against a trusted root:
   the policy's ``[signatures] sigstore_trusted_root`` (a ``trusted_root.json``: a private
   sigstore deployment, or a test's), else the public-good root as the package ships it or
   as the user's TUF cache holds it (``Verifier.production(offline=True)``: no refresh, no
   network). It checks the signature over these bytes, the signing certificate's chain to
   the root's certificate authority, its embedded SCT against the root's CT log keys, and
   the bundle's transparency-log entry (signed entry timestamp, inclusion proof, signed
   checkpoint) against the root's log keys, at the entry's integrated time. Nothing in the
   bundle is looked up online (no Rekor query, no TUF refresh).
2. The certificate's identity (its SAN and OIDC issuer, with sigstore's own ``Identity``
   policy) is matched against the identities the policy lists (``[signatures] sigstore =
   ["IDENTITY ISSUER", ...]``): a listed one is SIGNED (principal ``IDENTITY (ISSUER)``, key
   the certificate's SHA-256 fingerprint), any other is an UNKNOWN signer. A bundle that
   does not verify is BAD. Without the package a bundle is left unverified: unsigned,
   saying so.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import Signature, SignatureState

SUFFIXES = (".sigstore.json", ".sigstore")
MAX_BUNDLE = 1 << 20
MAX_DATA = 200 * 1000 * 1000
INSTALL_HINT = "pip install 'skill-magics[sigstore]'"


def bundle_beside(artifact: Path) -> Path | None:
    """``ARTIFACT.sigstore.json`` (or ``.sigstore``) when one is there."""
    for suffix in SUFFIXES:
        candidate = artifact.with_name(artifact.name + suffix)
        if os.path.isfile(candidate):
            return candidate
    return None


def principal_of(identity: str, issuer: str) -> str:
    """How a sigstore signer is named in a Signature (and matched at run time)."""
    return f"{identity} ({issuer})"


def parse_identity(entry: str) -> tuple[str, str]:
    """``"IDENTITY ISSUER"`` of the policy -> (identity, issuer); ValueError otherwise."""
    parts = entry.split()
    if len(parts) != 2 or not parts[1].startswith("https://"):
        raise ValueError(
            f"{visible(entry)!r} is not 'IDENTITY ISSUER' (e.g. 'alice@example.com "
            "https://github.com/login/oauth')"
        )
    return parts[0], parts[1]


class _Seen:
    """A verification policy that accepts any identity and keeps the certificate, so the
    bundle is verified once and the identity decided here."""

    def __init__(self) -> None:
        self.cert: Any = None

    def verify(self, cert: Any) -> None:
        self.cert = cert


def verify_bundle(
    artifact: Path,
    bundle_path: Path,
    identities: Sequence[str],
    trusted_root: str | None,
    subject: str = "",
) -> Signature:
    """The sigstore bundle ``bundle_path`` over ``artifact`` (the module docstring);
    ``identities``: the policy's ``"IDENTITY ISSUER"`` entries."""
    try:
        from sigstore.errors import Error as SigstoreError
        from sigstore.models import Bundle, TrustedRoot
        from sigstore.verify import Verifier
        from sigstore.verify.policy import Identity
    except ImportError:
        return Signature.unsigned(
            f"{visible(bundle_path.name)} not verified: the sigstore package is not "
            f"installed ({INSTALL_HINT})"
        )
    if os.path.getsize(bundle_path) > MAX_BUNDLE or os.path.getsize(artifact) > MAX_DATA:
        return Signature(SignatureState.BAD, "sigstore", note=f"{bundle_path.name} is too large")
    sigstore_log = logging.getLogger("sigstore")
    level = sigstore_log.level
    try:
        if trusted_root:
            verifier = Verifier(trusted_root=TrustedRoot.from_file(trusted_root))
        else:
            sigstore_log.setLevel(logging.ERROR)  # its "offline mode" warning, every time
            verifier = Verifier.production(offline=True)
    except Exception as exc:  # noqa: BLE001 - no root here: cannot say, never "signed"
        return Signature(
            SignatureState.UNKNOWN,
            "sigstore",
            subject=subject,
            note=visible(f"no sigstore trusted root to verify with ({exc})"[:200]),
        )
    finally:
        sigstore_log.setLevel(level)
    seen = _Seen()
    try:
        bundle = Bundle.from_json(bundle_path.read_bytes())
        verifier.verify_artifact(artifact.read_bytes(), bundle, seen)
    except Exception as exc:  # noqa: BLE001 - a bundle that does not parse does not verify
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return Signature(
            SignatureState.BAD,
            "sigstore",
            subject=subject,
            note=visible(f"{bundle_path.name} does not verify: {first}"[:200]),
        )
    from cryptography.hazmat.primitives.serialization import Encoding

    key = hashlib.sha256(seen.cert.public_bytes(Encoding.DER)).hexdigest().upper()
    for entry in identities:
        identity, issuer = parse_identity(entry)
        try:
            Identity(identity=identity, issuer=issuer).verify(seen.cert)
        except SigstoreError:
            continue
        return Signature.signed("sigstore", principal_of(identity, issuer), key, subject)
    return Signature(
        SignatureState.UNKNOWN,
        "sigstore",
        "",
        key,
        subject,
        "a valid sigstore bundle whose identity the policy does not list ([signatures] sigstore)",
    )


__all__ = [
    "INSTALL_HINT",
    "SUFFIXES",
    "bundle_beside",
    "parse_identity",
    "principal_of",
    "verify_bundle",
]
