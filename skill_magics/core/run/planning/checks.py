"""The checks a run must pass before anything starts, and what they give: a PreparedRun.

Step 1 of the pipeline (docs/architecture.md) runs these for every run, through the planner
(plan.py): the script's path (inside the skill, no setuid, not swapped), the interpreter
(known, allowed, found outside the skill; ``.py`` runs with the skill's venv, its managed
environment or the kernel's Python), ``allowed-tools``, a ``python -m`` module name, the JSON
arguments and argv and their size, the time limit, the working directory and the sandbox
profile. A refusal raises one line naming the fix, and is audited. What passes is a
:class:`PreparedRun`: the exact command, environment, cwd, stdin and limits, which the
executor (executor.py) only launches.

Example:
    >>> skill = manager.get_skill("csv-profiler")
    >>> prepared = RunChecks().script(RunSettings(), "scripts/profile.py", {"csv": "a,b\\n1,2\\n"},
    ...                               Path("skills/csv-profiler"), skill.metadata)
    >>> prepared.command  # the kernel's Python (no venv/ in the skill)
    ('/.../python...', '/.../csv-profiler/scripts/profile.py')

The program: ``.py`` runs with the skill's venv Python or the kernel's; anything else with
the allow-listed interpreter of that name found on PATH. An absolute shebang
(``#!/opt/x/bin/bash -e``) only names the interpreter: ``bash`` from PATH runs, with the
shebang's flags, never the path as written (the allow-list compares names, so a skill could
otherwise ship its own "bash"). The approval request shows the exact command.
"""

from __future__ import annotations

import copy
import logging
import os
import shutil
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from skill_magics.core.base import envdirs, interpreters, paths
from skill_magics.core.base.audit import AuditLog, arguments_preview
from skill_magics.core.base.errors import (
    CommandError,
    InterpreterNotAllowedError,
    InterpreterNotFoundError,
    ModuleScriptError,
    PathSecurityError,
    SkillMagicsError,
    ToolRestrictionError,
    UnknownScriptTypeError,
)
from skill_magics.core.base.interpreters import InterpreterSpec
from skill_magics.core.base.models import SkillMetadata
from skill_magics.core.base.secrets import declared_secrets
from skill_magics.core.catalog import kinds
from skill_magics.core.policy import runs as policy_runs
from skill_magics.core.run.launching import sandbox as sandboxing
from skill_magics.core.run.launching.grants import NetworkGrants
from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.launching.sandbox_profiles import ranks
from skill_magics.core.run.planning import workdir
from skill_magics.core.run.planning.childenv import BASE_ENV, check_exec_size, child_env
from skill_magics.core.run.planning.payload import encode_arguments, normalize_argv
from skill_magics.core.run.planning.settings import (
    RunOverrides,
    RunSettings,
)

logger = logging.getLogger("skill_magics.checks")

_WINDOWS = sys.platform == "win32"


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


@dataclass(frozen=True)
class _Resolved:
    """What the path and interpreter checks decided about a script file (RunChecks._resolve)."""

    script: paths.ResolvedScript
    spec: InterpreterSpec
    command: tuple[str, ...]  # interpreter, its flags, the script's real path
    candidate: str  # the path as given, joined to the skill dir and normalised
    rel: str  # the script relative to the skill, with "/" (``script.relative``)
    # The skill dir's mtime when a new venv/ there changes the program (Python scripts);
    # None: nothing in the skill dir but the script itself decides the answer.
    base_mtime_ns: int | None


