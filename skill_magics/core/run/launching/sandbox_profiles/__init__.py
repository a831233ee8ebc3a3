"""Sandbox profiles, the registered kinds of the ``sandbox`` setting (docs/architecture.md,
*Registered kinds*): the table every list of choices and every "is it confined" test reads, and
:class:`SandboxInfo`, how confined a run is as the approval shows it (ranked by the table).

- ``base.py``: :class:`SandboxProfile`, what a profile implements (name, rank, description,
  ``here``, ``workspace_mounts``);
- ``standard.py``: off, read-only, workspace-write, auto.

A new profile: a subclass in a module of its own and one line in :data:`PROFILES` (or
``PROFILES.register(MyProfile())``); ``tests/test_registered_kinds.py`` checks its hooks.
How a profile becomes a run's bwrap command line: core/run/launching/sandbox.py.

Example:
    >>> list(PROFILES.names())
    ['off', 'read-only', 'workspace-write', 'auto']
    >>> rank_of("read-only") > rank_of("workspace-write") > rank_of("off (not sandboxed: ...)")
    True
"""

from __future__ import annotations

from dataclasses import dataclass

from skill_magics.core.base.registry import Registry
from skill_magics.core.run.launching.sandbox_profiles.base import SandboxProfile
from skill_magics.core.run.launching.sandbox_profiles.standard import (
    Auto,
    Off,
    ReadOnly,
    WorkspaceWrite,
)

PROFILES: Registry[SandboxProfile] = Registry(
    "sandbox mode", SandboxProfile, [Off(), ReadOnly(), WorkspaceWrite(), Auto()]
)


def rank_of(mode: str) -> int:
    """The rank of the profile a shown mode names (``SandboxInfo.mode``: "read-only", or
    "off (why)" when ``auto`` fell back); 0 for a name no profile has (not confined)."""
    profile = PROFILES.find(mode.partition(" (")[0])
    return 0 if profile is None else profile.rank


@dataclass(frozen=True)
class SandboxInfo:
    """How isolated the run is: the mode, whether it has network, what it may write."""

    mode: str
    network: bool = False
    writable: tuple[str, ...] = ()

    @property
    def rank(self) -> int:
        """How confined the run is: its profile's rank in the table (this
        package), 0 for none (an ``auto`` that fell back reads "off (...)")."""
        return rank_of(self.mode)

    @property
    def isolated(self) -> bool:
        """Does bubblewrap confine the run?"""
        return self.rank > 0


def ranks() -> dict[str, int]:
    """Every profile's rank by name, now (what the team policy's ``max_sandbox`` compares)."""
    return {profile.name: profile.rank for profile in PROFILES}


__all__ = [
    "PROFILES",
    "Auto",
    "Off",
    "ReadOnly",
    "SandboxInfo",
    "SandboxProfile",
    "WorkspaceWrite",
    "rank_of",
    "ranks",
]
