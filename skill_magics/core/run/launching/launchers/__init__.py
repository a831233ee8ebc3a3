"""Launchers, the registered ways a checked run's process starts (docs/architecture.md,
*Launch* and *Registered kinds*): the table :func:`choose` reads.

- ``base.py``: :class:`Launcher` (offer, start, wait, signal, kill, cleanup), :class:`Launch`,
  :class:`Boxed`, :class:`LaunchRequest`;
- ``warm.py``: forked from a warm server (asked first);
- ``sandboxed.py``: the interpreter exec'd in bwrap, for a run under an active profile;
- ``cold.py``: the interpreter exec'd in a process group of its own.

Whichever launcher starts it, ``process.drive`` drives the Child to its end (capture,
timeout, kill, reap) the same way. A server that went away before it forked
(WarmUnavailable) is retried with :func:`cold`.

Example (not run as a doctest: it starts a process)::

    launch = choose(prepared, env, network, cancel, executor.warm_launcher)
    child = launch.spawn(prepared.payload)
    outcome = launch.launcher.wait(child, Limits(prepared.timeout, prepared.max_output_size))

    >>> [launcher.name for launcher in by_preference()]
    ['warm', 'sandboxed', 'cold']
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping

from skill_magics.core.base.registry import Registry
from skill_magics.core.run.launching.launchers.base import Boxed, Launch, Launcher, LaunchRequest
from skill_magics.core.run.launching.launchers.cold import Cold
from skill_magics.core.run.launching.launchers.sandboxed import Sandboxed
from skill_magics.core.run.launching.launchers.warm import Warm
from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.launching.warm.launch import WarmLauncher

LAUNCHERS: Registry[Launcher] = Registry("launcher", Launcher, [Cold(), Sandboxed(), Warm()])


def by_preference() -> list[Launcher]:
    """The launchers, the one asked first first."""
    return sorted(LAUNCHERS, key=lambda launcher: -launcher.preference)


def choose(
    prepared: PreparedRun,
    env: Mapping[str, str],
    network: bool,
    cancel: threading.Event | None,
    launcher: WarmLauncher | None,
    *,
    skip: Iterable[str] = (),
    note: str = "",
) -> Launch:
    """How ``prepared`` starts: the first launcher (by preference, those named in ``skip``
    left out) that offers a Launch; its note is the first reason one before it gave
    (``note`` when given). Raises what the sandbox raises when bwrap is gone (nothing ran)."""
    request = LaunchRequest(prepared, env, network, cancel, launcher)
    skipped = set(skip)
    for kind in by_preference():
        if kind.name in skipped:
            continue
        got = kind.offer(request)
        if isinstance(got, Launch):
            if note and not got.note:
                return Launch(got.launcher, got.how, note, got.boxed, got.name)
            return got
        note = note or got  # why not warm, say: what the record says (start_note)
    raise RuntimeError("no launcher offered to start the run: register one that always does")


def cold(prepared: PreparedRun, env: Mapping[str, str], network: bool, note: str = "") -> Launch:
    """The cold launch (sandboxed in bwrap when ``prepared``'s profile is active): a warm
    server that went away before it forked, retried."""
    return choose(prepared, env, network, None, None, skip=("warm",), note=note)


__all__ = [
    "LAUNCHERS",
    "Boxed",
    "Cold",
    "Launch",
    "LaunchRequest",
    "Launcher",
    "Sandboxed",
    "Warm",
    "by_preference",
    "choose",
    "cold",
]
