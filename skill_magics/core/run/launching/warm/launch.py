"""Warm or cold: the executor's launch step for a Python script (docs/architecture.md,
*Warm start*).

:class:`WarmLauncher` looks at a checked run (a PreparedRun, its environment with the
secret values, its network) and either gives a :class:`Ticket` (the server to fork it from
and the run's spec) or says in one line why this run starts cold. :func:`fork` then starts
the ticket's run as a process.Child, which the executor's one loop (process.drive) drives:
same pipes, caps, timeout and kill as a cold run.

A run is warm only when everything a cold run would see can be reproduced in a fork
(eligible.py decides what the run alone rules out, imports.py the modules):

- a Python script (a file, or ``-m module``) run by an interpreter with known flags, on Linux;
- no variable that makes the interpreter print or trace from its very start
  (PYTHONVERBOSE, PYTHONPROFILEIMPORTTIME, PYTHONTRACEMALLOC, ...);
- no module of the skill named like a module the server holds (``scripts/json.py`` would be
  imported fresh by a cold run, but the server already has ``json``);
- sandboxed runs: a server in a bwrap sandbox of the same profile, in which a run can get its
  own namespaces (the server checks this when it starts, else says why not), started by a
  Python that is not the skill's own (its first step holds capabilities in the sandbox).

``warm_start="auto"`` (the default): warm when the server is ready; otherwise the run starts
cold and, when the script imports third-party packages, its server starts in the background.
``"on"``: wait for the server (the first run pays its start; a batch's items under "auto"
do this too). ``"off"``: always cold.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skill_magics.core import trace
from skill_magics.core.base import envdirs
from skill_magics.core.run.launching.cgroups import RUN_CGROUPS, RunCgroup
from skill_magics.core.run.launching.orphans import RUN_ID_VAR, SUBREAPER, Orphans, new_run_id
from skill_magics.core.run.launching.process import ChildFds, Pipe
from skill_magics.core.run.launching.warm.childstate import run_spec
from skill_magics.core.run.launching.warm.eligible import (
    OWN_PYTHON_SANDBOXED,
    Target,
    describe,
    env_problem,
    parse_target,
    quick_cold,
    skills_own_python,
)
from skill_magics.core.run.launching.warm.forked import WarmChild
from skill_magics.core.run.launching.warm.imports import (
    folders_stamp,
    preload_names,
    script_imports,
    shadowed,
    ships_held,
)
from skill_magics.core.run.launching.warm.pool import POOL
from skill_magics.core.run.launching.warm.server import (
    FORK_S,
    ZYGOTE,
    ServerKey,
    ServerState,
    WarmServer,
)
from skill_magics.core.run.launching.warm.skillcode import SkillCode, skill_code
from skill_magics.core.run.launching.warm_modes import AUTO, OFF, ON

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun
    from skill_magics.core.run.launching.sandbox import RunSandbox

WAIT_S = 120.0  # "on": how long a run waits for its server to start and import
DRAIN_S = 15.0  # "on": how long runs wait for the runs in flight before an extra import

ENVIRON_SLOT = "SKILL_MAGICS_WARM_SLOT"  # child.SLOT_VAR
# Bytes kept first in a server's environment block for each run's own (child._show_environ):
# a notebook's environment is a few KiB; a bigger one shows only the run's id there.
ENVIRON_SLOT_SIZE = 32 * 1024
# Per run and per skill, never part of a server's environment.
_RUN_VARS = frozenset({"SKILL_NAME", "SKILL_BASE_DIR", "SKILL_WORKSPACE", "SKILL_VERSION"})
_RUN_VARS |= trace.RUN_VARS  # each run's own span (core/trace/), never the server's

Preload = Callable[["PreparedRun"], Sequence[str]]


@dataclass(frozen=True)
class Ticket:
    """A run that starts warm: the server to fork it from and its spec (argv, cwd,
    environment with secrets: read only by the forked child)."""

    server: WarmServer
    spec: dict[str, Any]
    tmpdir: str | None = None  # a sandboxed run's private TMPDIR (inside the sandbox)
    network: bool = False


@dataclass(frozen=True)
class Cold:
    """A run that starts cold, and why (``note``; "" when warm start is off)."""

    note: str = ""


class WarmLauncher:
    """Decides warm or cold for each run and keeps the servers busy (see the module
    docstring). ``preload(prepared)``: the import names worth preloading for a run (the
    skill's requirements analysis; None: the script's own third-party imports)."""

    def __init__(self, preload: Preload | None = None) -> None:
        self.preload = preload or script_imports
        self._names: dict[tuple[str, str, str], tuple[Any, tuple[str, ...]]] = {}

    def ticket(
        self,
        prepared: PreparedRun,
        env: Mapping[str, str],
        network: bool,
        *,
        cancel: threading.Event | None = None,
    ) -> Ticket | Cold:
        """Warm (a Ticket) or cold (why). ``env``: the run's environment with its secret
        values; ``network``: the sandbox's network now (a grant given while approving);
        ``cancel`` set stops a wait for the server (the run then starts cold and stops)."""
        if prepared.warm_start == OFF:
            return Cold()
        run = _plan(prepared, env, network)
        if isinstance(run, Cold):
            return run
        got = self._try(run, cancel, may_wait=True)
        # It waited for an import: once more, without a second wait (a server that turned
        # out unsafe with the new packages has been replaced meanwhile).
        return got if got is not None else (self._try(run, cancel, may_wait=False) or Cold())

    def _try(
        self, run: _WarmRun, cancel: threading.Event | None, may_wait: bool
    ) -> Ticket | Cold | None:
        """One attempt: a Ticket, Cold, or None when it waited for an import (ask again)."""
        server = self._server(run)
        if isinstance(server, Cold):
            return server
        waiting = run.prepared.warm_start != AUTO
        not_ready = _ready(server, waiting, cancel)
        if not_ready is not None:
            return not_ready
        why = shadowed(run.prepared, run.target, server, run.env) or ships_held(run.code, server)
        if why:
            return Cold(why)
        wanted = [n for n in self._preload(run) if n not in server.report.loaded]
        if wanted:
            # Imported once no run is in flight; a run that waits for its server (a batch
            # item, warm=True) waits for them too, then asks again.
            POOL.extend(run.key, server, wanted, drain=waiting)
        # DRAINING or already LOADING: an item that comes when the import has begun waits
        # too (it went cold, a race a busy machine lost in the fresh-clone run).
        if server.state in (ServerState.DRAINING, ServerState.LOADING) and waiting and may_wait:
            done = _wait(server, _imported, DRAIN_S, cancel, "imported packages")
            if isinstance(done, Cold):
                return done
            if not done:
                # A long run in flight holds the import back: stop holding runs for it
                # (it still happens once the server is idle); they go on without it.
                server.end_drain()
            return None
        if server.state in (ServerState.DRAINING, ServerState.LOADING):
            return Cold("warm server importing packages")
        spec = run_spec(run.prepared, run.target, run.env)
        return Ticket(server, spec, run.tmpdir, run.network)

    def _server(self, run: _WarmRun) -> WarmServer | Cold:
        """The run's server from the pool, started (in the background) when there is none
        and one is worth it."""
        prepared, key = run.prepared, run.key
        server = POOL.server_for(key, idle_timeout=prepared.warm_idle)
        if server is not None:
            return server
        version = envdirs.python_version(run.target.python)
        if version is not None and version < (3, 9):
            major, minor = version
            return Cold(f"warm start needs Python 3.9+ (this script runs on {major}.{minor})")
        if prepared.warm_start == AUTO and not self._preload(run):
            return Cold()  # nothing worth preloading: not worth a server of its own
        profile = prepared.sandbox_profile if run.tmpdir is not None else None
        server = POOL.server_for(
            key,
            lambda: _make_server(key, run.target, run.server_env, profile, run.tmpdir, run.network),
            lambda: self._preload(run),
            idle_timeout=prepared.warm_idle,
        )
        if server is None:  # as many servers as may run are starting or in use
            from skill_magics.core.run.launching.warm import pool

            return Cold(f"warm start unavailable: {pool.MAX_SERVERS} {pool.FULL_NOTE}")
        return server

    def _preload(self, run: _WarmRun) -> Sequence[str]:
        if run.names is None:
            run.names = self.names_for(run.prepared)
        return run.names

    def warm_up(
        self, prepared: PreparedRun, env: Mapping[str, str], network: bool, timeout: float = WAIT_S
    ) -> WarmServer | Cold:
        """Start (or find) the server ``prepared`` would use and wait until it is ready."""
        from dataclasses import replace

        ticket = self.ticket(replace(prepared, warm_start=ON), env, network)
        if isinstance(ticket, Cold):
            return ticket
        return ticket.server

    def names_for(self, prepared: PreparedRun) -> Sequence[str]:
        """What to preload for ``prepared`` (never raises: no preload is slower, not wrong):
        never a name the skill ships anywhere in its folder (a cold run may import the
        skill's own: ``scripts/vendor/yaml`` put first on sys.path).

        Remembered per interpreter and script while the script file and the interpreter's
        import folders are unchanged: a cold run under "auto" asks this every time, and the
        answer (often "nothing": then no server is worth starting) must cost no more than a
        few stats."""
        script = prepared.script
        if script is None:
            return ()
        code = skill_code(os.fspath(script.real_base))
        if code is None:
            return ()
        return tuple(n for n in self._script_names(prepared) if n not in code.shipped)

    def _script_names(self, prepared: PreparedRun) -> Sequence[str]:
        script = prepared.script
        assert script is not None
        try:
            st = os.stat(script.real)
            stamp = (st.st_mtime_ns, st.st_size, folders_stamp(prepared.program))
        except OSError:
            stamp = None
        key = (prepared.program, os.fspath(script.real), prepared.skill_name)
        hit = self._names.get(key)
        if hit is not None and stamp is not None and hit[0] == stamp:
            return hit[1]
        names = self._names_now(prepared)
        if stamp is not None:
            if len(self._names) > 1024:
                self._names.clear()
            self._names[key] = (stamp, names)
        return names

    def _names_now(self, prepared: PreparedRun) -> tuple[str, ...]:
        try:
            return tuple(self.preload(prepared))
        except Exception:  # noqa: BLE001 - no preload is slower, never wrong
            return ()


@dataclass
class _WarmRun:
    """A run that may start warm: what it runs, its environment and its server's key."""

    prepared: PreparedRun
    target: Target
    env: dict[str, str]  # the run's, with its secrets (and a sandbox's TMPDIR)
    server_env: dict[str, str]
    key: ServerKey
    tmpdir: str | None  # a sandboxed run's private TMPDIR (None: unsandboxed)
    network: bool
    code: SkillCode  # the skill's code files: its fingerprint, the module names it ships
    names: Sequence[str] | None = None  # what to preload, once asked


def _plan(prepared: PreparedRun, env: Mapping[str, str], network: bool) -> _WarmRun | Cold:
    """What a warm start of ``prepared`` needs, or why it cannot be warm."""
    target = parse_target(prepared)
    if isinstance(target, str):
        return Cold(target)
    why = env_problem(env)
    if why:
        return Cold(why)
    profile = prepared.sandbox_profile
    sandboxed = profile is not None and profile.active
    if sandboxed and skills_own_python(prepared):
        return Cold(OWN_PYTHON_SANDBOXED)
    tmpdir = None
    run_env = dict(env)
    if sandboxed:
        from skill_magics.core.run.launching import sandbox as sandboxing

        tmpdir = sandboxing.private_tmpdir()
        run_env.update(sandboxing.tmp_env(tmpdir))
    server_env = _server_env(run_env, prepared)
    assert prepared.script is not None  # parse_target: a script
    code = skill_code(os.fspath(prepared.script.real_base))
    if code is None:
        return Cold("the skill's folder cannot be read for its warm server")
    # One server per skill and per state of its code: no other skill's packages, atexit
    # hooks or modules are ever in this skill's runs (issue 28).
    key = ServerKey(
        skill=(prepared.skill_name, code.base),
        code=code.fingerprint,
        python=target.python,
        flags=target.flags,
        env=tuple(sorted(server_env.items())),
        sandbox=profile.server_key(network) if sandboxed and profile is not None else None,
    )
    return _WarmRun(prepared, target, run_env, server_env, key, tmpdir, network, code)


def _ready(server: WarmServer, waiting: bool, cancel: threading.Event | None) -> Cold | None:
    """None when runs may fork from ``server`` now, else why not. ``waiting``: wait for it
    to start and finish an import (warm=True, a batch item) instead of starting cold."""
    if server.state is ServerState.STARTING and not waiting:
        return Cold("warm server starting")
    for state, done, what in (
        (ServerState.STARTING, _started, "started"),
        (ServerState.LOADING, _imported, "imported packages"),  # another script's packages
    ):
        if waiting and server.state is state:
            stopped = _wait(server, done, WAIT_S, cancel, what)
            if isinstance(stopped, Cold):
                return stopped
    if not server.usable:
        if server.state is ServerState.STARTING:
            return Cold(f"warm server still starting after {WAIT_S:g} s")
        return Cold(f"warm start unavailable: {server.problem or 'the server stopped'}")
    if server.state is ServerState.LOADING:
        return Cold("warm server importing packages")
    return None


def _started(state: ServerState) -> bool:
    return state is not ServerState.STARTING


def _imported(state: ServerState) -> bool:
    """No import is under way or awaited (a stopped server awaits none)."""
    return state not in (ServerState.LOADING, ServerState.DRAINING)


def _wait(
    server: WarmServer,
    done: Callable[[ServerState], bool],
    seconds: float,
    cancel: threading.Event | None,
    what: str,
) -> bool | Cold:
    """A run's wait for its server: True once ``done(server.state)``, False after
    ``seconds``, Cold when ``cancel`` is set meanwhile (the run then starts cold and
    stops)."""
    if server.wait(done, seconds, cancel):
        return True
    if cancel is not None and cancel.is_set():
        return Cold(f"stopped while its warm server {what}")
    return False


def _server_env(env: Mapping[str, str], prepared: PreparedRun) -> dict[str, str]:
    """The server's environment: the run's, without its secrets and per-skill variables, and
    without the skill's folder on PYTHONPATH (a preload must never come from the skill)."""
    secrets = set(prepared.secrets)
    out = {k: v for k, v in env.items() if k not in secrets and k not in _RUN_VARS}
    path = out.get("PYTHONPATH")
    if path is not None and prepared.script is not None:
        root = os.fspath(prepared.script.real_base)
        kept = [p for p in path.split(os.pathsep) if p and os.path.realpath(p) != root]
        if kept:
            out["PYTHONPATH"] = os.pathsep.join(kept)
        else:
            del out["PYTHONPATH"]
    return out


def _make_server(
    key: ServerKey,
    target: Target,
    env: dict[str, str],
    profile: RunSandbox | None,
    tmpdir: str | None,
    network: bool,
) -> WarmServer:
    python = target.python
    serve = [python, *target.flags, ZYGOTE, "serve", "{fd}"]
    # First in its environment, so first in the block /proc/PID/environ shows: each run
    # writes its environment there (child._show_environ); the server unsets it at once.
    slotted = {ENVIRON_SLOT: "." * ENVIRON_SLOT_SIZE, **env}
    if profile is None:
        return WarmServer(key, serve, slotted, label=python)
    from skill_magics.core.run.launching import sandbox as sandboxing

    assert tmpdir is not None
    sandbox = json.dumps({"tmpdir": tmpdir, "network": network})
    # -I -S: the first step runs before site and any .pth file (it holds capabilities).
    inner = [python, "-I", "-S", ZYGOTE, "stage1", "{fd}", tmpdir, "--", *serve]
    inner += ["--sandbox", sandbox]
    argv = sandboxing.server_argv(profile, inner, network=network)
    return WarmServer(key, argv, slotted, label=f"{python} in {profile.mode}")


# -- running ---------------------------------------------------------------------------------


class WarmUnavailable(OSError):
    """The server could not fork this run now (it stopped meanwhile): run it cold."""


def fork(ticket: Ticket, payload: bytes | None) -> WarmChild:
    """The warm launch: fork the run from its server; process.drive then drives it like a
    cold one (same pipes, caps, timeout and kill).

    An unsandboxed run carries its run id and its orphans are found and killed as a cold
    run's are (launching/orphans.py: they are re-parented to this process, a child subreaper
    during runs, through the server). Raises WarmUnavailable when the server cannot fork it
    (nothing ran); a child that could not start (its cwd vanished) makes drive raise
    SpawnError (exit 126 as for a cold run)."""
    held: Orphans | None = None
    group: RunCgroup | None = None
    spec = ticket.spec
    if ticket.tmpdir is None and SUBREAPER.enter():  # a sandbox's PID namespace does that
        held = Orphans(run_id := new_run_id())
        # Also in the block /proc/PID/environ shows: a daemon forked without exec has it.
        mark = f"{RUN_ID_VAR}={run_id}"
        spec = {**spec, "env": {**spec["env"], RUN_ID_VAR: run_id}, "environ_mark": mark}
        if (group := RUN_CGROUPS.new()) is not None:  # the child joins it first thing
            spec["cgroup"] = group.procs
    try:
        child = _fork(ticket.server, json.dumps(spec).encode(), payload)
    except BaseException:
        if held is not None:
            SUBREAPER.leave()
        if group is not None:
            RUN_CGROUPS.release(group)
        raise
    child.held = held
    child.cgroup = group
    return child


def _fork(server: WarmServer, spec: bytes, payload: bytes | None) -> WarmChild:
    start = time.monotonic()
    with ChildFds() as fds:
        if payload is None:
            stdin_r, stdin_w = fds.give(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)), -1
        else:
            stdin_r, stdin_w = fds.pipe(ours="w")
        out_r, out_w = fds.pipe(ours="r")
        err_r, err_w = fds.pipe(ours="r")
        try:
            child = server.fork(spec, stdin_r, out_w, err_w, timeout=FORK_S)
        except (OSError, TimeoutError) as exc:
            raise WarmUnavailable(f"warm server unavailable: {exc}") from exc
    child.start = start
    child.payload = payload
    child.stdin = Pipe(stdin_w) if stdin_w >= 0 else None
    child.stdout = Pipe(out_r)
    child.stderr = Pipe(err_r)
    return child


__all__ = [
    "Cold",
    "Target",
    "Ticket",
    "WarmLauncher",
    "WarmUnavailable",
    "describe",
    "parse_target",
    "quick_cold",
    "preload_names",
    "fork",
    "script_imports",
]
