"""Planning: resolve what would run and run every check, before anyone is asked.

A plan is the first step of the pipeline (docs/architecture.md): the planner finds the
skill and script, runs every check against the run settings it is given (checks.py, which
audits its own refusals: paths, interpreter, allowed-tools, arguments, the time limit, the
sandbox) and builds the :class:`~skill_magics.core.run.gating.approval.ApprovalRequest` that shows
exactly the commands that will run. Nothing is asked here and nothing runs: the call site
(pipeline.py) asks the gate (gate.py) and launches (executor.py).

Example (not run as a doctest: the planner is the manager's; ``manager.plan`` is the public
form)::

    plan = planner.plan_script(settings, "csv-profiler", "profile", {"path": "a.csv"})
    plan.request.scripts[0].command[-1]
    # -> '/.../csv-profiler/scripts/profile.py'
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skill_magics.core.base import envdirs, fingerprint
from skill_magics.core.base.audit import CODE_LABEL, AuditLog, arguments_preview, code_preview
from skill_magics.core.base.errors import (
    AmbiguousScriptError,
    HelperScriptError,
    InterpreterNotAllowedError,
    PathSecurityError,
    ScriptNotFoundError,
    SkillMagicsError,
)
from skill_magics.core.base.models import ScriptMetadata, SkillMetadata
from skill_magics.core.base.paths import open_inside
from skill_magics.core.base.secrets import SecretStore
from skill_magics.core.base.status import RunStatus
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.discovery import SkillFinder
from skill_magics.core.catalog.references import ScriptReference
from skill_magics.core.catalog.requirements_cache import RequirementsCache
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.installed.lock import skill_lock_status
from skill_magics.core.mcp.skill import McpSkill
from skill_magics.core.run.gating.approval import (
    PREVIEW_MAX_BYTES,
    ApprovalRequest,
    ProvenanceInfo,
    SandboxInfo,
    ScopeInfo,
    ScriptToApprove,
    SecretsInfo,
    code_approval_hash,
)
from skill_magics.core.run.gating.gate import ALLOWED
from skill_magics.core.run.launching.prepared import PreparedRun
from skill_magics.core.run.planning.checks import RunChecks
from skill_magics.core.run.planning.payload import normalize_argv
from skill_magics.core.run.planning.runplan import (
    Asking,
    Decided,
    Launch,
    LaunchContext,
    Plan,
    RunOutcome,
    one_request,
)
from skill_magics.core.run.planning.settings import RunSettings
from skill_magics.core.trust.installed import origin_of


@dataclass(frozen=True)
class PlannedRun(Plan[tuple[Launch, ...]]):
    """Runs that passed every check, and the request the gate decides on.

    ``runs`` line up with ``request.scripts`` (one script; a context's referenced scripts;
    or one ``python -c`` command for code). ``request`` is None only when nobody will be
    asked (a person's own call with ``approver=None``): building it (previews, the skill's
    fingerprint) would be work nobody sees. Its outcome's value: one Launch per run.
    """

    request: ApprovalRequest | None
    runs: tuple[PreparedRun, ...]
    arguments: Any = None
    argv: tuple[str, ...] | None = None

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return (one_request(self.request),)

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[tuple[Launch, ...]]:
        launches = context.run_each(self.runs)
        return RunOutcome(decided.verdict, launches, launches)

    @property
    def prepared(self) -> PreparedRun:
        """The run of a one-script plan."""
        return self.runs[0]

    @property
    def skill_name(self) -> str:
        return self.request.skill_name if self.request is not None else self.runs[0].skill_name

    @property
    def script(self) -> str:
        """The (first) script's path relative to the skill, posix."""
        return self.runs[0].script_rel.as_posix()


@dataclass(frozen=True)
class Resolved:
    """A script found in its skill, with what SKILL.md says now (Planner.resolve)."""

    skill: Skill
    meta: ScriptMetadata
    metadata: SkillMetadata


