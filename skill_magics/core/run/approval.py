"""Approval decisions and the session store. UI-free: an approver is any callable.

Example:
    >>> store = ApprovalStore()
    >>> def approver(request: ApprovalRequest) -> Decision:
    ...     return Decision.YES_IN_SESSION
    >>> store.ask(approver, request)   # runs approver, remembers the session approval
    >>> store.ask(approver, request)   # approved already: approver not called again

Several skills, one decision (``%skill_context a b``): :func:`combine_requests` makes one
request that carries each skill's own request in ``parts``. Its ``skill_name`` is the names
joined with ", " ("a, b"), its ``scripts`` every part's scripts in order with the path prefixed
by the skill name ("a/scripts/x.py": the path under the skills folder, since a skill's name is
its folder's), ``arguments``/``argv`` the parts' common value (None / () when they differ) and
``content_hash`` a hash of the parts' fingerprints. An approver that knows nothing of ``parts``
still sees every script that would run; one that does can show them skill by skill. Decisions
apply to every part: "Yes in session" approves each skill at its own fingerprint (as if asked
separately), No declines them all.

An approver may define ``decides_alone(request) -> bool``: True when it would answer
``request`` without asking anyone (configuration pre-approved the skill). Such skills are
decided on their own and left out of a combined request (see :func:`decides_alone`).
"""

from __future__ import annotations

import enum
import hashlib
import threading
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skill_magics.core.errors import ApprovalDeclined, ApprovalUnavailable


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
    """Everything a person needs to decide.

    ``parts`` is empty for one skill. A request for several skills at once (built by
    :func:`combine_requests`) holds each skill's own request there, in the order named; its
    other fields summarise them (see the module docstring).
    """

    skill_name: str
    scripts: tuple[ScriptToApprove, ...]
    arguments: Any = None  # JSON-able payload or None
    argv: tuple[str, ...] = ()
    content_hash: str = ""  # the skill's fingerprint (Skill.content_hash: every file of it)
    code: str | None = None  # for %%skillpy: the Python code that would run
    request_id: str = field(default="", compare=False)
    parts: tuple[ApprovalRequest, ...] = ()  # one request per skill of a combined request

    @property
    def is_combined(self) -> bool:
        """Does this request decide for several skills at once?"""
        return bool(self.parts)

    @property
    def requests(self) -> tuple[ApprovalRequest, ...]:
        """The per-skill requests this decision covers: ``parts``, or (self,)."""
        return self.parts or (self,)

    @property
    def shares_inputs(self) -> bool:
        """Do all skills of this request get the same arguments and argv (then shown once)?"""
        return all(
            _same(part.arguments, self.arguments) and part.argv == self.argv
            for part in self.requests
        )

    @property
    def skill_names(self) -> tuple[str, ...]:
        """Every skill this request covers, in order."""
        return tuple(part.skill_name for part in self.requests)


Approver = Callable[[ApprovalRequest], "Decision | str"]


def combine_requests(parts: Sequence[ApprovalRequest]) -> ApprovalRequest:
    """One request deciding for several skills; a single request is returned unchanged.

    Parts keep their order (skills as named, scripts as referenced); combined parts are
    flattened. ``scripts`` lists every part's scripts with ``"{skill}/"`` before the path.
    """
    flat: list[ApprovalRequest] = []
    for part in parts:
        flat.extend(part.requests)
    if not flat:
        raise ValueError("combine_requests needs at least one request")
    if len(flat) == 1:
        return flat[0]
    if any(part.code is not None for part in flat):
        raise ValueError("requests that run Python code (%%skillpy) are not combined")
    first = flat[0]
    shared_arguments = (
        first.arguments if all(_same(p.arguments, first.arguments) for p in flat) else None
    )
    shared_argv = first.argv if all(p.argv == first.argv for p in flat) else ()
    digest = hashlib.sha256()
    for part in flat:
        digest.update(f"{part.skill_name}\0{part.content_hash}\0".encode("utf-8", "surrogatepass"))
    return ApprovalRequest(
        skill_name=", ".join(p.skill_name for p in flat),
        scripts=tuple(
            replace(script, path=f"{part.skill_name}/{script.path}")
            for part in flat
            for script in part.scripts
        ),
        arguments=shared_arguments,
        argv=shared_argv,
        content_hash=digest.hexdigest(),
        request_id=uuid.uuid4().hex,
        parts=tuple(flat),
    )


def decides_alone(approver: Approver | None, request: ApprovalRequest) -> bool:
    """Would ``approver`` answer ``request`` without asking anyone (configuration said yes)?

    Uses the approver's optional ``decides_alone(request)``; False when it has none or it
    fails (then the skill is asked about with the others, the safe side).
    """
    check = getattr(approver, "decides_alone", None)
    if check is None:
        return False
    try:
        return bool(check(request))
    except Exception:  # noqa: BLE001 - a broken hint must not decide anything
        return False


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - e.g. arrays whose == is elementwise
        return False


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

    def covers(self, request: ApprovalRequest) -> bool:
        """Is every skill of ``request`` approved in session at the fingerprint it carries?"""
        with self._lock:
            return all(
                self._approved.get(part.skill_name) == part.content_hash
                for part in request.requests
            )

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

    def revoke(self, skill_name: str, content_hash: str | None = None) -> bool:
        """Forget a session approval; True when there was one. With ``content_hash``, only
        while the approval is still for that hash (atomically: a newer one stays)."""
        with self._lock:
            if content_hash is not None and self._approved.get(skill_name) != content_hash:
                return False
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
            for part in request.requests:  # each skill at its own fingerprint
                self.approve(part.skill_name, part.content_hash)
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
        if self.covers(request):
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
    "combine_requests",
    "decides_alone",
    "PREVIEW_MAX_BYTES",
]