class RunChecks:
    """Checks runs and builds their PreparedRun (see the module docstring).

    Every method takes the :class:`RunSettings` to check against, read by the caller for
    this run. Refusals are audited in ``audit``. ``grants``: network given during the session
    (``NetworkGrants``), on top of ``settings.sandbox_network``. Thread-safe: runs share only
    the interpreter lookup and resolution caches, both locked; ``use_cache=False`` decides
    everything afresh (the caches only save time, never change an answer).
    """

    def __init__(
        self,
        audit: AuditLog | None = None,
        *,
        grants: NetworkGrants | None = None,
        use_cache: bool = True,
        ship: policy_runs.Shipped | None = None,
    ) -> None:
        self.audit = audit if audit is not None else AuditLog()
        self.grants = grants if grants is not None else NetworkGrants()
        self.use_cache = use_cache
        # The team policy a shipped batch item carries (None: the one in force here).
        self.ship = ship
        self._which_cache: dict[tuple[str, str], str] = {}
        self._resolved: dict[tuple, _Resolved] = {}
        self._cache_lock = threading.Lock()

    def with_audit(self, audit: AuditLog) -> RunChecks:
        """The same checks (sharing the caches) auditing into ``audit`` (a batch's log)."""
        clone = copy.copy(self)
        clone.audit = audit
        return clone

    # -- a script file -----------------------------------------------------------------------

    def settings_for(
        self,
        settings: RunSettings,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        argv: Sequence[Any] | None = None,
        overrides: RunOverrides | None = None,
        **keywords: Any,
    ) -> RunSettings:
        """``settings.for_run(overrides)`` (or its keywords), the settings of one run; a bad
        override is refused as any check refuses (audited, naming the script), before
        anything else."""
        try:
            return settings.for_run(overrides, **keywords)
        except (SkillMagicsError, ValueError) as exc:
            self.audit.refused(
                skill_name, os.fspath(script), arguments_preview(arguments, argv), exc
            )
            raise

    def script(
        self,
        settings: RunSettings,
        script_path: str | os.PathLike[str],
        arguments: Any,
        skill_base_dir: str | os.PathLike[str],
        skill_metadata: SkillMetadata,
        *,
        argv: Sequence[Any] | None = None,
        module: str | None = None,
    ) -> PreparedRun:
        """Check everything and build the command; raises (and audits) on any refusal.

        ``arguments`` go to stdin as JSON. With ``argv`` and ``arguments=None`` stdin is
        empty; with neither, stdin gets ``{}`` so JSON-reading scripts still parse it.
        ``settings`` are this run's (``RunSettings.for_run``: its time limit, sandbox, cwd
        and how it starts); a sandbox mode that cannot be had here is refused. ``module``:
        run the script as
        ``python -m module`` (``ScriptMetadata.module``; it must name the script's own path,
        e.g. "scripts.run_eval" for scripts/run_eval.py); "" runs it as a file; None (a
        direct call) decides from the script's own imports, as the skill finder does
        (``kinds.module_for``): one importing the skill's modules from the skill root runs as
        a module.
        """
        started = time.monotonic()
        try:
            prepared = self._script(
                settings,
                script_path,
                arguments,
                skill_base_dir,
                skill_metadata,
                argv,
                module,
            )
            return self._isolate(settings, prepared, skill_metadata)
        except Exception as exc:  # noqa: BLE001 - whatever refused the run, audit it
            self.audit.refused(
                getattr(skill_metadata, "name", "?"),
                _shown_path(script_path, skill_base_dir),
                arguments_preview(arguments, argv),
                exc,
                duration_ms=_ms_since(started),
            )
            raise

    def _script(
        self,
        settings: RunSettings,
        script_path: str | os.PathLike[str],
        arguments: Any,
        skill_base_dir: str | os.PathLike[str],
        metadata: SkillMetadata,
        argv: Sequence[Any] | None,
        module: str | None,
    ) -> PreparedRun:
        cwd = settings.run_cwd
        base_abs = _abspath(skill_base_dir)
        # A name that is not one folder name never runs (docs/architecture.md, *Real skills*).
        paths.check_skill_name(metadata.name, folder_of=base_abs)
        if metadata.allowed_tools:  # None or empty: the skill declares no restriction
            _check_tools(metadata)
        resolved = self._resolve(settings, script_path, skill_base_dir, base_abs)
        script, spec, command = resolved.script, resolved.spec, resolved.command
        run_dir = (
            script.real_base
            if cwd is None or cwd == workdir.SKILL
            else workdir.resolve_cwd(cwd, script.real_base)
        )
        argv_t = normalize_argv(argv) if argv is not None else ()
        if arguments is None and argv is not None:
            payload = None  # argv mode: the script reads nothing on stdin
        else:
            payload = encode_arguments({} if arguments is None else arguments)
        env = child_env(settings, metadata, base_abs)
        if module is None:  # (only a .py file can be a module: no call for the others)
            rel = resolved.rel
            module = kinds.module_for(script.real_base, rel) if rel.endswith(".py") else ""
        if module:
            command = _module_command(command, module, script, run_dir, env)
        check_exec_size(command + argv_t, env, script.relative)
        return PreparedRun.of_fields(
            {
                "skill_name": metadata.name,
                "script_rel": script.relative,
                "script": script,
                "interpreter": spec,
                "command": command + argv_t,
                "payload": payload,
                "env": env,
                "cwd": run_dir,
                "timeout": settings.timeout,
                "label_preview": None,
                "argv": argv_t,
                "sandbox_profile": None,
                "secrets": (),
                "max_output_size": settings.max_output_size,
                "warm_start": settings.warm_start,
                "warm_idle": settings.warm_idle_timeout,
            }
        )

    def _isolate(
        self,
        settings: RunSettings,
        prepared: PreparedRun,
        metadata: SkillMetadata,
    ) -> PreparedRun:
        """Add the sandbox profile and the declared secrets' names (docs/architecture.md,
        *Sandbox and secrets*); a profile that cannot be had raises (the caller audits)."""
        # The skill's folder, not the cwd: a run may start in the workspace (workdir.py).
        skill_dir = prepared.script.real_base if prepared.script is not None else prepared.cwd
        skill = prepared.skill_name
        # The mode was checked when the settings were made; its profile decides (None: off).
        profile = sandboxing.profile_for(
            settings.sandbox or sandboxing.OFF,
            skill,
            skill_dir=os.fspath(skill_dir),
            network=settings.allows_network(skill) or self.grants.has(skill),
            deny_read=settings.sandbox_deny_read,
            read=settings.sandbox_read,
            cwd=os.fspath(prepared.cwd),
            program=prepared.program,
            env=prepared.env,
        )
        if profile is not None and profile.note and sandboxing.note_once(profile.note):
            logger.warning("Sandbox auto: %s", profile.note)
        # The team policy (docs/trust.md): whatever the settings asked, before any process.
        policy_runs.check_run(
            skill_dir,
            skill,
            profile.mode if profile is not None else sandboxing.OFF,
            bool(profile is not None and profile.network),
            ranks(),
            ship=self.ship,
        )
        names = declared_secrets(metadata)
        if profile is None and not names:
            return prepared
        return replace(prepared, sandbox_profile=profile, secrets=names)

    # -- a command that is not a script file -------------------------------------------------

    def command(
        self,
        settings: RunSettings,
        argv: Sequence[Any],
        *,
        skill_base_dir: str | os.PathLike[str],
        skill_metadata: SkillMetadata,
        label: str,
        stdin: bytes | None = None,
        arguments_preview: str = "",
    ) -> PreparedRun:
        """Check a command that is not a script file (e.g. the skill's venv ``python -c``).

        Same run as a script gets (own process group, timeout kill, capped capture, minimal env
        with SKILL_* vars, cwd = the skill dir, audit under ``label``), but the caller vouches
        for the program: no script path, interpreter or allowed-tools checks. ``argv[0]`` must
        be an absolute path to an executable. Refusals raise and are audited.

        Example (not run as a doctest: a shape, its values come from the caller)::

            checks.command(settings, [venv_python, "-c", code], skill_base_dir=base,
                           skill_metadata=meta, label="<python -c>")
        """
        started = time.monotonic()
        try:
            paths.check_skill_name(
                skill_metadata.name, os.path.basename(os.path.abspath(skill_base_dir))
            )
            command = normalize_argv(argv)
            if not command or not os.path.isabs(command[0]):
                raise CommandError(
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
            env=child_env(settings, skill_metadata, os.path.abspath(skill_base_dir)),
            cwd=real_base,
            timeout=settings.timeout,
            label_preview=arguments_preview,
            argv=command[1:],
            max_output_size=settings.max_output_size,
        )
        try:
            return self._isolate(settings, prepared, skill_metadata)
        except (SkillMagicsError, ValueError) as exc:
            self.audit.refused(
                skill_metadata.name, label, arguments_preview, exc, duration_ms=_ms_since(started)
            )
            raise

    def command_for(
        self,
        settings: RunSettings,
        script_path: str | os.PathLike[str],
        skill_base_dir: str | os.PathLike[str],
    ) -> tuple[str, ...]:
        """The command (program, its flags, the script's real path) a script would run with.

        For showing in an approval request. Runs the path and interpreter checks but audits
        nothing (raises the same errors); :meth:`script` must still be called to run it.
        """
        return self._resolve(settings, script_path, skill_base_dir).command

    # -- path and interpreter ----------------------------------------------------------------

    def _resolve(
        self,
        settings: RunSettings,
        script_path: str | os.PathLike[str],
        skill_base_dir: str | os.PathLike[str],
        base_abs: str = "",
    ) -> _Resolved:
        """Path checks + interpreter for a script, reused while nothing relevant changed.

        A cached answer is used only after one stat of the path as given finds the same file
        (device, inode, mtime, ctime, size), no setuid/setgid bits, for a Python script the
        same skill dir mtime (a new venv/ changes it), the same PATH and allow-list, and the
        interpreter still executable. Everything else is decided afresh, so the cache only
        saves time (~50 us of a ~1.4 ms spawn). Where the file now resolves (a folder swapped
        for a link) is left to the executor's re-check (paths.recheck), which precedes every
        spawn: a cached answer never launches a file that did not pass it.
        """
        if not self.use_cache:
            return self._resolve_now(settings, script_path, skill_base_dir)
        base_abs = base_abs or os.path.abspath(skill_base_dir)
        shown = os.fspath(script_path)
        data = _ENV_DATA if _ENV_DATA is getattr(os.environ, "_data", None) else None
        path_var = data.get(b"PATH", b"") if data is not None else os.environ.get("PATH", "")
        key = (base_abs, shown, path_var, settings.allowed)
        hit = self._resolved.get(key)
        if (
            hit is not None
            and paths.unchanged(hit.script, hit.candidate, hit.base_mtime_ns)
            and os.access(hit.command[0], os.X_OK)  # the interpreter was not uninstalled
            # A managed env built (or removed) since changes which Python runs .py scripts.
            and (hit.spec.script_type != "python" or hit.command[0] == _python(base_abs))
        ):
            return hit
        resolved = self._resolve_now(settings, script_path, skill_base_dir)
        with self._cache_lock:
            if len(self._resolved) > 1024:
                self._resolved.clear()
            self._resolved[key] = resolved
        return resolved

    def _resolve_now(
        self,
        settings: RunSettings,
        script_path: str | os.PathLike[str],
        skill_base_dir: str | os.PathLike[str],
    ) -> _Resolved:
        script = paths.resolve_script(script_path, skill_base_dir)
        base_mtime_ns = os.stat(script.real_base).st_mtime_ns
        spec = interpreters.interpreter_for(script.real)
        if spec is None:
            raise UnknownScriptTypeError(
                f"No interpreter known for {script.relative}: give it an extension "
                "(.py .sh .js .rb .pl) or a first line such as '#!/usr/bin/env python3'"
            )
        name = interpreters.canonical(spec.interpreter)
        if name not in settings.allowed:
            allowed = ", ".join(sorted(settings.allowed)) or "none"
            raise InterpreterNotAllowedError(
                f"Interpreter '{name}' is not allowed for {script.relative} (allowed: {allowed}): "
                f"add '{name}' to allowed_interpreters to run it"
            )
        program = self._program(spec, script.real_base, script.relative, name)
        command = (program, *spec.argv[1:], str(script.real))
        # Other programs come from PATH (part of the cache key) and the script's own first
        # line (its identity): the skill dir's mtime need not be read again for them.
        python = spec.script_type == "python"
        candidate = os.path.normpath(os.path.join(os.path.abspath(skill_base_dir), script_path))
        rel = script.relative.as_posix()
        return _Resolved(script, spec, command, candidate, rel, base_mtime_ns if python else None)

    def _program(self, spec: InterpreterSpec, base: Path, rel: Path, name: str) -> str:
        """Absolute path of the program that runs the script."""
        if spec.script_type == "python":
            # The skill's own venv, its managed env, else the kernel's Python; never whichever
            # python3 is on PATH (core/base/envdirs.py).
            return _python(base)
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
            raise PathSecurityError(
                f"Interpreter '{wanted}' for {rel} resolves to {found}, inside the skill: "
                f"install '{wanted}' outside the skill and take that directory off PATH"
            )
        return found

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


