"""ScriptExecutor: check everything, then run one skill script safely and audit the attempt.

Example:
    >>> executor = ScriptExecutor(timeout=60)
    >>> prepared = executor.prepare("scripts/profile.py", {"csv": "a,b\\n1,2\\n"},
    ...                             Path("skills/csv-profiler"), skill.metadata)
    >>> result = executor.run(prepared)          # or: executor.execute(...same args...)
    >>> result.exit_code, result.json()

``prepare`` does every check before any process exists (paths, permissions, allowed-tools,
interpreter allowed and installed, JSON arguments and their size, timeout range); refusals
raise and are audited. ``run`` re-checks the file (it may have changed while approval
waited), then spawns ``[interpreter, script, *argv]`` (never a shell) in its own process group
with cwd = the skill directory and a minimal environment. When the script exits, whatever it
left running in its group is killed: a run owns its processes (and so are descendants that
left the group with setsid, see core.process).

The program: ``.py`` runs with the skill's venv Python or the kernel's; anything else with
the allow-listed interpreter of that name found on PATH. An absolute shebang
(``#!/opt/x/bin/bash -e``) only names the interpreter: ``bash`` from PATH runs, with the
shebang's flags, never the path as written (the allow-list compares names, so a skill could
otherwise ship its own "bash"). The approval request shows the exact command.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, TypeVar

from skill_magics.core import envdirs, interpreters, paths
from skill_magics.core.audit import AuditLog, arguments_preview
from skill_magics.core.catalog import kinds
from skill_magics.core.errors import (
    ArgumentSizeError,
    InterpreterNotAllowedError,
    InterpreterNotFoundError,
    SkillMagicsError,
    ToolRestrictionError,
)
from skill_magics.core.interpreters import InterpreterSpec
from skill_magics.core.models import ScriptExecutionResult, SkillMetadata
from skill_magics.core.run import sandbox as sandboxing
from skill_magics.core.run import workdir
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.payload import encode_arguments, normalize_argv
from skill_magics.core.run.process import ProcessOutcome, SpawnError, run_process
from skill_magics.core.run.sandbox import SandboxedCommand, SandboxProfile, SandboxSettings
from skill_magics.core.run.settings import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_TIMEOUT,
    check_max_output_size,
    check_timeout,
)
from skill_magics.core.secrets import SecretStore, declared_secrets
from skill_magics.core.status import AuditOutcome
from skill_magics.core.version import VERSION as _VERSION

logger = logging.getLogger("skill_magics.executor")

TIMEOUT_EXIT_CODE = 124  # what coreutils `timeout` returns

# Variables a script may reasonably need to behave like it does in a terminal; nothing that
# usually carries credentials. Anything else needs env_passthrough or inherit_env.
_POSIX_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TERM", "USER", "LOGNAME", "TZ")
_WINDOWS_ENV = (
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    "LANG",
    "TZ",
)
_WINDOWS = sys.platform == "win32"
BASE_ENV: tuple[str, ...] = _WINDOWS_ENV if _WINDOWS else _POSIX_ENV
_BASE_ENV_SET = frozenset(BASE_ENV)
_BASE_ENV_BYTES = frozenset(os.fsencode(name) for name in BASE_ENV)


def _base_env() -> dict[str, str]:
    """The inherited part of the minimal environment: BASE_ENV names and LC_* from os.environ.

    On POSIX this reads os.environ's underlying bytes mapping and decodes only the few entries
    kept: decoding every name of a large environment cost more than the rest of prepare()
    (~13 us warm, ~30 us right after a spawn, for 35 variables). Elsewhere, or should CPython
    ever change that private mapping, it walks the names of os.environ itself.
    """
    data = getattr(os.environ, "_data", None)
    if not _WINDOWS and isinstance(data, dict):
        enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        snapshot = dict(data)  # one C-level copy: another thread may be editing os.environ
        return {
            key.decode(enc, errors): value.decode(enc, errors)  # what os.fsdecode does
            for key, value in snapshot.items()
            if key in _BASE_ENV_BYTES or key[:3] == b"LC_"
        }
    source = os.environ
    env = {}
    for key in list(source):
        upper = key.upper() if _WINDOWS else key
        if upper in _BASE_ENV_SET or upper.startswith("LC_"):
            env[key] = source[key]
    return env


# What to tell someone who lacks an interpreter.
_INSTALL_HINTS = {
    "node": "install Node.js",
    "tsx": "install it with 'npm install -g tsx'",
    "python3": "install Python 3",
    "bash": "install bash",
    "sh": "install a POSIX shell",
    "ruby": "install Ruby",
    "perl": "install Perl",
}

OnOutput = Callable[[str, str], object]
T = TypeVar("T")


@dataclass(frozen=True)
class PreparedRun:
    """A run that passed every check and is ready to spawn (nothing has started yet).

    ``command`` is the full argv; ``payload`` the JSON bytes for stdin (None: stdin is empty).
    """

    skill_name: str
    script_rel: Path  # relative to the skill base dir
    script: paths.ResolvedScript | None = field(repr=False)  # None: a command, no script file
    interpreter: InterpreterSpec
    command: tuple[str, ...]
    payload: bytes | None = field(repr=False)
    env: Mapping[str, str] = field(repr=False)
    cwd: Path  # the skill directory (realpath)
    timeout: float
    # What the audit shows as the arguments of a command (prepare_command); None for a
    # script: worked out from payload and argv whenever a record is made, so a secret
    # provided after prepare() (in the approval panel) is masked before the cut too.
    label_preview: str | None
    argv: tuple[str, ...] = ()
    # How the run is isolated (None: no sandbox); bwrap wraps ``command`` at spawn time.
    sandbox: SandboxProfile | None = None
    secrets: tuple[str, ...] = ()  # secret names the skill declares (values added at spawn)

    @property
    def program(self) -> str:
        """The executable that will run (the resolved interpreter)."""
        return self.command[0]

    @property
    def arguments_preview(self) -> str:
        """The audit's text for what the run was given (secrets masked, then cut)."""
        if self.label_preview is not None:
            return self.label_preview
        return arguments_preview(None, self.argv, encoded=self.payload)


