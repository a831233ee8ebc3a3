"""ScriptExecutor: launch a checked run, capture its output, kill it, audit it.

The executor gets a :class:`~skill_magics.core.run.planning.checks.PreparedRun` (every check already
passed, core/run/planning/checks.py) and only launches it: ``run`` re-checks the script file (it may
have changed while approval waited), adds the declaring skill's secret values, lets
launchers/ choose how the process starts (cold, sandboxed in bwrap, or forked warm: a
``Launch`` whose ``spawn`` returns a process.Child running ``[interpreter, script, *argv]``,
never a shell, in its own process group with the prepared cwd and environment), then
``process.drive(child, limits)`` reads both pipes up to the prepared output cap, kills the
main process and everything it started on timeout, Stop or interrupt, masks secret values in
what comes back; the executor audits the attempt. When the script exits, whatever it left
running in its group is killed: a run owns its processes.

Callers reach it through the one call site, ``core/run/pipeline.py`` (``run_planned``), after
the gate allowed the run.

Example (not run as a doctest: it starts processes)::

    executor = ScriptExecutor(audit=audit, secrets=secrets, grants=grants)
    result = executor.run(prepared)
    result.exit_code, result.json()

``ScriptExecutor(timeout=60).execute(script, arguments, base_dir, metadata)`` is the
standalone form for code without a SkillManager: the checks, then ``run``.
"""

from __future__ import annotations

import copy
import logging
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from skill_magics.core import trace
from skill_magics.core.base import paths
from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.models import TIMEOUT_EXIT_CODE, ScriptExecutionResult, SkillMetadata
from skill_magics.core.base.secrets import Masks, SecretStore, known_masks
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.policy import runs as policy_runs
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.launching import launchers
from skill_magics.core.run.launching import sandbox as sandboxing
from skill_magics.core.run.launching.grants import NetworkGrants
from skill_magics.core.run.launching.launchers import Launch
from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.launching.process import Limits, ProcessOutcome, SpawnError
from skill_magics.core.run.launching.sandbox_profiles import ranks
from skill_magics.core.run.launching.warm.launch import WarmLauncher, WarmUnavailable
from skill_magics.core.run.planning import workdir
from skill_magics.core.run.planning.checks import BASE_ENV, RunChecks
from skill_magics.core.run.planning.settings import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_TIMEOUT,
    RunOverrides,
    RunSettings,
)
from skill_magics.core.trace import hooks as traced

logger = logging.getLogger("skill_magics.executor")

OnOutput = Callable[[str, str], object]


def _fmt_seconds(seconds: float) -> str:
    return f"{seconds:g} s"


