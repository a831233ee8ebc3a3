"""Batch runs: one script over many inputs, approved once, run concurrently.

docs/architecture.md, *Batch runs*. A batch is one plan with N items (:class:`BatchPlan`):
the script is checked and the request (with ``batch`` = item count and the first items) goes
through the gate ONCE. Then :class:`BatchRunner` runs the items:

- every item is checked like a single run (``Planner.check_resolved`` over the checks in
  checks.py, with the batch's run settings: every check, refusals audited; the skill itself
  is resolved once and again every RESOLVE_S) and launched by the same executor (process
  group, timeout, capped output, minimal environment);
- concurrently: ``max_workers`` threads (default: the CPU count) on this machine, or any
  ``concurrent.futures.Executor``, or Dask (core/run/batch/dask_backend.py); a bounded window of
  items is in flight (4 x slots, at least 16; 64 on Dask), so 10,000 inputs never become
  10,000 queued tasks;
- results come back in input order; a failure or timeout does not stop the others unless
  ``stop_on_error``;
- cancelling (the ``cancel`` event: a Stop button; or KeyboardInterrupt) kills every running
  process group and marks the items that never started ``cancelled``;
- the audit gets the gate's decision, item records (the first ``ITEM_RECORDS`` plus up to
  ``ITEM_RECORDS`` more that did not complete) and ONE batch record with the counts.

Before every local item, right before its process starts, the skill's code must still be
the approved code (``gate.CodeWatch``: a stat per file while nothing moved, else the full
check; stale once, the item and every later one are refused, audited once; ~10-20 us per
item for a small skill, bench/bench_batch.py). Limit: an item already running, or one
starting in the instant between that check and its interpreter reading the files, is not
stopped by a concurrent change (a self-modifying script with several workers).

Items outside this process (a process pool, Dask) run the packed skill folder, checked on
arrival (core/run/batch/ship.py), so workers need not share the caller's filesystem.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any, cast

from skill_magics.core.base.errors import BatchInterrupted, SkillMagicsError
from skill_magics.core.base.jsonable import to_jsonable
from skill_magics.core.base.status import AuditOutcome, RunStatus
from skill_magics.core.run.batch.backends import (
    ITEM_RECORDS,
    BatchAudit,
    _Local,
    _Shipped,
)
from skill_magics.core.run.batch.result import BatchItem, BatchResult
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.gating.approval import BATCH_SAMPLE, ApprovalRequest, BatchInfo
from skill_magics.core.run.gating.gate import ApprovalGate
from skill_magics.core.run.launching import warm_modes
from skill_magics.core.run.planning.plan import PlannedRun, Planner, Resolved
from skill_magics.core.run.planning.runplan import (
    Decided,
    LaunchContext,
    Plan,
    RunOutcome,
    finished,
)
from skill_magics.core.run.planning.settings import RunSettings

logger = logging.getLogger("skill_magics.batch")

RESOLVE_S = 0.25  # how long a batch reuses its skill's resolution (Planner.resolve)


@dataclass(frozen=True)
class BatchProgress:
    """A snapshot for progress bars: counts so far and the time since the start."""

    total: int
    done: int
    failed: int
    running: int
    cancelled: int
    elapsed_s: float

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far (None until something finished)."""
        finished = self.done
        if finished <= 0 or finished >= self.total:
            return None if finished <= 0 else 0.0
        return self.elapsed_s / finished * (self.total - finished)

    def line(self) -> str:
        """``120/200 done · 3 failed · 2 running · 4.1 s elapsed · ETA 2.7 s``"""
        bits = [f"{self.done:,}/{self.total:,} done", f"{self.failed:,} failed"]
        bits.append(f"{self.running:,} running")
        if self.cancelled:
            bits.append(f"{self.cancelled:,} cancelled")
        bits.append(f"{self.elapsed_s:.1f} s elapsed")
        eta = self.eta_s
        if eta is not None and self.done < self.total:
            bits.append(f"ETA {eta:.1f} s")
        return " · ".join(bits)