@dataclass(frozen=True)
class _Plan:
    """What prepare() decided about a script file (see ScriptExecutor._plan)."""

    script: paths.ResolvedScript
    spec: InterpreterSpec
    command: tuple[str, ...]  # interpreter, its flags, the script's real path
    base_mtime_ns: int


@dataclass(frozen=True)
class _Boxed:
    """A run's sandbox as spawned: the profile and, when active, the bwrap command."""

    profile: SandboxProfile
    command: SandboxedCommand | None  # None: ``auto`` found no sandbox (the note says why)

    @property
    def record(self) -> dict[str, Any]:
        """For the audit record and the result: mode, network, writable paths."""
        data = self.profile.record()
        if self.command is None:
            return data
        data["network"] = self.command.network
        return data


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:g} s"


class ScriptExecutor:
    """Runs skill scripts: all checks first, one process group per run, bounded capture.

    Thread-safe: runs share nothing but the interpreter lookup cache and the audit log, both
    locked. ``allowed_interpreters`` defaults to python3, bash, sh, node.

    Example:
        >>> ScriptExecutor(timeout=60, env_passthrough=["OPENAI_API_KEY"]).execute(
        ...     "scripts/ask.py", {"q": "hi"}, Path("skills/llm"), metadata)
    """

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
        use_cache: bool = True,
        *,
        allowed_interpreters: Iterable[str] | None = None,
        inherit_env: bool = False,
        env_passthrough: Iterable[str] = (),
        audit: AuditLog | None = None,
        sandbox: SandboxSettings | None = None,
        secrets: SecretStore | None = None,
        run_cwd: workdir.CwdArg = workdir.SKILL,
    ) -> None:
        self.timeout = check_timeout(timeout)
        # Where runs start unless prepare(cwd=...) says otherwise (core/run/workdir.py).
        self.run_cwd = workdir.check_cwd(run_cwd)
        self.max_output_size = check_max_output_size(max_output_size)
        self.use_cache = use_cache
        self.allowed_interpreters = allowed_interpreters
        self.inherit_env = inherit_env
        if isinstance(env_passthrough, str):
            env_passthrough = env_passthrough.replace(",", " ").split()
        self.env_passthrough: tuple[str, ...] = tuple(env_passthrough)
        self.audit = audit if audit is not None else AuditLog()
        # Sandbox settings and secret values are shared with the SkillManager (mutable).
        self.sandbox = sandbox if sandbox is not None else SandboxSettings(sandboxing.OFF)
        self.secrets = secrets if secrets is not None else SecretStore()
        # Called with each PreparedRun just before it spawns; may return a callable run when
        # the run is over (whatever its outcome). SkillManager uses it to keep a "Yes in
        # session" valid across files the approved run itself writes into the skill.
        self.on_run: Callable[[PreparedRun], Callable[[], object] | None] | None = None
        self._which_cache: dict[tuple[str, str], str] = {}
        self._plans: dict[tuple, _Plan] = {}
        self._cache_lock = threading.Lock()

    @property
    def allowed_interpreters(self) -> frozenset[str]:
        """Canonical interpreter names scripts may use (settable; None restores the default)."""
        return self._allowed

    @allowed_interpreters.setter
    def allowed_interpreters(self, names: Iterable[str] | str | None) -> None:
        if names is None:
            names = interpreters.DEFAULT_ALLOWED
        elif isinstance(names, str):  # "python3 bash" is a likely shorthand for a list
            names = names.replace(",", " ").split()
        self._allowed = frozenset(interpreters.canonical(n) for n in names)

    # -- checks ------------------------------------------------------------------------------

    def prepare(
        self,
        script_path: str | os.PathLike[str],
        arguments: Any,
        skill_base_dir: str | os.PathLike[str],
        skill_metadata: SkillMetadata,
        *,
        argv: Sequence[Any] | None = None,
        timeout: float | None = None,
        sandbox: str | None = None,
        cwd: workdir.CwdArg | None = None,
        module: str | None = None,
    ) -> PreparedRun:
        """Check everything and build the command; raises (and audits) on any refusal.

        ``arguments`` go to stdin as JSON. With ``argv`` and ``arguments=None`` stdin is
        empty; with neither, stdin gets ``{}`` so JSON-reading scripts still parse it.
        ``sandbox``: this run's mode ("off", "read-only", "workspace-write", "auto"); None
        uses ``self.sandbox.mode``. An explicit mode that cannot be had here is refused.
        ``cwd``: "skill", "workspace" or a folder (None: ``self.run_cwd``). ``module``: run
        the script as ``python -m module`` (``ScriptMetadata.module``; it must name the
        script's own path, e.g. "scripts.run_eval" for scripts/run_eval.py); "" runs it as a
        file; None (a direct call) decides from the script's own imports, as the catalog
        does (``kinds.module_for``): one importing the skill's modules from the skill root
        runs as a module.
        """
        started = time.monotonic()
        try:
            prepared = self._prepare(
                script_path,
                arguments,
                skill_base_dir,
                skill_metadata,
                argv,
                timeout,
                self.run_cwd if cwd is None else cwd,
                module,
            )
            return self._isolate(prepared, sandbox, skill_metadata)
        except Exception as exc:  # noqa: BLE001 - whatever refused the run, audit it
            self.audit.refused(
                getattr(skill_metadata, "name", "?"),
                _shown_path(script_path, skill_base_dir),
                arguments_preview(arguments, argv),
                exc,
                duration_ms=_ms_since(started),
            )
            raise

    def _prepare(
        self,
        script_path: str | os.PathLike[str],
        arguments: Any,
        skill_base_dir: str | os.PathLike[str],
        metadata: SkillMetadata,
        argv: Sequence[Any] | None,
        timeout: float | None,
        cwd: workdir.CwdArg | None = None,
        module: str | None = None,
    ) -> PreparedRun:
        limit = self.timeout if timeout is None else check_timeout(timeout)
        # A name that is not one folder name never runs (docs/architecture.md, *Real skills*).
        paths.check_skill_name(metadata.name, os.path.basename(os.path.abspath(skill_base_dir)))
        self._check_tools(metadata)
        plan = self._plan(script_path, skill_base_dir)
        script, spec, command = plan.script, plan.spec, plan.command
        run_dir = workdir.resolve_cwd(cwd, script.real_base)
        argv_t = normalize_argv(argv) if argv is not None else ()
        if arguments is None and argv is not None:
            payload = None  # argv mode: the script reads nothing on stdin
        else:
            payload = encode_arguments({} if arguments is None else arguments)
        base_abs = os.path.abspath(skill_base_dir)
        env = self._env(metadata, base_abs)
        if module is None:
            module = kinds.module_for(script.real_base, script.relative.as_posix())
        if module:
            command = _module_command(command, module, script, run_dir, env)
        _check_exec_size(command + argv_t, env, script.relative)
        return PreparedRun(
            skill_name=metadata.name,
            script_rel=script.relative,
            script=script,
            interpreter=spec,
            command=command + argv_t,
            payload=payload,
            env=env,
            cwd=run_dir,
            timeout=limit,
            label_preview=None,
            argv=argv_t,
        )

    def _isolate(
        self, prepared: PreparedRun, mode: str | None, metadata: SkillMetadata
    ) -> PreparedRun:
        """Add the sandbox profile and the declared secrets' names (docs/architecture.md,
        *Sandbox and secrets*); a profile that cannot be had raises (the caller audits)."""
        # The skill's folder, not the cwd: a run may start in the workspace (run/workdir.py).
        skill_dir = prepared.script.real_base if prepared.script is not None else prepared.cwd
        profile = sandboxing.profile_for(
            self.sandbox.mode if mode is None else mode,
            self.sandbox,
            prepared.skill_name,
            skill_dir=os.fspath(skill_dir),
            cwd=os.fspath(prepared.cwd),
            program=prepared.program,
            env=prepared.env,
        )
        if profile is not None and profile.note and sandboxing.note_once(profile.note):
            logger.warning("Sandbox auto: %s", profile.note)
        names = declared_secrets(metadata)
        if profile is None and not names:
            return prepared
        return replace(prepared, sandbox=profile, secrets=names)

    def prepare_command(
        self,
        argv: Sequence[Any],
        *,
        skill_base_dir: str | os.PathLike[str],
        skill_metadata: SkillMetadata,
        label: str,
        timeout: float | None = None,
        stdin: bytes | None = None,
        arguments_preview: str = "",
        sandbox: str | None = None,
    ) -> PreparedRun:
        """Prepare a command that is not a script file (e.g. the skill's venv ``python -c``).

        Same run as a script gets (own process group, timeout kill, capped capture, minimal env
        with SKILL_* vars, cwd = the skill dir, audit under ``label``), but the caller vouches
        for the program: no script path, interpreter or allowed-tools checks. ``argv[0]`` must
        be an absolute path to an executable. Refusals raise and are audited.

        Example:
            >>> executor.prepare_command([venv_python, "-c", code], skill_base_dir=base,
            ...                          skill_metadata=meta, label="<python -c>")
        """
        started = time.monotonic()
        try:
            limit = self.timeout if timeout is None else check_timeout(timeout)
            paths.check_skill_name(
                skill_metadata.name, os.path.basename(os.path.abspath(skill_base_dir))
            )
            command = normalize_argv(argv)
            if not command or not os.path.isabs(command[0]):
                raise InterpreterNotFoundError(
                    f"Command for {label} must start with an absolute program path, got "
                    f"{command[:1]!r}: pass e.g. [sys.executable, '-c', code]"
                )
            if not (os.path.isfile(command[0]) and os.access(command[0], os.X_OK)):
                raise InterpreterNotFoundError(
                    f"Program {command[0]} for {label} is missing or not executable: "
                    "recreate the skill's venv or pass another interpreter"
                )
            real_base = paths.real_base_dir(skill_base_dir)
        except (SkillMagicsError, ValueError) as exc:
            self.audit.refused(
                skill_metadata.name, label, arguments_preview, exc, duration_ms=_ms_since(started)
            )
            raise
        prepared = PreparedRun(
            skill_name=skill_metadata.name,
            script_rel=Path(label),
            script=None,
            interpreter=InterpreterSpec("command", os.path.basename(command[0]), command[:1]),
            command=command,
            payload=stdin,
            env=self._env(skill_metadata, os.path.abspath(skill_base_dir)),
            cwd=real_base,
            timeout=limit,
            label_preview=arguments_preview,
            argv=command[1:],
        )
        try:
            return self._isolate(prepared, sandbox, skill_metadata)
        except (SkillMagicsError, ValueError) as exc:
            self.audit.refused(
                skill_metadata.name, label, arguments_preview, exc, duration_ms=_ms_since(started)
            )
            raise

    def command_for(
        self, script_path: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str]
    ) -> tuple[str, ...]:
        """The command (program, its flags, the script's real path) a script would run with.

        For showing in an approval request. Runs the same checks as prepare() but audits
        nothing (raises the same errors); prepare() must still be called to run it.
        """
        return self._plan(script_path, skill_base_dir).command

    def _plan(
        self, script_path: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str]
    ) -> _Plan:
        """Path checks + interpreter for a script, reused while nothing relevant changed.

        A cached plan is used only after re-resolving the script's real path and finding the
        same file (device, inode, mtime, size), no setuid/setgid bits, the same skill dir
        mtime (a new venv/ changes it), the same PATH and allow-list, and the interpreter
        still executable. Everything else is decided afresh, so the cache only saves time
        (~50 us of a ~1.4 ms spawn).
        """
        if not self.use_cache:
            return self._make_plan(script_path, skill_base_dir)
        base_abs = os.path.abspath(skill_base_dir)
        shown = os.fspath(script_path)
        key = (base_abs, shown, os.environ.get("PATH", ""), self.allowed_interpreters)
        plan = self._plans.get(key)
        if (
            plan is not None
            and paths.unchanged(plan.script, os.path.join(base_abs, shown), plan.base_mtime_ns)
            and os.access(plan.command[0], os.X_OK)  # the interpreter was not uninstalled
            # A managed env built (or removed) since changes which Python runs .py scripts.
            and (plan.spec.script_type != "python" or plan.command[0] == self._python(base_abs))
        ):
            return plan
        plan = self._make_plan(script_path, skill_base_dir)
        with self._cache_lock:
            if len(self._plans) > 1024:
                self._plans.clear()
            self._plans[key] = plan
        return plan

    def _make_plan(
        self, script_path: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str]
    ) -> _Plan:
        script = paths.resolve_script(script_path, skill_base_dir)
        base_mtime_ns = os.stat(script.real_base).st_mtime_ns
        spec = interpreters.interpreter_for(script.real)
        if spec is None:
            raise InterpreterNotFoundError(
                f"No interpreter known for {script.relative}: give it an extension "
                "(.py .sh .js .rb .pl) or a first line such as '#!/usr/bin/env python3'"
            )
        name = interpreters.canonical(spec.interpreter)
        if name not in self.allowed_interpreters:
            allowed = ", ".join(sorted(self.allowed_interpreters)) or "none"
            raise InterpreterNotAllowedError(
                f"Interpreter '{name}' is not allowed for {script.relative} (allowed: {allowed}): "
                f"add '{name}' to allowed_interpreters to run it"
            )
        program = self._program(spec, script.real_base, script.relative, name)
        command = (program, *spec.argv[1:], str(script.real))
        return _Plan(script, spec, command, base_mtime_ns)

    @staticmethod
    def _check_tools(metadata: SkillMetadata) -> None:
        tools = metadata.allowed_tools
        if not tools:  # None or empty: the skill declares no restriction
            return
        # Case-sensitive, as the spec writes tool names: "Bash" or a scoped "Bash(git:*)".
        if any(t == "Bash" or t.startswith("Bash(") for t in tools):
            return
        raise ToolRestrictionError(
            f"Tool 'Bash' not allowed for skill '{metadata.name}' (allowed-tools: "
            f"{' '.join(tools)}), so its scripts may not run: add Bash to allowed-tools in its "
            "SKILL.md if it should run scripts"
        )

    def _program(self, spec: InterpreterSpec, base: Path, rel: Path, name: str) -> str:
        """Absolute path of the program that runs the script."""
        if spec.script_type == "python":
            # The skill's own venv, its managed env, else the kernel's Python; never whichever
            # python3 is on PATH (core/envdirs.py).
            return self._python(base)
        # An absolute shebang (#!/bin/bash, #!/any/dir/bash) names the program only by its
        # basename: what runs is the allow-listed program of that name found on PATH, with
        # the shebang's flags. Running the path as written would let a skill ship its own
        # "bash" past the allow-list (which compares names). The approval shows the path.
        wanted = os.path.basename(spec.argv[0])
        found = self._which(wanted)
        if found is None:
            hint = _INSTALL_HINTS.get(name, f"install {name}")
            raise InterpreterNotFoundError(
                f"Interpreter '{wanted}' not found in PATH for {rel}: "
                f"{hint} or remove '{name}' from allowed_interpreters"
            )
        # PATH may lead into the skill (a relative entry, an activated node_modules/.bin): a
        # program found there is one the skill ships, which the allow-list must not admit.
        if paths.inside(os.path.realpath(found), base):
            raise InterpreterNotFoundError(
                f"Interpreter '{wanted}' for {rel} resolves to {found}, inside the skill: "
                f"install '{wanted}' outside the skill and take that directory off PATH"
            )
        return found

    @staticmethod
    def _python(base: str | os.PathLike[str]) -> str:
        return envdirs.choose_python(base)[0]

    def _which(self, program: str) -> str | None:
        path_var = os.environ.get("PATH", os.defpath)
        if not self.use_cache:
            return shutil.which(program, path=path_var)
        key = (program, path_var)  # PATH changes (a new venv activated) miss the cache
        with self._cache_lock:
            hit = self._which_cache.get(key)
        if hit is not None and os.access(hit, os.X_OK):
            return hit
        found = shutil.which(program, path=path_var)
        if found is not None:  # misses are not cached: installing node later just works
            with self._cache_lock:
                self._which_cache[key] = found
        return found

    def _env(self, metadata: SkillMetadata, base_dir: str | os.PathLike[str]) -> dict[str, str]:
        """The child's environment, read from os.environ now (it may change between runs)."""
        source = os.environ
        if self.inherit_env:
            env = dict(source)
        else:
            env = _base_env()
            names = None
            for pattern in self.env_passthrough:
                if any(ch in pattern for ch in "*?["):
                    names = list(source) if names is None else names
                    env.update((k, source[k]) for k in names if fnmatchcase(k, pattern))
                elif pattern in source:
                    env[pattern] = source[pattern]
        env.update(
            SKILL_NAME=metadata.name,
            SKILL_BASE_DIR=os.fspath(base_dir),
            SKILL_WORKSPACE=workdir.workspace(),  # the caller's folder, whatever the cwd
            SKILL_VERSION=metadata.version or "",
            SKILLKIT_VERSION=_VERSION,
            SKILL_MAGICS_VERSION=_VERSION,
            # Our runs write no bytecode, so a .pyc that appears in the skill's __pycache__/
            # after an approved run is that run's doing, and lapses the approval (discovery).
            # Not PYTHONPYCACHEPREFIX: it also moves the stdlib's and site-packages' bytecode,
            # so every import would compile from source (import pandas: 0.48 s -> 2.06 s).
            PYTHONDONTWRITEBYTECODE="1",
        )
        return env

    # -- running -----------------------------------------------------------------------------

    def run(
        self,
        prepared: PreparedRun,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
    ) -> ScriptExecutionResult:
        """Spawn and wait; returns the result (timeouts and signals are results, not errors).

        ``on_output(stream, text)`` gets decoded chunks of the kept output as they arrive, in
        this thread: keep it cheap. Setting ``cancel`` stops the whole process group.
        KeyboardInterrupt kills the group, is audited as "interrupted" and re-raised.
        """
        return self._run(prepared, on_output, cancel, recheck=True)

    def _run(
        self,
        prepared: PreparedRun,
        on_output: OnOutput | None,
        cancel: threading.Event | None,
        *,
        recheck: bool,
    ) -> ScriptExecutionResult:
        audit_base = (
            prepared.skill_name,
            prepared.script_rel.as_posix(),
            prepared.arguments_preview,
        )
        if recheck and prepared.script is not None:
            started = time.monotonic()
            try:
                paths.recheck(prepared.script)  # the file may have changed during approval
            except SkillMagicsError as exc:
                self.audit.refused(*audit_base, exc, duration_ms=_ms_since(started))
                raise
        finish = self._run_hook(prepared)
        try:
            return self._spawn_and_wait(prepared, on_output, cancel, audit_base)
        finally:
            if finish is not None:
                try:
                    finish()
                except Exception:  # noqa: BLE001 - bookkeeping must not replace the result
                    logger.warning("on_run finisher failed", exc_info=True)

    def _run_hook(self, prepared: PreparedRun) -> Callable[[], object] | None:
        if self.on_run is None:
            return None
        try:
            return self.on_run(prepared)
        except Exception:  # noqa: BLE001
            logger.warning("on_run hook failed", exc_info=True)
            return None

    def _spawn_and_wait(
        self,
        prepared: PreparedRun,
        on_output: OnOutput | None,
        cancel: threading.Event | None,
        audit_base: tuple[str, str, str],
    ) -> ScriptExecutionResult:
        start = time.monotonic()
        try:
            command, env, boxed = self._isolated_command(prepared)
        except SkillMagicsError as exc:  # a secret is missing, bwrap vanished: nothing started
            self.audit.refused(*audit_base, exc, duration_ms=_ms_since(start))
            raise
        shown = None if boxed is None else boxed.record
        # No secret value leaves a run, wherever a script printed it: both streams are
        # redacted as they are read, before the output cap and before on_output sees them.
        masks = self.secrets.masks() if len(self.secrets) else None
        try:
            outcome = run_process(
                command,
                cwd=prepared.cwd,
                env=env,  # Popen only reads it
                payload=prepared.payload,
                timeout=prepared.timeout,
                max_output_size=self.max_output_size,
                on_output=on_output,
                cancel=cancel,
                masks=masks,
                # A sandboxed run's PID namespace takes its daemons with it already.
                orphans=boxed is None or boxed.command is None,
            )
        except SpawnError as exc:
            # Found but not startable (permissions, bad interpreter binary): a failed run, shown
            # the way a shell shows it (126), not a crash.
            return self._spawn_failed(prepared, exc, time.monotonic() - start)
        except BaseException as exc:
            self.audit.event(
                *audit_base,
                AuditOutcome.INTERRUPTED,
                reason=f"{type(exc).__name__}: the process group was killed",
                duration_ms=(time.monotonic() - start) * 1000,
                sandbox=shown,
            )
            raise
        return self._finish(prepared, outcome, boxed=boxed)

    def _isolated_command(
        self, prepared: PreparedRun
    ) -> tuple[tuple[str, ...], Mapping[str, str], _Boxed | None]:
        """What to spawn: the command (in bwrap when sandboxed) and its environment with the
        skill's own secrets (only the declaring skill's runs get them)."""
        env: Mapping[str, str] = prepared.env
        if prepared.secrets:
            env = {**env, **self.secrets.require(prepared.skill_name, prepared.secrets)}
        profile = prepared.sandbox
        if profile is None or not profile.active:
            return prepared.command, env, (None if profile is None else _Boxed(profile, None))
        # A network grant given after the plan (the approval panel) counts for this run.
        network = profile.network or self.sandbox.has_network(prepared.skill_name)
        wrapped = sandboxing.wrap(
            profile, prepared.command, env, os.fspath(prepared.cwd), network=network
        )
        return wrapped.argv, wrapped.env, _Boxed(profile, wrapped)

    def _spawn_failed(
        self, prepared: PreparedRun, exc: OSError, seconds: float
    ) -> ScriptExecutionResult:
        message = (
            f"Could not start {prepared.script_rel} with {prepared.program}: {exc.strerror or exc}."
            " Check that the interpreter is executable"
        )
        self.audit.event(
            prepared.skill_name,
            prepared.script_rel.as_posix(),
            prepared.arguments_preview,
            AuditOutcome.FAILED,
            exit_code=126,
            reason=message,
            duration_ms=seconds * 1000,
        )
        return ScriptExecutionResult(
            stdout="",
            stderr=message + "\n",
            exit_code=126,
            execution_time_ms=max(seconds * 1000, 1e-3),
            script_path=prepared.script_rel,
        )

    def _finish(
        self,
        prepared: PreparedRun,
        out: ProcessOutcome,
        *,
        boxed: _Boxed | None = None,
    ) -> ScriptExecutionResult:
        rel = prepared.script_rel.as_posix()
        stdout, stderr = out.stdout.text, out.stderr.text  # redacted as read (run_process)
        exit_code = out.returncode
        sandboxed = boxed is not None and boxed.command is not None
        if sandboxed and not out.timed_out and not out.cancelled:
            exit_code = _unwrap_bwrap_status(exit_code)
        sig_name: str | None = None
        sig_num: int | None = None
        reason: str | None = None
        if out.timed_out:
            exit_code, outcome = TIMEOUT_EXIT_CODE, AuditOutcome.TIMEOUT
            reason = (
                f"Timeout: {rel} exceeded {_fmt_seconds(prepared.timeout)} and was stopped; "
                "raise timeout= if it needs longer"
            )
            stderr = _append_line(stderr, reason)
            logger.warning(
                "Skill %s: %s", prepared.skill_name, reason, extra={"skill": prepared.skill_name}
            )
        elif out.cancelled:
            sig_num = int(signal.SIGTERM)
            exit_code, sig_name, outcome = -sig_num, "SIGTERM", AuditOutcome.INTERRUPTED
            reason = (
                f"Stopped: {rel} was stopped on request after {out.duration_s:.1f} s "
                "(the whole process group was killed)"
            )
            stderr = _append_line(stderr, reason)
            logger.warning("Skill %s: %s", prepared.skill_name, reason)
        elif exit_code < 0:
            sig_num = -exit_code
            sig_name = _signal_name(sig_num)
            outcome = AuditOutcome.SIGNALED
            reason = f"Signal: {sig_name}"
            stderr = _append_line(stderr, f"Signal: {sig_name} (killed by signal {sig_num})")
            logger.error(
                "Skill %s: script %s was killed by %s (signal %d) after %.1f ms",
                prepared.skill_name,
                rel,
                sig_name,
                sig_num,
                out.duration_s * 1000,
            )
        else:
            outcome = AuditOutcome.COMPLETED if exit_code == 0 else AuditOutcome.FAILED
        for capture in (out.stdout, out.stderr):
            if capture.truncated:
                logger.warning(
                    "Skill %s: %s of %s was %s bytes, kept the first %s (max_output_size)",
                    prepared.skill_name,
                    capture.name,
                    rel,
                    f"{capture.total_bytes:,}",
                    f"{self.max_output_size:,}",
                )
        duration_ms = max(out.duration_s * 1000, 1e-3)
        shown = None if boxed is None else boxed.record
        self.audit.event(
            prepared.skill_name,
            rel,
            prepared.arguments_preview,
            outcome,
            exit_code=exit_code,
            reason=reason,
            duration_ms=duration_ms,
            sandbox=shown,
        )
        return ScriptExecutionResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=exit_code,
            execution_time_ms=duration_ms,
            script_path=prepared.script_rel,
            signal=sig_name,
            signal_number=sig_num,
            timeout=out.timed_out,
            stdout_truncated=out.stdout.truncated,
            stderr_truncated=out.stderr.truncated,
            stdout_bytes=out.stdout.total_bytes,
            stderr_bytes=out.stderr.total_bytes,
            sandbox=shown,
        )

    async def run_async(
        self,
        prepared: PreparedRun,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        poll: float = 0.25,
    ) -> ScriptExecutionResult:
        """Await a run (top-level ``await`` in a notebook cell).

        The blocking loop runs in a worker thread; this coroutine wakes every ``poll`` seconds
        so a kernel interrupt can arrive. Setting ``cancel`` (a Stop button) stops the group
        and returns the result, as run() does. Asyncio cancellation (or KeyboardInterrupt)
        stops the group, waits for the worker to finish killing it, then re-raises.
        ``on_output`` is called in the worker thread.
        """
        if cancel is None:
            cancel = threading.Event()
        return await await_in_thread(
            lambda: self.run(prepared, on_output=on_output, cancel=cancel), cancel, poll=poll
        )

    def execute(
        self,
        script_path: str | os.PathLike[str],
        arguments: Any,
        skill_base_dir: str | os.PathLike[str],
        skill_metadata: SkillMetadata,
        timeout: float | None = None,
        *,
        argv: Sequence[Any] | None = None,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        sandbox: str | None = None,
        cwd: workdir.CwdArg | None = None,
        module: str | None = None,
    ) -> ScriptExecutionResult:
        """``run(prepare(...))``: check, spawn, wait, audit."""
        prepared = self.prepare(
            script_path,
            arguments,
            skill_base_dir,
            skill_metadata,
            argv=argv,
            timeout=timeout,
            sandbox=sandbox,
            cwd=cwd,
            module=module,
        )
        # Checked microseconds ago: no approval wait in between, so no re-check needed.
        return self._run(prepared, on_output, cancel, recheck=False)


