"""The one call site: a planned thing goes through the gate, then runs, with one result shape.

Every run goes plan -> gate -> execute (docs/architecture.md). Step 1 is the planner's
(plan.py: one script, a skill's referenced scripts, code in a skill's venv; batch/runner.py: a
batch; env/install.py: an environment install; an :class:`ActionPlan`: skill files to install,
core/sources; a :class:`ScopePlan`: a model's later runs). Each kind is a
:class:`~.runplan.Plan`: it says what it asks the gate and how it launches. Steps 2 and 3
are here, and only here, the same for every kind: :meth:`Pipeline.run_planned` and
:meth:`Pipeline.run_planned_async` drive one generator (:meth:`Pipeline._steps`, written
once) that asks the gate about the plan's requests (gate.py) and, when something may run,
calls the plan's ``launch``; the plan's :class:`~.runplan.RunOutcome` comes back. Every
capability and magic reaches it through ``SkillManager.run_planned``, which resolves who
approves (``gate.choose_approver``); nothing else calls the gate or the executor
(tests/test_call_site.py checks it).

Example (not run as a doctest: it runs a skill's script)::

    plan = manager.plan("csv-profiler", "profile", {"path": "data/sample.csv"})
    outcome = manager.run_planned(plan, approver=lambda request: "yes_once")
    outcome.status, outcome.result.json()
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from skill_magics.core.run.batch.runner import BatchOptions
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.gating.approval import Answer, ApprovalRequest, Approver
from skill_magics.core.run.gating.gate import ALLOWED, ApprovalGate
from skill_magics.core.run.planning.plan import PlannedRun, Planner
from skill_magics.core.run.planning.runplan import (
    UNASKED,
    Asking,
    Decided,
    Launch,
    LaunchContext,
    OnOutput,
    Plan,
    RunOutcome,
    one_request,
)
from skill_magics.core.trace import hooks as traced

V = TypeVar("V")


@dataclass(frozen=True)
class ActionPlan(Plan[Any]):
    """A planned thing whose step 3 starts no process (skill files to install from a
    source, core/sources): its ``requests`` (one per skill) are decided with ONE question,
    and only when every one may go ahead does the call site call ``act()``; what it returns
    is the outcome's ``value``, and ``parts`` hold one outcome per request. No requests:
    nobody is asked."""

    asks: tuple[ApprovalRequest, ...]
    act: Callable[[], Any]

    asking = Asking.TOGETHER

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return self.asks

    def held(self, decided: Decided) -> RunOutcome[Any]:
        parts: tuple[RunOutcome[Any], ...] = tuple(
            RunOutcome(v) for v in decided.each(len(self.asks))
        )
        return RunOutcome(decided.verdict, parts=parts)  # one No: nothing of it happens

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[Any]:
        parts: tuple[RunOutcome[Any], ...] = tuple(
            RunOutcome(v) for v in decided.each(len(self.asks))
        )
        return RunOutcome(ALLOWED, self.act(), parts=parts)


@dataclass(frozen=True)
class ScopePlan(Plan[Approver]):
    """The ONE approval for runs a *model* will choose later within ``request.scope`` (an
    evaluation, core/lab): step 2 is the gate's scope decision (``gate.decide_scope``);
    nothing runs now. The outcome's ``value`` is the approver every later run of that scope
    is decided by, through this same call site (it answers from this decision and never
    asks again), also after a No."""

    plan: PlannedRun  # every offered script, checked (Planner.plan_scope)

    asking = Asking.SCOPE

    @property
    def request(self) -> ApprovalRequest:
        return one_request(self.plan.request)

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return (self.request,)

    def ready(self, decided: Decided) -> bool:
        return False  # nothing runs now: the decision is the outcome

    def held(self, decided: Decided) -> RunOutcome[Approver]:
        return RunOutcome(decided.verdict, decided.scoped)

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[Approver]:
        raise TypeError("a scope launches nothing now: its runs come later, each decided")


Planned = Plan[Any]
# The approver as the call site takes it: resolved (gate.choose_approver), None for "nobody
# is asked", or an Answer already given (a click on a panel after its cell returned).
Decider = Approver | Answer | None


@dataclass(frozen=True)
class _Work:
    """One blocking step the generator asks its driver to do: ``asking`` (the gate, which
    may wait for a person) or the launch."""

    work: Callable[[], Any]
    asking: bool


async def _launched(
    plan: Plan[V], work: Callable[[], RunOutcome[V]], stop: threading.Event
) -> RunOutcome[V]:
    """Await a plan's launch; cancelled after the launch returned (it stopped at ``stop``),
    the plan may say what to raise instead (a batch: BatchInterrupted with its result)."""
    done: list[RunOutcome[V]] = []

    def launch() -> RunOutcome[V]:
        done.append(work())
        return done[0]

    try:
        return await await_in_thread(launch, stop)
    except BaseException as exc:
        instead = plan.interrupted(done[0], exc) if done else None
        if instead is not None:
            raise instead from exc
        raise


def _abandon(steps: Generator[Any, Any, Any], error: BaseException) -> None:
    """The steps of a call whose await raised ``error`` (a cancelled task): raised into
    them, so what they hold (the call's span) ends with it; what they raise is dropped."""
    try:
        steps.throw(error)
    except BaseException:  # noqa: BLE001 - the caller re-raises ``error`` itself
        pass


class Pipeline:
    """Steps 2 and 3 for every planned thing (see the module docstring). One per manager."""

    def __init__(self, planner: Planner, gate: ApprovalGate, executor: ScriptExecutor) -> None:
        self.planner = planner
        self.gate = gate
        self.executor = executor

    # -- the call ----------------------------------------------------------------------------

    def run_planned(
        self,
        plan: Plan[V],
        approver: Decider,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
        trace_content: bool = False,
    ) -> RunOutcome[V]:
        """Ask the gate about ``plan`` (``approver``: who answers; None: nobody is asked, the
        caller decided; an :class:`Answer`: the answer was already given), then run it.

        ``on_start()`` is called once when it may run, just before the first launch;
        ``on_output(stream, text)`` gets the output as it arrives (scripts, an installer);
        setting ``cancel`` stops the running process group and starts nothing more.
        ``trace_content``: while tracing is on, this call's run spans hold the arguments and
        output too (redacted first; core/trace/hooks.py).
        A RunInterrupted from the approver, and KeyboardInterrupt (the group killed first;
        a batch raises BatchInterrupted with its result), propagate.
        """
        context = self._context(plan, on_output, cancel, batch)
        steps = self._steps(plan, approver, context, on_start, trace_content)
        answer: Any = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration as stop:
                return stop.value
            try:
                answer = step.work()
            except BaseException as exc:  # an interrupt, a refusal: the steps end with it
                _abandon(steps, exc)
                raise

    async def run_planned_async(
        self,
        plan: Plan[V],
        approver: Decider,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
        on_start: Callable[[], object] | None = None,
        batch: BatchOptions | None = None,
        join_approval: bool = True,
        trace_content: bool = False,
    ) -> RunOutcome[V]:
        """:meth:`run_planned`, awaited: the gate and then the launch run in worker threads
        (``bridge.await_in_thread``) while the caller's event loop keeps running; ``on_start``
        is called on the loop, between the two.

        Cancelling the awaiting task sets ``cancel``: a wait for approval ends (an approver
        watching ``cancel``), a running process group is killed and nothing more starts;
        then the cancellation is re-raised (a batch raises BatchInterrupted with its partial
        result). ``join_approval=False``: do not wait for an approver that may not watch
        ``cancel`` (nothing has started yet; its late answer is dropped).
        """
        stop = cancel if cancel is not None else threading.Event()
        context = self._context(plan, on_output, stop, batch)
        steps = self._steps(plan, approver, context, on_start, trace_content)
        answer: Any = None
        while True:
            try:
                step = steps.send(answer)
            except StopIteration as ended:
                return ended.value
            try:
                if step.asking:
                    answer = await await_in_thread(step.work, stop, join=join_approval)
                else:
                    answer = await _launched(plan, step.work, stop)
            except BaseException as exc:  # cancelled, interrupted: the steps end with it
                _abandon(steps, exc)
                raise

    # -- steps 2 and 3, written once ------------------------------------------------------

    def _steps(
        self,
        plan: Plan[V],
        approver: Decider,
        context: LaunchContext,
        on_start: Callable[[], object] | None,
        trace_content: bool = False,
    ) -> Generator[_Work, Any, RunOutcome[V]]:
        span = traced.root(plan, trace_content)  # the call's root span; no-op when off
        try:
            decide = span.within(
                lambda: traced.approval(plan, lambda: self._decide(plan, approver))
            )
            decided: Decided = yield _Work(decide, asking=True)
            if not plan.ready(decided):
                traced.outcome(span, held := plan.held(decided))
                return held
            if on_start is not None:
                on_start()
            launch = span.within(lambda: plan.launch(context, decided))
            outcome: RunOutcome[V] = yield _Work(launch, asking=False)
            traced.outcome(span, outcome)
            return outcome
        except GeneratorExit:
            raise
        except BaseException as exc:  # raised into the steps: an awaiting task was cancelled
            span.fail(traced.failure_line(exc))
            raise
        finally:
            span.end()  # whatever happened (a second end does nothing)

    def _context(
        self,
        plan: Plan[Any],
        on_output: OnOutput | None,
        cancel: threading.Event | None,
        batch: BatchOptions | None,
    ) -> LaunchContext:
        if batch is not None and not plan.takes_batch_options:
            raise TypeError("batch= goes with a BatchPlan (SkillManager.plan_map)")
        return LaunchContext(self.gate, self.executor, self.planner, on_output, cancel, batch)

    def _decide(self, plan: Plan[Any], approver: Decider) -> Decided:
        """Step 2: the gate's verdicts on the plan's requests, asked as the plan says."""
        if plan.asking is Asking.SCOPE:
            if isinstance(approver, Answer):
                raise TypeError("a scope is decided by an approver, not an Answer given before")
            (request,) = plan.requests()
            verdict, scoped = self.gate.decide_scope(request, approver)
            return Decided((verdict,), scoped)
        if approver is None:
            # The caller decided (a person's own call): nobody is asked, nothing is audited
            # (gate.decide with no approver says the same).
            return UNASKED
        requests = plan.requests()
        if not requests:
            return UNASKED  # nothing to ask about
        if isinstance(approver, Answer):
            if plan.asking is not Asking.ONE or len(requests) != 1:
                raise TypeError("an Answer settles one request, not a group of plans")
            return Decided((self.gate.settle(requests[0], approver.decision, approver.by),))
        if plan.asking is Asking.TOGETHER:
            return Decided(tuple(self.gate.decide_each(list(requests), approver)))
        return Decided((self.gate.decide(requests[0], approver),))


__all__ = [
    "ActionPlan",
    "BatchOptions",
    "Decider",
    "Launch",
    "Pipeline",
    "Plan",
    "Planned",
    "RunOutcome",
    "ScopePlan",
]
