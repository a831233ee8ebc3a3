"""SkillManager: the facade over the catalog, the planner, the gate and the executor.

It holds the settings and wires the four parts together; the work happens in them:

- ``catalog`` (catalog/discovery.py): where skills live, which one wins a name clash;
- ``planner`` (run/plan.py): resolve a run and check it, giving a planned run;
- ``gate`` (run/gate.py): the one place that decides whether it may run;
- ``executor`` (run/executor.py): process group, timeout, capped output, audit.

Example:
    >>> manager = SkillManager(["skills"])           # or SkillManager() for the default dirs
    >>> [m.name for m in manager.list_skills()]
    ['csv-profiler', 'text-tools']
    >>> manager.execute_skill_script("csv-profiler", "profile", {"path": "data/sample.csv"}).json()
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from skill_magics.core import envdirs
from skill_magics.core.audit import AuditLog
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.discovery import (
    DEFAULT_SUBDIRS,
    ENV_VAR,
    DirsArg,
    SkillCatalog,
    default_skill_dirs,
    examples_dir,
)
from skill_magics.core.catalog.hidden import hidden_message, hidden_skills
from skill_magics.core.catalog.requirements import Requirements, skill_requirements
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.errors import SkillMagicsError
from skill_magics.core.interpreters import DEFAULT_ALLOWED, canonical
from skill_magics.core.models import ScriptExecutionResult, ScriptMetadata, SkillMetadata
from skill_magics.core.run.approval import ApprovalRequest, Approver, Decision
from skill_magics.core.run.batch import BatchPlan, BatchProgress, BatchRunner
from skill_magics.core.run.batch_result import BatchItem, BatchResult
from skill_magics.core.run.envsetup import EnvReport, prepare_env
from skill_magics.core.run.executor import PreparedRun, ScriptExecutor
from skill_magics.core.run.gate import ApprovalGate
from skill_magics.core.run.plan import PlannedRun, Planner
from skill_magics.core.run.sandbox import SandboxSettings, check_mode
from skill_magics.core.run.settings import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_TIMEOUT,
    check_max_output_size,
    check_timeout,
)
from skill_magics.core.run.store import ApprovalStore
from skill_magics.core.run.workdir import WORKSPACE, CwdArg, check_cwd
from skill_magics.core.secrets import SecretStore, declared_secrets
from skill_magics.core.status import AuditOutcome


class _UseDefault:
    """The type of USE_DEFAULT: "use manager.approver" (None is a real choice: ask nobody)."""

    def __repr__(self) -> str:
        return "USE_DEFAULT"


USE_DEFAULT = _UseDefault()


class _ExecutorSetting:
    """A manager attribute the executor is built from: assigning it rebuilds the executor."""

    def __init__(self, check: Any = None) -> None:
        self.check = check

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = "_" + name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self if obj is None else getattr(obj, self.attr)

    def __set__(self, obj: Any, value: Any) -> None:
        if self.check is not None:
            self.check(value)  # fail when configured, not at the first run (it is lazy)
        with obj._lock:
            setattr(obj, self.attr, value)
            obj._executor = None


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


def _names(names: Sequence[str] | str) -> tuple[str, ...]:
    # "python3 bash" or "python3,bash" is a list written as one string, not 12 letters.
    if isinstance(names, str):
        return tuple(names.replace(",", " ").split())
    return tuple(str(n) for n in names)


class SkillManager:
    """Find skills in directories (earlier wins a name clash) and run their scripts safely.

    ``skill_dirs`` (paths, or one path) overrides the defaults; ``None`` uses
    :func:`default_skill_dirs`. ``approver=None`` means the Python caller decides: nothing is
    asked. Missing directories are ignored; bad skills are skipped with a warning.
    """

    def __init__(
        self,
        skill_dirs: DirsArg = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE,
        allowed_interpreters: Sequence[str] | None = None,
        approver: Approver | None = None,
        inherit_env: bool = False,
        env_passthrough: Sequence[str] = (),
        audit_log: str | os.PathLike[str] | None = None,
        sandbox: str | None = None,
        sandbox_network: Sequence[str] | str = (),
        sandbox_deny_read: Sequence[str] | str = (),
        sandbox_read: Sequence[str] | str = (),
        run_cwd: CwdArg = WORKSPACE,
    ) -> None:
        self._lock = threading.RLock()
        # Sandbox settings and secret values, shared with the executor (docs/architecture.md,
        # *Sandbox and secrets*). sandbox=None: $SKILL_MAGICS_SANDBOX, else "off".
        self.sandbox_settings = SandboxSettings(
            sandbox, sandbox_network, sandbox_deny_read, sandbox_read
        )
        self.secrets = SecretStore()
        self._requirements: dict[str, tuple[tuple, Requirements]] = {}
        self._hidden: tuple[tuple, list[str]] | None = None
        self._executor: ScriptExecutor | None = None
        self._audit: AuditLog | None = None
        self.catalog = SkillCatalog(skill_dirs)
        self.planner = Planner(self.catalog, lambda: self.executor, lambda: self.audit)
        self.gate = ApprovalGate(self.catalog, lambda: self.audit)
        self.planner.requirements = self.requirements  # requests show what a script lacks
        # Executor settings: assigning any of them later rebuilds the executor on next use.
        self.timeout = timeout
        self.max_output_size = max_output_size
        self.allowed_interpreters = allowed_interpreters
        self.inherit_env = inherit_env
        self.env_passthrough = env_passthrough
        self.audit_log = audit_log
        self.approver: Approver | None = approver
        for name in self.sandbox_settings.network:  # each grant is audited, these too
            self._audit_grant(name, "SkillManager(sandbox_network=...)")
        # Where scripts start: "workspace" (the caller's folder, default), "skill" or a path.
        self.run_cwd = run_cwd

    timeout = _ExecutorSetting(check_timeout)
    max_output_size = _ExecutorSetting(check_max_output_size)
    inherit_env = _ExecutorSetting()
    run_cwd = _ExecutorSetting(check_cwd)

    # -- sandbox and secrets -------------------------------------------------------------------

    @property
    def sandbox(self) -> str:
        """The default sandbox mode of runs: off, read-only, workspace-write or auto."""
        return self.sandbox_settings.mode

    @sandbox.setter
    def sandbox(self, mode: str) -> None:
        self.sandbox_settings.mode = check_mode(mode)

    @property
    def sandbox_network(self) -> tuple[str, ...]:
        """Skills that may use the network in sandboxed runs ("*": every skill)."""
        return self.sandbox_settings.network

    @sandbox_network.setter
    def sandbox_network(self, names: Sequence[str] | str) -> None:
        before = set(self.sandbox_settings.network)
        self.sandbox_settings.network = names
        for name in self.sandbox_settings.network:
            if name not in before:
                self._audit_grant(name, "setting sandbox_network")

    @property
    def sandbox_deny_read(self) -> tuple[str, ...]:
        """Paths no sandboxed run may read, on top of the credential defaults (~ is $HOME)."""
        return self.sandbox_settings.deny_read

    @sandbox_deny_read.setter
    def sandbox_deny_read(self, paths: Sequence[str] | str) -> None:
        self.sandbox_settings.deny_read = _names(paths)

    @property
    def sandbox_read(self) -> tuple[str, ...]:
        """Folders every sandboxed run is given read-only, besides its own (~ is $HOME)."""
        return self.sandbox_settings.read

    @sandbox_read.setter
    def sandbox_read(self, paths: Sequence[str] | str) -> None:
        self.sandbox_settings.read = _names(paths)

    def grant_network(self, skill_name: str, *, by: str = "SkillManager.grant_network") -> None:
        """Let ``skill_name`` use the network in its sandboxed runs this session (audited)."""
        if self.sandbox_settings.grant_network(skill_name):
            self._audit_grant(skill_name, by)

    def _audit_grant(self, skill_name: str, by: str) -> None:
        self.audit.event(
            skill_name,
            "<sandbox>",
            "",
            AuditOutcome.NETWORK_GRANTED,
            reason=f"network granted for sandboxed runs of '{skill_name}' by {by}",
        )

    def provide_secret(self, skill_name: str, name: str, value: str) -> None:
        """Give ``skill_name``'s runs the secret ``name`` (kept in memory for this session only).

        The skill must declare ``name`` (``metadata: {secrets: "NAME ..."}``); the value goes
        only to that skill's runs, and is shown as ``****`` wherever output or audit text
        holds it.

        Example:
            >>> manager.provide_secret("weather", "WEATHER_API_KEY", getpass.getpass())
        """
        declared = declared_secrets(self.get_skill(skill_name).current_metadata())
        if name not in declared:
            shown = ", ".join(declared) or "none"
            raise ValueError(
                f"Skill '{skill_name}' does not declare secret {name!r} (declared: {shown}): add "
                f'it to its SKILL.md as metadata: {{secrets: "{name}"}} or use env_passthrough'
            )
        self.secrets.provide(skill_name, name, value)

    def secret_status(self, skill_name: str) -> dict[str, bool]:
        """Each secret ``skill_name`` declares -> whether a value is set (never the value)."""
        declared = declared_secrets(self.get_skill(skill_name).current_metadata())
        return {name: self.secrets.is_set(skill_name, name) for name in declared}

    @property
    def approvals(self) -> ApprovalStore:
        """Session approvals ("Yes in session"), kept by the gate."""
        return self.gate.store

    @property
    def env_passthrough(self) -> tuple[str, ...]:
        return self._env_passthrough

    @env_passthrough.setter
    def env_passthrough(self, names: Sequence[str] | str) -> None:
        with self._lock:
            self._env_passthrough = _names(names)
            self._executor = None

    @property
    def allowed_interpreters(self) -> tuple[str, ...] | None:
        """Interpreters scripts may use (None: the default python3, bash, sh, node)."""
        return self._allowed_interpreters

    @allowed_interpreters.setter
    def allowed_interpreters(self, names: Sequence[str] | str | None) -> None:
        with self._lock:
            self._allowed_interpreters = None if names is None else _names(names)
            allowed = self._allowed_interpreters or DEFAULT_ALLOWED
            # .ts files count as scripts only when tsx may run them.
            allow_ts = "tsx" in {canonical(a) for a in allowed}
            self.catalog.detector = ScriptDetector(allow_typescript=allow_ts)
            self._executor = None

    @property
    def audit_log(self) -> str | os.PathLike[str] | None:
        """JSONL file every audit record is appended to (None: logging + memory only)."""
        return self._audit_log

    @audit_log.setter
    def audit_log(self, path: str | os.PathLike[str] | None) -> None:
        with self._lock:
            self._audit_log = path
            if self._audit is not None:
                # Keep the history (and the executor's reference): only the file changes.
                self._audit.jsonl_path = Path(path).expanduser() if path is not None else None

    def __repr__(self) -> str:
        return f"SkillManager(skill_dirs={[str(d) for d in self.skill_dirs]!r})"

    # -- the catalog -------------------------------------------------------------------------

    @property
    def skill_dirs(self) -> list[Path]:
        """Directories searched, in precedence order (absolute; may not all exist).

        Assign a new list to replace them all (None: the defaults); the next use rescans.
        """
        return self.catalog.skill_dirs

    @skill_dirs.setter
    def skill_dirs(self, dirs: DirsArg) -> None:
        self.catalog.skill_dirs = dirs

    def add_dir(self, path: str | os.PathLike[str], *, first: bool = False) -> Path:
        """Add a directory (last in precedence, or first with ``first=True``) and rescan."""
        return self.catalog.add_dir(path, first=first)

    def remove_dir(self, path: str | os.PathLike[str]) -> bool:
        """Stop searching a directory and rescan; False when it was not configured."""
        return self.catalog.remove_dir(path)

    def reload(self) -> None:
        """Forget everything loaded and scan the directories again on next use."""
        self.catalog.reload()
        with self._lock:
            self._hidden = None
            self._requirements.clear()

    def list_skills(self) -> list[SkillMetadata]:
        """Every usable skill's metadata, sorted by name. Reads frontmatter only."""
        return self.catalog.list_skills()

    @property
    def warnings(self) -> list[str]:
        """Skipped skills, name clashes and spec warnings, each naming the path and reason;
        and SKILL.md files lying in hidden folders that are not searched (how to add them)."""
        return self.catalog.warnings + self.hidden_warnings()

    def hidden_warnings(self) -> list[str]:
        """One line per search folder with SKILL.md in hidden subfolders (catalog/hidden.py)."""
        dirs = tuple(self.skill_dirs)
        with self._lock:
            if self._hidden is not None and self._hidden[0] == dirs:
                return list(self._hidden[1])
        lines = []
        for root in dirs:
            counts = hidden_skills(root)
            if counts:
                lines.append(hidden_message(root, counts))
        with self._lock:
            self._hidden = (dirs, lines)
        return list(lines)

    def get_skill(self, name: str) -> Skill:
        """The skill called ``name`` (body and scripts load on first use, then cached)."""
        return self.catalog.get_skill(name)

    def resolve_script(
        self, skill_name: str, script: str | os.PathLike[str]
    ) -> tuple[Skill, ScriptMetadata]:
        """(skill, script) for a skill name and a script stem, file name or relative path."""
        return self.catalog.resolve_script(skill_name, script)

    # -- what skills need, and their managed environments -----------------------------------

    def requirements(self, skill_name: str) -> Requirements:
        """Packages and programs the skill's scripts need, checked for the Python that would
        run them (catalog/requirements.py). Nothing is imported or run.

        Cached by the skill's fingerprint, that Python, and the folders it (and PATH) look
        in, so an install or an edit is seen at once.
        """
        skill = self.get_skill(skill_name)
        python, source = envdirs.choose_python(skill.base_dir)
        return self._cached_requirements(skill, python, source)

    def _cached_requirements(self, skill: Skill, python: str, source: str) -> Requirements:
        search = envdirs.import_path(python)
        path_dirs = os.environ.get("PATH", "").split(os.pathsep)
        try:
            content: str | None = skill.content_hash()
        except SkillMagicsError:  # too deep to fingerprint (refused to run): still inspectable
            content = None  # ... but never cached
        key = (
            os.fspath(skill.base_dir),
            content,
            python,
            tuple(_mtime(p) for p in (*search, *path_dirs)),
        )
        cache_key = f"{skill.name}\0{python}"
        with self._lock:
            hit = self._requirements.get(cache_key)
        if content is not None and hit is not None and hit[0] == key:
            return hit[1]
        reqs = skill_requirements(
            skill.name, skill.base_dir, skill.scripts, python=python, python_source=source
        )
        with self._lock:
            if len(self._requirements) > 256:
                self._requirements.clear()
            if content is not None:
                self._requirements[cache_key] = (key, reqs)
        return reqs

    def prepare_env(
        self,
        skill_name: str,
        *,
        approver: Approver | None | _UseDefault = USE_DEFAULT,
        rebuild: bool = False,
        installer: str | None = None,
        on_output: Callable[[str, str], object] | None = None,
        cancel: threading.Event | None = None,
    ) -> EnvReport:
        """Build the skill's managed environment with the packages the kernel lacks.

        The install passes the gate (``approver``; None: the caller decided) showing the
        exact packages; No installs nothing. Built with uv when available, else venv + pip,
        in a user cache folder (``envdirs.envs_root``); it sees the kernel's packages. Later
        runs of the skill's Python scripts use it (after the skill's own venv/.venv).
        ``on_output(stream, text)`` gets the installer's output as it arrives.
        Raises ApprovalDeclined/ApprovalUnavailable or EnvironmentBuildError.
        """
        skill = self.get_skill(skill_name)
        # Checked against the kernel's Python: the env sees the kernel's packages.
        reqs = self._cached_requirements(skill, sys.executable, envdirs.KERNEL)
        report = prepare_env(
            skill,
            reqs,
            self.gate,
            self.audit,
            self._approver(approver),
            rebuild=rebuild,
            installer=installer,
            on_output=on_output,
            cancel=cancel,
        )
        return report

    # -- audit and executor ------------------------------------------------------------------

    @property
    def audit(self) -> AuditLog:
        """The audit log every attempt is recorded in (stdlib logging + optional JSONL)."""
        with self._lock:
            if self._audit is None:
                # No secret value in any record: the log masks every SecretStore's values
                # (this manager's included) before it cuts or keeps a text (core/audit.py).
                self._audit = AuditLog(jsonl_path=self.audit_log)
            return self._audit

    @property
    def executor(self) -> ScriptExecutor:
        """The ScriptExecutor configured from this manager's settings (created on first use)."""
        with self._lock:
            if self._executor is None:
                self._executor = ScriptExecutor(
                    timeout=self.timeout,
                    max_output_size=self.max_output_size,
                    allowed_interpreters=self.allowed_interpreters,
                    inherit_env=self.inherit_env,
                    env_passthrough=self.env_passthrough,
                    audit=self.audit,
                    sandbox=self.sandbox_settings,
                    secrets=self.secrets,
                    run_cwd=self.run_cwd,
                )
                self._executor.on_run = self.gate.keep_session_approval
            return self._executor

    # -- the pipeline: plan -> gate -> execute -----------------------------------------------

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
    ) -> PlannedRun:
        """Step 1: resolve and check one run, with the request the gate will decide on."""
        return self.planner.plan_script(
            skill_name, script, arguments, argv=argv, timeout=timeout, sandbox=sandbox, cwd=cwd
        )

    def execute_skill_script(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        approver: Approver | None | _UseDefault = USE_DEFAULT,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
    ) -> ScriptExecutionResult:
        """Run one script: plan -> gate -> execute. Raises before anything runs.

        ``script`` is a stem (``"profile"``), file name (``"profile.py"``) or relative path
        (``"scripts/profile.py"``). ``approver`` defaults to ``self.approver``; None asks nobody.
        ``sandbox``: this run's mode (None: ``self.sandbox``). ``cwd``: "workspace" (the
        caller's folder), "skill" or a folder; None: ``run_cwd``.
        """
        prepared = self.approved_run(
            skill_name,
            script,
            arguments,
            argv=argv,
            timeout=timeout,
            approver=approver,
            sandbox=sandbox,
            cwd=cwd,
        )
        return self.executor.run(prepared)

    def approved_run(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        approver: Approver | None | _UseDefault = USE_DEFAULT,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
    ) -> PreparedRun:
        """Plan and gate, no run: the checked run for ``executor.run`` / ``run_async``.

        Raises (audited) when a check refuses or the gate says no (ApprovalDeclined,
        ApprovalUnavailable, ApprovalStale). Blocking (file scans, hashing, an approver that
        waits for a person): async callers run it through ``run.bridge.await_in_thread``.
        """
        chosen = self._approver(approver)
        if chosen is None:
            # The caller decided (the gate allows what nobody is asked about): skip building
            # a request (script previews, the skill's fingerprint) that nobody would see.
            return self.prepare_skill_script(
                skill_name,
                script,
                arguments,
                argv=argv,
                timeout=timeout,
                sandbox=sandbox,
                cwd=cwd,
            )
        plan = self.plan(
            skill_name, script, arguments, argv=argv, timeout=timeout, sandbox=sandbox, cwd=cwd
        )
        self.gate.decide(plan.request, chosen).raise_if_blocked()
        return plan.prepared

    # -- batches: one plan with N items, one approval (core/run/batch.py) --------------------

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
    ) -> BatchPlan:
        """Step 1 of a batch: check the script and build the ONE request for every item
        (``request.batch``: the item count and the first items). See :meth:`map`.
        ``rows``: with ``argv``, the rows each argv was filled from (shown as the items'
        ``input`` and as columns of ``to_pandas``; nothing of them is sent)."""
        from dataclasses import replace

        from skill_magics.core.run.batch import batch_inputs, with_batch

        mode, items, columns = batch_inputs(inputs, argv)
        plan = self.plan(
            skill_name, script, None, argv=None, timeout=timeout, sandbox=sandbox, cwd=cwd
        )
        request = with_batch(plan.request, items)
        plan = replace(plan, request=request)
        if rows is not None:
            rows = list(rows)
            if mode != "argv" or len(rows) != len(items):
                raise ValueError("rows= goes with argv=, one row per argv list")
        return BatchPlan(plan, request, items, mode, timeout, columns, rows, sandbox, cwd)

    def map(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        inputs: Any = None,
        *,
        argv: Any = None,
        max_workers: int | None = None,
        executor: Any = None,
        timeout: float | None = None,
        approver: Approver | None | _UseDefault = USE_DEFAULT,
        stop_on_error: bool = False,
        on_result: Callable[[BatchItem], object] | None = None,
        on_progress: Callable[[BatchProgress], object] | None = None,
        cancel: threading.Event | None = None,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
    ) -> BatchResult:
        """Run ``script`` once per input, concurrently, after ONE approval for them all.

        Exactly one of ``inputs`` (one JSON payload per item, on stdin; a list, any iterable
        or a pandas DataFrame: one object per row) or ``argv`` (one list of strings per
        item). ``max_workers`` defaults to the CPU count; ``executor`` may be any
        ``concurrent.futures.Executor``, a ``dask.distributed.Client`` or a scheduler address
        (``"tcp://host:8786"``). Results come back in input order; a failing item does not
        stop the others unless ``stop_on_error``. Setting ``cancel`` (or Ctrl-C:
        BatchInterrupted, with ``.result``) kills every running process group and marks the
        items not started ``cancelled``. ``on_result(item)`` / ``on_progress(snapshot)`` are
        called from worker threads as items finish. ``approver``, ``sandbox`` and ``cwd`` as
        in execute_skill_script (on remote workers "workspace" is the worker's folder).

        Example:
            >>> res = manager.map("unit-converter", "convert", df, approver=None)
            >>> res.counts(), res.to_pandas(json=True).head()
        """
        plan = self.plan_map(
            skill_name, script, inputs, argv=argv, timeout=timeout, sandbox=sandbox, cwd=cwd
        )
        chosen = self._approver(approver)
        if len(plan) and chosen is not None:
            self.gate.decide(plan.request, chosen).raise_if_blocked()
        return self.run_batch(
            plan,
            approved=chosen is not None,
            max_workers=max_workers,
            executor=executor,
            stop_on_error=stop_on_error,
            on_result=on_result,
            on_progress=on_progress,
            cancel=cancel,
        )

    def run_batch(
        self,
        plan: BatchPlan,
        *,
        approved: bool = True,
        max_workers: int | None = None,
        executor: Any = None,
        stop_on_error: bool = False,
        on_result: Callable[[BatchItem], object] | None = None,
        on_progress: Callable[[BatchProgress], object] | None = None,
        cancel: threading.Event | None = None,
    ) -> BatchResult:
        """Steps 3 of a batch the gate already allowed (``approved``: a person approved
        ``plan.request``, so items check that the code is still the approved code)."""
        from skill_magics.core.run.batch import empty_result

        if not len(plan):
            return empty_result(plan)
        client = None
        if isinstance(executor, str):
            from skill_magics.core.run.dask_backend import connect

            executor = client = connect(executor)
        try:
            return BatchRunner(
                plan,
                catalog=self.catalog,
                gate=self.gate,
                executor=self.executor,
                audit=self.audit,
                approved=approved,
                max_workers=max_workers,
                pool=executor,
                stop_on_error=stop_on_error,
                on_result=on_result,
                on_progress=on_progress,
                cancel=cancel,
            ).run()
        finally:
            if client is not None:
                client.close()

    def prepare_skill_script(
        self,
        skill_name: str,
        script: str | os.PathLike[str],
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        sandbox: str | None = None,
        cwd: CwdArg | None = None,
    ) -> PreparedRun:
        """Resolve and check a run without asking anyone or running it (refusals audited).
        A script that does nothing when run is refused (``ScriptMetadata.runnable``)."""
        return self.planner.check_script(
            skill_name, script, arguments, argv, timeout, sandbox=sandbox, cwd=cwd
        )[1]

    def approval_request(
        self,
        skill_name: str,
        scripts: Sequence[ScriptMetadata],
        arguments: Any = None,
        argv: Sequence[str] = (),
        code: str | None = None,
        *,
        prepared: Sequence[PreparedRun | None] | None = None,
    ) -> ApprovalRequest:
        """The request a person would see for ``scripts`` (see ``Planner.request``)."""
        return self.planner.request(skill_name, scripts, arguments, argv, code, prepared=prepared)

    def ask_approval(
        self, request: ApprovalRequest, approver: Approver | None | _UseDefault = USE_DEFAULT
    ) -> Decision | None:
        """Pass ``request`` through the gate and raise when it may not run.

        Returns the decision (None when nobody was asked: ``approver`` None). Declined,
        unavailable or stale approval is audited and raised.
        """
        verdict = self.gate.decide(request, self._approver(approver))
        verdict.raise_if_blocked()
        return verdict.decision

    def request_is_current(self, request: ApprovalRequest) -> bool:
        """Are the skills' files still the ones ``request`` showed?"""
        return self.gate.is_current(request)

    def audit_decision(
        self, request: ApprovalRequest, outcome: AuditOutcome | str, reason: str
    ) -> None:
        """One audit record per script (or the code) of every skill ``request`` covers."""
        self.gate.audit_decision(request, AuditOutcome(outcome), reason)

    def _approver(self, approver: Approver | None | _UseDefault) -> Approver | None:
        return self.approver if isinstance(approver, _UseDefault) else approver


__all__ = [
    "SkillManager",
    "USE_DEFAULT",
    "default_skill_dirs",
    "examples_dir",
    "ENV_VAR",
    "DEFAULT_SUBDIRS",
]