@dataclass(frozen=True)
class BatchOptions:
    """How a batch runs (``SkillManager.map``): see :class:`BatchRunner`."""

    max_workers: int | None = None
    pool: Any = None  # a concurrent.futures.Executor or a dask.distributed.Client
    stop_on_error: bool = False
    on_result: Callable[[BatchItem], object] | None = None
    on_progress: Callable[[BatchProgress], object] | None = None


@dataclass(frozen=True, kw_only=True)
class BatchPlan(Plan[BatchResult]):
    """A checked script, the inputs, and the ONE request the gate decides on for them all.

    ``mode`` is "arguments" (each item is a JSON payload for stdin) or "argv" (each item is a
    list of command-line words). ``plan`` checked the script itself (path, interpreter,
    allowed-tools); each item is checked again, with its own input, when it runs. Its
    outcome's value: the :class:`BatchResult`. An empty batch asks nobody.
    """

    plan: PlannedRun
    request: ApprovalRequest
    items: Sequence[Any]
    mode: str
    # What every item is checked with, here and on workers: the batch's own settings
    # (its time limit, sandbox, cwd, start: RunSettings.for_run).
    settings: RunSettings
    columns: tuple[str, ...] = ()
    rows: Sequence[Any] | None = None  # argv mode: what each argv was filled from

    @classmethod
    def of(
        cls,
        plan: PlannedRun,
        settings: RunSettings,
        batch: tuple[str, list[Any], tuple[str, ...]],
        rows: Sequence[Any] | None,
    ) -> BatchPlan:
        """The batch of ``plan`` over ``batch`` (what :func:`batch_inputs` made of the
        inputs), its ONE request showing the item count and the first items; ``rows``: with
        argv, one row each argv was filled from (ValueError otherwise)."""
        mode, items, columns = batch
        request = with_batch(plan.requests()[0], items)
        if rows is not None:
            rows = list(rows)
            if mode != "argv" or len(rows) != len(items):
                raise ValueError("rows= goes with argv=, one row per argv list")
        return cls(
            plan=replace(plan, request=request),
            request=request,
            items=items,
            mode=mode,
            settings=settings,
            columns=columns,
            rows=rows,
        )

    @property
    def skill_name(self) -> str:
        return self.plan.skill_name

    @property
    def script(self) -> str:
        return self.plan.script

    def __len__(self) -> int:
        return len(self.items)

    takes_batch_options = True

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return (self.request,) if self.items else ()  # nothing would run: nobody is asked

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[BatchResult]:
        return RunOutcome(decided.verdict, self._run(context, decided.approved))

    def interrupted(
        self, outcome: RunOutcome[BatchResult], error: BaseException
    ) -> BaseException | None:
        if isinstance(error, BatchInterrupted):
            return None
        return BatchInterrupted(BATCH_INTERRUPTED, outcome.value)

    def _run(self, context: LaunchContext, approved: bool) -> BatchResult:
        if not self.items:
            return empty_result(self)
        options = context.batch or BatchOptions()
        pool = client = options.pool
        if isinstance(pool, str):
            from skill_magics.core.run.batch.dask_backend import connect

            pool = client = connect(pool)
        else:
            client = None
        # Approved by someone: items check that the code is still the approved code, and a
        # "Yes in session" is kept (or lapses) once for the whole batch.
        finish = context.keep_session_approval(self.plan.prepared) if approved else None
        try:
            return BatchRunner(
                self,
                planner=context.planner,
                gate=context.gate,
                executor=cast(ScriptExecutor, context.executor),  # the call site's
                approved=approved,
                max_workers=options.max_workers,
                pool=pool,
                stop_on_error=options.stop_on_error,
                on_result=options.on_result,
                on_progress=options.on_progress,
                cancel=context.cancel,
            ).run()
        finally:
            finished(finish)
            if client is not None:
                client.close()


