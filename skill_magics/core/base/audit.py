"""Audit trail: one record per attempt to run a script, refusals and declines included.

Every record goes to the stdlib logger ``skill_magics.audit``, into a bounded in-memory
history (for ``%skills history``) and, when configured, one JSON line appended to a file.

No secret value reaches a record: every text a record holds is redacted (every value any
``SecretStore`` of the process holds, in any escaped form: ``core/base/secrets.py``) BEFORE it
is cut to ``ARGUMENTS_PREVIEW_CHARS``, so a value crossing the cut leaves no head behind.

Example:
    >>> log = AuditLog("audit.jsonl")
    >>> record = log.event("csv-profiler", "scripts/profile.py", {"csv": "a,b"}, "completed",
    ...           exit_code=0, duration_ms=41.5)
    >>> log.records()[-1].outcome
    'completed'
"""

from __future__ import annotations

import codecs
import json
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_magics.core.base.recent import RecentResults
from skill_magics.core.base.secrets import cut_known, known_masks, redact_known
from skill_magics.core.base.status import NOTABLE_VALUES, AuditOutcome
from skill_magics.core.base.visible import visible

# Told of every refusal the audit records (skill, script, error), in order: the traces' span
# (core/trace/hooks.refusal), put here by core/__init__.py, since the base imports nothing above
# it and the traces import the base.
REFUSAL_LISTENERS: list[Callable[[str, str, BaseException], object]] = []

if TYPE_CHECKING:
    from skill_magics.core.base.models import ScriptExecutionResult

logger = logging.getLogger("skill_magics.audit")

ARGUMENTS_PREVIEW_CHARS = 256
CODE_LABEL = "<python -c>"  # what records and approvals show for code run in a skill's venv

OUTCOMES = tuple(AuditOutcome)  # every outcome a record can have


def truncate(text: str, limit: int = ARGUMENTS_PREVIEW_CHARS) -> str:
    """``text`` with every known secret value masked, THEN cut to at most ``limit``
    characters (the cut marked with an ellipsis)."""
    return cut_known(text, limit)


def arguments_preview(
    arguments: Any = None, argv: Any = None, *, encoded: bytes | None = None
) -> str:
    """A short, never-failing text form of what a script was given (for logs and history),
    with every known secret value masked before it is cut.

    ``encoded``: the JSON payload already built, so a 9 MB payload is not encoded twice (and
    only as much of it is decoded and redacted as the preview needs).

    >>> arguments_preview({"a": 1}, ["--fast"])
    '{"a": 1} argv: --fast'
    """
    parts: list[str] = []
    if encoded is not None:
        tail = " ".join(_argv_preview(argv)) if argv else ""  # (no argv, or empty: no text)
        return _encoded_preview(encoded, tail)
    if arguments is not None:
        if isinstance(arguments, str):
            parts.append(arguments)
        else:
            # Any exception: a preview is built while refusing bad arguments, and must not
            # replace that refusal (or its audit record) with an error of its own.
            try:
                parts.append(json.dumps(arguments, ensure_ascii=False, default=safe_repr))
            except Exception:  # noqa: BLE001
                parts.append(reprlib_repr(arguments))
    if argv is not None:
        parts.extend(_argv_preview(argv))
    return truncate(" ".join(parts))


def _encoded_preview(encoded: bytes, tail: str) -> str:
    """The preview of a JSON payload (plus the argv part): decoded and redacted piece by
    piece only until the first ARGUMENTS_PREVIEW_CHARS characters are known."""
    limit = ARGUMENTS_PREVIEW_CHARS
    masks = known_masks()
    if not masks.values:  # nothing to mask: the cheap cut (4 bytes per character at most)
        text = encoded[: limit * 4].decode("utf-8", "ignore")
        if tail:
            text = f"{text} {tail}" if text else tail
        return text if len(text) <= limit else truncate(text)
    decoder = codecs.getincrementaldecoder("utf-8")("ignore")

    def pieces() -> Iterator[str]:
        step = 1 << 14
        for start in range(0, len(encoded), step):
            yield decoder.decode(encoded[start : start + step])
        yield decoder.decode(b"", final=True)
        if tail:
            yield (" " if encoded else "") + tail

    shown, more = masks.head(pieces(), limit)
    return shown[: limit - 1] + "…" if more else shown


def _argv_preview(argv: Any) -> list[str]:
    if isinstance(argv, str):
        return [f"argv: {argv}"] if argv else []  # refused later; shown whole, not per letter
    try:
        items = [str(a) for a in argv]
    except Exception:  # noqa: BLE001 - not iterable (refused later), or a __str__ that raises
        return [f"argv: {reprlib_repr(argv)}"]
    return [f"argv: {' '.join(items)}"] if items else []


def code_preview(code: str) -> str:
    """The ``arguments`` text recorded for ``python -c CODE`` (secrets masked, then
    whitespace collapsed and cut)."""
    return "python -c " + cut_known(" ".join(redact_known(code).split()), 200, "")


