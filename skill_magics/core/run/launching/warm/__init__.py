"""Warm start: Python scripts forked from a server that has already imported their packages.

docs/architecture.md, *Warm start*. A warm run is only a faster way to start the same
process: the plan, the gate, the checks, the PreparedRun, the executor's loop, timeout,
Stop, group kill, secrets, sandbox and audit are a cold run's. What differs is how the main
process comes to be: forked from a long-lived server (zygote.py) instead of exec'd.

- ``launch.py``: warm or cold for one run (and why), running it; ``eligible.py``: what
  rules a run out from the run alone; ``imports.py``: what a server preloads, and the skill's
  modules that clash with what it holds; ``childstate.py``: what a cold child inherits now
  (the run's spec);
- ``pool.py``: this process's servers, one per (skill, state of its code, interpreter, flags,
  environment, sandbox), at most MAX_SERVERS (the least recently used idle one stops);
- ``skillcode.py``: a skill's code fingerprint and the import names it ships;
- ``server.py``: one server seen from here (start, preload, fork, stop); ``forked.py``: a run
  it forked (``WarmChild``), driven as any process.Child; ``wire.py``: every message tag;
- ``zygote.py``: the server itself (stdlib only; runs in the skill's Python): its loop
  (accept, fork, reap), started through ``importlib_bootstrap_zygote.py`` (its frames marked
  as the interpreter's own); it loads by path ``child.py`` (a run's child after the fork: its
  reset, the script's run, the interpreter's end), ``namespaces.py`` (the sandbox's
  namespaces: stage1, each run's mounts, init and dropped capabilities) and ``wire.py``.

Example (not run as a doctest: it starts warm servers)::

    manager.warm_up("csv-profiler")  # warm_up(planner, executor, settings, name)
    # -> [WarmUp(script='scripts/profile.py', server=ServerInfo(...), note='')]
    [info.line() for info in servers()]
    stop_servers()
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from skill_magics.core.run.launching.warm_modes import (
    AUTO,
    ENV_VAR,
    MODES,
    OFF,
    ON,
    check_mode,
    choose,
    default_mode,
)

if TYPE_CHECKING:
    from skill_magics.core.run.launching.warm.launch import Cold, WarmLauncher
    from skill_magics.core.run.launching.warm.pool import ServerInfo

DEFAULT_IDLE_TIMEOUT = 600.0  # seconds a server waits for its next run before it stops

# The rest loads on first use: reading the settings must not start anything.
_LAZY = {
    "Cold": "launch",
    "Ticket": "launch",
    "WarmLauncher": "launch",
    "WarmUnavailable": "launch",
    "preload_names": "imports",
    "fork": "launch",
    "script_imports": "imports",
    "POOL": "pool",
    "ServerInfo": "pool",
    "ServerState": "server",
    "WarmServer": "server",
}


def __getattr__(name: str) -> Any:
    where = _LAZY.get(name)
    if where is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"{__name__}.{where}"), name)


@dataclass(frozen=True)
class WarmUp:
    """One script's server after :func:`warm_up`: ready (``server``) or why not (``note``)."""

    script: str
    server: ServerInfo | None = None
    note: str = ""


def servers() -> list[ServerInfo]:
    """The warm servers of this process (``%skills warm``)."""
    from skill_magics.core.run.launching.warm.pool import POOL

    return POOL.infos()


def stop_servers(*, wait_for_runs: bool = False) -> int:
    """Stop every warm server of this process; returns how many were running.
    ``wait_for_runs``: one with runs in flight stops when they end (else they are killed)."""
    from skill_magics.core.run.launching.warm.pool import POOL

    return POOL.stop(wait_for_runs=wait_for_runs)


def warm_up(
    planner: Any,
    executor: Any,
    settings: Any,
    skill_name: str,
    scripts: list[str] | None = None,
) -> list[WarmUp]:
    """Start the servers of ``skill_name``'s Python entry scripts (``scripts``: those only)
    and wait until they have imported what the scripts import. Each script is checked as a
    run would be (refusals raise, audited); nothing of the skill runs, so a skill whose own
    venv would run the scripts is left to its first approved run (its Python, site and
    packages are the skill's code)."""
    from skill_magics.core.run.launching.warm.eligible import skills_own_python
    from skill_magics.core.run.launching.warm.launch import Cold
    from skill_magics.core.run.launching.warm.pool import POOL
    from skill_magics.core.run.launching.warm.server import ServerBusy

    skill = planner.finder.get_skill(skill_name)
    chosen = scripts or [
        s.path.as_posix() for s in skill.scripts if s.runnable and s.script_type == "python"
    ]
    out: list[WarmUp] = []
    launcher: WarmLauncher = executor.warm_launcher
    for script in chosen:
        # settings: the warm-up's own (its sandbox and cwd: RunSettings.for_run)
        _meta, prepared = planner.check_script(settings, skill_name, script, None, None)
        prepared = replace(prepared, warm_start=ON)
        rel = prepared.script_rel.as_posix()
        if skills_own_python(prepared):
            # The skill's own venv: starting its Python runs the skill's code (site, .pth,
            # its packages). That waits for an approved run, which starts the server.
            out.append(WarmUp(rel, note="the skill's own venv starts with its first approved run"))
            continue
        network = executor.network_for(prepared)
        got = launcher.warm_up(prepared, prepared.env, network)
        if isinstance(got, Cold):
            out.append(WarmUp(rel, note=got.note))
            continue
        missing = [n for n in launcher.names_for(prepared) if n not in got.report.loaded]
        if missing:
            try:
                got.load(missing)
            except ServerBusy:  # runs of it in flight: imported when they end
                got.want(missing)
            except OSError as exc:
                out.append(WarmUp(rel, note=f"warm server stopped: {exc}"))
                continue
        info = next((i for i in POOL.infos() if i.pid == got.pid), None)
        out.append(WarmUp(rel, info))
    return out


__all__ = [
    "AUTO",
    "DEFAULT_IDLE_TIMEOUT",
    "ENV_VAR",
    "MODES",
    "OFF",
    "ON",
    "Cold",
    "ServerInfo",
    "ServerState",
    "Ticket",
    "WarmLauncher",
    "WarmServer",
    "WarmUnavailable",
    "WarmUp",
    "check_mode",
    "choose",
    "default_mode",
    "preload_names",
    "fork",
    "script_imports",
    "servers",
    "stop_servers",
    "warm_up",
]
