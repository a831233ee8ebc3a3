"""How a run's process comes to be: one launch step, three ways (docs/architecture.md,
*Launch*).

:func:`choose` picks how a checked run starts and returns a :class:`Launch`; its ``spawn``
starts the process and returns a :class:`~skill_magics.core.run.process.Child`, which
``process.drive(child, limits)`` then drives to its end (capture, timeout, kill, reap) the
same way whichever launch made it:

- **cold**: ``process.spawn``: the interpreter exec'd in a process group of its own;
- **sandboxed**: the same, the command wrapped in bwrap (sandbox.py);
- **warm**: forked from a server that imported the script's packages (warm/launch.fork).

A warm start that cannot be had is a cold start that says why (``note``), never a failed
run; a server that went away before it forked (WarmUnavailable) is retried cold with
:func:`cold`.

Example (not run as a doctest: it starts a process)::

    launch = choose(prepared, env, network, cancel, executor.warm_launcher)
    child = launch.spawn(prepared.payload)
    outcome = drive(child, Limits(prepared.timeout, prepared.max_output_size))
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from skill_magics.core.run import sandbox as sandboxing
from skill_magics.core.run.checks import PreparedRun
from skill_magics.core.run.process import Child, spawn
from skill_magics.core.run.sandbox import RunSandbox
from skill_magics.core.run.warm import modes as warm_modes
from skill_magics.core.run.warm.launch import Ticket, WarmLauncher, fork, quick_cold

logger = logging.getLogger("skill_magics.executor")

Spawn = Callable[[bytes | None], Child]


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
    """One way to start a run: ``spawn(payload)`` returns the started Child. ``name`` and
    ``note`` are what the record says (``"warm"``/``"cold"``, why not warm); ``boxed`` the
    sandbox it runs in (None: unsandboxed)."""

    name: str
    spawn: Spawn
    note: str = ""
    boxed: Boxed | None = None

    @property
    def sandbox(self) -> dict[str, Any] | None:
        return None if self.boxed is None else self.boxed.record


def choose(
    prepared: PreparedRun,
    env: Mapping[str, str],
    network: bool,
    cancel: threading.Event | None,
    launcher: WarmLauncher,
) -> Launch:
    """Warm when ``prepared`` may and its server can, else cold (sandboxed when its
    profile is active). Raises what the sandbox raises when bwrap is gone (nothing ran)."""
    ticket, note = _ticket(prepared, env, network, cancel, launcher)
    if ticket is None:
        return cold(prepared, env, network, note)
    return Launch("warm", lambda payload: fork(ticket, payload), note, _warm_box(prepared, ticket))


def cold(prepared: PreparedRun, env: Mapping[str, str], network: bool, note: str = "") -> Launch:
    """The cold launch, sandboxed in bwrap when ``prepared``'s profile is active."""
    profile = prepared.sandbox_profile
    if profile is None or not profile.active:
        command, cwd = prepared.command, prepared.cwd
        return Launch(
            "cold",
            lambda payload: spawn(command, payload, cwd=cwd, env=env),
            note,
            None if profile is None else Boxed(profile),
        )
    wrapped = sandboxing.wrap(
        profile, prepared.command, env, os.fspath(prepared.cwd), network=network
    )
    boxed = Boxed(profile, wrapped.tmpdir, wrapped.network)

    def boxed_spawn(payload: bytes | None) -> Child:
        # A sandboxed run's PID namespace takes its daemons with it already: no orphans.
        return spawn(wrapped.argv, payload, cwd=prepared.cwd, env=wrapped.env, orphans=False)

    return Launch("cold", boxed_spawn, note, boxed)


def _ticket(
    prepared: PreparedRun,
    env: Mapping[str, str],
    network: bool,
    cancel: threading.Event | None,
    launcher: WarmLauncher,
) -> tuple[Ticket | None, str]:
    """A warm ticket, or None and why cold ('' when warm start is off)."""
    if prepared.warm_start == warm_modes.OFF:
        return None, ""
    profile = prepared.sandbox_profile
    if profile is not None and profile.active:
        sandboxing.find_or_refuse(profile)  # as a cold run would: bwrap must still be here
    why = quick_cold(prepared)  # a bash script, say: no need to ask the launcher
    if why:
        return None, why
    try:
        got = launcher.ticket(prepared, env, network, cancel=cancel)
    except Exception as exc:  # noqa: BLE001 - a bug here must not fail the run
        logger.warning("warm start failed; running cold", exc_info=True)
        return None, f"warm start failed: {type(exc).__name__}: {exc}"
    if isinstance(got, Ticket):
        return got, ""
    return None, got.note


def _warm_box(prepared: PreparedRun, ticket: Ticket) -> Boxed | None:
    profile = prepared.sandbox_profile
    if profile is None:
        return None
    if not profile.active:
        return Boxed(profile)
    return Boxed(profile, ticket.tmpdir, ticket.network)


__all__ = ["Boxed", "Launch", "choose", "cold"]
