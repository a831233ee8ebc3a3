"""Where a batch's items run, and the audit log they write to: ``_Local`` (this process's
threads) and ``_Shipped`` (a process pool or Dask, on the packed skill: ship.py) behind one
interface (window, submit, outcome, cancel) the runner drives; :class:`BatchAudit` keeps
item records within a bound."""

from __future__ import annotations

import logging
import os
import threading
from concurrent.futures import Executor
from typing import Any, Protocol

from skill_magics.core import trace
from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.policy import runs as policy_runs
from skill_magics.core.run.batch.result import BatchItem
from skill_magics.core.run.executor import ScriptExecutor
from skill_magics.core.run.planning.plan import Planner
from skill_magics.core.trace import hooks as traced
from skill_magics.core.trace import names

logger = logging.getLogger("skill_magics.batch")

ITEM_RECORDS = 50  # item audit records kept individually (first ones, then non-completed ones)
DASK_WINDOW = 64  # tasks in flight on a Dask cluster at least (latency, not CPU, bounds it)


class Runner(Protocol):
    """What a backend asks of the BatchRunner that made it (core/run/batch/runner.py, which
    imports this module: a Protocol, not an import back)."""

    @property
    def plan(self) -> Any: ...  # the BatchPlan
    @property
    def approved(self) -> bool: ...
    @property
    def audit(self) -> BatchAudit: ...
    @property
    def batch_id(self) -> str: ...
    @property
    def items(self) -> list[BatchItem | None]: ...
    @property
    def executor(self) -> ScriptExecutor: ...
    @property
    def planner(self) -> Planner: ...

    def item_input(self, index: int) -> tuple[Any, tuple[str, ...] | None]: ...
    def new_item(self, index: int) -> BatchItem: ...
    def finished_value(self, backend: Any, index: int, value: Any) -> None: ...
    def _run_local(self, index: int) -> BatchItem: ...


class BatchAudit(AuditLog):
    """The audit log a batch's executor writes to: item records go on to ``target`` within a
    bound (the first ITEM_RECORDS, then up to ITEM_RECORDS that did not complete), each
    tagged with the batch id and item; the rest are counted for the batch record."""

    def __init__(self, target: AuditLog, batch_id: str, keep: int = ITEM_RECORDS) -> None:
        super().__init__(keep=0)
        self.target = target
        self.batch_id = batch_id
        self.keep = keep
        self.kept = 0
        self.kept_bad = 0
        self.dropped = 0
        self._count_lock = threading.Lock()
        self.local = threading.local()

    def record(self, rec: AuditRecord, index: int | None = None) -> AuditRecord:
        if index is None:
            index = getattr(self.local, "index", None)
        tag = f"batch {self.batch_id} item {index}"
        rec.reason = f"{tag}: {rec.reason}" if rec.reason else tag
        bad = rec.outcome is not AuditOutcome.COMPLETED
        with self._count_lock:
            if self.kept < self.keep:
                self.kept += 1
            elif bad and self.kept_bad < self.keep:
                self.kept_bad += 1
            else:
                self.dropped += 1
                return rec
        return self.target.record(rec)

    @property
    def written(self) -> int:
        return self.kept + self.kept_bad


class _Local:
    """Items run in this process (our thread pool, or a caller's ThreadPoolExecutor)."""

    def __init__(self, runner: Runner, pool: Executor, slots: int, name: str) -> None:
        self.runner = runner
        self.pool = pool
        self.slots = slots
        self.name = name

    @property
    def window(self) -> int:
        """Items in flight at most: enough to keep every slot busy, never all the inputs."""
        return max(16, 4 * self.slots)

    def submit(self, index: int) -> Any:
        item = trace.bind(self.runner._run_local, "batch item", {names.BATCH_INDEX: index})
        return self.pool.submit(item, index)

    def outcome(self, index: int, value: Any) -> BatchItem:
        item: BatchItem = value
        return item

    def cancel(self) -> None:
        pass  # the shared cancel event reaches every running item directly


