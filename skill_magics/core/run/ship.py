"""Running batch items in other processes (a process pool, Dask workers) without a shared
filesystem: the approved skill folder travels with the work and is checked on arrival.

docs/architecture.md, *Batch runs*: the caller packs the skill's files into a
:class:`SkillBundle` right after the approval (refused when the files no longer have the
approved fingerprint), together with a *portable* fingerprint of exactly the bytes packed.
Each worker process unpacks it once into its temp directory, and before every item
recomputes the portable fingerprint of its copy: a copy that differs (tampered with,
corrupted, half written) is refused, the refusal is audited, and the audit records of the
item go back to the caller with its result. The item itself runs through the same core
executor as a local run (:func:`run_shipped_item`): the same checks, process group,
timeout, output caps and minimal environment.

Skills that cannot travel are refused before anything is asked to run: a skill with its own
``venv/`` (an installed environment is tied to its machine), symlinks or special files.

Example:
    >>> bundle = SkillBundle.pack(skill.base_dir, skill.name, approved_hash)
    >>> copy = bundle.unpack()            # on the worker; raises ShippedSkillMismatch
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from skill_magics.core import fingerprint
from skill_magics.core.audit import AuditLog, AuditRecord, arguments_preview
from skill_magics.core.catalog.discovery import SkillCatalog
from skill_magics.core.errors import ApprovalStale, PathSecurityError, SkillMagicsError
from skill_magics.core.models import ScriptExecutionResult
from skill_magics.core.status import RunStatus

MAX_BUNDLE_BYTES = 256 * 1024 * 1024  # a skill folder bigger than this is data, not a skill
SHIP_DIR_NAME = "skill-magics-shipped"  # under the worker's temp directory


class ShippedSkillMismatch(PathSecurityError):
    """A worker's copy of a skill does not have the fingerprint that was approved."""


