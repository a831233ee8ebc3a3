"""BatchResult: what ``SkillManager.map`` returns, one item per input, in input order.

A value object (plain Python): a sequence of :class:`BatchItem`, counts per status,
``.failed()``, ``.to_pandas()`` and a text summary. The notebook layer adds the HTML and
widget views (notebook/render/batch.py) without this module knowing about them.

Example (not run as a doctest: it runs a batch of scripts)::

    res = manager.map("unit-converter", "convert", [{"value": 1}, {"value": 2}])
    res.counts()
    # -> {'completed': 2}
    res[0].json(), len(res), res.failed()
    # -> ({'result': 0.62}, 2, [])
    res.to_pandas(json=True).columns.tolist()
    # -> ['value', 'status', 'exit_code', 'duration_ms', 'stdout', 'stderr', 'result']
"""

from __future__ import annotations

import json
import warnings
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

from skill_magics.core.base.deprecation import deprecation_message
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.secrets import cut_known, redact_known
from skill_magics.core.base.status import RunStatus

# The statuses a batch item ends with, in the order summaries list them.
ITEM_STATUSES = (
    RunStatus.COMPLETED,
    RunStatus.FAILED,
    RunStatus.TIMEOUT,
    RunStatus.SIGNALED,
    RunStatus.INTERRUPTED,
    RunStatus.REFUSED,
    RunStatus.ERROR,
    RunStatus.CANCELLED,
)
TEXT_ROWS = 5  # rows of items and of failures a text summary shows


EMPTY = "nothing to run: 0 rows"  # an empty input: no rate, no workers to report


@dataclass
class BatchItem:
    """One input of a batch and how its run ended.

    ``input`` is the JSON payload sent on stdin (arguments mode), or in argv mode the row
    the argv was filled from (None without one); ``argv`` the command-line words (argv
    mode) or None. ``result`` is None when nothing ran (refused,
    cancelled, error); ``message`` then says why. ``worker`` names where it ran ("" for this
    process; a Dask worker's address).
    """

    index: int
    input: Any = None
    argv: tuple[str, ...] | None = None
    status: RunStatus = RunStatus.CANCELLED
    result: ScriptExecutionResult | None = None
    message: str = ""
    worker: str = ""

    @property
    def ok(self) -> bool:
        return self.status is RunStatus.COMPLETED

    @property
    def stdout(self) -> str:
        return self.result.stdout if self.result is not None else ""

    @property
    def stderr(self) -> str:
        return self.result.stderr if self.result is not None else ""

    @property
    def exit_code(self) -> int | None:
        return self.result.exit_code if self.result is not None else None

    @property
    def duration_ms(self) -> float | None:
        return self.result.execution_time_ms if self.result is not None else None

    def json(self) -> Any:
        """Parse stdout as JSON (``json.JSONDecodeError``; ValueError when nothing ran)."""
        if self.result is None:
            raise ValueError(f"item {self.index} did not run ({self.status}): {self.message}")
        return json.loads(self.result.stdout)

    def describe_input(self) -> str:
        """The input as one line to show: its argv words, or its JSON (secret values
        masked: views cut this line)."""
        if self.argv is not None:
            return " ".join(redact_known(str(a)) for a in self.argv)
        try:
            return redact_known(json.dumps(self.input, ensure_ascii=False, default=str))
        except (TypeError, ValueError):
            return redact_known(repr(self.input))

    def __repr__(self) -> str:
        code = "" if self.exit_code is None else f" exit_code={self.exit_code}"
        return f"<BatchItem {self.index} {self.status}{code}>"


