"""The sandboxed launcher: a cold start whose command is wrapped in bwrap (launching/sandbox.py),
for a run whose sandbox profile is active."""

from __future__ import annotations

import os

from skill_magics.core.run.launching import sandbox as sandboxing
from skill_magics.core.run.launching.launchers.base import Boxed, Launch, Launcher, LaunchRequest
from skill_magics.core.run.launching.process import Child, spawn


class Sandboxed(Launcher):
    """A run under an active profile; recorded as a cold start (the sandbox is recorded
    beside it)."""

    name = "sandboxed"
    preference = 10
    record_name = "cold"

    def offer(self, request: LaunchRequest) -> Launch | str:
        prepared = request.prepared
        profile = prepared.sandbox_profile
        if profile is None or not profile.active:
            return ""
        wrapped = sandboxing.wrap(
            profile, prepared.command, request.env, os.fspath(prepared.cwd), network=request.network
        )
        boxed = Boxed(profile, wrapped.tmpdir, wrapped.network)
        return Launch(self, (wrapped, prepared.cwd), boxed=boxed)

    def start(self, launch: Launch, payload: bytes | None) -> Child:
        wrapped, cwd = launch.how
        # A sandboxed run's PID namespace takes its daemons with it already: no orphans.
        return spawn(wrapped.argv, payload, cwd=cwd, env=wrapped.env, orphans=False)


__all__ = ["Sandboxed"]