class CancelSignal(Protocol):
    """Something a worker can poll to learn that the caller cancelled the batch."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True)
class FileFlag:
    """A cancel signal for workers on this machine (a process pool): a file that appears."""

    path: str

    def is_set(self) -> bool:
        return os.path.exists(self.path)

    def set(self) -> None:
        with open(self.path, "w"):
            pass


def _portable_entries(base: str | os.PathLike[str]) -> dict[str, str]:
    """fingerprint.skill_entries with the machine-bound entries made portable: big files
    (recorded by stat identity) by the sha256 of their bytes."""
    entries = fingerprint.skill_entries(base)
    out = {}
    for rel, value in entries.items():
        if value.startswith("stat:"):
            digest = hashlib.sha256()
            with open(os.path.join(base, rel), "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
            value = "sha256:" + digest.hexdigest()
        out[rel] = value
    return out


def portable_fingerprint(base: str | os.PathLike[str]) -> str:
    """A fingerprint of a skill folder that is the same for an identical copy elsewhere."""
    return fingerprint.fingerprint_of(_portable_entries(base))


@dataclass(frozen=True)
class SkillBundle:
    """A skill folder packed for workers: a tar.gz of its files and their portable
    fingerprint. ``approved`` is the skill fingerprint the approval was given for."""

    name: str
    data: bytes
    portable: str
    approved: str
    entries: tuple[tuple[str, str], ...] = ()  # the portable entries packed (path, digest)

    @classmethod
    def pack(cls, base: str | os.PathLike[str], name: str, approved: str | None) -> SkillBundle:
        """Pack the skill at ``base``; ``approved`` None: the caller decided (no approval)."""
        base = os.path.realpath(base)
        entries = fingerprint.skill_entries(base)
        if approved is not None and fingerprint.fingerprint_of(entries) != approved:
            raise ApprovalStale(
                f"{name}: the skill's files changed after the approval was asked; nothing "
                "ran. Run it again to review the new code"
            )
        bad = [
            rel
            for rel, value in entries.items()
            if rel == fingerprint.VENV_ENTRY or not (_is_digest(value) or value.startswith("stat:"))
        ]
        if bad:
            raise PathSecurityError(
                f"Cannot ship skill {name!r} to other machines: {', '.join(bad[:3])} is a "
                "venv, symlink or special file; replace symlinks with copies, or run the "
                "batch with the local pool (executor=None)"
            )
        buf = io.BytesIO()
        total = 0
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
            for rel in entries:
                path = os.path.join(base, rel)
                info = tar.gettarinfo(path, arcname=f"{name}/{rel}")
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                total += info.size
                if total > MAX_BUNDLE_BYTES:
                    raise PathSecurityError(
                        f"Cannot ship skill {name!r}: its files exceed "
                        f"{MAX_BUNDLE_BYTES >> 20} MiB; move data out of the skill folder"
                    )
                with open(path, "rb") as fh:
                    tar.addfile(info, fh)
        # What was packed must still be what was approved (a write while packing: refused).
        now = _portable_entries(base)
        if approved is not None and fingerprint.skill_fingerprint(base) != approved:
            raise ApprovalStale(
                f"{name}: the skill's files changed while they were packed for the workers; "
                "nothing ran. Run it again to review the new code"
            )
        return cls(
            name,
            buf.getvalue(),
            fingerprint.fingerprint_of(now),
            approved or "",
            tuple(now.items()),
        )

    @property
    def digest(self) -> str:
        return self.portable[:24]

    def location(self) -> Path:
        """Where this process keeps its copy: ``$TMPDIR/skill-magics-shipped/<digest>/<name>``."""
        return Path(tempfile.gettempdir()) / SHIP_DIR_NAME / self.digest / self.name

    def unpack(self) -> Path:
        """This process's verified copy (unpacked on first use); raises ShippedSkillMismatch
        when the copy does not have the packed fingerprint."""
        target = self.location()
        with _UNPACK_LOCK:
            if not target.exists():
                self._extract(target)
        try:
            self.verify(target)
        except ShippedSkillMismatch:
            # Refused (the caller audits it); the bad copy goes, so a later item or batch
            # unpacks a fresh one and checks that instead.
            _discard(target)
            raise
        return target

    def verify(self, copy: Path) -> None:
        """Raise ShippedSkillMismatch unless ``copy`` has the packed code.

        Data files a run wrote into the copy (an output in its cwd) do not count, as for a
        local approval (gate.is_current): only a change to code (``fingerprint.is_code``: a
        script, a module, SKILL.md, a deleted file) is a copy that differs.
        """
        try:
            now = _portable_entries(copy)
            got = fingerprint.fingerprint_of(now)
        except OSError as exc:
            now, got = {}, f"unreadable ({exc})"
        if got != self.portable and now and self.entries:
            changed = fingerprint.changed_entries(dict(self.entries), now)
            if not any(fingerprint.is_code(copy, rel) for rel in changed):
                return
        if got != self.portable:
            raise ShippedSkillMismatch(
                f"The copy of skill {self.name!r} at {copy} on {socket.gethostname()} does not "
                f"have the approved fingerprint ({got[:12]} instead of {self.portable[:12]}): "
                "refused, and that copy was removed (the next item unpacks a fresh one)"
            )

    def _extract(self, target: Path) -> None:
        parent = target.parent
        parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=parent))
        try:
            with tarfile.open(fileobj=io.BytesIO(self.data), mode="r:gz") as tar:
                # The "data" filter refuses absolute paths, "..", links out and devices.
                tar.extractall(staging, filter="data")
            os.replace(staging / self.name, target)
        except FileExistsError:
            pass  # another process of this machine unpacked it first
        except OSError as exc:
            if not target.exists():
                raise SkillMagicsError(
                    f"Could not unpack skill {self.name!r} into {parent}: {exc}; check the "
                    "worker's temp directory"
                ) from exc
        finally:
            shutil.rmtree(staging, ignore_errors=True)


_UNPACK_LOCK = threading.Lock()


def _discard(copy: Path) -> None:
    aside = copy.with_name(f".rejected-{uuid.uuid4().hex}")
    try:
        os.replace(copy, aside)
    except OSError:
        return
    shutil.rmtree(aside, ignore_errors=True)


def _is_digest(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True)
class ExecutorSettings:
    """The executor settings a worker rebuilds its ScriptExecutor with."""

    timeout: float
    max_output_size: int
    allowed_interpreters: tuple[str, ...]
    inherit_env: bool
    env_passthrough: tuple[str, ...]
    # The caller's sandbox (docs/architecture.md, *Sandbox and secrets*): workers isolate runs
    # the same way, and refuse a run whose explicit mode they cannot provide. Secret values
    # never travel: a skill that declares secrets is refused on a worker (nothing to give it).
    sandbox_mode: str = "off"
    sandbox_network: tuple[str, ...] = ()
    sandbox_deny_read: tuple[str, ...] = ()
    sandbox_read: tuple[str, ...] = ()
    # The caller's default working directory: "skill" (the worker's copy), "workspace" (the
    # worker's own folder) or a folder that must exist on the worker.
    run_cwd: str = "skill"

    @classmethod
    def of(cls, executor: Any) -> ExecutorSettings:
        sandbox = getattr(executor, "sandbox", None)
        return cls(
            timeout=executor.timeout,
            max_output_size=executor.max_output_size,
            allowed_interpreters=tuple(sorted(executor.allowed_interpreters)),
            inherit_env=executor.inherit_env,
            env_passthrough=tuple(executor.env_passthrough),
            sandbox_mode=str(getattr(sandbox, "mode", "off")),
            sandbox_network=tuple(getattr(sandbox, "network", ())),
            sandbox_deny_read=tuple(getattr(sandbox, "deny_read", ())),
            sandbox_read=tuple(getattr(sandbox, "read", ())),
            run_cwd=os.fspath(getattr(executor, "run_cwd", "skill")),
        )

    def executor_kwargs(self) -> dict[str, Any]:
        from skill_magics.core.run.sandbox import SandboxSettings

        sandbox = SandboxSettings(
            self.sandbox_mode, self.sandbox_network, self.sandbox_deny_read, self.sandbox_read
        )
        return {
            "timeout": self.timeout,
            "max_output_size": self.max_output_size,
            "allowed_interpreters": self.allowed_interpreters,
            "inherit_env": self.inherit_env,
            "env_passthrough": self.env_passthrough,
            "sandbox": sandbox,
            "run_cwd": self.run_cwd,
        }


@dataclass(frozen=True)
class ShippedBatch:
    """What every item of a shipped batch shares (sent once per worker on Dask)."""

    batch_id: str
    bundle: SkillBundle
    script: str  # relative to the skill
    settings: ExecutorSettings
    timeout: float | None
    cancel: CancelSignal
    sandbox: str | None = None  # this batch's sandbox mode (None: the settings' mode)
    cwd: str | None = None  # this batch's working directory (None: settings.run_cwd)


@dataclass
class ShippedOutcome:
    """What a worker sends back for one item: its end, and the audit records it made."""

    index: int
    status: RunStatus
    result: ScriptExecutionResult | None
    message: str
    records: list[AuditRecord]
    worker: str
    pid: int


# Per worker process: one executor and catalog for the batch being run (rebuilt when the
# settings or the copy change), so items keep its caches; audit records go to the item's
# thread (_ThreadAudit) and travel back with its outcome.
_WORKER_STATE: dict[str, Any] = {}
_STATE_LOCK = threading.Lock()
# batch id -> this process's cancel event for it, set by one watcher thread per batch.
_CANCELS: dict[str, tuple[threading.Event, list[float]]] = {}
WATCH_IDLE_S = 60.0  # a watcher whose batch ran nothing here for this long ends


def _worker_name() -> str:
    try:
        from distributed import get_worker  # only present on Dask workers

        return str(get_worker().address)
    except Exception:  # noqa: BLE001 - not a Dask worker (a process pool)
        return f"{socket.gethostname()}:{os.getpid()}"


class _ThreadAudit(AuditLog):
    """The worker's audit log: logs there as usual, and hands each record to the item that
    the recording thread is running (``start`` / ``collected``)."""

    def __init__(self) -> None:
        super().__init__(keep=64)
        self._local = threading.local()

    def start(self) -> list[AuditRecord]:
        self._local.collected = []
        return self._local.collected

    def record(self, rec: AuditRecord) -> AuditRecord:
        collected = getattr(self._local, "collected", None)
        if collected is not None:
            collected.append(rec)
        return super().record(rec)


def _state(batch: ShippedBatch, copy: Path) -> tuple[Any, Any, _ThreadAudit]:
    from skill_magics.core.run.executor import ScriptExecutor
    from skill_magics.core.run.plan import Planner

    key = (batch.settings, str(copy))
    with _STATE_LOCK:
        if _WORKER_STATE.get("key") != key:
            audit = _ThreadAudit()
            executor = ScriptExecutor(**batch.settings.executor_kwargs(), audit=audit)
            catalog = SkillCatalog([copy.parent])
            planner = Planner(catalog, lambda: executor, lambda: audit)
            _WORKER_STATE.clear()
            _WORKER_STATE.update(key=key, state=(executor, planner, audit))
        state: tuple[Any, Any, _ThreadAudit] = _WORKER_STATE["state"]
        return state


def _cancel_event(batch: ShippedBatch) -> threading.Event:
    """This process's cancel event for ``batch``: ONE watcher thread per batch polls the
    caller's signal (a Dask Event: a scheduler round trip), not one per item."""
    with _STATE_LOCK:
        entry = _CANCELS.get(batch.batch_id)
        if entry is None:
            bind = getattr(batch.cancel, "bind", None)
            if bind is not None:
                bind()  # a Dask Event binds to the worker's client here, in the task's thread
            entry = (threading.Event(), [time.monotonic()])
            _CANCELS[batch.batch_id] = entry
            threading.Thread(
                target=_watch,
                args=(batch.batch_id, batch.cancel, entry),
                name="skill-magics-cancel",
                daemon=True,
            ).start()
        entry[1][0] = time.monotonic()
        return entry[0]


