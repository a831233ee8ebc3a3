"""A signed tag or commit at the installed ref, checked with the real git.

What runs, in the snapshot's bare repository (``git.py``), with
``-c gpg.ssh.allowedSignersFile=ALLOWED`` (``/dev/null`` when there is none):

    git cat-file -t REF                   is the fetched ref a tag object?
    git cat-file tag REF                  the tag's own name (must be the ref asked for)
    git verify-tag --raw REF              a signed tag ...
    git verify-commit --raw COMMIT        ... else a signed commit

SSH signatures are checked by git through ``ssh-keygen`` against the allowed signers
(namespace ``git``); OpenPGP ones by ``gpg`` against the user's keyring (which must hold the
public key), and count as signed for a key the keyring trusts fully or ultimately, or whose
primary-key fingerprint the team policy lists (``[signatures] openpgp``: the policy is then
the trust, as the allowed-signers file is for SSH). The key recorded is the primary key's
fingerprint (what ``gpg --fingerprint`` shows and a policy lists), even for a signing subkey.
A tag object signed under one name and fetched under another (a tag re-pointed at someone
else's signed tag) is BAD.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection

from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import Signature, SignatureState

# (git arguments) -> (exit status, stdout + stderr)
GitRunner = Callable[[list[str]], tuple[int, str]]

_SSH_GOOD = re.compile(r'^Good "git" signature for (?P<p>.+) with \S+ key (?P<k>SHA256:\S+)$', re.M)
_SSH_UNKNOWN = re.compile(r'^Good "git" signature with \S+ key (?P<k>SHA256:\S+)$', re.M)
_GPG_GOOD = re.compile(r"^\[GNUPG:\] GOODSIG (?P<id>[0-9A-F]+) (?P<p>.+)$", re.M)
# VALIDSIG <signing key fpr> <date> ... <sig class> [<primary key fpr>]
_GPG_VALID = re.compile(
    r"^\[GNUPG:\] VALIDSIG (?P<fpr>[0-9A-F]{16,64})\b(?:.* (?P<primary>[0-9A-F]{40,64}))?\s*$", re.M
)
_GPG_TRUSTED = re.compile(r"^\[GNUPG:\] TRUST_(FULLY|ULTIMATE)\b", re.M)
_GPG_MISSING = re.compile(r"^\[GNUPG:\] (ERRSIG|NO_PUBKEY) (?P<id>[0-9A-F]+)", re.M)


def verify_ref(
    run: GitRunner,
    ref: str,
    commit: str,
    asked: str | None,
    openpgp: Collection[str] = (),
) -> Signature:
    """The signature at the fetched ``ref`` (a tag object or a commit) resolving to
    ``commit``; ``asked`` is the ref the user gave (None: the default branch); ``openpgp``:
    the primary-key fingerprints the policy trusts (upper-case hex)."""
    status, kind = run(["cat-file", "-t", ref])
    tag_result: Signature | None = None
    if status == 0 and kind.strip() == "tag":
        _status, text = run(["cat-file", "tag", ref])
        name = next((ln[4:] for ln in text.splitlines() if ln.startswith("tag ")), "")
        subject = visible(f"tag {name} (commit {commit[:12]})")
        wanted = (asked or "").removeprefix("refs/tags/")
        tag_result = _parse(*run(["verify-tag", "--raw", ref]), subject, openpgp)
        if tag_result.state is not SignatureState.UNSIGNED and wanted and name != wanted:
            return Signature(
                SignatureState.BAD,
                tag_result.method,
                subject=subject,
                note=visible(f"the signed tag is named {name!r}, fetched as {wanted!r}"),
            )
        if tag_result.is_signed or tag_result.state is SignatureState.BAD:
            return tag_result
    result = _parse(*run(["verify-commit", "--raw", commit]), f"commit {commit[:12]}", openpgp)
    if result.state is SignatureState.UNSIGNED and tag_result is not None:
        return tag_result  # an unknown tag signer says more than "no commit signature"
    return result


def _parse(status: int, text: str, subject: str, openpgp: Collection[str] = ()) -> Signature:
    """git's verify output (``--raw``: ssh-keygen's lines, or gpg's status lines)."""
    good = _SSH_GOOD.search(text)
    if good and status == 0:
        return Signature.signed("ssh", visible(good["p"]), good["k"], subject)
    unknown = _SSH_UNKNOWN.search(text)
    if unknown:
        return Signature(
            SignatureState.UNKNOWN, "ssh", "", unknown["k"], subject, "not in the allowed signers"
        )
    gpg = _GPG_GOOD.search(text)
    valid = _GPG_VALID.search(text)
    if gpg and valid and "BADSIG" not in text:
        key = valid["primary"] or valid["fpr"]
        if _GPG_TRUSTED.search(text) or key in openpgp or valid["fpr"] in openpgp:
            return Signature.signed("openpgp", visible(gpg["p"]), key, subject)
        return Signature(
            SignatureState.UNKNOWN,
            "openpgp",
            "",
            key,
            subject,
            "key not fully trusted in your keyring, nor listed by the policy",
        )
    missing = _GPG_MISSING.search(text)
    if missing and "BADSIG" not in text:
        return Signature(
            SignatureState.UNKNOWN, "openpgp", "", missing["id"], subject, "key not in your keyring"
        )
    if status != 0 and (not text.strip() or "no signature found" in text):
        return Signature.unsigned(f"no signature on {subject}")
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), f"git exited {status}")
    return Signature(SignatureState.BAD, subject=subject, note=visible(first[:200]))


__all__ = ["GitRunner", "verify_ref"]