Parts = tuple[RunOutcome[tuple[Launch, ...]], ...]


@dataclass(frozen=True)
class PlanGroup(Plan[Parts]):
    """Several skills' plans decided with ONE question (a context over several skills,
    skills in the order named): the call site asks the gate once for all of them
    (``gate.decide_each``), then runs each allowed plan in order. Its outcome's value (and
    ``parts``): one outcome per plan."""

    plans: tuple[PlannedRun, ...]

    asking = Asking.TOGETHER

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return tuple(one_request(plan.request) for plan in self.plans)

    def ready(self, decided: Decided) -> bool:
        return any(v.allowed for v in decided.each(len(self.plans)))

    def held(self, decided: Decided) -> RunOutcome[Parts]:
        parts: Parts = tuple(RunOutcome(v) for v in decided.each(len(self.plans)))
        return RunOutcome(ALLOWED, parts, parts=parts)

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[Parts]:
        parts: list[RunOutcome[tuple[Launch, ...]]] = []
        for plan, verdict in zip(self.plans, decided.each(len(self.plans)), strict=True):
            if verdict.allowed and verdict.decision is not None and plan.request is not None:
                # Other skills' scripts may have run since the decision: still approved files?
                verdict = context.gate.check_current(plan.request)
            if not verdict.allowed:
                parts.append(RunOutcome(verdict))
                continue
            launches = context.run_each(plan.runs)
            parts.append(RunOutcome(verdict, launches, launches))
        done = tuple(parts)
        return RunOutcome(ALLOWED, done, parts=done)


@dataclass
class ReferencePlan:
    """The scripts a skill's SKILL.md references, checked: ``plan`` for those that may run
    (None when none can), ``problems`` (path -> (status, message)) for the rest, ``refs``
    in reference order."""

    skill: Skill
    refs: list[ScriptReference]
    problems: dict[str, tuple[RunStatus, str]] = field(default_factory=dict)
    plan: PlannedRun | None = None
    paths: list[str] = field(default_factory=list)  # ref paths of plan.runs, in order


