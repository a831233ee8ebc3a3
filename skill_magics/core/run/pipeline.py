"""The one call site: a planned thing goes through the gate, then runs, with one result shape.

Every run goes plan -> gate -> execute (docs/architecture.md). Step 1 is the planner's
(plan.py: one script, a skill's referenced scripts, code in a skill's venv; batch.py: a
batch; envsetup.py: an environment install; an :class:`ActionPlan`: skill files to install,
core/sources). Steps 2 and 3 are here, and only here:
:meth:`Pipeline.run_planned` (and its async twin) asks the gate about the plan's request
(gate.py) and, when it may run, launches it (executor.py for processes, the batch runner for
batches, envsetup.install for an install), and returns a :class:`RunOutcome`. Every
capability and magic reaches it through ``SkillManager.run_planned``, which resolves who
approves (``gate.choose_approver``); nothing else calls the gate or the executor
(tests/test_call_site.py checks it).

Example (not run as a doctest: it runs a skill's script)::

    plan = manager.plan("csv-profiler", "profile", {"path": "data/sample.csv"})
    outcome = manager.run_planned(plan, approver=lambda request: "yes_once")
    outcome.status, outcome.result.json()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from skill_magics.core.errors import BatchInterrupted, SkillMagicsError
from skill_magics.core.models import ScriptExecutionResult
from skill_magics.core.run.approval import Answer, ApprovalRequest, Approver
from skill_magics.core.run.batch import BatchPlan, BatchProgress, BatchRunner, empty_result
from skill_magics.core.run.batch_result import BatchItem, BatchResult
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.checks import PreparedRun
from skill_magics.core.run.envsetup import EnvReport, InstallPlan, install
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.gate import ALLOWED, ApprovalGate, Verdict
from skill_magics.core.run.plan import PlanGroup, PlannedRun, Planner
from skill_magics.core.status import RunStatus

logger = logging.getLogger("skill_magics.pipeline")


@dataclass(frozen=True)
class ActionPlan:
    """A planned thing whose step 3 starts no process (skill files to install from a
    source, core/sources): ``requests`` (one per skill) are decided with ONE question, and
    only when every one may go ahead does the call site call ``act()``; what it returns is
    the outcome's ``value``. No requests: nobody is asked."""

    requests: tuple[ApprovalRequest, ...]
    act: Callable[[], Any]


@dataclass(frozen=True)
class ScopePlan:
    """The ONE approval for runs a *model* will choose later within ``plan.request.scope``
    (an evaluation, core/lab): step 2 is the gate's scope decision (``gate.decide_scope``);
    nothing runs now. The outcome's ``value`` is the approver every later run of that scope
    is decided by, through this same call site (it answers from this decision and never
    asks again), also after a No."""

    plan: PlannedRun


Planned = PlannedRun | PlanGroup | BatchPlan | InstallPlan | ActionPlan | ScopePlan
# The approver as the call site takes it: resolved (gate.choose_approver), None for "nobody
# is asked", or an Answer already given (a click on a panel after its cell returned).
Decider = Approver | Answer | None
OnOutput = Callable[[str, str], object]

NOT_STARTED = "Interrupted before this script started; nothing ran"
BATCH_INTERRUPTED = "interrupted: every running process group was killed, the rest cancelled"


