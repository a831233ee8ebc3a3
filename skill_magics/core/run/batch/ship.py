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

Where copies live (docs/architecture.md, *Batch runs*): ``$TMPDIR/skill-magics-shipped-<uid>/
<owner>/<digest>/<folder>``, where ``<owner>`` names this process (pid, start time, boot and
PID namespace: core/run/batch/ship_owner.py), ``<digest>`` hashes the packed files and ``<folder>``
is the skill folder's own last component; the skill's *name* never becomes a path. Only the
owner writes, replaces or removes anything in its folder, so another process of this user
(another kernel's workers, another test suite) can never pull a copy from under running
items; the folder goes when its process exits, and the folder of one that died without
cleaning up is swept once it is provably dead. The per-user root, the owner's folder, the
digest folder and the copy are created private (0700, whatever the umask) and trusted only
while they are real folders (never followed through a symlink) owned by this user with no
group/other write, checked from the root down before every item; a copy that fails is moved
aside and unpacked again, a root that fails refuses the item. A copy is unpacked into a fresh
private folder and renamed into place in one step, member by member with our own checks
(plain relative paths, regular files only; nothing relies on ``tarfile``'s extraction
filters, which older Pythons lack).

Example (not run as a doctest: it ships a skill to a worker process)::

    bundle = SkillBundle.pack(skill.base_dir, skill.name, approved_hash)
    copy = bundle.unpack()            # on the worker; raises ShippedSkillMismatch
"""

from __future__ import annotations

import errno
import hashlib
import io
import os
import shutil
import socket
import stat
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from skill_magics.core import trace
from skill_magics.core.base import fingerprint, paths
from skill_magics.core.base.audit import AuditLog, AuditRecord, arguments_preview
from skill_magics.core.base.errors import ApprovalStale, PathSecurityError, SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.status import RunStatus
from skill_magics.core.catalog.discovery import SkillFinder
from skill_magics.core.policy.runs import Shipped
from skill_magics.core.run.batch import ship_owner
from skill_magics.core.run.batch.ship_area import (
    _UNPACK_LOCK,
    MAX_BUNDLE_BYTES,
    SHIP_DIR_NAME,
    ShipAreaError,
    ShippedSkillMismatch,
    _discard,
    _private_parents,
    _remember_trusted,
    _trusted_copy,
    _unpack_members,
    ship_root,
)
from skill_magics.core.run.launching import warm_modes
from skill_magics.core.run.planning.settings import RunSettings

DEFAULT_FOLDER = "skill"  # a copy's folder when the skill's own folder name cannot be one


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
        flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        os.close(os.open(self.path, flags, 0o600))


def _open_regular(path: str) -> io.BufferedReader:
    """``path`` opened for reading only when it is a regular file, never through a link
    (the skill folder is a script's to change between the listing and the read)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise PathSecurityError(f"{path} is no longer a regular file: run it again") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise PathSecurityError(f"{path} is no longer a regular file: run it again")
    return os.fdopen(fd, "rb")


def _portable_entries(base: str | os.PathLike[str]) -> dict[str, str]:
    """fingerprint.skill_entries with the machine-bound entries made portable: big files
    (recorded by stat identity) by the sha256 of their bytes."""
    entries = fingerprint.skill_entries(base)
    out = {}
    for rel, value in entries.items():
        if value.startswith("stat:"):
            digest = hashlib.sha256()
            with _open_regular(os.path.join(base, rel)) as fh:  # never through a link
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
    folder: str = DEFAULT_FOLDER  # the skill folder's last component (the copy's folder)

    @classmethod
    def pack(cls, base: str | os.PathLike[str], name: str, approved: str | None) -> SkillBundle:
        """Pack the skill at ``base``; ``approved`` None: the caller decided (no approval)."""
        base = os.path.realpath(base)
        folder = os.path.basename(base)
        paths.check_skill_name(name, folder)  # refused here too, not only by the planner
        if paths.folder_name_problem(folder) is not None:
            folder = DEFAULT_FOLDER
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
                "batch with the local pool (pool=None)"
            )
        buf = io.BytesIO()
        total = 0
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
            for rel in entries:
                path = os.path.join(base, rel)
                info = tar.gettarinfo(path, arcname=rel)
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                total += info.size
                if total > MAX_BUNDLE_BYTES:
                    raise PathSecurityError(
                        f"Cannot ship skill {name!r}: its files exceed "
                        f"{MAX_BUNDLE_BYTES >> 20} MiB; move data out of the skill folder"
                    )
                if not info.isreg():  # it became a link or a special file since the listing
                    raise PathSecurityError(
                        f"Cannot ship skill {name!r}: {rel} is no longer a regular file; "
                        "run it again"
                    )
                with _open_regular(path) as fh:  # a file swapped for a link meanwhile: refused
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
            folder,
        )

    @property
    def digest(self) -> str:
        """The copy's folder under the shipping root: the packed files and the folder name
        (never the skill's name, which its author chose)."""
        text = f"{self.portable}\0{self.folder}".encode("utf-8", "surrogateescape")
        return hashlib.sha256(text).hexdigest()[:24]

    def location(self) -> Path:
        """Where this process keeps its copy: ``<ship_root()>/<owner>/<digest>/<folder>``
        (``<owner>``: this process, ship_owner.current())."""
        folder = self.folder if paths.folder_name_problem(self.folder) is None else DEFAULT_FOLDER
        return ship_root() / ship_owner.current().name / self.digest / folder

    def unpack(self) -> Path:
        """This process's verified copy (unpacked on first use); raises ShippedSkillMismatch
        when the copy does not have the packed fingerprint, ShipAreaError when the shipping
        folder cannot be trusted."""
        target = self.location()
        with _UNPACK_LOCK:
            try:
                _private_parents(target)
            except OSError as exc:  # e.g. a temp folder this user may not write in
                raise ShipAreaError(
                    f"The shipping folder {target.parents[2]} cannot be made ({exc}): "
                    "nothing ran; point TMPDIR at a folder of this user"
                ) from exc
            if not _trusted_copy(target):
                _discard(target)  # another user's, loose, a symlink: never used
                self._extract(target)
                if not _trusted_copy(target):
                    raise ShipAreaError(
                        f"The copy of skill {self.name!r} at {target} is not a private folder "
                        "of this user and could not be replaced: nothing ran; remove it, or "
                        "point TMPDIR at a private folder"
                    )
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
        """Unpack into a fresh private folder next to ``target``, then rename it into place."""
        parent = target.parent
        try:
            staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=parent))
        except OSError as exc:
            raise SkillMagicsError(
                f"Could not unpack skill {self.name!r} into {parent}: {exc}; check the "
                "worker's temp directory"
            ) from exc
        try:
            os.chmod(staging, 0o700)  # whatever the umask
            _unpack_members(self.data, staging, self.name)
            try:
                os.rename(staging, target)  # atomic: the copy appears whole or not at all
            except OSError as exc:
                # Something is there already (only this process writes in its folder, so
                # never another's copy): the caller checks whatever is there before use.
                if exc.errno not in (errno.EEXIST, errno.ENOTEMPTY, errno.ENOTDIR):
                    raise SkillMagicsError(
                        f"Could not unpack skill {self.name!r} into {parent}: {exc}; check "
                        "the worker's temp directory"
                    ) from exc
            else:
                _remember_trusted(target)
        finally:
            if staging.exists():
                shutil.rmtree(staging, ignore_errors=True)


