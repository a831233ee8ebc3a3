"""Who approves the scripts a model calls in the lab, and what they answered.

The rule (docs/architecture.md, *Who approves*): a call a *model* made never runs unasked.
``approver`` defaults to :data:`~skill_magics.core.run.gating.approval.MANAGER_APPROVER`, "the
manager's approver"; when that is None (or None is passed) every script call is refused,
audited as approval_unavailable, and the model gets the refusal as an error result. The
decision itself is the gate's, through the one call site (``manager.run_planned``);
:class:`Watcher` only notes what the approver answered, for the transcript.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import (
    Answer,
    ApprovalRequest,
    Approver,
    ApproverArg,
    Caller,
    coerce_decision,
)


def approver_for_model(manager: SkillManager, approver: ApproverArg) -> Approver:
    """The approver for script calls a model makes: ``approver`` (MANAGER_APPROVER: the
    manager's); with none, one that refuses (the one rule, for a model's calls)."""
    chosen = manager.approver_for(approver, Caller.MODEL)
    assert chosen is not None  # a model's call always gets an approver (one that refuses)
    return chosen


@dataclass(frozen=True)
class ApprovalNote:
    """What the approver answered for one call: ``decision`` (yes_once, yes_in_session, no),
    or ``unavailable`` / ``interrupted`` with the reason; who decided; how long it took."""

    decision: str
    by: str
    seconds: float
    reason: str = ""

    @property
    def allowed(self) -> bool:
        return self.decision in ("yes_once", "yes_in_session")

    def line(self) -> str:
        text = self.decision.replace("_", " ")
        if self.by:
            text += f" by {self.by}"
        if self.reason:
            text += f": {self.reason}"
        return text


class Watcher:
    """Calls ``approver`` and notes each answer (:meth:`take` returns the notes so far)."""

    def __init__(self, approver: Approver) -> None:
        self.approver = approver
        self._notes: list[ApprovalNote] = []
        self._lock = threading.Lock()

    def __call__(self, request: ApprovalRequest) -> Any:
        started = time.monotonic()
        try:
            answer = self.approver(request)
        except BaseException as exc:
            kind = "interrupted" if type(exc).__name__ == "RunInterrupted" else "unavailable"
            self._note(ApprovalNote(kind, "", time.monotonic() - started, str(exc)))
            raise
        if isinstance(answer, Answer):
            decision, by = answer.decision, answer.by
        else:
            try:
                decision, by = coerce_decision(answer), "approver"
            except (ValueError, TypeError):
                self._note(ApprovalNote("unavailable", "", time.monotonic() - started))
                return answer  # the gate reports the bad answer
        self._note(ApprovalNote(decision.value, by, time.monotonic() - started))
        return answer

    def decides_alone(self, request: ApprovalRequest) -> bool:
        """The wrapped approver's own answer (approval.decides_alone reads it)."""
        method = getattr(self.approver, "decides_alone", None)
        return bool(method(request)) if callable(method) else False

    def _note(self, note: ApprovalNote) -> None:
        with self._lock:
            self._notes.append(note)

    def take(self) -> list[ApprovalNote]:
        with self._lock:
            notes, self._notes = self._notes, []
        return notes


__all__ = ["ApprovalNote", "Watcher", "approver_for_model"]
