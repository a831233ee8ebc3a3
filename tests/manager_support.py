"""Helpers for tests that drive a real SkillManager or ScriptExecutor (no tests in here).

Real files in tmp dirs (conftest's ``make_skill``), a real SkillManager, real approvers (plain
callables that record), and short ways to read what the audit log recorded.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from skill_magics.core.base.audit import AuditLog
from skill_magics.core.run.gating.approval import (
    ApprovalRequest,
    Decision,
    ScriptToApprove,
    scripts_content_hash,
)

posix_only = pytest.mark.skipif(
    sys.platform == "win32", reason="POSIX files, symlinks, shebangs, signals and process groups"
)


class RecordingApprover:
    """An approver that answers ``decision`` (or raises ``error``) and remembers every request."""

    def __init__(
        self, decision: Decision | str = Decision.YES_ONCE, error: Exception | None = None
    ):
        self.decision = decision
        self.error = error
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision | str:
        self.requests.append(request)
        if self.error is not None:
            raise self.error
        return self.decision


OVERRIDES = ("timeout", "sandbox", "cwd", "warm")  # RunSettings.for_run's per-run values


def manager_for(*dirs: Path, **kwargs):
    from skill_magics.core.manager import SkillManager

    return SkillManager([os.fspath(d) for d in dirs], **kwargs)


def request_of(manager, skill_name: str, scripts, arguments=None, argv=(), code=None):
    """The request a person would see for ``scripts`` (the planner's, with the manager's
    current settings): what a plan carries."""
    planner = manager._planner
    return planner.approval_request(manager.settings, skill_name, scripts, arguments, argv, code)


def run_plan(manager, plan, **kwargs):
    """A plan made earlier, through the production path (the call site; nobody asked):
    the ScriptExecutionResult, or the refusal at launch raised."""
    return manager.run_planned(plan, None, **kwargs).script_result()


def outcomes(manager) -> list[str]:
    """The outcome of every audit record of ``manager``, oldest first."""
    return [r.outcome for r in manager.audit.records()]


def refusals(manager_or_log) -> list:
    """The ``refused`` audit records of a SkillManager (or of an AuditLog)."""
    log = manager_or_log if isinstance(manager_or_log, AuditLog) else manager_or_log.audit
    return [r for r in log.records() if r.outcome == "refused"]


def last(executor):
    """The newest audit record of a Runner (or anything with an ``audit`` log)."""
    return executor.audit.records()[-1]


class Runner:
    """The production path from the checks down, for the tests that name a script file and
    its skill directly (what the planner does once the catalog found them): a real
    SkillManager's checks (run/planning/checks.py) with its run settings, then its one call site
    (``run_planned``: the gate, nobody asked; the session-approval bookkeeping; the
    executor's launch with the re-check of the file), everything audited in its log.

    ``settings`` are RunSettings fields; by default runs start in the skill folder, unboxed.
    ``execute`` = ``run(prepare(...))``, the shapes of the old ``ScriptExecutor`` calls.
    """

    def __init__(self, use_cache: bool = True, **settings):
        from skill_magics.core.manager import SkillManager
        from skill_magics.core.run.planning.settings import RunSettings

        values = {"run_cwd": "skill", "sandbox": "off", **settings}
        self.manager = SkillManager([], settings=RunSettings(**values))
        self.manager._planner.checks.use_cache = use_cache

    @property
    def audit(self) -> AuditLog:
        return self.manager.audit

    @property
    def settings(self):
        return self.manager.settings

    def prepare(self, script_path, arguments, skill_base_dir, skill_metadata, **kwargs):
        """The checks: a PreparedRun, or the refusal raised (audited). The per-run
        overrides (timeout, sandbox, cwd, warm) become this run's settings, as the manager
        makes them (RunSettings.for_run, a bad one refused audited)."""
        checks = self.manager._planner.checks
        overrides = {k: kwargs.pop(k) for k in OVERRIDES if k in kwargs}
        name = getattr(skill_metadata, "name", "?")
        settings = checks.settings_for(
            self.settings, name, script_path, arguments, kwargs.get("argv"), **overrides
        )
        return checks.script(
            settings, script_path, arguments, skill_base_dir, skill_metadata, **kwargs
        )

    def prepare_command(self, argv, **kwargs):
        checks = self.manager._planner.checks
        overrides = {k: kwargs.pop(k) for k in OVERRIDES if k in kwargs}
        meta = kwargs["skill_metadata"]
        settings = checks.settings_for(
            self.settings, meta.name, kwargs.get("label", ""), None, None, **overrides
        )
        return checks.command(settings, argv, **kwargs)

    def run(self, prepared, **kwargs):
        """Through the call site: the result, or the refusal at launch raised."""
        from skill_magics.core.run.planning.plan import PlannedRun

        return self.manager.run_planned(
            PlannedRun(None, (prepared,)), None, **kwargs
        ).script_result()

    async def run_async(self, prepared, *, poll: float | None = None, **kwargs):
        from skill_magics.core.run.planning.plan import PlannedRun

        plan = PlannedRun(None, (prepared,))
        outcome = await self.manager.run_planned_async(plan, None, **kwargs)
        return outcome.script_result()

    def execute(
        self,
        script_path,
        arguments,
        skill_base_dir,
        skill_metadata,
        timeout=None,
        *,
        on_output=None,
        cancel=None,
        **kwargs,
    ):
        prepared = self.prepare(
            script_path, arguments, skill_base_dir, skill_metadata, timeout=timeout, **kwargs
        )
        return self.run(prepared, on_output=on_output, cancel=cancel)


def request_for(skill_dir: Path, name: str = "demo") -> ApprovalRequest:
    """A request for scripts/a.py and scripts/b.sh of ``skill_dir`` (conftest's ``skill_dir``)."""
    scripts = ["scripts/a.py", "scripts/b.sh"]
    return ApprovalRequest(
        skill_name=name,
        scripts=tuple(ScriptToApprove(p, "python3") for p in scripts),
        arguments={"x": 1},
        content_hash=scripts_content_hash(skill_dir, scripts),
    )


class BadRepr:
    """A value whose repr() and str() raise: previews and messages must survive it."""

    def __repr__(self) -> str:
        raise RuntimeError("repr boom")

    __str__ = __repr__