def safe_repr(value: Any) -> str:
    """``repr(value)``, or ``<unprintable Foo>`` when its ``__repr__`` raises."""
    try:
        return repr(value)
    except Exception:  # noqa: BLE001 - a preview must never be the thing that fails
        return f"<unprintable {type(value).__name__}>"


def safe_str(value: Any) -> str:
    """``str(value)``, or ``<unprintable Foo>`` when its ``__str__`` raises."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001
        return f"<unprintable {type(value).__name__}>"


def reprlib_repr(value: Any) -> str:
    import reprlib

    short = reprlib.Repr()
    short.maxstring = short.maxother = ARGUMENTS_PREVIEW_CHARS
    try:
        return short.repr(value)
    except Exception:  # noqa: BLE001
        return f"<unprintable {type(value).__name__}>"


def utc_now() -> str:
    """Now, as ``datetime.now(UTC).isoformat(timespec="milliseconds")`` writes it
    (``2026-11-24T03:24:05.123+00:00``), the seconds formatted once per second: every run
    makes a record, and datetime's way costs several times more."""
    second, rest = divmod(time.time_ns(), 1_000_000_000)
    last = _SECOND[0]  # one read of an immutable pair: threads never see half of one
    if last[0] != second:
        last = (second, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(second)))
        _SECOND[0] = last
    return f"{last[1]}.{rest // 1_000_000:03d}+00:00"


_SECOND: list[tuple[int, str]] = [(-1, "")]  # the last second formatted, and its text


@dataclass
class AuditRecord:
    """One attempt to run a script. ``arguments`` is redacted, then cut to 256 characters,
    on creation (and every text is redacted again when a log records it)."""

    timestamp: str  # ISO 8601, UTC
    skill: str
    script: str  # relative to the skill base dir (or as given, for refused paths)
    arguments: str
    outcome: AuditOutcome
    exit_code: int | None = None
    reason: str | None = None
    duration_ms: float | None = None
    # The run's isolation: {"mode", "network", "writable"[, "note"]}; None: not sandboxed
    # (and left out of to_dict(), so unsandboxed records keep their shape).
    sandbox: dict[str, Any] | None = None
    # How a run's process started: "warm" (forked from a warm server) or "cold", and why a
    # run that could have been warm was not ("" none); None: not a run (left out of
    # to_dict(), like start_note when empty).
    start: str | None = None
    start_note: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, str):
            self.arguments = arguments_preview(self.arguments)
        # A short text with no secret known is what truncate() would give back unchanged.
        if len(self.arguments) > ARGUMENTS_PREVIEW_CHARS or known_masks().values:
            self.arguments = truncate(self.arguments)
        if type(self.script) is not str:
            self.script = str(self.script)
        if type(self.outcome) is not AuditOutcome:
            self.outcome = AuditOutcome(self.outcome)  # a misspelt one fails here, not in a log

    @classmethod
    def now(
        cls,
        skill: str,
        script: str | os.PathLike[str],
        arguments: Any,
        outcome: AuditOutcome | str,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        duration_ms: float | None = None,
        sandbox: dict[str, Any] | None = None,
        start: str | None = None,
        start_note: str = "",
    ) -> AuditRecord:
        """A record stamped with the current UTC time."""
        return cls(
            utc_now(),
            skill,
            script if type(script) is str else str(script),
            arguments,
            outcome if type(outcome) is AuditOutcome else AuditOutcome(outcome),
            exit_code,
            reason,
            duration_ms,
            sandbox,
            start,
            start_note,
        )

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        if data["sandbox"] is None:
            del data["sandbox"]
        if data["start"] is None:
            del data["start"]
        if not data["start_note"]:
            del data["start_note"]
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))


