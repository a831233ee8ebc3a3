"""Approval decisions and the session store. UI-free: an approver is any callable.

Example:
    >>> store = ApprovalStore()
    >>> def approver(request: ApprovalRequest) -> Decision:
    ...     return Decision.YES_IN_SESSION
    >>> store.ask(approver, request)   # runs approver, remembers the session approval
    >>> store.ask(approver, request)   # approved already: approver not called again
"""

from __future__ import annotations

import enum
import hashlib
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import ApprovalDeclined, ApprovalUnavailable


class Decision(str, enum.Enum):
    """The three answers a person can give."""

    YES_ONCE = "yes_once"
    YES_IN_SESSION = "yes_in_session"
    NO = "no"

    @property
    def label(self) -> str:
        return {"yes_once": "Yes once", "yes_in_session": "Yes in session", "no": "No"}[self.value]


@dataclass(frozen=True)
class ScriptToApprove:
    """One script a request would run."""

    path: str  # relative to the skill base dir
    interpreter: str
    preview: str = ""  # the file's text (up to PREVIEW_MAX_BYTES), so people see what runs
    # The full command that runs: program (absolute), its flags, the script's real path, argv.
    command: tuple[str, ...] = ()
    # The program's real path when it differs from command[0] (a skill venv's python is
    # usually a symlink to some interpreter; this says which one really runs).
    program_realpath: str = ""
    lines: int = 0  # total lines of the script (the preview may hold fewer)
    size: int = 0  # bytes of the script


PREVIEW_MAX_BYTES = 200_000  # how much of a script an approval request carries


@dataclass(frozen=True)
class ApprovalRequest:
    """Everything a person needs to decide."""

    skill_name: str
    scripts: tuple[ScriptToApprove, ...]
    arguments: Any = None  # JSON-able payload or None
    argv: tuple[str, ...] = ()
    content_hash: str = ""  # the skill's fingerprint (Skill.content_hash: every file of it)
    code: str | None = None  # for %%skillpy: the Python code that would run
    request_id: str = field(default="", compare=False)


Approver = Callable[[ApprovalRequest], "Decision | str"]


def scripts_content_hash(base_dir: Path, script_paths: Iterable[Path | str]) -> str:
    """SHA-256 over the relative paths and bytes of a skill's scripts (sorted, stable).

    Editing, adding or removing any script changes the hash, so a session approval lapses.
    """
    digest = hashlib.sha256()
    for rel in sorted(str(p) for p in script_paths):
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            digest.update((Path(base_dir) / rel).read_bytes())
        except OSError as exc:  # vanished or unreadable: still hash deterministically
            digest.update(f"<unreadable:{type(exc).__name__}>".encode())
        digest.update(b"\0")
    return digest.hexdigest()


class ApprovalStore:
    """Session approvals: skill name -> content hash approved with Yes in session. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._approved: dict[str, str] = {}

    def is_approved(self, skill_name: str, content_hash: str) -> bool:
        with self._lock:
            return self._approved.get(skill_name) == content_hash

    def approve(self, skill_name: str, content_hash: str) -> None:
        with self._lock:
            self._approved[skill_name] = content_hash

    def rebase(self, skill_name: str, old_hash: str, new_hash: str) -> bool:
        """Move a session approval from ``old_hash`` to ``new_hash`` if it is still at
        ``old_hash`` (atomically); True when it moved. For files the approved run wrote."""
        with self._lock:
            if self._approved.get(skill_name) != old_hash:
                return False
            self._approved[skill_name] = new_hash
            return True

    def revoke(self, skill_name: str) -> bool:
        """Forget a session approval; True when there was one."""
        with self._lock:
            return self._approved.pop(skill_name, None) is not None

    def clear(self) -> None:
        with self._lock:
            self._approved.clear()

    def approvals(self) -> dict[str, str]:
        """A copy of skill name -> approved content hash."""
        with self._lock:
            return dict(self._approved)

    def record(self, request: ApprovalRequest, decision: Decision | str) -> Decision:
        """Apply a decision to the store and return it normalised; raise on No."""
        decision = coerce_decision(decision)
        if decision is Decision.YES_IN_SESSION:
            self.approve(request.skill_name, request.content_hash)
        if decision is Decision.NO:
            raise ApprovalDeclined(
                f"Running {_describe(request)} was declined: nothing ran. "
                "Run the cell again and choose 'Yes once' or 'Yes in session' to run it."
            )
        return decision

    def ask(self, approver: Approver | None, request: ApprovalRequest) -> Decision | None:
        """Decide a request: None approver means the Python caller decided (returns None).

        Returns the decision (YES_IN_SESSION when a stored approval still matches);
        raises ApprovalDeclined on No and lets ApprovalUnavailable through.
        """
        if approver is None:
            return None
        if self.is_approved(request.skill_name, request.content_hash):
            return Decision.YES_IN_SESSION
        return self.record(request, approver(request))


def coerce_decision(value: Decision | str) -> Decision:
    """Accept a Decision or its string value; anything else is a programming error."""
    try:
        return Decision(value)
    except ValueError:
        raise ValueError(
            f"Approver returned {value!r}: return one of 'yes_once', 'yes_in_session', 'no'"
        ) from None


def _describe(request: ApprovalRequest) -> str:
    paths = ", ".join(s.path for s in request.scripts) or "Python code"
    return f"{request.skill_name} ({paths})"


__all__ = [
    "Decision",
    "ScriptToApprove",
    "ApprovalRequest",
    "Approver",
    "ApprovalStore",
    "ApprovalDeclined",
    "ApprovalUnavailable",
    "scripts_content_hash",
    "coerce_decision",
    "PREVIEW_MAX_BYTES",
]