@dataclass(frozen=True)
class Launch:
    """One process a plan started (or would have): how it ended.

    ``status`` is the result's (completed, failed, timeout, signaled), ``interrupted`` when
    ``cancel`` stopped it or it never started, or ``refused`` when the launch itself refused
    (the file changed after the checks, a secret is missing): ``error`` is that exception.
    """

    status: RunStatus
    result: ScriptExecutionResult | None = None
    message: str = ""
    error: SkillMagicsError | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class RunOutcome:
    """What became of a planned thing: the gate's ``verdict`` and, when it ran, what ran.

    ``launches`` line up with a PlannedRun's ``runs``; ``batch`` is a batch's result;
    ``env`` an install's report; ``value`` an ActionPlan's; ``parts`` one outcome per plan of
    a PlanGroup (per request of an ActionPlan, whose ``verdict`` is then the first that
    blocks).
    """

    verdict: Verdict
    launches: tuple[Launch, ...] = ()
    batch: BatchResult | None = None
    env: EnvReport | None = None
    parts: tuple[RunOutcome, ...] = ()
    value: Any = None  # what an ActionPlan's act() returned

    @property
    def allowed(self) -> bool:
        """Did the gate let it run?"""
        return self.verdict.allowed

    @property
    def status(self) -> RunStatus | None:
        """Why nothing ran (declined, approval_unavailable, pending, refused), else how the
        first launch ended (None: it ran, and nothing is a single launch)."""
        if not self.verdict.allowed:
            return self.verdict.status
        return self.launches[0].status if self.launches else None

    @property
    def message(self) -> str:
        if not self.verdict.allowed:
            return self.verdict.message
        return self.launches[0].message if self.launches else ""

    @property
    def pending(self) -> object | None:
        """The open question (an approval panel) when the status is ``pending``."""
        return self.verdict.pending

    @property
    def result(self) -> ScriptExecutionResult | None:
        """The first launch's result (None: nothing ran)."""
        return self.launches[0].result if self.launches else None

    def raise_if_blocked(self) -> None:
        """For callers that raise (the Python API): ApprovalDeclined / ApprovalUnavailable /
        ApprovalStale when the gate said no, the launch's own error when it refused."""
        self.verdict.raise_if_blocked()
        for launch in self.launches:
            if launch.error is not None:
                raise launch.error

    def script_result(self) -> ScriptExecutionResult:
        """The one script's result; raises as :meth:`raise_if_blocked` when there is none."""
        self.raise_if_blocked()
        result = self.result
        if result is None:  # a plan without runs: never made by the planner
            raise SkillMagicsError("Nothing ran: the plan had no script to run")
        return result


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs (``SkillManager.map``): see :class:`~.batch.BatchRunner`."""

    max_workers: int | None = None
    pool: Any = None  # a concurrent.futures.Executor or a dask.distributed.Client
    stop_on_error: bool = False
    on_result: Callable[[BatchItem], object] | None = None
    on_progress: Callable[[BatchProgress], object] | None = None


class Pipeline:
    """Steps 2 and 3 for every planned thing (see the module docstring). One per manager."""

    def __init__(self, planner: Planner, gate: ApprovalGate, executor: ScriptExecutor) -> None:
        self.planner = planner
        self.gate = gate
        self.executor = executor

    # -- the call ----------------------------------------------------------------------------

    def run_planned(
        self,
        plan: Planned,
        approver: Decider,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
    ) -> RunOutcome:
        """Ask the gate about ``plan`` (``approver``: who answers; None: nobody is asked, the
        caller decided; an :class:`Answer`: the answer was already given), then run it.

        ``on_start()`` is called once when it may run, just before the first launch;
        ``on_output(stream, text)`` gets the output as it arrives (scripts, an installer);
        setting ``cancel`` stops the running process group and starts nothing more.
        A RunInterrupted from the approver, and KeyboardInterrupt (the group killed first;
        a batch raises BatchInterrupted with its result), propagate.
        """
        if isinstance(plan, ScopePlan):
            return self._scope(plan, approver)
        verdicts = self._decide(plan, approver)
        if isinstance(plan, ActionPlan):
            return self._act(plan, verdicts, on_start)
        if isinstance(plan, PlanGroup):
            if on_start is not None and any(v.allowed for v in verdicts):
                on_start()
            return self._run_group(plan, verdicts, on_output, cancel)
        (verdict,) = verdicts
        if not verdict.allowed:
            return RunOutcome(verdict)
        if on_start is not None:
            on_start()
        return self._launch(plan, verdict, on_output, cancel, batch)

    async def run_planned_async(
        self,
        plan: Planned,
        approver: Decider,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
        join_approval: bool = True,
    ) -> RunOutcome:
        """:meth:`run_planned`, awaited: the gate and then the launches run in worker threads
        (``bridge.await_in_thread``) while the caller's event loop keeps running; ``on_start``
        is called on the loop, between the two.

        Cancelling the awaiting task sets ``cancel``: a wait for approval ends (an approver
        watching ``cancel``), a running process group is killed and nothing more starts;
        then the cancellation is re-raised (a batch raises BatchInterrupted with its partial
        result). ``join_approval=False``: do not wait for an approver that may not watch
        ``cancel`` (nothing has started yet; its late answer is dropped).
        """
        if cancel is None:
            cancel = threading.Event()
        stop = cancel
        if isinstance(plan, ScopePlan):
            scope = plan
            return await await_in_thread(
                lambda: self._scope(scope, approver), stop, join=join_approval
            )
        verdicts = await await_in_thread(
            lambda: self._decide(plan, approver), stop, join=join_approval
        )
        if isinstance(plan, ActionPlan):
            blocked = _first_blocked(verdicts)
            if blocked is not None:
                return RunOutcome(blocked, parts=tuple(RunOutcome(v) for v in verdicts))
            return await await_in_thread(lambda: self._act(plan, verdicts, on_start), stop)
        if not any(v.allowed for v in verdicts):
            if not isinstance(plan, PlanGroup):
                return RunOutcome(verdicts[0])
        elif on_start is not None:
            on_start()
        if isinstance(plan, PlanGroup):
            return await await_in_thread(
                lambda: self._run_group(plan, verdicts, on_output, stop), stop
            )
        if not isinstance(plan, BatchPlan):
            return await await_in_thread(
                lambda: self._launch(plan, verdicts[0], on_output, stop, batch), stop
            )
        done: list[RunOutcome] = []

        def work() -> RunOutcome:
            done.append(self._launch(plan, verdicts[0], on_output, stop, batch))
            return done[0]

        try:
            return await await_in_thread(work, stop)
        except BaseException as exc:
            partial = done[0].batch if done else None
            if partial is not None and not isinstance(exc, BatchInterrupted):
                raise BatchInterrupted(BATCH_INTERRUPTED, partial) from exc
            raise

    # -- step 2 ------------------------------------------------------------------------------

    def _decide(
        self, plan: PlannedRun | PlanGroup | BatchPlan | InstallPlan | ActionPlan, approver: Decider
    ) -> list[Verdict]:
        if isinstance(plan, ActionPlan):
            requests = list(plan.requests)
        else:
            plans: tuple[PlannedRun | BatchPlan | InstallPlan, ...]
            plans = plan.plans if isinstance(plan, PlanGroup) else (plan,)
            if isinstance(plan, BatchPlan) and not len(plan):
                return [ALLOWED]  # nothing would run: nobody is asked
            requests = [_request(p) for p in plans] if approver is not None else []
            if approver is None:
                return [ALLOWED] * len(plans)
        if approver is None or not requests:
            # The caller decided (a person's own call), or nothing to ask about: nobody is
            # asked, nothing is audited (gate.decide with no approver says the same).
            return [ALLOWED] * len(requests)
        if isinstance(approver, Answer):
            if len(requests) != 1 or isinstance(plan, (PlanGroup, ActionPlan)):
                raise TypeError("an Answer settles one request, not a group of plans")
            return [self.gate.settle(requests[0], approver.decision, approver.by)]
        if isinstance(plan, (PlanGroup, ActionPlan)):
            return self.gate.decide_each(requests, approver)
        return [self.gate.decide(requests[0], approver)]

    def _scope(self, plan: ScopePlan, approver: Decider) -> RunOutcome:
        if isinstance(approver, Answer):
            raise TypeError("a scope is decided by an approver, not an Answer given before")
        verdict, scoped = self.gate.decide_scope(_request(plan.plan), approver)
        return RunOutcome(verdict, value=scoped)

    def _act(
        self,
        plan: ActionPlan,
        verdicts: list[Verdict],
        on_start: Callable[[], object] | None,
    ) -> RunOutcome:
        parts = tuple(RunOutcome(v) for v in verdicts)
        blocked = _first_blocked(verdicts)
        if blocked is not None:
            return RunOutcome(blocked, parts=parts)  # one No: nothing of it happens
        if on_start is not None:
            on_start()
        return RunOutcome(ALLOWED, parts=parts, value=plan.act())

    # -- step 3 ------------------------------------------------------------------------------

    def _keep_session_approval(self, prepared: PreparedRun) -> Callable[[], object] | None:
        try:
            return self.gate.keep_session_approval(prepared)
        except Exception:  # noqa: BLE001 - bookkeeping must not stop the run
            logger.warning("noting the skill's files before the run failed", exc_info=True)
            return None

    def _launch(
        self,
        plan: Planned,
        verdict: Verdict,
        on_output: OnOutput | None,
        cancel: threading.Event | None,
        batch: BatchOptions | None,
    ) -> RunOutcome:
        if isinstance(plan, BatchPlan):
            return RunOutcome(verdict, batch=self._batch(plan, verdict, batch, cancel))
        if batch is not None:
            raise TypeError("batch= goes with a BatchPlan (SkillManager.plan_map)")
        if isinstance(plan, InstallPlan):
            report = install(plan, self.executor.audit, on_output=on_output, cancel=cancel)
            # Other packages run the skill's code now: its "Yes in session" ends.
            self.gate.environment_rebuilt(plan.skill.name, str(report.path))
            return RunOutcome(verdict, env=report)
        if isinstance(plan, PlannedRun):
            return RunOutcome(verdict, self._run_each(plan, on_output, cancel))
        raise TypeError(f"Nothing to run for a {type(plan).__name__}")

    def _run_each(
        self,
        plan: PlannedRun,
        on_output: OnOutput | None,
        cancel: threading.Event | None,
    ) -> tuple[Launch, ...]:
        """The plan's runs in order; ``cancel`` set stops the running one and starts no more."""
        launches = []
        for prepared in plan.runs:
            if cancel is not None and cancel.is_set():
                launches.append(Launch(RunStatus.INTERRUPTED, message=NOT_STARTED))
                continue
            # A "Yes in session" survives what the run writes as data, lapses on code.
            finish = self._keep_session_approval(prepared)
            try:
                result = self.executor.run(prepared, on_output=on_output, cancel=cancel)
            except SkillMagicsError as exc:  # refused at launch (audited): nothing started
                launches.append(Launch(RunStatus.REFUSED, message=str(exc), error=exc))
                continue
            finally:
                _finish(finish)
            stopped = cancel is not None and cancel.is_set()
            launches.append(Launch(RunStatus.INTERRUPTED if stopped else result.status, result))
        return tuple(launches)

    def _run_group(
        self,
        group: PlanGroup,
        verdicts: list[Verdict],
        on_output: OnOutput | None,
        cancel: threading.Event | None,
    ) -> RunOutcome:
        parts = []
        for plan, verdict in zip(group.plans, verdicts, strict=True):
            if verdict.allowed and verdict.decision is not None and plan.request is not None:
                # Other skills' scripts may have run since the decision: still approved files?
                verdict = self.gate.check_current(plan.request)
            if not verdict.allowed:
                parts.append(RunOutcome(verdict))
                continue
            parts.append(RunOutcome(verdict, self._run_each(plan, on_output, cancel)))
        return RunOutcome(ALLOWED, parts=tuple(parts))

    def _batch(
        self,
        plan: BatchPlan,
        verdict: Verdict,
        options: BatchOptions | None,
        cancel: threading.Event | None,
    ) -> BatchResult:
        if not len(plan):
            return empty_result(plan)
        options = options or BatchOptions()
        pool = client = options.pool
        if isinstance(pool, str):
            from skill_magics.core.run.dask_backend import connect

            pool = client = connect(pool)
        else:
            client = None
        # Approved by someone: items check that the code is still the approved code, and a
        # "Yes in session" is kept (or lapses) once for the whole batch.
        approved = verdict.decision is not None
        finish = self._keep_session_approval(plan.plan.prepared) if approved else None
        try:
            return BatchRunner(
                plan,
                planner=self.planner,
                gate=self.gate,
                executor=self.executor,
                approved=approved,
                max_workers=options.max_workers,
                pool=pool,
                stop_on_error=options.stop_on_error,
                on_result=options.on_result,
                on_progress=options.on_progress,
                cancel=cancel,
            ).run()
        finally:
            _finish(finish)
            if client is not None:
                client.close()


def _finish(finish: Callable[[], object] | None) -> None:
    if finish is None:
        return
    try:
        finish()
    except Exception:  # noqa: BLE001 - bookkeeping must not replace the result
        logger.warning("keeping the session approval failed", exc_info=True)


def _first_blocked(verdicts: list[Verdict]) -> Verdict | None:
    return next((v for v in verdicts if not v.allowed), None)


def _request(plan: PlannedRun | BatchPlan | InstallPlan) -> ApprovalRequest:
    request = plan.request
    if request is None:
        raise ValueError(
            "This plan was made without an approval request (request=False), so nobody can "
            "be asked about it: plan it again with request=True"
        )
    return request


__all__ = [
    "ActionPlan",
    "BatchOptions",
    "Decider",
    "Launch",
    "Pipeline",
    "Planned",
    "RunOutcome",
    "ScopePlan",
]