def batch_inputs(inputs: Any, argv: Any) -> tuple[str, list[Any], tuple[str, ...]]:
    """(mode, items, columns) from ``map``'s inputs: exactly one of ``inputs`` (JSON
    payloads: a list, any iterable, or a pandas DataFrame, one JSON object per row converted
    like ``--eval``) or ``argv`` (one list of strings per item)."""
    if (inputs is None) == (argv is None):
        raise ValueError(
            "Give exactly one of inputs= (one JSON payload per item, sent on stdin) or argv= "
            "(one list of strings per item)"
        )
    if argv is not None:
        if isinstance(argv, (str, bytes)):
            raise ValueError(
                "argv= must be a list of argv lists, e.g. [['--n', '1'], ['--n', '2']]"
            )
        return "argv", [_argv_item(a) for a in argv], ()
    if isinstance(inputs, (str, bytes, dict)):
        raise ValueError(
            f"inputs= must be a list (or DataFrame) of payloads, one per item, not a "
            f"{type(inputs).__name__}: wrap a single payload in a list"
        )
    if _is_dataframe(inputs):
        columns = tuple(str(c) for c in inputs.columns)
        return "arguments", to_jsonable(inputs.to_dict(orient="records")), columns
    return "arguments", [to_jsonable(v) for v in inputs], ()