class Planner:
    """Builds plans. Every method takes the :class:`RunSettings` to plan with (the caller
    reads the current ones); refusals are audited in ``checks.audit``.

    ``secrets``: the session's secret values (a request names the missing ones);
    ``requirements``: what scripts need (a request lists what a script lacks before anyone
    approves it; None: not shown).
    """

    def __init__(
        self,
        finder: SkillFinder,
        checks: RunChecks,
        secrets: SecretStore | None = None,
        requirements: RequirementsCache | None = None,
    ) -> None:
        self.finder = finder
        self.checks = checks
        self.secrets = secrets if secrets is not None else SecretStore()
        self.requirements = requirements

    @property
    def audit(self) -> AuditLog:
        return self.checks.audit

    def with_audit(self, audit: AuditLog) -> Planner:
        """The same planner (same caches) auditing into ``audit`` (a batch's bounded log)."""
        return Planner(self.finder, self.checks.with_audit(audit), self.secrets, self.requirements)

    # -- one script --------------------------------------------------------------------------

    def plan_script(
        self,
        settings: RunSettings,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        ask: bool = True,
    ) -> PlannedRun:
        """Check one run of ``script`` with this run's ``settings`` (``RunSettings.for_run``)
        and build its request; raises (audited) on a refusal. A script that cannot run
        (``ScriptMetadata.runnable``) is refused, naming the ones that can.
        ``ask=False`` builds no request (nobody will be asked)."""
        meta, prepared = self.check_script(settings, skill_name, script, arguments, argv)
        asked = None
        if ask:
            asked = self.approval_request(
                settings, skill_name, [meta], arguments, argv or (), prepared=[prepared]
            )
        argv_t = None if argv is None else prepared.argv
        return PlannedRun(asked, (prepared,), arguments, argv_t)

    def check_script(
        self,
        settings: RunSettings,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any,
        argv: Sequence[str] | None,
    ) -> tuple[ScriptMetadata, PreparedRun]:
        """Resolve and check a run (refusals audited): (script, its checked run).

        ``__init__.py`` and modules holding only imports, definitions and constants
        (``ScriptMetadata.runnable`` is False) are refused in one line naming the scripts
        that can run: running them does nothing. Every other script may run, offered or not.
        """
        found = self.resolve(skill_name, script, arguments, argv)
        return self.check_resolved(settings, found, arguments, argv)

    def resolve(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        argv: Sequence[str] | None = None,
        *,
        repair: bool = True,
    ) -> Resolved:
        """The skill, the script and what SKILL.md says now; refusals raise (audited).
        A batch resolves once and re-resolves every RECHECK_S (core/run/batch/runner.py),
        with ``repair`` False: an MCP skill's copy that no longer verifies is not fetched
        again under its running items (SkillFinder.fetch_remote)."""
        started = time.monotonic()
        try:
            skill, meta = self.finder.resolve_script(skill_name, script, repair=repair)
            if not meta.runnable:
                raise not_runnable_error(skill, meta)
            # SKILL.md may have been edited since listing (e.g. Bash dropped from
            # allowed-tools): check against what it says now, not what it said then.
            metadata = skill.current_metadata()
        except SkillMagicsError as exc:
            error = self._explain_missing(skill_name, script, exc)
            # Never reached the checks, so audit the refusal here.
            self.audit.refused(
                skill_name,
                os.fspath(script),
                arguments_preview(arguments, argv),
                error,
                duration_ms=(time.monotonic() - started) * 1000,
            )
            if error is exc:
                raise
            raise error from None
        return Resolved(skill, meta, metadata)

    def check_resolved(
        self,
        settings: RunSettings,
        found: Resolved,
        arguments: Any,
        argv: Sequence[str] | None,
    ) -> tuple[ScriptMetadata, PreparedRun]:
        """Every check of one run of a resolved script (refusals audited)."""
        skill, meta, metadata = found.skill, found.meta, found.metadata
        prepared = self.checks.script(  # audits its own refusals
            settings,
            meta.path,  # relative: resolved against the skill dir, and audited as given
            arguments,  # None: stdin gets {} (or nothing in argv mode)
            skill.base_dir,
            metadata,
            argv=argv,  # unchanged: the checks validate it (and audit a bad one)
            module=meta.module,  # python -m from the skill root (catalog/kinds.py)
        )
        return meta, prepared

    def _explain_missing(
        self, skill_name: str, script: str | os.PathLike[str], exc: SkillMagicsError
    ) -> SkillMagicsError:
        # A .ts file is not listed while tsx is not allowed: say that, not "no script".
        if not isinstance(exc, ScriptNotFoundError) or self.finder.detector.allow_typescript:
            return exc
        skill = self.finder.get_skill(skill_name)
        with_ts = Skill(skill.metadata, detector=ScriptDetector(allow_typescript=True))
        try:
            found = with_ts.find_script(script)
        except SkillMagicsError:
            return exc
        if found.script_type != "typescript":
            return exc
        return InterpreterNotAllowedError(
            f"Interpreter 'tsx' is not allowed for {found.path.as_posix()} in skill "
            f"{skill_name!r}: add 'tsx' to allowed_interpreters to run it"
        )

    # -- code in a skill's venv (%%skillpy) --------------------------------------------------

    def plan_code(
        self,
        settings: RunSettings,
        skill: Skill,
        python: Path,
        code: str,
    ) -> PlannedRun:
        """``python -c code`` with the skill folder as cwd; raises (audited) on a refusal."""
        prepared = self.checks.command(
            settings,
            [str(python), "-c", code],
            skill_base_dir=skill.base_dir,
            skill_metadata=skill.metadata,
            label=CODE_LABEL,
            arguments_preview=code_preview(code),
        )
        request = self.approval_request(
            settings, skill.name, [], None, code=code, prepared=[prepared]
        )
        return PlannedRun(request, (prepared,))

    # -- a skill's referenced scripts (%skill_context) ---------------------------------------

    def plan_references(
        self,
        settings: RunSettings,
        skill: Skill,
        refs: Sequence[ScriptReference],
        arguments: Any,
        argv_for: Callable[[str], Any],
        *,
        same_argv: bool = True,
    ) -> ReferencePlan:
        """Check every reference (refusals audited) and build ONE request for those that may
        run, each with its own command (``argv_for(path)`` gives a script's argv).
        ``same_argv``: every script gets the same argv, shown once in the request."""
        name = skill.name
        out = ReferencePlan(skill, list(refs))
        metas: list[ScriptMetadata] = []
        runs: list[PreparedRun] = []
        for ref in refs:
            if ref.error is not None:
                out.problems[ref.path] = (RunStatus.ERROR, ref.error)
                if not ref.inside:
                    # SKILL.md points a run outside the skill: worth a record, like any refusal.
                    self.audit.refused(
                        name,
                        ref.path,
                        arguments_preview(arguments, argv_for(ref.path)),
                        PathSecurityError(ref.error),
                    )
                continue
            try:
                skill.find_script(ref.path)  # a missing reference is an error, not a refusal
                meta, run = self.check_script(
                    settings, name, ref.path, arguments, argv_for(ref.path)
                )
            except (ScriptNotFoundError, AmbiguousScriptError) as exc:
                out.problems[ref.path] = (RunStatus.ERROR, str(exc))
                continue
            except SkillMagicsError as exc:  # safety checks (already audited)
                out.problems[ref.path] = (RunStatus.REFUSED, str(exc))
                continue
            metas.append(meta)
            runs.append(run)
            out.paths.append(ref.path)
        if runs:
            shown = runs[0].argv if same_argv else ()
            request = self.approval_request(settings, name, metas, arguments, shown, prepared=runs)
            out.plan = PlannedRun(request, tuple(runs), arguments)
        return out

    def plan_scope(
        self,
        settings: RunSettings,
        skill_name: str,
        scope: ScopeInfo,
    ) -> PlannedRun | None:
        """The request for runs a model will choose within ``scope``: every offered script of
        the skill (what its tools offer), each checked as a run with ``settings`` (their
        ``run_cwd``: where the model's runs start) with no inputs
        yet. A script a check refuses is audited and left out (its calls will be refused
        too); None when none may run."""
        skill = self.finder.get_skill(skill_name)
        metas: list[ScriptMetadata] = []
        runs: list[PreparedRun] = []
        for script in sorted(skill.offered_scripts, key=lambda s: s.path.as_posix()):
            try:
                meta, run = self.check_script(
                    settings, skill_name, script.path.as_posix(), None, None
                )
            except SkillMagicsError:
                continue  # audited by check_script
            metas.append(meta)
            runs.append(run)
        if not runs:
            return None
        request = replace(
            self.approval_request(settings, skill_name, metas, prepared=runs), scope=scope
        )
        return PlannedRun(request, tuple(runs), None)

    # -- the request -------------------------------------------------------------------------

    def approval_request(
        self,
        settings: RunSettings,
        skill_name: str,
        scripts: Sequence[ScriptMetadata],
        arguments: Any = None,
        argv: Sequence[str] = (),
        code: str | None = None,
        *,
        prepared: Sequence[PreparedRun | None] | None = None,
    ) -> ApprovalRequest:
        """What a person is asked to approve: scripts with their text and the exact command
        (program path, flags, script, argv), arguments, and the skill's fingerprint.

        ``prepared`` (aligned with ``scripts``) gives each script's checked run, so the
        command shown is the one that will run, with that script's own argv. Without it the
        command is worked out here with ``argv`` (nothing is audited; checks happen later).
        """
        skill = self.finder.get_skill(skill_name)
        # The checks' rules (a lone string is refused, not split into characters), so the
        # request shows exactly the argv that will run.
        argv_t = normalize_argv(() if argv is None else argv)
        items = []
        missing_for = self._missing_for(skill_name, scripts)
        for i, s in enumerate(scripts):
            run = prepared[i] if prepared is not None and i < len(prepared) else None
            command = (
                run.command if run is not None else self._command_for(settings, skill, s, argv_t)
            )
            preview, lines, size = _preview(skill.base_dir, s.path)
            items.append(
                ScriptToApprove(
                    path=s.path.as_posix(),
                    interpreter=s.interpreter,
                    preview=preview,
                    command=tuple(command),
                    program_realpath=_realpath_if_different(command[0]) if command else "",
                    lines=lines,
                    size=size,
                    cwd=str(run.cwd) if run is not None else "",
                    missing=tuple(missing_for(s.path.as_posix())),
                )
            )
        entries = self._entries(skill, scripts, arguments, argv_t, code)
        content_hash = fingerprint.fingerprint_of(entries)  # == skill.content_hash()
        if code is not None:
            # "Yes in session" for code approves this exact code again, never other code or
            # the skill's scripts: the approval key covers the code as well.
            content_hash = code_approval_hash(content_hash, code)
        return ApprovalRequest(
            skill_name=skill_name,
            scripts=tuple(items),
            arguments=arguments,
            argv=argv_t,
            content_hash=content_hash,
            code=code,
            request_id=uuid.uuid4().hex,
            entries=entries,
            sandbox=_sandbox_info(prepared),
            secrets=self._secrets_info(skill_name, prepared),
            environment=envdirs.environment_id(skill.base_dir),
            provenance=provenance_info(skill.base_dir),
            signature=origin_of(skill.base_dir, skill_name).signature,
            mcp=skill.origin if isinstance(skill, McpSkill) else None,
            start=_start_info(prepared),
        )

    def _entries(
        self,
        skill: Skill,
        scripts: Sequence[ScriptMetadata],
        arguments: Any,
        argv: tuple[str, ...],
        code: str | None,
    ) -> dict[str, str]:
        """What the skill's fingerprint is made of; a skill the fingerprint cannot cover
        (folders nested deeper than fingerprint.MAX_DEPTH) is refused here, audited once
        per script, before anyone is asked and before anything runs."""
        started = time.monotonic()
        try:
            return fingerprint.skill_entries(skill.base_dir)
        except SkillMagicsError as exc:
            if code is not None:
                shown = [(CODE_LABEL, code_preview(code))]
            else:
                preview = arguments_preview(arguments, argv)
                shown = [(s.path.as_posix(), preview) for s in scripts] or [("", preview)]
            for script, preview in shown:
                self.audit.refused(
                    skill.name,
                    script,
                    preview,
                    exc,
                    duration_ms=(time.monotonic() - started) * 1000,
                )
            raise

    def _secrets_info(
        self, skill_name: str, prepared: Sequence[PreparedRun | None] | None
    ) -> SecretsInfo | None:
        names = next((run.secrets for run in prepared or () if run is not None), ())
        if not names:
            return None
        return SecretsInfo(names, self.secrets.missing(skill_name, names))

    def _missing_for(
        self, skill_name: str, scripts: Sequence[ScriptMetadata]
    ) -> Callable[[str], list[str]]:
        """script path -> what it lacks (nothing when requirements are unknown)."""
        if self.requirements is None or not scripts:
            return lambda rel: []
        try:
            reqs = self.requirements.for_run(self.finder.get_skill(skill_name))
        except (SkillMagicsError, OSError, ValueError):
            return lambda rel: []
        return reqs.missing_for

    def _command_for(
        self, settings: RunSettings, skill: Skill, script: ScriptMetadata, argv: tuple[str, ...]
    ) -> tuple[str, ...]:
        try:
            path = skill.base_dir / script.path
            return self.checks.command_for(settings, path, skill.base_dir) + argv
        except (SkillMagicsError, OSError, ValueError):
            return ()  # it would be refused anyway; the refusal is audited when it is tried