# os.environ's own bytes mapping (POSIX): $PATH for a cache key is read from it, without a
# decode or the Mapping machinery per run. Checked to still be os.environ's on every use.
_ENV_DATA = None if _WINDOWS else getattr(os.environ, "_data", None)

_ABS: dict[str, str] = {}  # absolute skill dirs as given -> normalised (a pure function)


def _abspath(path: str | os.PathLike[str]) -> str:
    """``os.path.abspath``, remembered for absolute paths (every run asks for its skill's)."""
    text = os.fspath(path)
    found = _ABS.get(text)
    if found is None:
        found = os.path.abspath(text)
        if os.path.isabs(text) and len(_ABS) < 1024:
            _ABS[text] = found
    return found


def _python(base: str | os.PathLike[str]) -> str:
    return envdirs.choose_python(base)[0]


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
    puts the skill root there instead (core/run/planning/workdir.py).
    """
    rel = script.relative.as_posix()
    expected = rel[:-3].replace("/", ".") if rel.endswith(".py") else ""
    if expected.endswith(".__main__"):
        expected = expected[: -len(".__main__")]
    if module != expected:
        raise ModuleScriptError(
            f"Module {module!r} does not name {rel}: run it as a file (module='') or pass "
            f"module={expected!r}"
        )
    program, flags = command[0], command[1:-1]  # drop the script path: -m names it
    if run_dir == script.real_base:
        return (program, *flags, "-m", module)
    # The kernel and managed envs are 3.11+ (requires-python); a venv the skill folder brings
    # may be older, and its python would stop at the unknown -P with a usage message.
    version = envdirs.python_version(program)
    if version is not None and version < (3, 11):
        raise ModuleScriptError(
            f"{rel} runs as 'python -m {module}', which from another folder than the skill "
            f"needs Python 3.11+ (-P), but {program} is {version[0]}.{version[1]}: "
            "run it with cwd='skill', or rebuild that venv with Python 3.11+"
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


def _ms_since(started: float) -> float:
    """Milliseconds since ``started`` (time.monotonic()), never 0: every attempt took time."""
    return max((time.monotonic() - started) * 1000, 1e-3)


__all__ = ["BASE_ENV", "PreparedRun", "RunChecks", "child_env"]
