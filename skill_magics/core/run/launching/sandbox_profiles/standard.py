"""The sandbox profiles every install has: off, read-only, workspace-write and auto
(docs/sandbox.md; what each is given: core/run/launching/sandbox_mounts.py)."""

from __future__ import annotations

from collections.abc import Callable

from skill_magics.core.run.launching import sandbox_mounts as mounts
from skill_magics.core.run.launching.sandbox_mounts import Bind
from skill_magics.core.run.launching.sandbox_profiles.base import SandboxProfile


class Off(SandboxProfile):
    """No sandbox: the run has the user's rights."""

    name = "off"
    rank = 0
    description = "off (no sandbox: the user's rights)"

    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        return self

    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        return []  # nothing is mounted: there is no sandbox


class ReadOnly(SandboxProfile):
    """Only what the run needs, all read-only; only a private ``/tmp`` is writable."""

    name = "read-only"
    rank = 2  # writes nowhere but its private /tmp: more confined than workspace-write
    description = "read-only (only a private TMPDIR writable)"

    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        return None if why_not() else self

    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        return mounts.given(workspace)


class WorkspaceWrite(SandboxProfile):
    """Like read-only, plus the workspace writable (its ``.git``, ``.hg`` and virtual
    environments kept read-only: they run later, outside the sandbox)."""

    name = "workspace-write"
    rank = 1
    description = "workspace-write (only the working directory and a private TMPDIR writable)"

    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        return None if why_not() else self

    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        binds = mounts.given(workspace, True)
        # After the workspace: its hooks and environments stay read-only.
        return binds + [Bind(path, path) for path in mounts.protected_in(real)]


class Auto(SandboxProfile):
    """workspace-write where bubblewrap works, else off with one clear note."""

    name = "auto"
    rank = 0  # what it promises: it may fall back to off
    description = "auto (workspace-write where bubblewrap works, else off with a note)"

    def here(self, why_not: Callable[[], str]) -> SandboxProfile | None:
        return Off() if why_not() else WorkspaceWrite()

    def workspace_mounts(self, workspace: str, real: str) -> list[Bind]:
        return []  # never asked: a run gets the profile here() chose


__all__ = ["Auto", "Off", "ReadOnly", "WorkspaceWrite"]
