"""What every kind of plan is to the call site: what it asks the gate, how it launches.

The call site (pipeline.py) runs any plan the same way: it asks the gate about the plan's
:meth:`Plan.requests` the way :attr:`Plan.asking` says (one question for one request, one
question for several, or the ONE approval of a scope), then, when :meth:`Plan.ready` says
something may run, calls :meth:`Plan.launch` with a :class:`LaunchContext` (the executor, the
gate's bookkeeping, the caller's ``on_output`` and ``cancel``). Every kind returns a
:class:`RunOutcome` typed by what it gives: a script plan its launches, a batch its
:class:`~.batch.result.BatchResult`, an install its report.

The kinds: :class:`~.plan.PlannedRun` (one script, a skill's referenced scripts, code in a
skill's env), :class:`~.plan.PlanGroup` (several skills' plans, one question),
:class:`~.batch.runner.BatchPlan`, :class:`~.env.install.InstallPlan`, and in pipeline.py
:class:`~.pipeline.ActionPlan` (skill files to install) and :class:`~.pipeline.ScopePlan`
(a model's later runs). A new kind is one subclass of :class:`Plan`: its ``requests()``
and its ``launch()``; nothing else changes.
"""

from __future__ import annotations

import enum
import logging
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.status import RunStatus
from skill_magics.core.run.gating.approval import ApprovalRequest
from skill_magics.core.run.gating.gate import ALLOWED, ApprovalGate, Verdict

if TYPE_CHECKING:
    from skill_magics.core.base.audit import AuditLog
    from skill_magics.core.run.launching.prepared import PreparedRun

logger = logging.getLogger("skill_magics.pipeline")

V = TypeVar("V")
OnOutput = Callable[[str, str], object]

NOT_STARTED = "Interrupted before this script started; nothing ran"


class Asking(enum.Enum):
    """How a plan's requests are put to the gate (step 2)."""

    ONE = "one"  # one request, one question (an Answer given before may settle it)
    TOGETHER = "together"  # several requests, ONE question (gate.decide_each)
    SCOPE = "scope"  # the ONE approval of a model's later runs (gate.decide_scope)


@dataclass(frozen=True)
class Decided:
    """What the gate said about a plan: one verdict per request, in order (``()`` when
    nobody was asked: the caller decided, or there was nothing to ask); ``scoped``: a
    scope's approver for its later runs."""

    verdicts: tuple[Verdict, ...] = ()
    scoped: Any = None

    @property
    def verdict(self) -> Verdict:
        """The first verdict that blocks, else the first (ALLOWED when nobody was asked)."""
        return self.blocked or (self.verdicts[0] if self.verdicts else ALLOWED)

    @property
    def blocked(self) -> Verdict | None:
        return next((v for v in self.verdicts if not v.allowed), None)

    @property
    def approved(self) -> bool:
        """Did someone approve it (not merely: nobody was asked)?"""
        return any(v.decision is not None for v in self.verdicts)

    def each(self, count: int) -> tuple[Verdict, ...]:
        """One verdict per request (ALLOWED for each when nobody was asked)."""
        return self.verdicts if self.verdicts else (ALLOWED,) * count


UNASKED = Decided()


class _Unset:
    def __repr__(self) -> str:
        return "<nothing ran>"


NOTHING: Any = _Unset()


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
class RunOutcome(Generic[V]):
    """What became of a planned thing: the gate's ``verdict`` and, when it ran, its
    ``value``: what the plan's kind gives (a script plan: its launches; a batch: its
    result; an install: its report; an ActionPlan: what ``act()`` returned; a scope: the
    approver of its later runs).

    ``launches`` line up with a PlannedRun's ``runs``; ``parts`` hold one outcome per plan
    of a PlanGroup (per request of an ActionPlan, whose ``verdict`` is then the first that
    blocks).
    """

    verdict: Verdict
    got: V = field(default=NOTHING, repr=False)
    launches: tuple[Launch, ...] = ()
    parts: tuple[RunOutcome[Any], ...] = ()

    @property
    def value(self) -> V:
        """What the plan gave; raises as :meth:`raise_if_blocked` when nothing ran."""
        if self.got is NOTHING:
            self.raise_if_blocked()
            raise SkillMagicsError("Nothing ran: the plan gave no value")
        return self.got

    @property
    def allowed(self) -> bool:
        """Did the gate let it run?"""
        return self.verdict.allowed

    @property
    def why_not(self) -> tuple[RunStatus, str] | None:
        """(status, message) when the gate said no (declined, approval_unavailable,
        pending, refused); None when it let the plan run."""
        status = self.verdict.status
        return None if status is None else (status, self.verdict.message)

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


