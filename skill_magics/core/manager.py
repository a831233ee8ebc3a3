"""SkillManager: the facade over the skill finder and the run pipeline.

It holds the run settings and the approver and wires its parts together; the work happens in
them, and callers use the manager's methods, never its parts: the finder (catalog/discovery.py,
SkillFinder: where skills live, which one wins a name clash), the planner (run/planning/:
step 1), the pipeline (run/pipeline.py: steps 2 and 3, the one call site: the gate decides,
the executor launches), and session state with its own module: secret values (secrets.py),
network grants (run/launching/grants.py), ``approvals`` (run/gating/store.py), ``audit``.

Every run goes through :meth:`run_planned` (or its async twin) with a plan from :meth:`plan`,
:meth:`plan_map`, :meth:`plan_code`, :meth:`plan_references`, :meth:`plan_scope` or
``env.install.plan_install``; :meth:`execute_skill_script`, :meth:`map` and :meth:`prepare_env`
are plan + run_planned. Per-run overrides (``timeout``, ``sandbox``, ``cwd``, ``warm``: one
``RunOverrides``) become this run's settings here, once. :meth:`configure` is the one way to
change the settings.

Example (not run as a doctest: it runs scripts)::

    manager = SkillManager(["skills"])           # or SkillManager() for the default dirs
    [m.name for m in manager.list_skills()]
    # -> ['csv-profiler', 'text-tools']
    manager.execute_skill_script("csv-profiler", "profile", {"path": "data/sample.csv"}).json()
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from skill_magics.core.base import envdirs
from skill_magics.core.base.audit import CODE_LABEL, AuditLog
from skill_magics.core.base.deprecation import renamed_argument
from skill_magics.core.base.models import ScriptExecutionResult, SkillMetadata
from skill_magics.core.base.recent import RESULTS_KEPT
from skill_magics.core.base.secrets import SecretStore, declared_secrets
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.discovery import (
    DEFAULT_SUBDIRS,
    ENV_VAR,
    DirsArg,
    SkillFinder,
    default_skill_dirs,
    examples_dir,
)
from skill_magics.core.catalog.hidden import HiddenNotes
from skill_magics.core.catalog.references import ScriptReference
from skill_magics.core.catalog.requirements import Requirements
from skill_magics.core.catalog.requirements_cache import RequirementsCache
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.mcp.listed import listed
from skill_magics.core.mcp.wire import SkillEntry
from skill_magics.core.run.batch.result import BatchItem, BatchResult
from skill_magics.core.run.batch.runner import (
    BatchOptions,
    BatchPlan,
    BatchProgress,
    batch_inputs,
)
from skill_magics.core.run.env.install import EnvReport, plan_install
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.gating.approval import (
    MANAGER_APPROVER,
    Answer,
    Approver,
    ApproverArg,
    Caller,
    ScopeInfo,
)
from skill_magics.core.run.gating.gate import ApprovalGate, choose_approver
from skill_magics.core.run.gating.store import ApprovalStore
from skill_magics.core.run.launching import warm as warmstart
from skill_magics.core.run.launching.grants import NetworkGrants, audit_grant, grant_network
from skill_magics.core.run.pipeline import Pipeline, ScopePlan
from skill_magics.core.run.planning.checks import RunChecks
from skill_magics.core.run.planning.plan import PlannedRun, Planner, ReferencePlan
from skill_magics.core.run.planning.runplan import OnOutput, Plan, RunOutcome
from skill_magics.core.run.planning.settings import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_TIMEOUT,
    DEFAULT_WARM_IDLE,
    RunOverrides,
    RunSettings,
)
from skill_magics.core.run.planning.workdir import WORKSPACE, CwdArg

USE_DEFAULT = MANAGER_APPROVER  # the earlier name of the sentinel
_SETTING_NAMES = frozenset((*RunSettings.names(), "sandbox_network"))
V = TypeVar("V")


class SkillManager:
    """Find skills in directories (earlier wins a name clash) and run their scripts safely.

    ``skill_dirs`` (paths, or one path) overrides the defaults; ``None`` uses
    :func:`default_skill_dirs`. The run settings (``timeout`` ... ``run_cwd``) make
    ``settings`` (:class:`RunSettings`); ``approver`` is who the manager asks
    (docs/architecture.md, *Who approves*: None, for a person's own call, means nothing is
    asked). Missing directories are ignored; bad skills are skipped with a warning.
    """

    def __init__(
        self,
        skill_dirs: DirsArg = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
        allowed_interpreters: Sequence[str] | str | None = None,
        approver: Approver | None = None,
        inherit_env: bool = False,
        env_passthrough: Sequence[str] | str = (),
        audit_log: str | os.PathLike[str] | None = None,
        sandbox: str | None = None,
        sandbox_network: Sequence[str] | str = (),
        sandbox_deny_read: Sequence[str] | str = (),
        sandbox_read: Sequence[str] | str = (),
        run_cwd: CwdArg = WORKSPACE,
        warm_start: str | None = None,
        warm_idle_timeout: float = DEFAULT_WARM_IDLE,
        settings: RunSettings | None = None,
    ) -> None:
        self._lock = threading.RLock()
        # sandbox=None: $SKILL_MAGICS_SANDBOX, else "off" (run/planning/settings.py checks it).
        # settings=: all of them at once (SkillMagics), the keywords above then unused.
        self._settings = settings or RunSettings(
            timeout=timeout,
            max_output_size=max_output_size,
            allowed_interpreters=allowed_interpreters,  # type: ignore[arg-type]
            inherit_env=inherit_env,
            env_passthrough=env_passthrough,  # type: ignore[arg-type]
            run_cwd=run_cwd,  # type: ignore[arg-type]
            sandbox=sandbox,
            sandbox_network=sandbox_network,  # type: ignore[arg-type]
            sandbox_deny_read=sandbox_deny_read,  # type: ignore[arg-type]
            sandbox_read=sandbox_read,  # type: ignore[arg-type]
            warm_start=warm_start,
            warm_idle_timeout=warm_idle_timeout,
        )
        self.approver: Approver | None = approver
        self._finder = SkillFinder(skill_dirs)
        self._finder.detector = ScriptDetector(allow_typescript=self._settings.allow_typescript)
        # Session state (docs/architecture.md, *Sandbox and secrets*): secret values, network
        # grants, the audit log (no secret value in any record), what skills need.
        self._secrets = SecretStore()
        self._grants = NetworkGrants()
        # No secret value in any record: the log masks every SecretStore's values (this
        # manager's included) before it cuts or keeps a text (core/base/audit.py).
        self.audit = AuditLog(jsonl_path=audit_log, keep_results=RESULTS_KEPT)
        self._requirements = RequirementsCache()
        self._hidden = HiddenNotes()
        # The pipeline: plan (planner over the checks) -> gate -> execute, one call site.
        checks = RunChecks(self.audit, grants=self._grants)
        self._planner = Planner(self._finder, checks, self._secrets, self._requirements)
        self._gate = ApprovalGate(self._finder, self.audit)
        self._executor = ScriptExecutor(
            audit=self.audit, secrets=self._secrets, grants=self._grants, preload=self._preload
        )
        self._pipeline = Pipeline(self._planner, self._gate, self._executor)
        for name in self._settings.sandbox_network:  # each grant is audited, these too
            audit_grant(self.audit, name, "SkillManager(sandbox_network=...)")

    def __repr__(self) -> str:
        return f"SkillManager(skill_dirs={[str(d) for d in self.skill_dirs]!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        # ``manager.timeout = 60`` would set a plain attribute nothing reads: say the fix.
        if name in _SETTING_NAMES:
            raise AttributeError(
                f"manager.{name} is not set by assignment: use manager.configure({name}=...)"
            )
        super().__setattr__(name, value)

    # -- run settings ------------------------------------------------------------------------

    @property
    def settings(self) -> RunSettings:
        """The run settings every plan reads (frozen; change them with :meth:`configure`)."""
        return self._settings

    def configure(self, **changes: Any) -> RunSettings:
        """Change run settings (names of :class:`RunSettings`; checked, one line naming the
        fix when bad): the one way to change them. They count from the next run; nothing is
        rebuilt, approvals and the audit history stay. New ``sandbox_network`` names are
        audited as grants; a changed ``sandbox_network`` is the whole answer (the grants
        given this session end)."""
        with self._lock:
            before = self._settings
            after = before.updated(**changes)
            self._settings = after
        if after.allow_typescript != before.allow_typescript:
            # .ts files count as scripts only when tsx may run them.
            self._finder.detector = ScriptDetector(allow_typescript=after.allow_typescript)
        if after.sandbox_network != before.sandbox_network:
            self._grants.clear()
        for name in after.sandbox_network:
            if name not in before.sandbox_network:
                audit_grant(self.audit, name, "setting sandbox_network")
        return after

    @property
    def sandbox_network(self) -> tuple[str, ...]:
        """Skills that may use the network in sandboxed runs ("*": every skill): the setting
        and the grants given this session (read-only: :meth:`configure`,
        :meth:`grant_network`)."""
        names = {*self._settings.sandbox_network, *self._grants.names()}
        return tuple(sorted(names))

    # -- session state: network grants, secrets, approvals ----------------------------------

    def grant_network(self, skill_name: str, *, by: str = "SkillManager.grant_network") -> None:
        """Let ``skill_name`` use the network in its sandboxed runs this session (audited).
        PolicyError when the team policy says ``[run] network = false`` (docs/trust.md)."""
        grant_network(self._grants, self.audit, skill_name, by)

    def provide_secret(self, skill_name: str, name: str, value: str) -> None:
        """Give ``skill_name``'s runs the secret ``name`` (kept in memory for this session only).

        The skill must declare ``name`` (``metadata: {secrets: "NAME ..."}``); the value goes
        only to that skill's runs, and is shown as ``****`` wherever output or audit text
        holds it.

        Example (not run as a doctest: it asks for a secret)::

            manager.provide_secret("weather", "WEATHER_API_KEY", getpass.getpass())
        """
        declared = declared_secrets(self.get_skill(skill_name).current_metadata())
        self._secrets.provide_declared(skill_name, declared, name, value)

    def usage(self, since: Any = None) -> Any:
        """Runs per skill and script from the audit log (decisions, failure rate, median
        and p95 duration, cold vs warm, last run): a pandas DataFrame when pandas is
        installed, else :class:`~skill_magics.core.usage.UsageRow` rows. ``since``: ``"7d"``,
        ``"12h"``, a date, a datetime or a timedelta. Delegates to ``core/usage/``."""
        from skill_magics.core.usage import usage_table

        return usage_table(self.audit, since)

    def secret_status(self, skill_name: str) -> dict[str, bool]:
        """Each secret ``skill_name`` declares -> whether a value is set (never the value)."""
        declared = declared_secrets(self.get_skill(skill_name).current_metadata())
        return {name: self._secrets.is_set(skill_name, name) for name in declared}

    @property
    def approvals(self) -> ApprovalStore:
        """Session approvals ("Yes in session"), kept by the gate."""
        return self._gate.store

    # -- the skill finder -------------------------------------------------------------------

    @property
    def skill_dirs(self) -> list[Path]:
        """Directories searched, in precedence order (absolute; may not all exist).

        Assign a new list to replace them all (None: the defaults); the next use rescans.
        """
        return self._finder.skill_dirs

    @skill_dirs.setter
    def skill_dirs(self, dirs: DirsArg) -> None:
        self._finder.skill_dirs = dirs

    def add_dir(self, path: str | os.PathLike[str], *, first: bool = False) -> Path:
        """Add a directory (last in precedence, or first with ``first=True``) and rescan.
        The team policy's ``[sources] allow`` is checked first (a refusal is audited and
        nothing is added: core/policy/runs.py, ``check_added_folder``)."""
        from skill_magics.core.policy import PolicyError
        from skill_magics.core.policy.runs import check_added_folder

        try:
            check_added_folder(path)
        except PolicyError as exc:
            self.audit.refused(f"{os.path.abspath(path)}/*", "(add folder)", None, exc)
            raise
        return self._finder.add_dir(path, first=first)

    def remove_dir(self, path: str | os.PathLike[str]) -> bool:
        """Stop searching a directory and rescan; False when it was not configured."""
        return self._finder.remove_dir(path)

    def add_mcp_server(
        self,
        label: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        connect_timeout: float = 60.0,
    ) -> list[SkillEntry]:
        """Take the skills of an MCP server (SEP-2640; stdio ``command`` or HTTP ``url``),
        named ``label/<skill>``; the checked listing (core/mcp/runs.add_server). ``timeout``:
        seconds for each call; ``connect_timeout``: for starting it and its handshake."""
        from skill_magics.core.mcp.runs import add_server

        return add_server(
            self,
            self._finder,
            self.audit,
            label,
            command=command,
            url=url,
            env=env,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )

    def remove_mcp_server(self, label: str) -> bool:
        """Close an MCP server added under ``label``; False when there is none."""
        from skill_magics.core.mcp.servers import servers_of

        return servers_of(self).remove(label)

    def reload(self) -> None:
        """Forget everything loaded and scan the directories again on next use; the warm
        servers stop (at once, or when their runs in flight end; the next runs start new
        ones)."""
        self._finder.reload()
        self._requirements.clear()
        self._hidden.clear()
        warmstart.stop_servers(wait_for_runs=True)

    # -- warm start (core/run/launching/warm/) -------------------------------------------------

    def warm_up(
        self,
        skill_name: str,
        scripts: Sequence[str] | None = None,
        *,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
    ) -> list[warmstart.WarmUp]:
        """Start the warm servers of ``skill_name``'s Python scripts now (``scripts``: only
        these) and wait until they imported what the scripts import, so the next runs start
        warm. Each script is checked as a run would be; nothing of the skill runs."""
        settings = self._run_settings(skill_name, "<warm up>", sandbox=sandbox, cwd=cwd)
        chosen = list(scripts) if scripts is not None else None
        return warmstart.warm_up(self._planner, self._executor, settings, skill_name, chosen)

    def warm_servers(self) -> list[warmstart.ServerInfo]:
        """The warm servers of this process: interpreter, sandbox, preloaded packages, memory,
        idle time (``%skills warm``)."""
        return warmstart.servers()

    def stop_warm_servers(self, *, wait_for_runs: bool = False) -> int:
        """Stop every warm server of this process; returns how many were running.
        ``wait_for_runs``: a server with runs in flight stops when they end (else they are
        killed with it)."""
        return warmstart.stop_servers(wait_for_runs=wait_for_runs)

    def _preload(self, prepared: Any) -> tuple[str, ...]:
        """What a run's warm server should import: the installed packages its script needs
        (catalog/requirements.py; never the skill's own modules)."""
        reqs = self._requirements.for_run(self.get_skill(prepared.skill_name))
        return warmstart.preload_names(reqs, prepared.script_rel.as_posix())

    def list_skills(self) -> list[SkillMetadata]:
        """Every usable skill's metadata, sorted by name: the local skills and the added MCP
        servers' (``LABEL/NAME``, from their checked listings; each an ``McpListed`` with
        its ``origin``), as ``execute_skill_script``, ``%skills`` and the catalog use them.
        Reads frontmatter and listings only."""
        return sorted([*self.local_skills(), *listed(self)], key=lambda m: m.name)

    def local_skills(self) -> list[SkillMetadata]:
        """The skills in the configured folders (no MCP server's), sorted by name."""
        return self._finder.list_skills()

    @property
    def warnings(self) -> list[str]:
        """Skipped skills, name clashes and spec warnings, each naming the path and reason;
        and SKILL.md files lying in hidden folders that are not searched (how to add them:
        one line per search folder, catalog/hidden.py)."""
        return self._finder.warnings + self._hidden.lines(self.skill_dirs)

    def get_skill(self, name: str) -> Skill:
        """The skill called ``name`` (body and scripts load on first use, then cached).
        ``LABEL/NAME``: an MCP server's skill, its copy brought to the server's current
        listing (each file verified) and re-hashed (core/mcp/runs.py)."""
        self._finder.fetch_remote(name)
        return self._finder.get_skill(name)

    # -- what skills need, and their managed environments -----------------------------------

    def requirements(self, skill_name: str) -> Requirements:
        """Packages and programs the skill's scripts need, checked for the Python that would
        run them (catalog/requirements.py). Nothing is imported or run; remembered until
        the skill, that Python or PATH changes (catalog/requirements_cache.py)."""
        return self._requirements.for_run(self.get_skill(skill_name))

    def prepare_env(
        self,
        skill_name: str,
        *,
        approver: ApproverArg = MANAGER_APPROVER,
        rebuild: bool = False,
        installer: str | None = None,
        on_output: Callable[[str, str], object] | None = None,
        cancel: threading.Event | None = None,
    ) -> EnvReport:
        """Build the skill's managed environment with the packages the kernel lacks.

        The install passes the gate (``approver``: see *Who approves*; None: the caller
        decided) showing the exact packages; No installs nothing. Built with uv when
        available, else venv + pip, in a user cache folder (``envdirs.envs_root``); it sees
        the kernel's packages. Later runs of the skill's Python scripts use it (after the
        skill's own venv/.venv). ``on_output(stream, text)`` gets the installer's output as
        it arrives. Raises ApprovalDeclined/ApprovalUnavailable or EnvironmentBuildError.
        """
        skill = self.get_skill(skill_name)
        # Checked against the kernel's Python: the env sees the kernel's packages.
        reqs = self._requirements.for_python(skill, sys.executable, envdirs.KERNEL)
        plan = plan_install(skill, reqs, self.audit, rebuild=rebuild, installer=installer)
        if isinstance(plan, EnvReport):
            return plan  # nothing to install
        return self.run_planned(plan, approver, on_output=on_output, cancel=cancel).value

    # -- the pipeline: plan -> gate -> execute -----------------------------------------------

    def _run_settings(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        argv: Any = None,
        overrides: RunOverrides | None = None,
        **keywords: Any,
    ) -> RunSettings:
        """This run's settings: its overrides (:class:`RunOverrides`, or some of its fields
        as keywords; None keeps the setting) resolved once, here (``RunSettings.for_run``);
        a bad one is refused audited, naming the script."""
        return self._planner.checks.settings_for(
            self.settings, skill_name, script, arguments, argv, overrides, **keywords
        )

    def plan(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
        warm: bool | None = None,
    ) -> PlannedRun:
        """Step 1: resolve and check one run (refusals raise, audited), with the request the
        gate will decide on. Pass it to :meth:`run_planned`. ``timeout``, ``sandbox``,
        ``cwd``, ``warm``: as in :meth:`execute_skill_script`."""
        overrides = RunOverrides(timeout, sandbox, cwd, warm)
        settings = self._run_settings(skill_name, script, arguments, argv, overrides)
        return self._planner.plan_script(settings, skill_name, script, arguments, argv=argv)

    def plan_code(
        self, skill: Skill, python: Path, code: str, *, timeout: float | None = None
    ) -> PlannedRun:
        """Step 1 of ``python -c code`` with ``python`` (the skill's venv) in the skill's
        folder (``%%skillpy``, core/run/env/skillpy.py); refusals raise, audited."""
        settings = self._run_settings(skill.name, CODE_LABEL, timeout=timeout)
        return self._planner.plan_code(settings, skill, python, code)

    def plan_references(
        self,
        skill: Skill,
        refs: Sequence[ScriptReference],
        arguments: Any,
        argv_for: Callable[[str], Any],
        *,
        same_argv: bool = True,
    ) -> ReferencePlan:
        """Step 1 of the scripts ``skill``'s SKILL.md references (``%skill_context``,
        core/prompt/context.py): each checked (``argv_for(path)``: its argv), ONE request for those
        that may run; the others are in ``problems``."""
        return self._planner.plan_references(
            self.settings, skill, refs, arguments, argv_for, same_argv=same_argv
        )

    def plan_scope(
        self, skill_name: str, scope: ScopeInfo, *, cwd: CwdArg | None = None
    ) -> ScopePlan | None:
        """Step 1 of the ONE approval for the runs a model will choose within ``scope`` (an
        evaluation, core/lab): every offered script, checked as a run in ``cwd``; None when
        none may run. Its outcome's value is the approver of those later runs."""
        settings = self._run_settings(skill_name, "<scope>", cwd=cwd)
        plan = self._planner.plan_scope(settings, skill_name, scope)
        return ScopePlan(plan) if plan is not None else None

    def run_planned(
        self,
        plan: Plan[V],
        approver: ApproverArg | Answer = MANAGER_APPROVER,
        *,
        caller: Caller | str = Caller.PERSON,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
        trace_content: bool = False,
    ) -> RunOutcome[V]:
        """Steps 2 and 3 for any plan, the one call site (run/pipeline.py): the gate decides
        (``approver`` and ``caller`` as in *Who approves*; an :class:`Answer` is a decision
        already given), then it runs. ``trace_content``: while tracing is on, this call's
        run spans also hold the arguments and output, redacted first (docs/tracing.md).
        Returns the plan's :class:`RunOutcome`; nothing is
        raised for a decline or a refusal (``outcome.raise_if_blocked()`` does, and
        ``outcome.value``, what the plan gave, when nothing ran).

        Blocking (an approver may wait for a person): async callers use
        :meth:`run_planned_async`.
        """
        return self._pipeline.run_planned(
            plan,
            self._approver(approver, caller),
            on_output=on_output,
            cancel=cancel,
            on_start=on_start,
            batch=batch,
            trace_content=trace_content,
        )

    async def run_planned_async(
        self,
        plan: Plan[V],
        approver: ApproverArg | Answer = MANAGER_APPROVER,
        *,
        caller: Caller | str = Caller.PERSON,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
        join_approval: bool = True,
        trace_content: bool = False,
    ) -> RunOutcome[V]:
        """:meth:`run_planned` awaited (the gate and the run in worker threads; cancelling
        the task kills the running process group, see ``Pipeline.run_planned_async``)."""
        return await self._pipeline.run_planned_async(
            plan,
            self._approver(approver, caller),
            on_output=on_output,
            cancel=cancel,
            on_start=on_start,
            batch=batch,
            join_approval=join_approval,
            trace_content=trace_content,
        )

    def execute_skill_script(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        approver: ApproverArg = MANAGER_APPROVER,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
        warm: bool | None = None,
        trace_content: bool = False,
    ) -> ScriptExecutionResult:
        """Run one script: plan -> gate -> execute. Raises before anything runs.

        ``script`` is a stem (``"profile"``), file name (``"profile.py"``) or relative path
        (``"scripts/profile.py"``). ``approver`` defaults to ``self.approver``; None asks
        nobody (you decided). ``sandbox``: this run's mode (None: ``settings.sandbox``).
        ``cwd``: "workspace" (the caller's folder), "skill" or a folder; None: ``run_cwd``.
        ``warm``: start a Python script warm (True) or cold (False); None: ``warm_start``.
        ``result.start`` says how it started. ``trace_content``: while tracing is on, this
        run's span also holds its arguments and output, redacted first (off by default).
        """
        chosen = self._approver(approver, Caller.PERSON)
        overrides = RunOverrides(timeout, sandbox, cwd, warm)
        settings = self._run_settings(skill_name, script, arguments, argv, overrides)
        plan = self._planner.plan_script(
            settings,
            skill_name,
            script,
            arguments,
            argv=argv,
            ask=chosen is not None,  # nobody asked: no request (previews, fingerprint)
        )
        return self._pipeline.run_planned(plan, chosen, trace_content=trace_content).script_result()

    # -- batches: one plan with N items, one approval (core/run/batch/runner.py) -------------

    def plan_map(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        inputs: Any = None,
        *,
        argv: Any = None,
        timeout: float | None = None,
        rows: Sequence[Any] | None = None,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
        warm: bool | None = None,
    ) -> BatchPlan:
        """Step 1 of a batch: check the script and build the ONE request for every item
        (``request.batch``: the item count and the first items). See :meth:`map`.
        ``rows``: with ``argv``, the rows each argv was filled from (shown as the items'
        ``input`` and as columns of ``to_pandas``; nothing of them is sent)."""
        batch = batch_inputs(inputs, argv)  # bad inputs are refused before the checks
        overrides = RunOverrides(timeout, sandbox, cwd, warm)
        settings = self._run_settings(skill_name, script, overrides=overrides)
        plan = self._planner.plan_script(settings, skill_name, script, None)
        return BatchPlan.of(plan, settings, batch, rows)

    def map(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        inputs: Any = None,
        *,
        argv: Any = None,
        max_workers: int | None = None,
        pool: Any = None,
        timeout: float | None = None,
        approver: ApproverArg = MANAGER_APPROVER,
        stop_on_error: bool = False,
        on_result: Callable[[BatchItem], object] | None = None,
        on_progress: Callable[[BatchProgress], object] | None = None,
        cancel: threading.Event | None = None,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
        warm: bool | None = None,
        executor: Any = None,
        trace_content: bool = False,
    ) -> BatchResult:
        """Run ``script`` once per input, concurrently, after ONE approval for them all.

        Exactly one of ``inputs`` (one JSON payload per item, on stdin; a list, any iterable
        or a pandas DataFrame: one object per row) or ``argv`` (one list of strings per
        item). ``max_workers`` defaults to the CPU count; ``pool`` may be any
        ``concurrent.futures.Executor``, a ``dask.distributed.Client`` or a scheduler address
        (``"tcp://host:8786"``). Results come back in input order; a failing item does not
        stop the others unless ``stop_on_error``. Setting ``cancel`` (or Ctrl-C:
        BatchInterrupted, with ``.result``) kills every running process group and marks the
        items not started ``cancelled``. ``on_result(item)`` / ``on_progress(snapshot)`` are
        called from worker threads as items finish. ``approver``, ``sandbox``, ``cwd`` and
        ``warm`` as in execute_skill_script (on remote workers "workspace" is the worker's
        folder; each worker process has its own warm server). Under ``warm_start="auto"``
        a batch of a Python script waits for its warm server: every item starts warm.
        ``executor`` is the deprecated old name of ``pool`` (a DeprecationWarning).
        ``trace_content`` as in execute_skill_script (items run in this process).

        Example (not run as a doctest: it runs scripts)::

            res = manager.map("unit-converter", "convert", df, approver=None)
            res.counts(), res.to_pandas(json=True).head()
        """
        pool = renamed_argument(pool, executor, new="pool=", old="executor=")
        plan = self.plan_map(
            skill_name,
            script,
            inputs,
            argv=argv,
            timeout=timeout,
            sandbox=sandbox,
            cwd=cwd,
            warm=warm,
        )
        options = BatchOptions(max_workers, pool, stop_on_error, on_result, on_progress)
        return self.run_planned(
            plan, approver, cancel=cancel, batch=options, trace_content=trace_content
        ).value

    # -- who approves ------------------------------------------------------------------------

    def approver_for(self, approver: ApproverArg, caller: Caller | str) -> Approver | None:
        """The approver a call is decided by, by the one rule (docs/architecture.md, *Who
        approves*; ``gate.choose_approver``): ``approver`` (MANAGER_APPROVER: this manager's);
        None runs unasked for a person's call and is an approver that refuses for a model's.
        For callers that hand the approver on (the agent loop passes it to every tool call)."""
        return choose_approver(approver, self.approver, Caller(caller))

    def _approver(self, approver: ApproverArg | Answer, caller: Caller | str) -> Any:
        if isinstance(approver, Answer):
            return approver  # a decision already given: the gate settles it
        return self.approver_for(approver, caller)


__all__ = [
    "SkillManager",
    "USE_DEFAULT",
    "MANAGER_APPROVER",
    "default_skill_dirs",
    "examples_dir",
    "ENV_VAR",
    "DEFAULT_SUBDIRS",
]
