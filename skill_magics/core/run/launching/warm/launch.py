"""Warm or cold: the executor's launch step for a Python script (docs/architecture.md,
*Warm start*).

:class:`WarmLauncher` looks at a checked run (a PreparedRun, its environment with the
secret values, its network) and either gives a :class:`Ticket` (the server to fork it from
and the run's spec) or says in one line why this run starts cold. :func:`fork` then starts
the ticket's run as a process.Child, which the executor's one loop (process.drive) drives:
same pipes, caps, timeout and kill as a cold run.

A run is warm only when everything a cold run would see can be reproduced in a fork:

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

import importlib.machinery
import json
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from skill_magics.core import trace
from skill_magics.core.base import envdirs, paths
from skill_magics.core.run.launching.cgroups import RUN_CGROUPS, RunCgroup
from skill_magics.core.run.launching.orphans import RUN_ID_VAR, SUBREAPER, Orphans, new_run_id
from skill_magics.core.run.launching.process import Pipe
from skill_magics.core.run.launching.warm.pool import POOL
from skill_magics.core.run.launching.warm.server import (
    FORK_S,
    ZYGOTE,
    ServerKey,
    ServerState,
    WarmChild,
    WarmServer,
)
from skill_magics.core.run.launching.warm.skillcode import SkillCode, skill_code
from skill_magics.core.run.launching.warm_modes import AUTO, OFF, ON

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun
    from skill_magics.core.run.launching.sandbox import RunSandbox

WAIT_S = 120.0  # "on": how long a run waits for its server to start and import
DRAIN_S = 15.0  # "on": how long runs wait for the runs in flight before an extra import

# Flags a warm server can start with exactly as the cold run would (others: cold).
_PLAIN_FLAGS = frozenset({"-u", "-O", "-OO", "-B", "-E", "-s", "-I", "-P", "-b", "-bb", "-q", "-S"})
_X_OPTIONS = ("utf8", "warn_default_encoding", "int_max_str_digits", "no_debug_ranges", "dev")
# Variables that make a Python print, trace or stop from its very start: a fork would not.
_STARTUP_VARS = (
    "PYTHONVERBOSE",
    "PYTHONPROFILEIMPORTTIME",
    "PYTHONTRACEMALLOC",
    "PYTHONINSPECT",
    "PYTHONDUMPREFS",
    "PYTHONMALLOCSTATS",
    "PYTHONSHOWREFCOUNT",
)
ENVIRON_SLOT = "SKILL_MAGICS_WARM_SLOT"  # child.SLOT_VAR
# Bytes kept first in a server's environment block for each run's own (child._show_environ):
# a notebook's environment is a few KiB; a bigger one shows only the run's id there.
ENVIRON_SLOT_SIZE = 32 * 1024
# Per run and per skill, never part of a server's environment.
_RUN_VARS = frozenset({"SKILL_NAME", "SKILL_BASE_DIR", "SKILL_WORKSPACE", "SKILL_VERSION"})
_RUN_VARS |= trace.RUN_VARS  # each run's own span (core/trace/), never the server's

Preload = Callable[["PreparedRun"], Sequence[str]]


@dataclass(frozen=True)
class Target:
    """What the command runs: a file or a module, with the interpreter's flags."""

    python: str
    flags: tuple[str, ...]
    target: str  # the script's path, or the module's name
    is_module: bool  # run as ``python -m target``


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
        why = _shadowed(run.prepared, run.target, server, run.env) or _ships_held(run.code, server)
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
        spec = _spec(run.prepared, run.target, run.env)
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
    why = _env_problem(env)
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


def describe(prepared: PreparedRun) -> str:
    """How ``prepared`` would start, for the approval panel ('' when it is not a Python
    script: those always start cold). Decided from the run alone: the server may not be
    running yet."""
    if prepared.script is None or prepared.interpreter.script_type != "python":
        return ""
    if prepared.warm_start == OFF:
        return "cold (warm start off for this run: --cold, warm=False or warm_start=off)"
    target = parse_target(prepared)
    why = target if isinstance(target, str) else _env_problem(prepared.env)
    profile = prepared.sandbox_profile
    if not why and profile is not None and profile.active and skills_own_python(prepared):
        why = OWN_PYTHON_SANDBOXED
    if why:
        return f"cold: {why}"
    if prepared.warm_start == ON:
        return "warm: forked from a server that imported its packages"
    return "warm when its server is ready (warm_start=auto), else cold"


OWN_PYTHON_SANDBOXED = (
    "the skill's own Python starts sandboxed runs cold (a warm sandbox's first step would "
    "run it holding capabilities)"
)


def skills_own_python(prepared: PreparedRun) -> bool:
    """Is the run's Python the skill's own (its venv: the program, its folder and the
    pyvenv.cfg that picks the standard library are the skill's files, or wherever its
    ``venv`` symlink leads)? Starting it runs the skill's code, which a sandboxed warm
    server's first step must never do: it holds CAP_SYS_ADMIN where no mount is locked yet
    (zygote.stage1)."""
    if prepared.script is None:
        return False
    base = prepared.script.real_base
    program = prepared.program
    return any(
        paths.inside(path, base)
        for path in (
            os.path.abspath(program),  # chosen from the skill's folder: the skill's choice
            os.path.realpath(os.path.dirname(program)),
            os.path.realpath(program),
        )
    )