def _module_command(
    command: tuple[str, ...],
    module: str,
    script: paths.ResolvedScript,
    run_dir: Path,
    env: dict[str, str],
) -> tuple[str, ...]:
    """``python [flags] -m module`` for a script the planner marked as a module script.

    The module must name the checked script's own path, so ``-m`` runs the approved file.
    From another folder than the skill, ``-P`` keeps the cwd off sys.path and PYTHONPATH
    puts the skill root there instead (core/run/workdir.py).
    """
    rel = script.relative.as_posix()
    expected = rel[:-3].replace("/", ".") if rel.endswith(".py") else ""
    if expected.endswith(".__main__"):
        expected = expected[: -len(".__main__")]
    if module != expected:
        raise InterpreterNotFoundError(
            f"Module {module!r} does not name {rel}: run it as a file (module='') or pass "
            f"module={expected!r}"
        )
    program, flags = command[0], command[1:-1]  # drop the script path: -m names it
    if run_dir == script.real_base:
        return (program, *flags, "-m", module)
    version = envdirs.python_version(program)
    if version is None or version < (3, 11):
        raise InterpreterNotFoundError(
            f"{rel} runs as 'python -m {module}', which from another folder than the skill "
            f"needs Python 3.11+ (-P), but {program} is "
            f"{'of unknown version' if version is None else f'{version[0]}.{version[1]}'}: "
            "run it with cwd='skill'"
        )
    root = os.fspath(script.real_base)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return (program, *flags, "-P", "-m", module)


