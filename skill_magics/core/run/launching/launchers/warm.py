"""The warm launcher: the run forked from a server that imported the script's packages
(core/run/launching/warm/launch.fork). A warm start that cannot be had is a cold start that says why
(the offer's note), never a failed run."""

from __future__ import annotations

import logging

from skill_magics.core.run.launching import sandbox as sandboxing
from skill_magics.core.run.launching import warm_modes
from skill_magics.core.run.launching.launchers.base import Boxed, Launch, Launcher, LaunchRequest
from skill_magics.core.run.launching.process import Child
from skill_magics.core.run.launching.warm.eligible import quick_cold
from skill_magics.core.run.launching.warm.launch import Ticket, fork

logger = logging.getLogger("skill_magics.executor")


class Warm(Launcher):
    """Asked first: warm when the run may and its server can."""

    name = "warm"
    preference = 20
    record_name = "warm"

    def offer(self, request: LaunchRequest) -> Launch | str:
        prepared = request.prepared
        if prepared.warm_start == warm_modes.OFF or request.warm is None:
            return ""
        profile = prepared.sandbox_profile
        if profile is not None and profile.active:
            sandboxing.find_or_refuse(profile)  # as a cold run would: bwrap must still be here
        why = quick_cold(prepared)  # a bash script, say: no need to ask the launcher
        if why:
            return why
        try:
            got = request.warm.ticket(prepared, request.env, request.network, cancel=request.cancel)
        except Exception as exc:  # noqa: BLE001 - a bug here must not fail the run
            logger.warning("warm start failed; running cold", exc_info=True)
            return f"warm start failed: {type(exc).__name__}: {exc}"
        if not isinstance(got, Ticket):
            return got.note
        boxed = None
        if profile is not None:
            boxed = Boxed(profile, got.tmpdir, got.network) if profile.active else Boxed(profile)
        return Launch(self, got, boxed=boxed)

    def start(self, launch: Launch, payload: bytes | None) -> Child:
        return fork(launch.how, payload)


__all__ = ["Warm"]
