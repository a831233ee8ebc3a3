"""The cold launcher: the run's interpreter exec'd in a process group of its own
(``process.spawn``), no sandbox (or ``auto`` found none: the record says so)."""

from __future__ import annotations

from skill_magics.core.run.launching.launchers.base import Boxed, Launch, Launcher, LaunchRequest
from skill_magics.core.run.launching.process import Child, spawn


class Cold(Launcher):
    """Every run can start cold: the last one asked."""

    name = "cold"
    preference = 0
    record_name = "cold"

    def offer(self, request: LaunchRequest) -> Launch | str:
        prepared = request.prepared
        profile = prepared.sandbox_profile
        if profile is not None and profile.active:
            return ""  # the sandboxed launcher's run
        how = (prepared.command, prepared.cwd, request.env)
        return Launch(self, how, boxed=None if profile is None else Boxed(profile))

    def start(self, launch: Launch, payload: bytes | None) -> Child:
        command, cwd, env = launch.how
        return spawn(command, payload, cwd=cwd, env=env)


__all__ = ["Cold"]