@dataclass
class BatchResult(Sequence[BatchItem]):
    """Every item of one batch, in input order, with the batch's wall time.

    ``stopped`` is set when the batch was cancelled (Stop, interrupt) or stopped at the first
    failure (``stop_on_error``): the items that never started are ``cancelled``.
    """

    skill: str
    script: str
    items: list[BatchItem]
    wall_s: float = 0.0
    workers: int = 0
    pool: str = "local"  # what ran the items: "local pool", "ThreadPoolExecutor", "dask (...)"
    stopped: str = ""  # why the batch stopped early ("" when every item got its turn)
    batch_id: str = ""
    records_kept: int = 0  # item audit records written (bounded, see core/run/batch/runner.py)
    records_dropped: int = 0  # item audit records summarised in the batch record instead
    columns: tuple[str, ...] = field(default=(), repr=False)  # input fields, for to_pandas

    # -- the sequence -------------------------------------------------------------------

    @overload
    def __getitem__(self, index: int) -> BatchItem: ...

    @overload
    def __getitem__(self, index: slice) -> list[BatchItem]: ...

    def __getitem__(self, index: int | slice) -> BatchItem | list[BatchItem]:
        return self.items[index]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[BatchItem]:
        return iter(self.items)

    @property
    def executor(self) -> str:
        """Deprecated: the old name of :attr:`pool` (a DeprecationWarning)."""
        warnings.warn(
            deprecation_message("BatchResult.executor", "BatchResult.pool"),
            DeprecationWarning,
            stacklevel=2,
        )
        return self.pool

    # -- summaries ----------------------------------------------------------------------

    def counts(self) -> dict[str, int]:
        """Items per status, only statuses that occur, in ITEM_STATUSES order."""
        seen = Counter(str(item.status) for item in self.items)
        order = [str(s) for s in ITEM_STATUSES]
        return {s: seen[s] for s in order + sorted(set(seen) - set(order)) if seen[s]}

    def failed(self) -> list[BatchItem]:
        """Every item that did not complete (failed, timeout, refused, cancelled, ...)."""
        return [item for item in self.items if not item.ok]

    @property
    def ok(self) -> bool:
        """True when every item completed."""
        return all(item.ok for item in self.items)

    @property
    def throughput(self) -> float:
        """Items that ran (finished with a result) per second of wall time."""
        ran = sum(1 for item in self.items if item.result is not None)
        return ran / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def warm_starts(self) -> int:
        """Items whose process was forked from a warm server (core/run/launching/warm/)."""
        return sum(1 for item in self.items if getattr(item.result, "start", "") == "warm")

    @property
    def name(self) -> str:
        stem = self.script.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        return f"{self.skill}.{stem}"

    def summary_line(self) -> str:
        """``unit-converter.convert: 200 items, 197 completed, 2 failed, 1 timeout in 3.1 s
        (64.5 items/s, 2 workers)``; ``NAME: nothing to run: 0 rows`` for an empty input."""
        if not self.items and not self.stopped:
            return f"{self.name}: {EMPTY}"
        counts = ", ".join(f"{n:,} {s}" for s, n in self.counts().items()) or "nothing ran"
        warm_note = f", {self.warm_starts:,} started warm" if self.warm_starts else ""
        line = (
            f"{self.name}: {len(self):,} items, {counts} in {self.wall_s:.2f} s "
            f"({self.throughput:.1f} items/s, {self.workers} workers on {self.pool}{warm_note})"
        )
        if self.stopped:
            line += f"; stopped: {self.stopped}"
        return line

    def text(self, rows: int = TEXT_ROWS) -> str:
        """The terminal view: summary line, the first rows, then the first failures."""
        lines = [self.summary_line()]
        if self.items:
            lines.append("first items:")
            lines += [_text_row(item) for item in self.items[:rows]]
        failed = self.failed()
        if failed:
            lines.append(f"failures ({len(failed):,}; .failed() lists them all):")
            lines += [_text_row(item, show_error=True) for item in failed[:rows]]
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()

    # -- pandas -------------------------------------------------------------------------

    def to_pandas(self, json: bool = False) -> Any:
        """One row per item: the input's fields (or ``argv``), status, exit_code,
        duration_ms, stdout, stderr (and ``message`` when something did not run).

        ``json=True`` parses each stdout as JSON and adds the keys of an object as columns
        (a non-object value goes to a ``json`` column; stdout that does not parse leaves them
        empty). Needs pandas.
        """
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("BatchResult.to_pandas needs pandas: pip install pandas") from None
        rows = []
        for item in self.items:
            row: dict[str, Any] = {}
            if isinstance(item.input, dict):
                row.update(item.input)
            elif item.input is not None or item.argv is None:
                row["input"] = item.input
            if item.argv is not None:
                row["argv"] = list(item.argv)
            row.update(
                status=str(item.status),
                exit_code=item.exit_code,
                duration_ms=item.duration_ms,
                stdout=item.stdout,
                stderr=item.stderr,
                message=item.message,
            )
            if json:
                row.update(_json_columns(item, row))
            rows.append(row)
        frame = pd.DataFrame(rows)
        if "exit_code" in frame:
            frame["exit_code"] = frame["exit_code"].astype("Int64")  # None stays <NA>
        return frame


def _json_columns(item: BatchItem, row: dict[str, Any]) -> dict[str, Any]:
    if item.result is None:
        return {}
    try:
        value = json.loads(item.result.stdout)
    except ValueError:
        return {}
    if isinstance(value, dict):
        # A key that clashes with an input field or a status column gets a "json." prefix.
        return {(f"json.{k}" if k in row else k): v for k, v in value.items()}
    return {"json": value}


def _text_row(item: BatchItem, *, show_error: bool = False) -> str:
    code = "" if item.exit_code is None else f" exit {item.exit_code}"
    # Every text is redacted before it is cut (core/base/secrets.py: cut_known).
    text = cut_known(item.describe_input(), 60)
    line = f"  [{item.index}] {item.status}{code}  {text}"
    if show_error:
        why = item.message or item.stderr.strip().splitlines()[-1:] or ""
        if isinstance(why, list):
            why = why[0] if why else ""
        if why:
            line += f"  ({cut_known(why, 100, '')})"
    else:
        out = " ".join(redact_known(item.stdout).split())
        if out:
            line += f"  -> {cut_known(out, 61)}"
    return line


__all__ = ["BatchItem", "BatchResult", "ITEM_STATUSES"]