def _is_digest(value: str) -> bool:
    return len(value) == 64 and all(c in "0123456789abcdef" for c in value)


@dataclass(frozen=True)
class ShippedBatch:
    """What every item of a shipped batch shares (sent once per worker on Dask)."""

    batch_id: str
    bundle: SkillBundle
    script: str  # relative to the skill
    # The caller's run settings as they are (docs/architecture.md, *Batch runs*): workers
    # check and isolate items the same way, and refuse a run whose explicit sandbox mode
    # they cannot provide. run_cwd "skill" is the worker's copy, "workspace" the worker's own
    # folder, a path must exist there. Secret values never travel: a skill that declares
    # secrets is refused on a worker (nothing to give it). They are the batch's own (its
    # time limit, sandbox, cwd, start: RunSettings.for_run); one warm server per worker
    # process.
    settings: RunSettings
    cancel: CancelSignal
    # The team policy in force where the batch was launched (docs/trust.md): a worker
    # enforces it, not the policy of its own folder (a Dask worker's has none).
    policy: Shipped


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


# Per worker process: one executor and finder for the batch being run (rebuilt when the
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
    from skill_magics.core.catalog.detect import ScriptDetector
    from skill_magics.core.catalog.requirements_cache import RequirementsCache
    from skill_magics.core.run.executor import ScriptExecutor
    from skill_magics.core.run.launching.warm.imports import preload_names
    from skill_magics.core.run.planning.plan import Planner

    key = (batch.settings, str(copy), batch.policy)
    with _STATE_LOCK:
        if _WORKER_STATE.get("key") != key:
            audit = _ThreadAudit()
            detector = ScriptDetector(allow_typescript=batch.settings.allow_typescript)
            finder = SkillFinder([copy.parent], detector=detector)
            requirements = RequirementsCache()

            def preload(prepared: Any) -> tuple[str, ...]:
                reqs = requirements.for_run(finder.get_skill(prepared.skill_name))
                return preload_names(reqs, prepared.script_rel.as_posix())

            executor = ScriptExecutor(audit=audit, preload=preload, ship=batch.policy)
            planner = Planner(finder, executor.checks, executor.secrets)
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
    batch: ShippedBatch,
    index: int,
    arguments: Any,
    argv: tuple[str, ...] | None,
    traceparent: Mapping[str, str] | None = None,
) -> ShippedOutcome:
    """Run one item on a worker: verify the copy, plan through the core checks, execute.

    Never raises for a refusal: the outcome carries the status, the message and every
    audit record made here, for the caller's audit log. ``traceparent``: the W3C context
    of the item's span in the caller (``TRACEPARENT``, ``TRACESTATE``): the script gets it
    (its own spans join the batch's trace) and, when the worker traces too (its own
    OpenTelemetry variables), the worker's run span is that span's child.
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
        _, prepared = planner.check_script(batch.settings, name, batch.script, arguments, argv)
        prepared = replace(prepared, warm_start=warm_modes.in_batch(prepared.warm_start))
        carrier = {k: v for k, v in (traceparent or {}).items() if k in trace.RUN_VARS}
        if carrier and not trace.refresh():  # not tracing here: the script joins directly
            kept = {k: v for k, v in prepared.env.items() if k not in trace.RUN_VARS}
            prepared = replace(prepared, env={**kept, **carrier})
        with trace.joined(carrier):
            result = executor.run(prepared, cancel=cancel)
    except SkillMagicsError as exc:  # refused before spawning (audited)
        return outcome(RunStatus.REFUSED, message=str(exc))
    status = RunStatus.INTERRUPTED if cancel.is_set() and not result.success else result.status
    return outcome(status, result)


def new_file_flag() -> FileFlag:
    return FileFlag(os.path.join(tempfile.gettempdir(), f"skill-magics-cancel-{uuid.uuid4().hex}"))


__all__ = [
    "MAX_BUNDLE_BYTES",
    "SHIP_DIR_NAME",
    "CancelSignal",
    "FileFlag",
    "ShippedBatch",
    "ShippedOutcome",
    "ShipAreaError",
    "ShippedSkillMismatch",
    "SkillBundle",
    "new_file_flag",
    "portable_fingerprint",
    "run_shipped_item",
]