def quick_cold(prepared: PreparedRun) -> str:
    """Why ``prepared`` starts cold whatever a server could do ('' when that depends on the
    rest of :meth:`WarmLauncher.ticket`): asked first, for every run."""
    if not _LINUX:
        return f"warm start needs Linux (this is {sys.platform})"
    if prepared.script is None or prepared.interpreter.script_type != "python":
        return "warm start is for Python scripts"
    return ""


_LINUX = sys.platform.startswith("linux")


def parse_target(prepared: PreparedRun) -> Target | str:
    """The run's interpreter, flags and target, or why it cannot be warm."""
    why = quick_cold(prepared)
    if why:
        return why
    command, argv = prepared.command, prepared.argv
    head = command[: len(command) - len(argv)] if argv else command
    module = len(head) >= 3 and head[-2] == "-m"
    flags = head[1:-2] if module else head[1:-1]
    bad = _bad_flags(flags)
    if bad:
        return f"interpreter flag {bad} is not reproduced by a warm start"
    return Target(head[0], tuple(flags), head[-1], module)


def _bad_flags(flags: Sequence[str]) -> str:
    words = list(flags)
    while words:
        flag = words.pop(0)
        if flag in _PLAIN_FLAGS:
            continue
        if flag in ("-W", "-X") and words:
            value = words.pop(0)
        elif flag.startswith(("-W", "-X")) and len(flag) > 2:
            value = flag[2:]
        else:
            return flag
        if flag.startswith("-X") and value.split("=", 1)[0] not in _X_OPTIONS:
            return f"-X {value}"
    return ""


def _env_problem(env: Mapping[str, str]) -> str:
    for name in _STARTUP_VARS:
        if env.get(name):
            return f"{name} is set: a warm start would not show what it prints at startup"
    return ""


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


def _spec(prepared: PreparedRun, target: Target, env: Mapping[str, str]) -> dict[str, Any]:
    argv = [target.target if not target.is_module else "-m", *prepared.argv]
    spec = {
        "argv": argv,
        "orig_argv": list(prepared.command),
        "cwd": os.fspath(prepared.cwd),
        "env": dict(env),
        "module": target.is_module,
        "target": target.target,
        "umask": current_umask(),
        "rlimits": current_rlimits(),
        "sched": current_sched(),
    }
    return spec


