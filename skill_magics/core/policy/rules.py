"""The policy's rules, each a check that raises :class:`PolicyError` in one line naming the
rule and the file. A broken policy (``Policy.broken``) refuses everything.

Example:
    >>> p = Policy("/team/policy.toml", sources_allow=("https://github.com/acme/*",))
    >>> check_source(p, "https://github.com/acme/skills")
    >>> check_source(p, "https://example.com/x")
    Traceback (most recent call last):
    skill_magics.core.policy.model.PolicyError: Refused by the policy ([sources] allow in ...
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from fnmatch import fnmatchcase

from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import Signature
from skill_magics.core.policy.model import Policy, PolicyError
from skill_magics.core.trust.signers import is_allowed
from skill_magics.core.trust.sigstore import parse_identity, principal_of


def _refuse(policy: Policy, rule: str, why: str) -> PolicyError:
    return PolicyError(f"Refused by the policy ({policy.rule(rule)}): {why}")


def check_readable(policy: Policy) -> None:
    """A policy that could not be read refuses everything."""
    if policy.broken:
        raise PolicyError(
            f"Refused: {policy.broken}; nothing is installed or run until it is fixed"
        )


# A "." or ".." path segment, literal or percent-encoded, after "/" or scp's ":".
_DOT_SEGMENT = re.compile(r"(?:^|[/:])(?:\.|%2e){1,2}(?:/|$)", re.I)


def check_source(policy: Policy, source: str, also: tuple[str, ...] = ()) -> None:
    """``source`` (URL, path, ``mcp:LABEL``), or one of ``also`` (an MCP server's URL or
    command line), matches one of ``[sources] allow``. A text holding a ``.`` or ``..``
    path segment never matches: it would match a pattern while git (and curl) fetch the
    place it resolves to (``acme/../evil``)."""
    check_readable(policy)
    allow = policy.sources_allow
    if allow is None:
        return
    if _DOT_SEGMENT.search(source):
        raise _refuse(
            policy,
            "[sources] allow",
            f"{visible(source)} holds a '.' or '..' path segment, which the fetch resolves "
            "elsewhere: give the source as it resolves",
        )
    texts = [source, *(t for t in also if not _DOT_SEGMENT.search(t))]
    if any(fnmatchcase(text, pattern) for text in texts for pattern in allow):
        return
    if also:
        source = f"{source} ({', '.join(also)})"
    raise _refuse(
        policy,
        "[sources] allow",
        f"{visible(source)} matches none of {', '.join(allow) or 'the (empty) list'}",
    )


def check_fetched(policy: Policy, name: str, source: str, fetched: bool, changed: bool) -> None:
    """An installed skill's lock names ``source``, which ``[sources] allow`` matched: it
    counts only when this machine ``fetched`` those files from it (core/trust/record.py); a
    lock anyone can edit could name any source. ``changed``: its files changed since."""
    check_readable(policy)
    if policy.sources_allow is None or fetched:
        return
    why = (
        "its files changed since they were installed"
        if changed
        else "this machine did not fetch these files from it"
    )
    raise _refuse(
        policy,
        "[sources] allow",
        f"{visible(name)}: skills-lock.json names {visible(source)}, but {why} (not fetched "
        "from it here): run %skills verify --signatures to fetch and check them again",
    )


def check_signature(policy: Policy, name: str, signature: Signature) -> None:
    """With ``[signatures] require``: ``signature`` is verified and, when the policy names
    signers (``allowed_signers`` for SSH, ``openpgp`` fingerprints for OpenPGP, ``sigstore``
    identities), by one it lists: an SSH principal and key in the file, an OpenPGP
    primary-key fingerprint, a sigstore identity and issuer in its list. A policy naming
    none takes any verified signer."""
    check_readable(policy)
    if not policy.require_signatures:
        return
    if not signature.is_signed:
        raise _refuse(policy, "[signatures] require", f"{visible(name)} is {signature.describe()}")
    signers, openpgp = policy.allowed_signers, policy.openpgp_signers
    if signers is None and not openpgp and not policy.sigstore_signers:
        return
    who = f"{visible(name)} is signed by {visible(signature.principal)} ({signature.key})"
    if signature.method == "sigstore":
        named = {principal_of(*parse_identity(e)) for e in policy.sigstore_signers}
        if signature.principal not in named:
            raise _refuse(
                policy, "[signatures] sigstore", f"{who}, an identity the list does not name"
            )
        return
    if signature.method == "openpgp":
        if signature.key not in openpgp:
            listed = "the list" if openpgp else "the list, which is empty"
            raise _refuse(
                policy,
                "[signatures] openpgp",
                f"{who}, an OpenPGP key whose fingerprint is not in {listed}",
            )
        return
    try:
        found = signers is not None and is_allowed(signers, signature.principal, signature.key)
    except ValueError as exc:  # the file cannot be read, or others could have changed it
        raise _refuse(policy, "[signatures] allowed_signers", f"{who}, but {exc}") from None
    if not found:
        raise _refuse(
            policy,
            "[signatures] allowed_signers",
            f"{who}, who is not in {visible(signers or 'the (absent) allowed signers file')}",
        )


def check_blocked(policy: Policy, name: str, digests: tuple[str, ...] = ()) -> None:
    """``name`` (or one of ``digests``, ``sha256:<hex>``) is not in ``[skills] block``. An
    MCP server's skill, ``LABEL/NAME``, is matched by both (a block names a skill whatever
    its source; ``LABEL/*`` blocks a server's)."""
    check_readable(policy)
    names = {name, name.rsplit("/", 1)[-1]}
    for entry in policy.block:
        if entry.startswith("sha256:"):
            if entry in digests:
                raise _refuse(policy, "[skills] block", f"{visible(name)} has digest {entry}")
        elif any(fnmatchcase(n, entry) for n in names):
            raise _refuse(policy, "[skills] block", f"{visible(name)} is blocked")


def check_run_limits(
    policy: Policy, name: str, mode: str, network: bool, ranks: Mapping[str, int]
) -> None:
    """A run in sandbox ``mode`` ("off" when none) with or without ``network`` gets no more
    than ``[run] max_sandbox`` and ``network`` allow. ``ranks``: how confined each sandbox
    profile is, by name, from the profiles' table (run/launching/sandbox_profiles.ranks(), which
    the run checks pass: a profile registered later is ranked as the gate ranks it)."""
    check_readable(policy)
    least = policy.max_sandbox
    if least is not None and least not in ranks:
        raise _refuse(
            policy,
            "[run] max_sandbox",
            f"{least!r} names no sandbox profile: use one of {', '.join(ranks)}",
        )
    rank = ranks.get(mode, 0)
    if least is not None and rank < ranks[least]:
        raise _refuse(
            policy,
            "[run] max_sandbox",
            f"{visible(name)} would run with sandbox {mode!r}; the most allowed is "
            f"{least!r}: run it with --sandbox {least}",
        )
    check_network(policy, name, network, confined=rank > 0)


def check_network(policy: Policy, name: str, network: bool, *, confined: bool) -> None:
    """``[run] network = false``: no run gets network, asked for (``network``) or had by
    running unconfined."""
    check_readable(policy)
    if policy.network is False and (network or not confined):
        if network:
            why = (
                "asks for network (sandbox_network, or a grant); no run gets network: take it "
                "out of sandbox_network and grant none"
            )
        else:
            why = "would run unsandboxed, with network; no run gets network: run it sandboxed"
            why += " (--sandbox read-only)"
        raise _refuse(policy, "[run] network", f"{visible(name)} {why}")


__all__ = [
    "check_blocked",
    "check_fetched",
    "check_network",
    "check_readable",
    "check_run_limits",
    "check_signature",
    "check_source",
]