class ScriptExecutor:
    """Launches checked runs: one process group per run, bounded capture, audit.

    Thread-safe: runs share nothing but the audit log, the secret values, the network grants
    and the warm servers, all locked. ``audit``, ``secrets`` (values added at spawn, masked
    in output) and ``grants`` (network given during the session) are the SkillManager's;
    ``preload(prepared)`` names the packages a run's warm server imports (core/run/launching/warm/).

    The positional arguments and ``settings`` (a RunSettings, or its fields as keywords:
    ``run_cwd="workspace"``, ``env_passthrough=[...]``) configure only the standalone
    :meth:`execute` (default cwd: the skill folder, no sandbox); ``run`` takes everything
    from the PreparedRun.

    Example (not run as a doctest: it starts processes)::

        ScriptExecutor(timeout=60).execute("scripts/ask.py", {"q": "hi"},
                                           Path("skills/llm"), metadata)
    """

    def __init__(
        self,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
        use_cache: bool = True,
        *,
        settings: RunSettings | None = None,
        audit: AuditLog | None = None,
        secrets: SecretStore | None = None,
        grants: NetworkGrants | None = None,
        preload: Callable[[PreparedRun], Sequence[str]] | None = None,
        ship: policy_runs.Shipped | None = None,
        **setting_values: Any,
    ) -> None:
        self.audit = audit if audit is not None else AuditLog()
        self.secrets = secrets if secrets is not None else SecretStore()
        self.grants = grants if grants is not None else NetworkGrants()
        # Warm start (core/run/launching/warm/): which packages a run's server preloads.
        self.warm_launcher = WarmLauncher(preload)
        if settings is None:
            values = {"run_cwd": workdir.SKILL, "sandbox": sandboxing.OFF, **setting_values}
            settings = RunSettings(timeout=timeout, max_output_size=max_output_size, **values)
        elif setting_values:
            raise TypeError("pass settings=RunSettings(...) or setting keywords, not both")
        self.settings = settings  # for execute() only
        # ``ship``: the team policy of a shipped batch's items (None: the one in force here).
        self.ship = ship
        self.checks = RunChecks(self.audit, grants=self.grants, use_cache=use_cache, ship=ship)

    def with_audit(self, audit: AuditLog) -> ScriptExecutor:
        """The same executor writing its records to ``audit`` (a batch's bounded log)."""
        clone = copy.copy(self)
        clone.audit = audit
        clone.checks = self.checks.with_audit(audit)
        return clone

    # -- running -----------------------------------------------------------------------------

    def run(
        self,
        prepared: PreparedRun,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
    ) -> ScriptExecutionResult:
        """Spawn and wait; returns the result (timeouts and signals are results, not errors).

        The script file is checked again first, always, even right after the checks (it may
        have changed while approval waited, or since the checks' cached answer: refused,
        audited), and so are the team policies in force now (docs/trust.md: one may have
        come into force, or changed, since the run was planned). ``on_output(stream, text)``
        gets decoded chunks of the kept output as they arrive, in this thread: keep it cheap.
        Setting ``cancel`` stops the whole process group. KeyboardInterrupt kills the group,
        is audited as "interrupted" and re-raised.
        """
        started = time.monotonic()
        try:
            if prepared.script is not None:
                paths.recheck(prepared.script)  # the file may have changed since its checks
            self._recheck_policy(prepared)
        except SkillMagicsError as exc:
            self.audit.refused(*_audit_base(prepared), exc, duration_ms=_ms_since(started))
            raise
        spawn = lambda: self._spawn_and_wait(prepared, on_output, cancel)  # noqa: E731
        return traced.script_run(prepared, spawn)

    def _spawn_and_wait(
        self,
        prepared: PreparedRun,
        on_output: OnOutput | None,
        cancel: threading.Event | None,
    ) -> ScriptExecutionResult:
        start = time.monotonic()
        try:
            env = trace.child_env(self._env(prepared) if prepared.secrets else prepared.env)
            network = self.network_for(prepared) if prepared.sandbox_profile is not None else True
            how = traced.launch(
                prepared,
                lambda: launchers.choose(prepared, env, network, cancel, self.warm_launcher),
            )
        except SkillMagicsError as exc:  # a secret is missing, bwrap vanished: nothing started
            self.audit.refused(*_audit_base(prepared), exc, duration_ms=_ms_since(start))
            raise
        # No secret value leaves a run, wherever a script printed it: both streams are
        # redacted as they are read, before the output cap and before on_output sees them.
        masks = self.secrets.masks() if len(self.secrets) else None
        draft: list[tuple[str, str, Masks]] = []

        def started() -> None:  # the record's texts, made while the script runs
            draft.append(_texts(prepared))

        limits = Limits(
            prepared.timeout, prepared.max_output_size, on_output, cancel, masks, started
        )
        try:
            try:
                child = how.spawn(prepared.payload)
            except WarmUnavailable as exc:  # the server went away: nothing ran, go cold
                how = launchers.cold(prepared, env, network, note=str(exc))
                child = how.spawn(prepared.payload)
            outcome = how.launcher.wait(child, limits)
        except SpawnError as exc:
            # Found but not startable (permissions, bad interpreter binary): a failed run, shown
            # the way a shell shows it (126), not a crash.
            return self._spawn_failed(prepared, exc, time.monotonic() - start, how)
        except BaseException as exc:
            self.audit.event(
                *_audit_base(prepared),
                AuditOutcome.INTERRUPTED,
                reason=f"{type(exc).__name__}: the process group was killed",
                duration_ms=(time.monotonic() - start) * 1000,
                sandbox=how.sandbox,
                start=how.name,
                start_note=how.note,
            )
            raise
        texts = draft[0] if draft else None
        return self._finish(prepared, outcome, how, texts=texts)

    def _recheck_policy(self, prepared: PreparedRun) -> None:
        """The policies in force now against what the plan prepared (RunChecks._isolate
        checked those in force then): PolicyError, before anything starts."""
        profile = prepared.sandbox_profile
        skill_dir = prepared.script.real_base if prepared.script is not None else prepared.cwd
        policy_runs.check_run(
            skill_dir,
            prepared.skill_name,
            profile.mode if profile is not None else sandboxing.OFF,
            bool(profile is not None and profile.network),
            ranks(),
            ship=self.ship,
        )

    def network_for(self, prepared: PreparedRun) -> bool:
        """Does ``prepared``'s sandbox give it the network now? (A grant given after the plan,
        on the approval panel, counts for this run.)"""
        profile = prepared.sandbox_profile
        if profile is None:
            return True
        if not policy_runs.network_allowed(self.ship):  # the team policy caps a grant
            return False
        return profile.network or self.grants.has(prepared.skill_name)

    def _env(self, prepared: PreparedRun) -> Mapping[str, str]:
        """The run's environment with the skill's own secrets (only the declaring skill's
        runs get them)."""
        env: Mapping[str, str] = prepared.env
        if prepared.secrets:
            env = {**env, **self.secrets.require(prepared.skill_name, prepared.secrets)}
        return env

    def _spawn_failed(
        self, prepared: PreparedRun, exc: OSError, seconds: float, how: Launch
    ) -> ScriptExecutionResult:
        message = (
            f"Could not start {prepared.script_rel} with {prepared.program}: {exc.strerror or exc}."
            " Check that the interpreter is executable"
        )
        rec = self.audit.event(
            prepared.skill_name,
            prepared.script_rel.as_posix(),
            prepared.arguments_preview,
            AuditOutcome.FAILED,
            exit_code=126,
            reason=message,
            duration_ms=seconds * 1000,
            start=how.name,
            start_note=how.note,
        )
        result = ScriptExecutionResult(
            stdout="",
            stderr=message + "\n",
            exit_code=126,
            execution_time_ms=max(seconds * 1000, 1e-3),
            script_path=prepared.script_rel,
            start=how.name,
            start_note=how.note,
        )
        self.audit.keep_result(rec, result)  # the side panel's Recent runs (core/base/recent.py)
        return result

    def _finish(
        self,
        prepared: PreparedRun,
        out: ProcessOutcome,
        how: Launch,
        *,
        texts: tuple[str, str, Masks] | None = None,
    ) -> ScriptExecutionResult:
        # The script's name and the arguments' text, made while it ran (_texts), unless a
        # secret became known since: then again, redacted before the cut as always.
        if texts is None or texts[2] is not known_masks():
            texts = _texts(prepared)
        rel, arguments = texts[0], texts[1]
        start = how.name
        stdout, stderr = out.stdout.text, out.stderr.text  # redacted as read (run_process)
        exit_code = out.returncode
        sandboxed = how.boxed is not None and how.boxed.active
        if sandboxed and not out.timed_out and not out.cancelled:
            exit_code = _unwrap_bwrap_status(exit_code)
        sig_name: str | None = None
        sig_num: int | None = None
        reason: str | None = None
        if out.timed_out:
            exit_code, outcome = TIMEOUT_EXIT_CODE, AuditOutcome.TIMEOUT
            reason = (
                f"Timeout: {rel} exceeded {_fmt_seconds(prepared.timeout)} and was stopped; "
                "if it needs longer, raise the limit (%%skillrun --timeout N; Python: timeout=N)"
            )
            stderr = _append_line(stderr, reason)
            logger.warning(
                "Skill %s: %s", prepared.skill_name, reason, extra={"skill": prepared.skill_name}
            )
        elif out.server_stopped:
            # Not the script's doing (it reads as OOM-killed otherwise): one line, the fix.
            outcome = AuditOutcome.FAILED
            reason = (
                f"the warm server stopped ({out.server_stopped}) while this ran: rerun it, "
                "it will start cold or on a new server"
            )
            stderr = _append_line(stderr, reason)
            logger.warning("Skill %s: %s: %s", prepared.skill_name, rel, reason)
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
            if exit_code != 0:
                hint = missing_module_hint(prepared.skill_name, stderr, prepared.env)
                if hint:
                    stderr = _append_line(stderr, hint)
        for capture in (out.stdout, out.stderr):
            if capture.truncated:
                logger.warning(
                    "Skill %s: %s of %s was %s bytes, kept the first %s (max_output_size)",
                    prepared.skill_name,
                    capture.name,
                    rel,
                    f"{capture.total_bytes:,}",
                    f"{prepared.max_output_size:,}",
                )
        duration_ms = max(out.duration_s * 1000, 1e-3)
        shown = how.sandbox
        rec = self.audit.event(
            prepared.skill_name,
            rel,
            arguments,
            outcome,
            exit_code=exit_code,
            reason=reason,
            duration_ms=duration_ms,
            sandbox=shown,
            start=start,
            start_note=how.note,
        )
        result = ScriptExecutionResult(
            stdout=stdout,
            stderr=stderr,
            exit_code=exit_code,
            execution_time_ms=duration_ms,
            script_path=prepared.script_rel,
            signal=sig_name,
            signal_number=sig_num,
            timed_out=out.timed_out,
            stdout_truncated=out.stdout.truncated,
            stderr_truncated=out.stderr.truncated,
            stdout_bytes=out.stdout.total_bytes,
            stderr_bytes=out.stderr.total_bytes,
            sandbox=shown,
            start=start,
            start_note=how.note,
        )
        self.audit.keep_result(rec, result)  # the side panel's Recent runs (core/base/recent.py)
        return result

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
        warm: bool | None = None,
    ) -> ScriptExecutionResult:
        """Standalone (no SkillManager, nobody asked): the checks with this executor's
        ``settings`` (core/run/planning/checks.py), then :meth:`run`. Refusals raise, audited."""
        settings = self.checks.settings_for(
            self.settings,
            getattr(skill_metadata, "name", "?"),
            script_path,
            arguments,
            argv,
            RunOverrides(timeout, sandbox, cwd, warm),
        )
        prepared = self.checks.script(
            settings,
            script_path,
            arguments,
            skill_base_dir,
            skill_metadata,
            argv=argv,
            module=module,
        )
        return self.run(prepared, on_output=on_output, cancel=cancel)