class Executes(Protocol):
    """What a plan's launch asks of the executor (executor.ScriptExecutor, which imports this
    stage: the plan kinds name what they use instead of importing it)."""

    audit: AuditLog

    def run(
        self,
        prepared: PreparedRun,
        *,
        on_output: OnOutput | None = None,
        cancel: threading.Event | None = None,
    ) -> ScriptExecutionResult: ...


@dataclass
class LaunchContext:
    """What a plan's launch may use (step 3): the executor, the gate's bookkeeping around a
    run, the planner (a batch re-checks each item), and the caller's ``on_output``,
    ``cancel`` and ``batch`` options. Made by the call site for one run."""

    gate: ApprovalGate
    executor: Executes  # the call site's ScriptExecutor
    planner: Any  # plan.Planner (which imports this module): a batch re-checks each item
    on_output: OnOutput | None = None
    cancel: threading.Event | None = None
    batch: Any = None  # pipeline.BatchOptions: how a batch runs

    def run_each(self, runs: Sequence[PreparedRun]) -> tuple[Launch, ...]:
        """The runs in order; ``cancel`` set stops the running one and starts no more."""
        cancel = self.cancel
        launches = []
        for prepared in runs:
            if cancel is not None and cancel.is_set():
                launches.append(Launch(RunStatus.INTERRUPTED, message=NOT_STARTED))
                continue
            # A "Yes in session" survives what the run writes as data, lapses on code.
            finish = self.keep_session_approval(prepared)
            try:
                result = self.executor.run(prepared, on_output=self.on_output, cancel=cancel)
            except SkillMagicsError as exc:  # refused at launch (audited): nothing started
                launches.append(Launch(RunStatus.REFUSED, message=str(exc), error=exc))
                continue
            finally:
                finished(finish)
            stopped = cancel is not None and cancel.is_set()
            launches.append(Launch(RunStatus.INTERRUPTED if stopped else result.status, result))
        return tuple(launches)

    def keep_session_approval(self, prepared: PreparedRun) -> Callable[[], object] | None:
        """Note the skill's files before a run (gate.keep_session_approval); call
        :func:`finished` with what it returns after the run."""
        try:
            return self.gate.keep_session_approval(prepared)
        except Exception:  # noqa: BLE001 - bookkeeping must not stop the run
            logger.warning("noting the skill's files before the run failed", exc_info=True)
            return None


def finished(finish: Callable[[], object] | None) -> None:
    """After a run: keep (or let lapse) the session approval noted before it."""
    if finish is None:
        return
    try:
        finish()
    except Exception:  # noqa: BLE001 - bookkeeping must not replace the result
        logger.warning("keeping the session approval failed", exc_info=True)


class Plan(ABC, Generic[V]):
    """A planned thing the call site can run (see the module docstring): step 1 made it;
    ``requests()`` is what it asks the gate, ``launch()`` how it runs once allowed."""

    asking: ClassVar[Asking] = Asking.ONE
    takes_batch_options: ClassVar[bool] = False  # run_planned(..., batch=BatchOptions)

    @abstractmethod
    def requests(self) -> tuple[ApprovalRequest, ...]:
        """What the gate is asked about (ValueError when the plan was made without one:
        nobody can be asked about it). ``()``: nothing to ask, nobody is asked."""

    @abstractmethod
    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[V]:
        """Step 3, once :meth:`ready`: run it (in a worker thread on the async path)."""

    def ready(self, decided: Decided) -> bool:
        """May anything of it run? (Default: no request was refused.) When not, the
        outcome is :meth:`held`'s and nothing is launched."""
        return decided.blocked is None

    def held(self, decided: Decided) -> RunOutcome[V]:
        """The outcome when nothing of it may run: the verdict that blocks it."""
        return RunOutcome(decided.verdict)

    def interrupted(self, outcome: RunOutcome[V], error: BaseException) -> BaseException | None:
        """The exception to raise instead of ``error`` when the awaiting task was cancelled
        after the launch returned ``outcome`` (None: re-raise ``error``)."""
        return None


def one_request(request: ApprovalRequest | None) -> ApprovalRequest:
    """A plan's request, or the one-line error of a plan made without one."""
    if request is None:
        raise ValueError(
            "This plan was made without an approval request (ask=False), so nobody can "
            "be asked about it: plan it again with ask=True"
        )
    return request


__all__ = [
    "Asking",
    "Executes",
    "Decided",
    "Launch",
    "LaunchContext",
    "Plan",
    "RunOutcome",
    "UNASKED",
    "finished",
    "one_request",
]