MAX_NAMED = 8  # runnable scripts a refusal names before "+N more"


def not_runnable_error(skill: Skill, meta: ScriptMetadata) -> HelperScriptError:
    """The one-line refusal for a script that does nothing when run, naming the runnable
    scripts (offered ones first)."""
    rel = meta.path.as_posix()
    runnable = sorted(
        (s for s in skill.scripts if s.runnable), key=lambda s: (not s.offered, s.path.as_posix())
    )
    names = [s.path.as_posix() for s in runnable[:MAX_NAMED]]
    if len(runnable) > MAX_NAMED:
        names.append(f"+{len(runnable) - MAX_NAMED} more (%skills show {skill.name})")
    if meta.path.name == "__init__.py":
        what = f"{rel} in skill {skill.name!r} is a package's __init__.py: running it does nothing"
    else:
        what = (
            f"{rel} in skill {skill.name!r} holds only imports, definitions and constants: "
            "running it does nothing"
        )
    if names:
        return HelperScriptError(f"{what}; run one of {', '.join(names)}")
    return HelperScriptError(
        f"{what}, and the skill has no script that runs: give the script that does the work "
        "an `if __name__ == '__main__':` block"
    )


def _preview(base_dir: Path, rel: Path) -> tuple[str, int, int]:
    """(text of the skill's file ``rel`` up to PREVIEW_MAX_BYTES, its total line count, its
    size in bytes).

    The person approving sees the real size of what is hidden beyond the preview. A script
    may write into its skill, so the file is read as any skill file is (paths.open_inside):
    a link is followed only while it stays inside the skill, and a FIFO or device planted
    under the script's name is refused, never waited on.
    """
    limit = PREVIEW_MAX_BYTES
    try:
        fd = open_inside(rel, base_dir)
    except PathSecurityError:
        return "<not shown: it resolves outside the skill>", 0, 0
    except OSError as exc:
        return f"<cannot read: {exc.strerror or exc}>", 0, 0
    try:
        with os.fdopen(fd, "rb") as fh:
            head = fh.read(limit)
            lines = head.count(b"\n")
            size = len(head)
            last = head
            while chunk := fh.read(1 << 20):  # count the rest without keeping it
                lines += chunk.count(b"\n")
                size += len(chunk)
                last = chunk
    except OSError as exc:
        return f"<cannot read: {exc.strerror or exc}>", 0, 0
    if last and not last.endswith(b"\n"):
        lines += 1  # a last line without a newline is still a line
    if size > len(head):
        # Do not end inside a multibyte character or a CRLF pair.
        head = head[: head.rfind(b"\n") + 1] or head
    text = head.decode("utf-8", "replace").replace("\r\n", "\n")
    return text, lines, size


def provenance_info(base_dir: Path) -> ProvenanceInfo | None:
    """An installed skill's source and whether its files still match its skills-lock.json
    (None: no lock describes it)."""
    status = skill_lock_status(base_dir)
    if status is None:
        return None
    locked = status.locked
    return ProvenanceInfo(locked.origin, locked.commit or "", str(status.lock), status.changes)


def _sandbox_info(prepared: Sequence[PreparedRun | None] | None) -> SandboxInfo | None:
    """The first run's sandbox as the panel shows it (the runs of one request share it)."""
    for run in prepared or ():
        if run is not None and run.sandbox_profile is not None:
            return run.sandbox_profile.info()
    return None


def _start_info(prepared: Sequence[PreparedRun | None] | None) -> str:
    """How the first Python run would start, as the panel shows it ('' when none is Python)."""
    from skill_magics.core.run.launching.warm.eligible import describe

    for run in prepared or ():
        if run is not None:
            shown = describe(run)
            if shown:
                return shown
    return ""


def _realpath_if_different(program: str) -> str:
    real = os.path.realpath(program)
    return real if real != program else ""


__all__ = ["Planner", "PlanGroup", "PlannedRun", "ReferencePlan", "Resolved", "not_runnable_error"]
