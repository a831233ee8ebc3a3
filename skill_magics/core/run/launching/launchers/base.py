"""The launcher kind: one way a checked run's process comes to be (docs/architecture.md,
*Launch*). Every launcher has the same interface: :meth:`Launcher.offer` (can it start this
run, and with what), :meth:`Launcher.start` (the process, a
:class:`~skill_magics.core.run.launching.process.Child`), then :meth:`~Launcher.wait`,
:meth:`~Launcher.signal`, :meth:`~Launcher.kill` and :meth:`~Launcher.cleanup`, which act on
that Child whichever launcher made it (``process.drive`` waits, kills and reaps it the same
way for all).

A new launcher: a subclass implementing every abstract member, in a module of its own, and
one line in the table (``core/run/launching/launchers/__init__.py``: ``LAUNCHERS``);
``tests/test_registered_kinds.py`` checks its hooks.
"""

from __future__ import annotations

import signal as signals
import threading
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.launching.process import Child, Limits, ProcessOutcome, drive, kill_group
from skill_magics.core.run.launching.sandbox import RunSandbox
from skill_magics.core.run.launching.warm.launch import WarmLauncher


@dataclass(frozen=True)
class LaunchRequest:
    """What every launcher is offered: the checked run, its environment (secrets in), whether
    its sandbox gives it the network, its cancel Event and the session's warm launcher."""

    prepared: PreparedRun
    env: Mapping[str, str]
    network: bool
    cancel: threading.Event | None
    warm: WarmLauncher | None  # None: no warm start is asked for


@dataclass(frozen=True)
class Boxed:
    """A run's sandbox as spawned: the profile and, when active, its private TMPDIR and
    network (a cold run's bwrap command, or the warm server's sandbox)."""

    profile: RunSandbox
    tmpdir: str | None = None  # None: ``auto`` found no sandbox (the note says why)
    network: bool = False

    @property
    def active(self) -> bool:
        return self.tmpdir is not None

    @property
    def record(self) -> dict[str, Any]:
        """For the audit record and the result: mode, network, writable paths."""
        data = self.profile.record()
        if self.tmpdir is None:
            return data
        data["network"] = self.network
        return data


@dataclass(frozen=True)
class Launch:
    """One run as a launcher will start it: :meth:`spawn` returns the started Child.
    ``name`` and ``note`` are what the record says (``"warm"``/``"cold"``, why not warm);
    ``boxed`` the sandbox it runs in (None: unsandboxed); ``how`` what the launcher needs
    to start it (its command, its warm ticket)."""

    launcher: Launcher
    how: Any = None
    note: str = ""
    boxed: Boxed | None = None
    name: str = field(default="")

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.launcher.record_name)

    def spawn(self, payload: bytes | None) -> Child:
        """Start the run (its launcher's :meth:`Launcher.start`)."""
        return self.launcher.start(self, payload)

    @property
    def sandbox(self) -> dict[str, Any] | None:
        return None if self.boxed is None else self.boxed.record


class Launcher(ABC):
    """One way to start a run (cold, sandboxed, warm)."""

    @property
    @abstractmethod
    def name(self) -> str:
        """The launcher's name in the table."""

    @property
    @abstractmethod
    def preference(self) -> int:
        """Which launcher is asked first: the highest that offers a Launch starts the run."""

    @property
    @abstractmethod
    def record_name(self) -> str:
        """What a run's record says it started as (``start``: "cold" or "warm")."""

    @abstractmethod
    def offer(self, request: LaunchRequest) -> Launch | str:
        """A Launch for ``request``, or why this launcher will not start it ("" when there is
        nothing to say: it is simply not this launcher's kind of run). May raise what the
        sandbox raises when bwrap vanished (nothing ran)."""

    @abstractmethod
    def start(self, launch: Launch, payload: bytes | None) -> Child:
        """Start the run ``launch`` describes; payload None means stdin reads as empty.
        Raises SpawnError when it cannot start (nothing ran)."""

    # What follows acts on the Child, whichever launcher made it: the kinds of Child
    # (a Popen'd process, a warm fork) implement the difference.

    def wait(self, child: Child, limits: Limits) -> ProcessOutcome:
        """Drive ``child`` to its end (capture, timeout, kill, reap: ``process.drive``)."""
        return drive(child, limits)

    def signal(self, child: Child, sig: int) -> None:
        """Send ``sig`` to the run's main process and its group."""
        child.kill(sig)
        kill_group(child.pid, sig)

    def kill(self, child: Child) -> None:
        """SIGKILL the run's main process and its group (drive reaps them)."""
        self.signal(child, signals.SIGKILL)

    def cleanup(self, child: Child) -> None:
        """Release what a run that was never driven holds (its orphans, its pidfd)."""
        child.release()
        child.close()

    def __repr__(self) -> str:
        return f"<launcher {self.name!r}>"


__all__ = ["Boxed", "Launch", "LaunchRequest", "Launcher"]