class AuditLog:
    """Thread-safe audit sink: logger + bounded history + optional JSONL file.

    ``keep`` bounds the in-memory history; the JSONL file (created with mode 0600, since
    arguments may be private) gets every record as one line, appended with a single write.
    ``keep_results``: how many finished runs' results ``results`` keeps beside their
    records (core/base/recent.py: a kernel's log keeps the last 50 for the side panel; 0,
    the default, none).
    """

    def __init__(
        self,
        jsonl_path: str | os.PathLike[str] | None = None,
        keep: int = 1000,
        keep_results: int = 0,
    ) -> None:
        self.jsonl_path = Path(jsonl_path).expanduser() if jsonl_path is not None else None
        self._records: deque[AuditRecord] = deque(maxlen=max(0, int(keep)))
        self.results = RecentResults(keep_results)
        self._lock = threading.Lock()
        self._file_error_logged = False

    def write_to(self, jsonl_path: str | os.PathLike[str] | None) -> None:
        """Append the records from now on to ``jsonl_path`` (None: no file); the history
        in memory stays."""
        self.jsonl_path = Path(jsonl_path).expanduser() if jsonl_path is not None else None

    def record(self, rec: AuditRecord) -> AuditRecord:
        """Log, remember and (optionally) persist one record; returns it.

        Every text is redacted again here (values provided since the record was made, a
        record built elsewhere): whole texts, never cut ones, so nothing is lost."""
        masks = known_masks()
        if masks.values:
            rec.arguments = masks.redact(rec.arguments)
            rec.script = masks.redact(rec.script)
            if rec.reason is not None:
                rec.reason = masks.redact(rec.reason)
            if rec.start_note:
                rec.start_note = masks.redact(rec.start_note)
        level = logging.WARNING if rec.outcome._value_ in NOTABLE_VALUES else logging.INFO
        if logger.isEnabledFor(level):
            logger.log(
                level,
                "skill=%s script=%s outcome=%s exit_code=%s duration_ms=%s reason=%s arguments=%s",
                # Escaped: a newline in argv or a script name must not forge a log line.
                visible(rec.skill),
                visible(rec.script),
                rec.outcome,
                rec.exit_code,
                None if rec.duration_ms is None else round(rec.duration_ms, 1),
                None if rec.reason is None else visible(rec.reason),
                visible(rec.arguments),
                extra={"audit": rec.to_dict()},
            )
        with self._lock:
            self._records.append(rec)
            if self.jsonl_path is not None:
                self._append(rec)
        return rec

    def _append(self, rec: AuditRecord) -> None:
        path = self.jsonl_path
        if path is None:
            return
        line = (rec.to_json() + "\n").encode("utf-8", "surrogateescape")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_APPEND + one write per line: concurrent writers (threads or other kernels
            # sharing the file) never interleave inside a line.
            # O_NONBLOCK: a FIFO left under its name fails at once (no reader: ENXIO) instead
            # of holding every run (this lock) until someone reads it; no effect on a file.
            flags = (
                os.O_WRONLY
                | os.O_APPEND
                | os.O_CREAT
                | os.O_NOFOLLOW
                | os.O_CLOEXEC
                | os.O_NONBLOCK
            )
            fd = os.open(path, flags, 0o600)  # a link left under its name: never followed
            try:
                os.write(fd, line)
            finally:
                os.close(fd)
        except OSError as exc:
            # Losing the file must not stop the notebook; say so once, loudly.
            if not self._file_error_logged:
                self._file_error_logged = True
                logger.error(
                    "Cannot append to audit file %s (%s): records stay in memory and in this "
                    "log only; fix the path or its permissions",
                    self.jsonl_path,
                    exc,
                )

    def event(
        self,
        skill: str,
        script: str | os.PathLike[str],
        arguments: Any,
        outcome: AuditOutcome | str,
        *,
        exit_code: int | None = None,
        reason: str | None = None,
        duration_ms: float | None = None,
        sandbox: dict[str, Any] | None = None,
        start: str | None = None,
        start_note: str = "",
    ) -> AuditRecord:
        """Build a record stamped now and record it (declines, unavailable approval, ...)."""
        return self.record(  # what AuditRecord.now does, one call less: every run records
            AuditRecord(
                utc_now(),
                skill,
                script if type(script) is str else str(script),
                arguments,
                outcome if type(outcome) is AuditOutcome else AuditOutcome(outcome),
                exit_code,
                reason,
                duration_ms,
                sandbox,
                start,
                start_note,
            )
        )

    def refused(
        self,
        skill: str,
        script: str | os.PathLike[str],
        arguments: Any,
        error: BaseException,
        *,
        duration_ms: float | None = None,
    ) -> AuditRecord:
        """Record a run refused before anything started; ``reason`` is the error's message,
        ``duration_ms`` the time spent until the refusal. While tracing is on the refusal is
        a span too (core/trace/hooks.py: ``refusal``, one of :data:`REFUSAL_LISTENERS`), as
        every refusal is audited here."""
        for listener in REFUSAL_LISTENERS:
            listener(skill, os.fspath(script), error)
        return self.event(
            skill,
            script,
            arguments,
            AuditOutcome.REFUSED,
            reason=f"{type(error).__name__}: {safe_str(error)}",
            duration_ms=duration_ms,
        )

    def keep_result(self, rec: AuditRecord, result: ScriptExecutionResult) -> str:
        """Keep a finished run's result with its record (``results``); its id, or ""."""
        return self.results.keep(rec, result)

    def records(self) -> list[AuditRecord]:
        """The remembered records, oldest first (newest last)."""
        with self._lock:
            return list(self._records)

    def clear(self) -> None:
        """Forget the in-memory history and the results kept (the JSONL file is left
        alone)."""
        with self._lock:
            self._records.clear()
        self.results.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)


__all__ = [
    "ARGUMENTS_PREVIEW_CHARS",
    "CODE_LABEL",
    "OUTCOMES",
    "AuditRecord",
    "AuditLog",
    "arguments_preview",
    "code_preview",
    "safe_repr",
    "safe_str",
    "truncate",
]
