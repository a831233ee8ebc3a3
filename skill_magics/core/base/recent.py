"""The results of a process's recent runs, for the Skills side panel's Recent runs.

A bounded store beside the audit history (core/base/audit.py): the executor hands it each
finished run's result with the run's audit record; the side panel's ``state`` names the
result kept for a record by an id (:meth:`RecentResults.id_of`) and its ``result`` request
fetches it by that id (core/panel/board.py). Bounds:

- the last :data:`RESULTS_KEPT` runs (older ones are forgotten, oldest first);
- of each run, the first :data:`STREAM_BYTES` bytes (UTF-8) of stdout and of stderr: the
  rest of a longer stream is dropped here and its characters counted (``KeptResult.dropped``;
  only the head is ever encoded, so a run with megabytes of output costs no more); the cell's
  result keeps the whole capture as always.

What is kept was already redacted: the executor masks every secret value in both streams as
it reads them, before anything sees them; the side panel masks its answers again. The store
is process state: a kernel restart empties it, and an id names nothing in another process.

Example:
    >>> from pathlib import Path
    >>> from skill_magics.core.base.audit import AuditRecord
    >>> from skill_magics.core.base.models import ScriptExecutionResult
    >>> store = RecentResults(keep=2)
    >>> rec = AuditRecord.now("pdf", "scripts/x.py", "", "completed", exit_code=0)
    >>> run_id = store.keep(rec, ScriptExecutionResult("hi\\n", "", 0, 3.0, Path("scripts/x.py")))
    >>> store.id_of(rec) == run_id, store.get(run_id).result.stdout
    (True, 'hi\\n')
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_magics.core.base.models import ScriptExecutionResult

# An audit record (core/base/audit.py's AuditRecord, which imports this module): only its
# identity is used here.
Record = Any

RESULTS_KEPT = 50  # runs whose result the side panel can show
STREAM_BYTES = 128 * 1024  # bytes kept of each of stdout and stderr per run (256 KiB a run)


@dataclass(frozen=True)
class KeptResult:
    """One run's result as kept: ``result`` with each stream cut to ``STREAM_BYTES``;
    ``dropped`` the characters cut off each stream here (``{"stdout": 0, "stderr": 0}``)."""

    id: str
    record: Record
    result: ScriptExecutionResult
    dropped: dict[str, int]


def _head(text: str, limit: int) -> tuple[str, int]:
    """The first ``limit`` bytes of ``text`` in UTF-8 (never half a character), and how many
    characters were dropped. Only the first ``limit`` characters are encoded."""
    if len(text) * 4 <= limit:  # cannot be over: no encoding needed
        return text, 0
    data = text[:limit].encode("utf-8", "surrogatepass")  # a character is 1 byte or more
    if len(data) <= limit and len(text) <= limit:
        return text, 0
    end = min(limit, len(data))
    while end < len(data) and end > 0 and data[end] & 0xC0 == 0x80:  # inside a character
        end -= 1
    head = data[:end].decode("utf-8", "surrogatepass")
    return head, len(text) - len(head)


class RecentResults:
    """Thread-safe, bounded: the results of the last ``keep`` runs, each stream cut to
    ``stream_bytes``; ``keep=0`` keeps nothing (a log that is not a kernel's)."""

    def __init__(self, keep: int = RESULTS_KEPT, stream_bytes: int = STREAM_BYTES) -> None:
        self.keep_count = max(0, int(keep))
        self.stream_bytes = max(0, int(stream_bytes))
        self._by_id: OrderedDict[str, KeptResult] = OrderedDict()
        self._by_record: dict[int, str] = {}  # id(record) -> run id (the record is kept too)
        self._lock = threading.Lock()

    def keep(self, record: Record, result: ScriptExecutionResult) -> str:
        """Keep ``result`` as the result of the run ``record`` audits; its id ("" when this
        store keeps nothing)."""
        if not self.keep_count:
            return ""
        stdout, cut_out = _head(result.stdout, self.stream_bytes)
        stderr, cut_err = _head(result.stderr, self.stream_bytes)
        if cut_out or cut_err:
            result = dataclasses.replace(result, stdout=stdout, stderr=stderr)
        run_id = secrets.token_hex(8)  # unguessable, and unique to this process
        kept = KeptResult(run_id, record, result, {"stdout": cut_out, "stderr": cut_err})
        with self._lock:
            self._by_id[run_id] = kept
            self._by_record[id(record)] = run_id
            while len(self._by_id) > self.keep_count:
                _, old = self._by_id.popitem(last=False)
                if self._by_record.get(id(old.record)) == old.id:
                    del self._by_record[id(old.record)]
        return run_id

    def id_of(self, record: Record) -> str:
        """The id of the result kept for ``record``, or "" (none kept: not a run that
        finished, or one of more than ``keep`` runs ago)."""
        with self._lock:
            run_id = self._by_record.get(id(record), "")
            kept = self._by_id.get(run_id)
            return run_id if kept is not None and kept.record is record else ""

    def get(self, run_id: str) -> KeptResult | None:
        """The result kept under ``run_id``, or None."""
        with self._lock:
            return self._by_id.get(run_id)

    def clear(self) -> None:
        with self._lock:
            self._by_id.clear()
            self._by_record.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._by_id)


__all__ = ["RESULTS_KEPT", "STREAM_BYTES", "KeptResult", "RecentResults"]
