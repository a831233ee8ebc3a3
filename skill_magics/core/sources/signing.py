"""Signatures and the team policy at install, sync and update (docs/trust.md).

For each staged skill: its source's signature is verified (``Snapshot.signature``: git's
signed tag or commit, an archive's ``.sig``), a BAD one refuses the install, and every
policy in force checks the source, the signer and the block list before anyone is asked. The
verified signature goes into the lock entry and, once the files are in place, into the
private record a run reads (core/trust/record.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.trustfile import untrusted_because
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import NO_ANCHORS, Anchors, Signature, SignatureState
from skill_magics.core.policy import Policy, PolicyError, current_policies
from skill_magics.core.policy.rules import check_blocked, check_signature, check_source
from skill_magics.core.sources.snapshot import Snapshot, StagedSkill
from skill_magics.core.trust import record
from skill_magics.core.trust.signers import ENV_VAR as SIGNERS_VAR
from skill_magics.core.trust.signers import env_signers


def signers_file() -> str | None:
    """The allowed-signers file git and ssh-keygen verify with: the ``[signatures]
    allowed_signers`` of the highest-level policy naming one (every policy requiring
    signatures then checks the signer against its own file: rules.check_signature), else
    ``$SKILL_MAGICS_ALLOWED_SIGNERS``, else none (a valid signature is then "unknown").
    PolicyError when others could have changed it (core/base/trustfile.py): git and
    ssh-keygen would believe whatever key was added."""
    for policy in current_policies():
        if policy.allowed_signers:
            _believable(policy, "[signatures] allowed_signers", policy.allowed_signers)
            return policy.allowed_signers
    named = env_signers()
    if named is not None:
        why = untrusted_because(named)
        if why:
            raise PolicyError(
                f"Refused: the allowed signers file {visible(named)} "
                f"(${SIGNERS_VAR}) cannot be believed: {why}; nothing was installed"
            )
    return named


def anchors() -> Anchors:
    """What the policies trust besides the allowed-signers file: the ``[signatures]
    openpgp`` fingerprints and ``sigstore`` identities any lists (each policy then checks
    the signer against its own list), and the highest-level ``sigstore_trusted_root``
    (PolicyError when others could have changed that root)."""
    policies = current_policies()
    if not policies:
        return NO_ANCHORS
    root = next((p for p in policies if p.sigstore_root), None)
    if root is not None and root.sigstore_root:
        _believable(root, "[signatures] sigstore_trusted_root", root.sigstore_root)
    return Anchors(
        tuple(dict.fromkeys(f for p in policies for f in p.openpgp_signers)),
        tuple(dict.fromkeys(i for p in policies for i in p.sigstore_signers)),
        root.sigstore_root if root is not None else None,
    )


def _believable(policy: Policy, rule: str, path: str) -> None:
    why = untrusted_because(path)
    if why:
        raise PolicyError(
            f"Refused by the policy ({policy.rule(rule)}): {visible(path)} cannot be "
            f"believed: {why}; nothing was installed"
        )


def check_source_allowed(source: str) -> None:
    """Every policy's ``[sources] allow`` (before anything is fetched)."""
    for policy in current_policies():
        check_source(policy, source)


def verify_staged(
    snap: Snapshot, staged: Sequence[StagedSkill], source: str
) -> dict[str, Signature]:
    """Folder -> the verified signature of each staged skill; raises SourceError for a BAD
    signature and PolicyError for what the policy refuses (nothing written yet)."""
    policies = current_policies()
    signers, trusted = signers_file(), anchors()
    out = {}
    for item in staged:
        signature = snap.signature(item.found.path, signers, trusted)
        if signature.state is SignatureState.BAD:
            raise SourceError(
                f"{visible(item.folder)} from {visible(source)} has a {signature.describe()}; "
                "nothing was installed. Ask its publisher to sign it again"
            )
        for policy in policies:
            check_source(policy, source)
            check_blocked(policy, item.folder, (f"sha256:{item.tree}",))
            check_signature(policy, item.folder, signature)
        out[item.folder] = signature
    return out


def signer_change(old: Signature | None, new: Signature) -> str:
    """``signer: A -> B`` when the signer changed ("" when it did not, or was not known)."""
    if old is None or old.identity == new.identity:
        return ""
    return f"signer: {old.describe()} -> {new.describe()}"


def remember(trees: Sequence[tuple[str, Signature | None, str]]) -> None:
    """Record each (tree, signature, source) verified (and fetched from) here, for runs
    (core/trust/record.py)."""
    for tree, signature, source in trees:
        if signature is not None and tree:
            record.remember(tree, signature, source)


__all__ = [
    "check_source_allowed",
    "anchors",
    "remember",
    "signer_change",
    "signers_file",
    "verify_staged",
]