def _argv_item(value: Any) -> tuple[str, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise ValueError(
            f"each argv item must be a list of strings, not {value!r}: e.g. ['--n', '1']"
        )
    return tuple(str(v) if not isinstance(v, str) else v for v in value)


def _is_dataframe(value: Any) -> bool:
    return hasattr(value, "to_dict") and hasattr(value, "columns") and hasattr(value, "iloc")


def with_batch(request: ApprovalRequest, items: Sequence[Any]) -> ApprovalRequest:
    """The request showing how many items run and the first few."""
    sample = tuple(list(v) if isinstance(v, tuple) else v for v in items[:BATCH_SAMPLE])
    return replace(request, batch=BatchInfo(count=len(items), sample=sample))


class BatchRunner:
    """Runs a gated :class:`BatchPlan` (see the module docstring); one use per instance."""

    def __init__(
        self,
        plan: BatchPlan,
        *,
        planner: Planner,
        gate: ApprovalGate,
        executor: ScriptExecutor,
        approved: bool,
        max_workers: int | None = None,
        pool: Any = None,
        stop_on_error: bool = False,
        on_result: Callable[[BatchItem], object] | None = None,
        on_progress: Callable[[BatchProgress], object] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        if max_workers is not None and (not isinstance(max_workers, int) or max_workers < 1):
            raise ValueError(f"max_workers must be a positive integer, not {max_workers!r}")
        self.plan = plan
        # Under "auto" an item waits for its warm server (warm_modes.in_batch): decided once,
        # so each item's PreparedRun is made once, not made and replaced.
        start = warm_modes.in_batch(str(plan.settings.warm_start))
        self._item_settings = plan.settings.updated(warm_start=start)
        self.gate = gate
        self.approved = approved
        self.batch_id = uuid.uuid4().hex[:12]
        self.target_audit = executor.audit
        self.audit = BatchAudit(self.target_audit, self.batch_id)
        # The planner and executor every item uses: the manager's (same checks and caches),
        # writing to the batch's bounded audit. Session approvals are kept once per batch,
        # by the call site around the whole run (pipeline.py).
        self.executor = executor.with_audit(self.audit)
        self.planner = planner.with_audit(self.audit)
        self.max_workers = max_workers
        self.pool = pool
        self.stop_on_error = stop_on_error
        self.on_result = on_result
        self.on_progress = on_progress
        self.cancel = cancel if cancel is not None else threading.Event()
        self.stop_launch = threading.Event()
        self.stopped = ""
        n = len(plan.items)
        self.items: list[BatchItem | None] = [None] * n
        self._lock = threading.Condition()
        self._outstanding = 0
        self._low_water = 0
        self._running = 0
        self._done = 0
        self._failed = 0
        self._cancelled = 0
        self._started = time.monotonic()
        # Before every local item: is the skill's code still the approved code? (gate.py)
        self.watch = gate.watch(plan.request) if approved else None
        self._stale = ""
        self._stale_lock = threading.Lock()
        self._found: tuple[float, Resolved] | None = None

    # -- inputs ------------------------------------------------------------------------------

    def item_input(self, index: int) -> tuple[Any, tuple[str, ...] | None]:
        value = self.plan.items[index]
        if self.plan.mode == "argv":
            return None, tuple(value)
        return value, None

    def new_item(self, index: int) -> BatchItem:
        args, argv = self.item_input(index)
        if self.plan.rows is not None:
            args = self.plan.rows[index]
        return BatchItem(index, args, argv)

    # -- running -----------------------------------------------------------------------------

    def run(self) -> BatchResult:
        backend, owned = self._backend()
        window = backend.window
        self._low_water = window // 2
        n = len(self.items)
        interrupted: BaseException | None = None
        next_index = 0
        try:
            try:
                while next_index < n:
                    with self._lock:
                        while self._outstanding >= window and not self._halted():
                            self._lock.wait(0.25)
                    if self._halted():
                        break
                    self._submit(backend, next_index)
                    next_index += 1
                self._drain(backend)
            except BaseException as exc:  # KeyboardInterrupt (and anything else): stop all
                interrupted = exc
                self.cancel.set()
                self._stop(backend, "interrupted")
                self._drain(backend, protect=True)
        finally:
            if owned is not None:
                owned.shutdown(wait=True, cancel_futures=True)
            if isinstance(backend, _Shipped):
                backend.close()
        if self.cancel.is_set() and not self.stopped:
            self.stopped = "cancelled"  # Stop pressed; everything ended before _drain looked
        result = self._result(backend)
        self._audit_batch(result)
        if interrupted is not None:
            if isinstance(interrupted, KeyboardInterrupt):
                raise BatchInterrupted(
                    f"{result.name}: interrupted; every running process group was killed and "
                    f"{result.counts().get('cancelled', 0):,} items were cancelled",
                    result,
                ) from None
            raise interrupted
        return result

    def _halted(self) -> bool:
        if self.cancel.is_set():
            return True
        return self.stop_launch.is_set()

    def _stop(self, backend: Any, reason: str) -> None:
        if not self.stopped:
            self.stopped = reason
        self.stop_launch.set()
        if self.cancel.is_set():
            backend.cancel()

    def _submit(self, backend: Any, index: int) -> None:
        with self._lock:
            self._outstanding += 1
        try:
            future = backend.submit(index)
        except BaseException:
            with self._lock:
                self._outstanding -= 1
            raise
        watch = getattr(backend, "watch", None)
        if watch is not None:
            watch(future, index)  # a collector thread delivers it (Dask: batched results)
        else:
            future.add_done_callback(lambda f: self._finished(backend, index, f))

    def _drain(self, backend: Any, protect: bool = False) -> None:
        """Wait for every submitted item; a Stop (``cancel``) meanwhile stops them all."""
        while True:
            try:
                with self._lock:
                    if self._outstanding == 0:
                        return
                    self._lock.wait(0.1)
                if self.cancel.is_set() and not self.stopped:
                    self._stop(backend, "cancelled")
            except KeyboardInterrupt:
                if not protect:
                    raise
                self.cancel.set()
                self._stop(backend, "interrupted")

    def _finished(self, backend: Any, index: int, future: Any) -> None:
        """A future's done callback: its item, recorded."""
        try:
            if future.cancelled():
                item = self.new_item(index)
                item.message = "the batch was stopped before this item started"
            else:
                exc = future.exception()
                if exc is not None:
                    item = self.new_item(index)
                    item.status = RunStatus.ERROR
                    item.message = f"{type(exc).__name__}: {exc}"
                else:
                    item = backend.outcome(index, future.result())
        except BaseException as exc:  # noqa: BLE001 - a result must be recorded whatever
            item = self.new_item(index)
            item.status = RunStatus.ERROR
            item.message = f"{type(exc).__name__}: {exc}"
        self.record(item)

    def finished_value(self, backend: Any, index: int, value: Any) -> None:
        """An item's outcome as a collector got it (a value, or the exception it raised)."""
        if isinstance(value, BaseException):
            item = self.new_item(index)
            if type(value).__name__ == "CancelledError":
                item.message = "the batch was stopped before this item started"
            else:
                item.status = RunStatus.ERROR
                item.message = f"{type(value).__name__}: {value}"
        else:
            try:
                item = backend.outcome(index, value)
            except Exception as exc:  # noqa: BLE001 - a result must be recorded whatever
                item = self.new_item(index)
                item.status = RunStatus.ERROR
                item.message = f"{type(exc).__name__}: {exc}"
        self.record(item)

    def record(self, item: BatchItem) -> None:
        """Keep a finished item, count it, call back, and free its slot in the window."""
        index = item.index
        self.items[index] = item
        with self._lock:
            self._done += 1
            if item.status is RunStatus.CANCELLED:
                self._cancelled += 1
            elif not item.ok:
                self._failed += 1
        if self.stop_on_error and not item.ok and item.status is not RunStatus.CANCELLED:
            if not self.stopped:
                self.stopped = f"item {index} {item.status} (stop_on_error)"
            self.stop_launch.set()
        try:
            if self.on_result is not None:
                self.on_result(item)
            self._progress()
        except Exception:  # noqa: BLE001 - a broken callback must not hang the batch
            logger.warning("batch %s: on_result/on_progress failed", self.batch_id, exc_info=True)
        finally:
            with self._lock:
                self._outstanding -= 1
                # Wake the submitting thread only when half the window is free (or all of
                # it): one wake-up per item costs two GIL hand-overs per short script.
                if self._outstanding <= self._low_water:
                    self._lock.notify_all()

    def _run_local(self, index: int) -> BatchItem:
        item = self.new_item(index)
        if self._halted():
            item.message = "the batch was stopped before this item started"
            return item
        args, argv = self.item_input(index)
        with self._lock:
            self._running += 1
        try:
            self._progress()
        except Exception:  # noqa: BLE001 - a broken callback must not stop the item
            logger.warning("batch %s: on_progress failed", self.batch_id, exc_info=True)
        self.audit.local.index = index
        try:
            try:
                _, prepared = self.planner.check_resolved(
                    self._item_settings, self._resolved(args, argv), args, argv
                )
                # As late as possible: right before this item's process starts.
                stale = self._check_current()
                if stale:
                    item.status, item.message = RunStatus.REFUSED, stale
                    return item
                result = self.executor.run(prepared, cancel=self.cancel)
            except SkillMagicsError as exc:  # refused before spawning (audited)
                item.status, item.message = RunStatus.REFUSED, str(exc)
                return item
            item.result = result
            stopped = self.cancel.is_set() and not result.success
            item.status = RunStatus.INTERRUPTED if stopped else result.status
            return item
        finally:
            with self._lock:
                self._running -= 1

    def _resolved(self, args: Any, argv: tuple[str, ...] | None) -> Resolved:
        """The skill and script, resolved once and again every RESOLVE_S (a change of code
        in between is refused by :meth:`_check_current`, before every item): the file
        checks still run for every item (Planner.check_resolved)."""
        now = time.monotonic()
        with self._lock:
            found = self._found
            fresh = found is not None and now - found[0] < RESOLVE_S
        if fresh:
            assert found is not None
            return found[1]
        resolved = self.planner.resolve(
            self.plan.skill_name, self.plan.script, args, argv, repair=False
        )
        with self._lock:
            self._found = (now, resolved)
        return resolved

    def _check_current(self) -> str:
        """'' while the skill's code is the approved code (asked before every item: a stat
        per file while nothing changed, gate.CodeWatch), else why the item is refused: code
        that changed mid-batch was not approved. The first refusal is audited."""
        if self.watch is None or self.watch.current():
            return ""
        with self._stale_lock:
            if self._stale:
                return self._stale
            if self.plan.request.mcp is not None:
                # Items share one verified copy of an MCP skill: any file written into it
                # (by an item, or anyone) makes it unverified, and nothing runs on that.
                self._stale = (
                    f"{self.plan.skill_name}: its cached copy changed during the batch (a "
                    "script that writes beside itself? have it write into its working "
                    "directory or $SKILL_WORKSPACE); the remaining items were refused, "
                    "nothing ran on unverified files. The next run fetches the copy again"
                )
            else:
                self._stale = (
                    f"{self.plan.skill_name}: the skill's code changed during the batch; the "
                    "remaining items were refused. Run the batch again to review the new code"
                )
        self.audit.event(
            self.plan.skill_name,
            self.plan.script,
            None,
            AuditOutcome.REFUSED,
            reason=f"ApprovalStale: {self._stale}",
        )
        return self._stale

    def _progress(self) -> None:
        if self.on_progress is None:
            return
        self.on_progress(self.progress())

    def progress(self) -> BatchProgress:
        with self._lock:
            running = (
                self._running
                if isinstance(self.pool, (ThreadPoolExecutor, type(None)))
                else (self._outstanding)
            )
            return BatchProgress(
                total=len(self.items),
                done=self._done,
                failed=self._failed,
                running=running,
                cancelled=self._cancelled,
                elapsed_s=time.monotonic() - self._started,
            )

    # -- backends ----------------------------------------------------------------------------

    def _backend(self) -> tuple[Any, ThreadPoolExecutor | None]:
        pool = self.pool
        cpus = os.cpu_count() or 1
        if pool is None:
            workers = self.max_workers or cpus
            owned = ThreadPoolExecutor(workers, thread_name_prefix="skill-magics-batch")
            return _Local(self, owned, workers, "local pool"), owned
        if isinstance(pool, ThreadPoolExecutor):
            slots = self.max_workers or int(getattr(pool, "_max_workers", None) or cpus)
            return _Local(self, pool, slots, "ThreadPoolExecutor"), None
        from skill_magics.core.run.batch.dask_backend import is_dask_client

        if is_dask_client(pool):
            from skill_magics.core.run.batch.dask_backend import DaskSubmitter

            slots = self.max_workers or DaskSubmitter(pool).slots
            return _Shipped(self, pool, slots, DaskSubmitter(pool).describe()), None
        if isinstance(pool, Executor):
            slots = self.max_workers or int(getattr(pool, "_max_workers", None) or cpus)
            return _Shipped(self, pool, slots, type(pool).__name__), None
        raise ValueError(
            f"pool= must be a concurrent.futures.Executor, a dask.distributed.Client or a "
            f"scheduler address, not {type(pool).__name__}"
        )

    # -- the end -----------------------------------------------------------------------------

    def _result(self, backend: Any) -> BatchResult:
        items = []
        for i, item in enumerate(self.items):
            if item is None:  # never submitted: the batch stopped first
                item = self.new_item(i)
                item.message = "the batch was stopped before this item started"
            items.append(item)
        return BatchResult(
            skill=self.plan.skill_name,
            script=self.plan.script,
            items=items,
            wall_s=time.monotonic() - self._started,
            workers=backend.slots,
            pool=backend.name,
            stopped=self.stopped,
            batch_id=self.batch_id,
            records_kept=self.audit.written,
            records_dropped=self.audit.dropped,
            columns=self.plan.columns,
        )

    def _audit_batch(self, result: BatchResult) -> None:
        counts = result.counts()
        if result.stopped:
            outcome = AuditOutcome.INTERRUPTED
        elif result.ok:
            outcome = AuditOutcome.COMPLETED
        else:
            outcome = AuditOutcome.FAILED
        summary = ", ".join(f"{n} {s}" for s, n in counts.items()) or "no items"
        reason = (
            f"batch {self.batch_id} of {len(result):,} items on {result.pool}: {summary}"
            f"{'; stopped: ' + result.stopped if result.stopped else ''}; item records: "
            f"{self.audit.written} written, {self.audit.dropped} summarised here"
        )
        self.target_audit.event(
            self.plan.skill_name,
            self.plan.script,
            f"batch of {len(result):,} items",
            outcome,
            reason=reason,
            duration_ms=result.wall_s * 1000,
        )


BATCH_INTERRUPTED = "interrupted: every running process group was killed, the rest cancelled"


def empty_result(plan: BatchPlan) -> BatchResult:
    return BatchResult(plan.skill_name, plan.script, [], columns=plan.columns)


__all__ = [
    "BatchAudit",
    "BatchOptions",
    "BatchPlan",
    "BatchProgress",
    "BatchRunner",
    "ITEM_RECORDS",
    "batch_inputs",
    "empty_result",
    "with_batch",
]