class _Shipped:
    """Items run elsewhere (a process pool, Dask) on the packed skill (core/run/batch/ship.py)."""

    def __init__(self, runner: Runner, pool: Any, slots: int, name: str) -> None:
        from skill_magics.core.run.batch import ship

        self.runner = runner
        self.slots = slots
        self.name = name
        self.dask: Any = None
        plan = runner.plan
        skill = runner.planner.finder.get_skill(plan.skill_name)
        approved = plan.request.content_hash if runner.approved else None
        bundle = ship.SkillBundle.pack(skill.base_dir, skill.name, approved)
        # Workers get the batch's settings as they are, with the network grants given so far.
        granted = runner.executor.grants.names()
        settings = plan.settings
        if granted:
            settings = settings.updated(
                sandbox_network=tuple(dict.fromkeys((*settings.sandbox_network, *granted)))
            )
        self.signal: Any
        from skill_magics.core.run.batch.dask_backend import (
            DaskCancel,
            DaskSubmitter,
            is_dask_client,
        )

        if is_dask_client(pool):
            self.dask = DaskSubmitter(pool)
            self.signal = DaskCancel(f"skill-magics-cancel-{runner.batch_id}", pool)
            self.signal.clear()
        else:
            self.signal = ship.new_file_flag()
        # The policy in force here now goes with the items: a worker enforces it (ship.py).
        policy = policy_runs.shipped()
        shared = ship.ShippedBatch(
            runner.batch_id, bundle, plan.script, settings, self.signal, policy
        )
        # Each item's span is made here, a child of the batch's, and its W3C context goes
        # with the item: the worker's run (and the script's own spans) join the batch's trace.
        self.parent = trace.capture()
        self.spans: dict[int, Any] = {}
        self.spans_lock = threading.Lock()
        self.pool = pool
        self.shared = self.dask.scatter(shared) if self.dask is not None else shared
        self.run_item = ship.run_shipped_item
        if self.dask is not None:
            self.watch = self._watch_dask
            self._start_collector()

    def _start_collector(self) -> None:
        """One thread takes finished Dask futures with their results as they complete
        (``distributed.as_completed``: results fetched concurrently by the client's event
        loop, not one blocking round trip per item from a callback thread)."""
        from distributed import as_completed

        # On this client's loop: the default client's may be another cluster's, whose
        # closing would leave this batch waiting forever.
        self._completed = as_completed(
            [], loop=self.dask.client.loop, with_results=True, raise_errors=False
        )
        self._index_of: dict[str, int] = {}
        self._index_lock = threading.Lock()
        self._closing = threading.Event()
        self._collector = threading.Thread(
            target=self._collect, name="skill-magics-dask-results", daemon=True
        )
        self._collector.start()

    def _watch_dask(self, future: Any, index: int) -> None:
        with self._index_lock:
            self._index_of[future.key] = index
        self._completed.add(future)

    def _collect(self) -> None:
        while True:
            try:
                future, value = next(self._completed)
            except StopIteration:  # nothing in flight right now
                if self._closing.wait(0.02):
                    return
                continue
            with self._index_lock:
                index = self._index_of.pop(future.key)
            if getattr(future, "status", "") == "error" and isinstance(value, tuple):
                value = value[1]  # (type, exception, traceback) of a task that raised
            self.runner.finished_value(self, index, value)

    @property
    def window(self) -> int:
        # A round trip through a Dask scheduler takes milliseconds: keep enough tasks queued
        # that workers never wait for the next one (still bounded, whatever the input size).
        if self.dask is not None:
            return max(2 * self.slots, DASK_WINDOW)
        return max(1, 2 * self.slots)

    def submit(self, index: int) -> Any:
        args, argv = self.runner.item_input(index)
        where = "dask" if self.dask is not None else "process pool"
        span = trace.span(
            "batch item", {names.BATCH_INDEX: index, names.BATCH_WHERE: where}, parent=self.parent
        )
        carrier = span.traceparent() or None
        with self.spans_lock:
            self.spans[index] = span
        if self.dask is not None:
            return self.dask.submit(
                self.run_item,
                self.shared,
                index,
                args,
                argv,
                carrier,
                key=f"skill-magics-{self.runner.batch_id}-{index}",
            )
        return self.pool.submit(self.run_item, self.shared, index, args, argv, carrier)

    def outcome(self, index: int, value: Any) -> BatchItem:
        for rec in value.records:  # the worker's audit records, into the caller's log
            self.runner.audit.record(rec, index)
        item = self.runner.new_item(index)
        item.status = value.status
        item.result = value.result
        item.message = value.message
        item.worker = value.worker
        self._end_span(item)
        return item

    def _end_span(self, item: BatchItem) -> None:
        """The item's span ends with what came back: the run's end, or why nothing ran."""
        with self.spans_lock:
            span = self.spans.pop(item.index, None)
        if span is None or not span.recording:
            return
        span.update({names.BATCH_WORKER: item.worker or None, names.STATUS: str(item.status)})
        if item.result is not None:
            traced.script_result(span, item.result)
        elif not item.ok:
            span.fail(f"{item.status}: {item.message}")
        span.end()

    def cancel(self) -> None:
        self.signal.set()

    def close(self) -> None:
        with self.spans_lock:  # items that ended without an outcome (cancelled, errors)
            left = sorted(self.spans)
        for index in left:
            item = self.runner.items[index] if index < len(self.runner.items) else None
            self._end_span(item if item is not None else self.runner.new_item(index))
        if self.dask is not None:
            self._closing.set()
            self._collector.join(timeout=10)
            self.signal.clear()
            self.shared = None
        else:
            try:
                os.unlink(self.signal.path)
            except OSError:
                pass


__all__ = ["DASK_WINDOW", "ITEM_RECORDS", "BatchAudit", "Runner"]