def _shown_path(script_path: Any, skill_base_dir: Any) -> str:
    """The script as audit records name it: relative to the skill when it is inside it."""
    if not isinstance(script_path, (str, os.PathLike)):
        return "?"
    shown = os.fspath(script_path)
    try:
        if os.path.isabs(shown) and "\0" not in shown:
            base = os.path.abspath(skill_base_dir)
            normal = os.path.normpath(shown)
            if normal.startswith(base.rstrip(os.sep) + os.sep):
                return Path(os.path.relpath(normal, base)).as_posix()
    except (TypeError, ValueError):
        pass
    return shown


# Linux refuses any single argv/env string longer than MAX_ARG_STRLEN (32 pages), and the
# whole argv + env beyond ARG_MAX (minus what the loader needs): execve fails with E2BIG.
_MAX_ARG_STRLEN = 32 * 4096 if sys.platform.startswith("linux") else None
_ARG_MARGIN = 16 * 1024


_ARG_MAX: list[int] = []  # looked up once (sysconf costs a system call per run otherwise)


def _arg_max() -> int:
    if _ARG_MAX:
        return _ARG_MAX[0]
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (AttributeError, ValueError, OSError):
        value = -1
    if value <= 0:
        value = 32_767 if _WINDOWS else 256 * 1024  # Windows' command line; POSIX floor
    _ARG_MAX.append(value)
    return value