def _watch(batch_id: str, signal: CancelSignal, entry: tuple[threading.Event, list[float]]) -> None:
    event, last_used = entry
    wait: Callable[[float], object] = getattr(signal, "wait", None) or event.wait
    try:
        while not event.is_set():
            if signal.is_set():
                event.set()
                return
            if time.monotonic() - last_used[0] > WATCH_IDLE_S:
                return
            wait(0.2)
    finally:
        with _STATE_LOCK:
            if _CANCELS.get(batch_id) is entry and not event.is_set():
                del _CANCELS[batch_id]


def run_shipped_item(
    batch: ShippedBatch, index: int, arguments: Any, argv: tuple[str, ...] | None
) -> ShippedOutcome:
    """Run one item on a worker: verify the copy, plan through the core checks, execute.

    Never raises for a refusal: the outcome carries the status, the message and every
    audit record made here, for the caller's audit log.
    """
    worker = _worker_name()
    name = batch.bundle.name
    cancel = _cancel_event(batch)
    collected: list[AuditRecord] = []

    def outcome(status: RunStatus, result: Any = None, message: str = "") -> ShippedOutcome:
        return ShippedOutcome(index, status, result, message, collected, worker, os.getpid())

    if cancel.is_set():
        return outcome(RunStatus.CANCELLED, message="the batch was stopped before it started")
    started = time.monotonic()
    try:
        copy = batch.bundle.unpack()
    except SkillMagicsError as exc:
        audit = AuditLog(keep=1)
        collected.append(
            audit.refused(
                name,
                batch.script,
                arguments_preview(arguments, argv),
                exc,
                duration_ms=(time.monotonic() - started) * 1000,
            )
        )
        return outcome(RunStatus.REFUSED, message=str(exc))
    executor, planner, thread_audit = _state(batch, copy)
    collected = thread_audit.start()
    try:
        _, prepared = planner.check_script(
            name,
            batch.script,
            arguments,
            argv,
            batch.timeout,
            sandbox=batch.sandbox,
            cwd=batch.cwd,
        )
        result = executor.run(prepared, cancel=cancel)
    except SkillMagicsError as exc:  # refused before spawning (audited)
        return outcome(RunStatus.REFUSED, message=str(exc))
    status = RunStatus.INTERRUPTED if cancel.is_set() and not result.success else result.status
    return outcome(status, result)


def new_file_flag() -> FileFlag:
    return FileFlag(os.path.join(tempfile.gettempdir(), f"skill-magics-cancel-{uuid.uuid4().hex}"))


__all__ = [
    "CancelSignal",
    "ExecutorSettings",
    "FileFlag",
    "ShippedBatch",
    "ShippedOutcome",
    "ShippedSkillMismatch",
    "SkillBundle",
    "new_file_flag",
    "portable_fingerprint",
    "run_shipped_item",
]
