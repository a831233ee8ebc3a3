"""A private sigstore instance made in the test, so a bundle is verified for real and offline
(no tests in here).

Everything sigstore's verifier checks is really signed with keys made here: a certificate
authority (the "Fulcio" of this instance) issues a short-lived code-signing certificate for an
identity and OIDC issuer, with an embedded SCT signed by a CT log key; the artifact is signed
with the certificate's key; a transparency log key (the "Rekor") signs the entry's timestamp
(SET) and a checkpoint over a one-entry Merkle tree the inclusion proof leads to. The trusted
root names the authority and both logs. Nothing here is Fulcio or Rekor enrollment: it is a
sigstore deployment of the test's own, as a company would run one (docs/trust.md).
Formats: RFC 6962 (SCTs, Merkle leaves), the C2SP signed-note checkpoint, Rekor's
``hashedrekord`` 0.0.1 entry, the sigstore bundle v0.3 and trusted root v0.1 JSON.
"""

from __future__ import annotations

import base64
import hashlib
import json
import struct
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import rfc8785
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, ExtensionOID, NameOID

WHEN = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)  # inside every validity window below
ISSUER_OID = x509.ObjectIdentifier("1.3.6.1.4.1.57264.1.1")  # sigstore's OIDC issuer (v1)
LOG_HOST = "log.skill-magics.test"


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def spki(key: Any) -> bytes:
    return key.public_key().public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def der_octets(raw: bytes) -> bytes:
    """DER OCTET STRING of ``raw`` (the SCT list extension's value)."""
    n = len(raw)
    if n < 0x80:
        size = bytes([n])
    else:
        body = n.to_bytes((n.bit_length() + 7) // 8, "big")
        size = bytes([0x80 | len(body)]) + body
    return b"\x04" + size + raw


@dataclass
class Instance:
    """One sigstore deployment: its authority, CT log and transparency log keys."""

    ca_key: Any
    ca: x509.Certificate
    ct_key: Any
    log_key: Any

    @classmethod
    def new(cls, name: str = "Skill Magics Test CA") -> Instance:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "skill-magics tests"),
                x509.NameAttribute(NameOID.COMMON_NAME, name),
            ]
        )
        ca = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(subject)
            .public_key(ca_key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(WHEN - timedelta(days=30))
            .not_valid_after(WHEN + timedelta(days=30))
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=None,
                    decipher_only=None,
                ),
                critical=True,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()), critical=False
            )
            .sign(ca_key, hashes.SHA256())
        )
        return cls(
            ca_key,
            ca,
            ec.generate_private_key(ec.SECP256R1()),
            ec.generate_private_key(ec.SECP256R1()),
        )

    # -- the trusted root ----------------------------------------------------------------

    def trusted_root(self, path: Path) -> Path:
        """Write this instance's ``trusted_root.json`` (what a policy's
        ``sigstore_trusted_root`` names)."""

        def log(key: Any, url: str) -> dict[str, Any]:
            return {
                "baseUrl": url,
                "hashAlgorithm": "SHA2_256",
                "publicKey": {
                    "rawBytes": b64(spki(key)),
                    "keyDetails": "PKIX_ECDSA_P256_SHA_256",
                    "validFor": {"start": "2026-01-01T00:00:00Z"},
                },
                "logId": {"keyId": b64(hashlib.sha256(spki(key)).digest())},
            }

        root = {
            "mediaType": "application/vnd.dev.sigstore.trustedroot+json;version=0.1",
            "tlogs": [log(self.log_key, f"https://{LOG_HOST}")],
            "ctlogs": [log(self.ct_key, "https://ct.skill-magics.test")],
            "certificateAuthorities": [
                {
                    "subject": {"organization": "skill-magics tests", "commonName": "test CA"},
                    "uri": "https://ca.skill-magics.test",
                    "certChain": {
                        "certificates": [
                            {"rawBytes": b64(self.ca.public_bytes(serialization.Encoding.DER))}
                        ]
                    },
                    "validFor": {"start": "2026-01-01T00:00:00Z"},
                }
            ],
        }
        path.write_text(json.dumps(root, indent=1))
        return path

    # -- a signing certificate with its SCT ----------------------------------------------

    def certificate(self, key: Any, identity: str, issuer: str) -> x509.Certificate:
        """A 10-minute code-signing certificate for ``identity`` from ``issuer``, with an
        embedded SCT of this instance's CT log over its precertificate."""
        ca_public = self.ca_key.public_key()
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([]))
            .issuer_name(self.ca.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(WHEN - timedelta(minutes=5))
            .not_valid_after(WHEN + timedelta(minutes=5))
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=False,
                    crl_sign=False,
                    encipher_only=None,
                    decipher_only=None,
                ),
                critical=True,
            )
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CODE_SIGNING]), False)
            .add_extension(x509.SubjectAlternativeName([x509.RFC822Name(identity)]), True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_public), False)
            .add_extension(x509.UnrecognizedExtension(ISSUER_OID, issuer.encode()), False)
        )
        # RFC 6962 3.2: the CT log signs the precertificate's TBS (no SCT extension yet).
        tbs = builder.sign(self.ca_key, hashes.SHA256()).tbs_certificate_bytes
        millis = int(WHEN.timestamp() * 1000)
        signed = (
            struct.pack("!BBQH", 0, 0, millis, 1)  # v1, certificate_timestamp, precert_entry
            + hashlib.sha256(spki(self.ca_key)).digest()  # issuer_key_hash
            + len(tbs).to_bytes(3, "big")
            + tbs
            + struct.pack("!H", 0)  # no extensions
        )
        signature = self.ct_key.sign(signed, ec.ECDSA(hashes.SHA256()))
        sct = (
            b"\x00"
            + hashlib.sha256(spki(self.ct_key)).digest()
            + struct.pack("!QH", millis, 0)
            + struct.pack("!BBH", 4, 3, len(signature))  # sha256, ecdsa
            + signature
        )
        sct_list = struct.pack("!HH", len(sct) + 2, len(sct)) + sct
        cert = builder.add_extension(
            x509.UnrecognizedExtension(
                ExtensionOID.PRECERT_SIGNED_CERTIFICATE_TIMESTAMPS, der_octets(sct_list)
            ),
            False,
        ).sign(self.ca_key, hashes.SHA256())
        assert cert.tbs_precertificate_bytes == tbs
        return cert

    # -- a bundle ------------------------------------------------------------------------

    def sign(self, data: bytes, identity: str, issuer: str) -> str:
        """A sigstore bundle (v0.3 JSON) over ``data`` by ``identity`` from ``issuer``."""
        key = ec.generate_private_key(ec.SECP256R1())  # ephemeral, as sigstore's are
        cert = self.certificate(key, identity, issuer)
        signature = key.sign(data, ec.ECDSA(hashes.SHA256()))
        pem = cert.public_bytes(serialization.Encoding.PEM)
        body = rfc8785.dumps(
            {
                "apiVersion": "0.0.1",
                "kind": "hashedrekord",
                "spec": {
                    "data": {
                        "hash": {"algorithm": "sha256", "value": hashlib.sha256(data).hexdigest()}
                    },
                    "signature": {"content": b64(signature), "publicKey": {"content": b64(pem)}},
                },
            }
        )
        log_id = hashlib.sha256(spki(self.log_key)).digest()
        integrated = int(WHEN.timestamp())
        leaf = hashlib.sha256(b"\x00" + body).digest()  # RFC 6962 leaf; one leaf: the root
        note = f"{LOG_HOST}\n1\n{b64(leaf)}\n"
        note_sig = self.log_key.sign(note.encode(), ec.ECDSA(hashes.SHA256()))
        checkpoint = f"{note}\n\u2014 {LOG_HOST} {b64(log_id[:4] + note_sig)}\n"
        promise = rfc8785.dumps(
            {
                "body": b64(body),
                "integratedTime": integrated,
                "logID": log_id.hex(),
                "logIndex": 0,
            }
        )
        entry = {
            "logIndex": "0",
            "logId": {"keyId": b64(log_id)},
            "kindVersion": {"kind": "hashedrekord", "version": "0.0.1"},
            "integratedTime": str(integrated),
            "inclusionPromise": {
                "signedEntryTimestamp": b64(self.log_key.sign(promise, ec.ECDSA(hashes.SHA256())))
            },
            "inclusionProof": {
                "logIndex": "0",
                "rootHash": b64(leaf),
                "treeSize": "1",
                "hashes": [],
                "checkpoint": {"envelope": checkpoint},
            },
            "canonicalizedBody": b64(body),
        }
        bundle = {
            "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
            "verificationMaterial": {
                "certificate": {"rawBytes": b64(cert.public_bytes(serialization.Encoding.DER))},
                "tlogEntries": [entry],
            },
            "messageSignature": {
                "messageDigest": {
                    "algorithm": "SHA2_256",
                    "digest": b64(hashlib.sha256(data).digest()),
                },
                "signature": b64(signature),
            },
        }
        return json.dumps(bundle)

    def sign_file(self, artifact: Path, identity: str, issuer: str) -> Path:
        """``ARTIFACT.sigstore.json`` beside ``artifact``."""
        out = artifact.with_name(artifact.name + ".sigstore.json")
        out.write_text(self.sign(artifact.read_bytes(), identity, issuer))
        return out