def folders_stamp(python: str) -> tuple[int, ...]:
    """The mtimes of ``python``'s import folders (an install changes one of them)."""
    out = []
    for folder in envdirs.import_path(python):
        try:
            out.append(os.stat(folder).st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


def current_umask() -> int:
    """This process's umask, read without changing it (a cold child inherits it)."""
    try:
        with open("/proc/self/status", "rb") as fh:
            for line in fh:
                if line.startswith(b"Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    with _UMASK_LOCK:  # pragma: no cover - kernels before 4.7
        mask = os.umask(0o022)
        os.umask(mask)
    return mask


_UMASK_LOCK = threading.Lock()


def current_rlimits() -> list[tuple[int, int, int]]:
    """This process's resource limits now, which a cold child inherits: (which, soft,
    hard) for each (the server's are those of when it started)."""
    import resource

    out = []
    for which in _RLIMITS:
        try:
            soft, hard = resource.getrlimit(which)
        except (OSError, ValueError):
            continue
        out.append((which, soft, hard))
    return out


def current_sched() -> dict[str, Any]:
    """This process's nice value and CPU affinity now (a cold child inherits them; a
    notebook or a Dask worker may have changed them since the server started)."""
    out: dict[str, Any] = {}
    try:
        out["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
    except OSError:
        pass
    try:
        out["cpus"] = sorted(os.sched_getaffinity(0))
    except OSError:
        pass
    return out


def _rlimit_ids() -> tuple[int, ...]:
    try:
        import resource
    except ImportError:  # pragma: no cover - not POSIX
        return ()
    return tuple(sorted({getattr(resource, n) for n in dir(resource) if n.startswith("RLIMIT_")}))


_RLIMITS = _rlimit_ids()


# -- a skill's modules that the server already holds -----------------------------------------

_LOCAL: dict[str, tuple[int, frozenset[str], tuple[tuple[str, int], ...]]] = {}
_PACKAGE_INITS = tuple(f"__init__{suffix}" for suffix in importlib.machinery.all_suffixes())


def _local_modules(folder: str) -> frozenset[str]:
    """Top-level names a folder on sys.path provides (modules, sourceless ``.pyc`` modules,
    extension modules and regular packages). Remembered while the folder and its other
    subfolders keep their mtimes (an ``__init__.py`` added to one changes only its own)."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return frozenset()
    hit = _LOCAL.get(folder)
    if hit is not None and hit[0] == mtime and all(_mtime(d) == m for d, m in hit[2]):
        return hit[1]
    names = set()
    plain: list[tuple[str, int]] = []  # subfolders that are no package (yet)
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".py"):
                    names.add(name[:-3])
                elif name.endswith(".pyc"):  # imported without a source, as python does
                    names.add(name[:-4])
                elif name.endswith(".so") or name.endswith(".pyd"):
                    names.add(name.split(".", 1)[0])
                elif entry.is_dir():
                    if any(os.path.exists(os.path.join(entry.path, i)) for i in _PACKAGE_INITS):
                        names.add(name)
                    else:
                        plain.append((entry.path, _mtime(entry.path)))
    except OSError:
        pass
    found = frozenset(names)
    if len(_LOCAL) > 1024:
        _LOCAL.clear()
    _LOCAL[folder] = (mtime, found, tuple(plain))
    return found


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


_STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})  # what site imports at start


def _shadowed(
    prepared: PreparedRun, target: Target, server: WarmServer, env: Mapping[str, str]
) -> str:
    """Why a cold run would import one of the skill's own modules where the server already
    holds a module of that name ('' when none): from any folder the cold run's sys.path puts
    before the server's own (the script's folder, or the cwd for ``-m``; PYTHONPATH). A
    ``sitecustomize``/``usercustomize`` on PYTHONPATH counts too: a cold start runs it
    before the script (site imports it), the server never does."""
    assert prepared.script is not None
    held = server.report.modules
    if "-S" not in target.flags:
        hooks = _STARTUP_HOOKS
    else:
        hooks = frozenset()
    server_path = {os.path.realpath(p) for p in server.path}
    for folder, at_startup in _path_front(prepared, target, env):
        if os.path.realpath(folder) in server_path:
            continue  # the server imported from there too: the same modules
        clash = sorted(_local_modules(folder) & (held | hooks if at_startup else held))
        if clash:
            return (
                f"the skill's own module {clash[0]!r} has the name of a module the warm server "
                "holds (a cold run imports the skill's)"
            )
    return ""


def _ships_held(code: SkillCode, server: WarmServer) -> str:
    """Why the run starts cold when the skill ships, anywhere in its folder, a module of a
    name the server holds (a preloaded package pulled it in): a script may put that folder
    first on sys.path, and a cold run would then import the skill's own."""
    clash = sorted(code.shipped & server.report.modules)
    if not clash:
        return ""
    return (
        f"the skill ships a module named {clash[0]!r}, which the warm server holds (a cold "
        "run may import the skill's)"
    )


def _path_front(
    prepared: PreparedRun, target: Target, env: Mapping[str, str]
) -> list[tuple[str, bool]]:
    """The folders a cold ``python [flags] script`` puts in front of its installation's
    sys.path, each with whether it is there at startup (when site runs): the script's
    folder (the cwd for ``-m``; added after startup) unless safe-path, then PYTHONPATH
    (relative entries from the run's cwd) unless -E/-I."""
    flags = set(target.flags)
    isolated = "-I" in flags
    ignore_env = isolated or "-E" in flags
    safe = isolated or "-P" in flags or (not ignore_env and bool(env.get("PYTHONSAFEPATH")))
    cwd = os.fspath(prepared.cwd)
    out = []
    if not safe:
        if target.is_module:
            out.append((cwd, False))
        else:
            out.append((os.path.dirname(os.path.realpath(target.target)), False))
    if not ignore_env:
        for entry in env.get("PYTHONPATH", "").split(os.pathsep):
            if entry:
                out.append((os.path.normpath(os.path.join(cwd, entry)), True))
    return out


# -- preloading ----------------------------------------------------------------------------


def script_imports(prepared: PreparedRun) -> Sequence[str]:
    """The third-party packages the run's script imports, installed for its Python (from
    the requirements analysis of that script alone)."""
    from skill_magics.core.base.models import ScriptMetadata
    from skill_magics.core.catalog.requirements import skill_requirements

    if prepared.script is None:
        return ()
    rel = prepared.script_rel
    meta = ScriptMetadata(rel.stem, rel, "python", "python3")
    reqs = skill_requirements(
        prepared.skill_name, prepared.script.real_base, [meta], python=prepared.program
    )
    return preload_names(reqs, rel.as_posix())


def preload_names(reqs: Any, script: str) -> tuple[str, ...]:
    """Import names of the installed packages ``script`` needs (``Requirements``)."""
    out: list[str] = []
    for pkg in reqs.packages:
        if pkg.installed and script in pkg.scripts:
            out.extend(pkg.imports)
    return tuple(dict.fromkeys(out))


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
    ours: list[int] = []
    theirs: list[int] = []
    try:
        if payload is None:
            stdin_r = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
            stdin_w = -1
        else:
            stdin_r, stdin_w = os.pipe2(os.O_CLOEXEC)
            ours.append(stdin_w)
        theirs.append(stdin_r)
        out_r, out_w = os.pipe2(os.O_CLOEXEC)
        err_r, err_w = os.pipe2(os.O_CLOEXEC)
        ours += [out_r, err_r]
        theirs += [out_w, err_w]
        try:
            child = server.fork(spec, stdin_r, out_w, err_w, timeout=FORK_S)
        except (OSError, TimeoutError) as exc:
            raise WarmUnavailable(f"warm server unavailable: {exc}") from exc
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
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