def _texts(prepared: PreparedRun) -> tuple[str, str, Masks]:
    """What a run's record names (script, arguments), and the secrets they were masked with."""
    masks = known_masks()
    return prepared.script_rel.as_posix(), prepared.arguments_preview, masks


def _audit_base(prepared: PreparedRun) -> tuple[str, str, str]:
    """What a record of ``prepared`` names: skill, script, arguments (worked out when the
    record is made: a secret given since is masked too)."""
    return prepared.skill_name, prepared.script_rel.as_posix(), prepared.arguments_preview


def _ms_since(started: float) -> float:
    """Milliseconds since ``started`` (time.monotonic()), never 0: every attempt took time."""
    return max((time.monotonic() - started) * 1000, 1e-3)


# The last line CPython prints for an import that found nothing (a module name, dotted).
_NO_MODULE = re.compile(r"ModuleNotFoundError: No module named '([A-Za-z_][A-Za-z0-9_.]{0,99})'")


def missing_module_hint(skill: str, stderr: str, env: Mapping[str, str]) -> str:
    """The fix for a script that died of a package its Python lacks ('' when not that): the
    managed environment installs what the skill needs. A module of the skill's own files is
    not a package to install, so it gets no hint."""
    found = _NO_MODULE.findall(stderr[-4000:])
    if not found:
        return ""
    top = found[-1].partition(".")[0]
    base = env.get("SKILL_BASE_DIR", "")
    if base and any(
        os.path.lexists(os.path.join(base, where, top + ext))
        for where in ("", "scripts")
        for ext in ("", ".py")
    ):
        return ""
    return (
        f"Hint: the package for {top!r} is not installed for this skill: %skills env {skill} "
        f"installs what the skill needs (Python: manager.prepare_env({skill!r}))"
    )


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


__all__ = ["ScriptExecutor", "PreparedRun", "BASE_ENV"]
