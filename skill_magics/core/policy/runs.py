"""The policy at run time: called by the run checks (core/run/planning/checks.py) for every run, a
script, a batch item, a warm start, ``%%skillpy``, ``%skill_context``'s scripts, a model's
tool call, an MCP skill's script, after the sandbox profile is decided and before anything
starts (the refusal is audited there). A batch item run elsewhere (a process pool, Dask) is
checked on its worker against the policy that travelled with it (:class:`Shipped`).

No process runs here: the skill's origin and signer come from its lock and the private
record of what was verified at install (core/trust/installed.py), by digest.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skill_magics.core.policy.load import current_policies
from skill_magics.core.policy.model import Policy, PolicyError
from skill_magics.core.policy.rules import (
    check_blocked,
    check_fetched,
    check_network,
    check_readable,
    check_run_limits,
    check_signature,
    check_source,
)

if TYPE_CHECKING:
    from skill_magics.core.trust.installed import Origin


@dataclass(frozen=True)
class Shipped:
    """The policies in force where a batch was launched (none: empty), for its items run
    elsewhere on a copy of the skill (a process pool, Dask: core/run/batch/ship.py). A
    worker enforces THESE, not those its own folder may have (or lack): the run limits and
    the block list. The skill's source and signer were checked where the batch was planned,
    on the installed skill; the copy is verified to hold those same bytes."""

    policies: tuple[Policy, ...]


def shipped() -> Shipped:
    """The policies in force here, to travel with a batch's items."""
    return Shipped(current_policies())


def check_run(
    skill_dir: str | os.PathLike[str],
    name: str,
    mode: str,
    network: bool,
    ranks: Mapping[str, int],
    *,
    ship: Shipped | None = None,
) -> None:
    """Raise PolicyError when a policy in force refuses this run of skill ``name`` in
    ``skill_dir`` with sandbox ``mode`` ("off": none) and ``network``; ``ranks``: the sandbox
    profiles' ranks by name (rules.check_run_limits). ``ship``: ``skill_dir`` is a shipped
    copy, checked against the policies it carries (:class:`Shipped`)."""
    policies = current_policies() if ship is None else ship.policies
    for policy in policies:
        check_readable(policy)
        check_run_limits(policy, name, mode, network, ranks)
        if ship is not None:  # a copy: its limits and the block list (Shipped says why)
            digests_needed = any(b.startswith("sha256:") for b in policy.block)
            check_blocked(policy, name, _tree(skill_dir, "") if digests_needed else ())
    if ship is None:
        _check_skill(policies, skill_dir, name)


def check_skill(skill_dir: str | os.PathLike[str], name: str) -> None:
    """Raise PolicyError when a policy in force refuses skill ``name`` in ``skill_dir``
    itself, whatever it would run: its source, its signer, the block list (an environment
    built for it runs the code its requirements name)."""
    _check_skill(current_policies(), skill_dir, name)


def _check_skill(
    policies: tuple[Policy, ...], skill_dir: str | os.PathLike[str], name: str
) -> None:
    origin: Origin | None = None
    for policy in policies:
        check_readable(policy)
        if policy.sources_allow is None and not policy.require_signatures and not policy.block:
            continue
        if origin is None:
            from skill_magics.core.trust.installed import INSTALLED, origin_of, source_fetched_here

            origin = origin_of(skill_dir, name)
            fetched = source_fetched_here(origin)
            changed = origin.kind == INSTALLED and not origin.tree
        digests_needed = any(b.startswith("sha256:") for b in policy.block)
        check_source(policy, origin.source, origin.also)
        check_fetched(policy, name, origin.source, fetched, changed)
        check_blocked(policy, name, _tree(skill_dir, origin.tree) if digests_needed else ())
        check_signature(policy, name, origin.signature)


def _tree(skill_dir: str | os.PathLike[str], tree: str) -> tuple[str, ...]:
    """``("sha256:<tree digest>",)`` of the files in ``skill_dir`` (``tree`` when known)."""
    if not tree:
        from pathlib import Path

        from skill_magics.core.installed.lock import folder_files, tree_digest

        tree = tree_digest(list(folder_files(Path(skill_dir))[0].values()))
    return (f"sha256:{tree}",)


def check_added_source(source: str, also: tuple[str, ...] = ()) -> None:
    """Raise PolicyError when a ``[sources] allow`` refuses ``source`` (``mcp:LABEL``) being
    added, matched by it or by one of ``also`` (the server's URL or command line): before
    an MCP server's process starts or its URL is called."""
    for policy in current_policies():
        check_source(policy, source, also)


def check_added_folder(folder: str | os.PathLike[str]) -> None:
    """Raise PolicyError when a ``[sources] allow`` refuses a folder of skills being added
    (``%skills add DIR``, ``manager.add_dir``), before it is added: the folder itself
    matches a pattern, or every skill in it (the folder, or each sub-folder with a
    SKILL.md, as the search finds them) has an allowed source (its lock's, else its own path),
    as a run would see it."""
    for policy in current_policies():
        _check_folder(policy, os.path.abspath(folder))


def _check_folder(policy: Policy, base: str) -> None:
    check_readable(policy)
    if policy.sources_allow is None:
        return
    try:
        check_source(policy, base)
        return
    except PolicyError as exc:
        refusal = exc
    from skill_magics.core.catalog.discovery import SkillFinder
    from skill_magics.core.trust.installed import origin_of

    found = SkillFinder([base]).list_skills()  # what adding it would find
    if not found:
        raise refusal  # nothing in it the policy allows: the folder's own path decides
    for meta in found:
        check_source(policy, origin_of(os.path.dirname(meta.path), meta.name).source)


def check_network_grant(name: str) -> None:
    """Raise PolicyError when a policy in force says ``[run] network = false``: a grant
    on the approval panel (or ``grant_network``) would give more than the policy allows."""
    for policy in current_policies():
        check_network(policy, name, True, confined=True)


def network_allowed(ship: Shipped | None = None) -> bool:
    """May any run get the network now? (False under a ``[run] network = false``, or a
    policy that cannot be read.) Read again at spawn time, after the approval. ``ship``: the
    run is a shipped batch item's, under the policies it carries."""
    policies = current_policies() if ship is None else ship.policies
    return all(not p.broken and p.network is not False for p in policies)


__all__ = [
    "Shipped",
    "shipped",
    "check_added_folder",
    "check_added_source",
    "check_network_grant",
    "check_run",
    "check_skill",
    "network_allowed",
]
