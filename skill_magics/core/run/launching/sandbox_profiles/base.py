"""The sandbox profile kind: what one value of the ``sandbox`` setting is (its name, how
confined a run under it is, how it gives the workspace, whether it can be had here).

A new profile is a subclass implementing every abstract member, registered with one line in
the table (``sandbox_profiles/__init__.py``: ``PROFILES``); the setting's check, the
magics' choices, the approval's "no weaker" comparison and the bwrap mounts read it from there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

from skill_magics.core.run.launching.sandbox_mounts import Bind


class SandboxProfile(ABC):
    """One sandbox profile (a value of ``RunSettings.sandbox``, ``--sandbox``)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The setting's value and the command line's choice (lower case, ``-`` between words)."""

    @property
    @abstractmethod
    def rank(self) -> int:
        """How confined a run under this profile is: 0 is the user's full rights (no sandbox);
        more is more confined. A "Yes in session" given under one profile covers a run under
        a profile of the same or a higher rank only (``approval.no_weaker``)."""

    @property
    @abstractmethod
    def description(self) -> str:
        """One clause for the help text: what a run under it may do."""

    @abstractmethod
    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        """The profile a run that asks for this one gets on this machine: itself, another one
        (``auto``), or None when it cannot be had (the run is refused, never weakened).
        ``why_not()`` says why bubblewrap cannot confine a run here ("" when it can); it
        probes once per process, so call it only when the answer matters."""

    @abstractmethod
    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        """How this profile gives the workspace (``workspace`` as named, ``real`` its real
        path): read-only, or writable with what runs later outside the sandbox kept
        read-only. Asked only of a profile of rank above 0."""

    @property
    def confined(self) -> bool:
        """Does bubblewrap confine a run under this profile?"""
        return self.rank > 0

    def __repr__(self) -> str:
        return f"<sandbox profile {self.name!r} rank {self.rank}>"


__all__ = ["SandboxProfile"]