def _check_exec_size(command: Sequence[str], env: Mapping[str, str], rel: Path) -> None:
    """Refuse, before spawning, a command line the kernel would reject (E2BIG)."""
    # Fast path (every ordinary run): UTF-8 needs at most 4 bytes per character, so when
    # even that bound fits both limits, nothing needs encoding (~1 us instead of ~8 us).
    chars = sum(map(len, command)) + sum(map(len, env)) + sum(map(len, env.values()))
    bound = 4 * chars + 16 * (len(command) + len(env))
    if bound <= min(_arg_max() - _ARG_MARGIN, _MAX_ARG_STRLEN or bound):
        return
    pointer = 8  # each string costs a pointer in argv[]/envp[] too
    total = 0
    longest = 0
    for item in command:
        size = len(os.fsencode(item)) + 1
        longest = max(longest, size)
        total += size + pointer
    for key, value in env.items():
        size = len(os.fsencode(key)) + len(os.fsencode(value)) + 2
        longest = max(longest, size)
        total += size + pointer
    limit = _arg_max() - _ARG_MARGIN
    if total > limit or (_MAX_ARG_STRLEN is not None and longest > _MAX_ARG_STRLEN):
        what = (
            f"one argument is {longest:,} bytes (limit {_MAX_ARG_STRLEN:,})"
            if _MAX_ARG_STRLEN is not None and longest > _MAX_ARG_STRLEN
            else f"argv and environment total {total:,} bytes (limit about {limit:,})"
        )
        raise ArgumentSizeError(
            f"Command line for {rel} is too large for the operating system: {what}: pass "
            "big data as JSON arguments on stdin (arguments=...) instead of argv"
        )


def _ms_since(started: float) -> float:
    """Milliseconds since ``started`` (time.monotonic()), never 0: every attempt took time."""
    return max((time.monotonic() - started) * 1000, 1e-3)


def _append_line(text: str, line: str) -> str:
    if text and not text.endswith("\n"):
        text += "\n"
    return text + line + "\n"


def _unwrap_bwrap_status(code: int) -> int:
    """bwrap reports a child killed by signal N as exit 128+N; give it back as -N, the way
    unsandboxed runs report a signal (a script that itself exits 128+N reads the same: the
    shell convention, docs/architecture.md, *Sandbox and secrets*)."""
    if 128 < code < 128 + 65:
        try:
            signal.Signals(code - 128)
        except ValueError:
            return code
        return -(code - 128)
    return code


def _signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"SIG{signum}"


__all__ = [
    "ScriptExecutor",
    "PreparedRun",
    "BASE_ENV",
]
