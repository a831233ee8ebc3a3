"""How a run ended, what an audit record says happened, and what a script may do: closed
sets of names.

Both are ``str`` enums, so ``RunStatus.DECLINED == "declined"`` and JSON, logs and saved
notebooks carry the plain value. ``str(member)`` and f-strings give the value too.

Example:
    >>> RunStatus("approval_unavailable") is RunStatus.APPROVAL_UNAVAILABLE
    True
    >>> f"{AuditOutcome.APPROVED}"
    'approved'
"""

from __future__ import annotations

import enum


class _Name(enum.StrEnum):  # str() and format() give the value
    def __repr__(self) -> str:
        # Shown inside tuples, lists and records exactly as the plain string always was.
        return repr(str(self.value))


class RunStatus(_Name):
    """The state of one run, as results, the context's ``status`` attribute and views show it."""

    COMPLETED = "completed"  # exit code 0
    FAILED = "failed"  # non-zero exit code
    TIMEOUT = "timeout"  # killed at the time limit
    SIGNALED = "signaled"  # killed by a signal
    INTERRUPTED = "interrupted"  # Stop, Kernel > Interrupt or cancel: the group was killed
    DECLINED = "declined"  # the person said No
    APPROVAL_UNAVAILABLE = "approval_unavailable"  # nobody could be asked
    REFUSED = "refused"  # a safety check said no (or the files changed after approval)
    PENDING = "pending"  # waiting for a click that may come after the cell returned
    RUNNING = "running"
    ERROR = "error"  # the script a context references is missing or escapes the skill
    SKIPPED = "skipped"  # a context built with run_scripts=False
    CANCELLED = "cancelled"  # a batch item that never started: the batch was stopped first

    @property
    def final(self) -> bool:
        """True once nothing about the run will change."""
        return self not in (RunStatus.PENDING, RunStatus.RUNNING)


class ScriptRole(_Name):
    """What a skill's script is for (catalog/kinds.py; docs/architecture.md, *Real skills*).

    Two questions, three answers: may it run (everything a person could sensibly run may),
    and is it offered (an LLM tool, a completion, ``%skills show``'s main table).
    """

    OFFERED = "offered"  # runs, and is offered: named in a markdown file, or imported by none
    RUNNABLE = "runnable"  # runs when asked, but other scripts import it: not offered
    LIBRARY = "library"  # never runs alone: __init__.py, or only imports/definitions/constants

    @property
    def runnable(self) -> bool:
        return self is not ScriptRole.LIBRARY

    @property
    def offered(self) -> bool:
        return self is ScriptRole.OFFERED


class AuditOutcome(_Name):
    """What one audit record says happened."""

    APPROVED = "approved"  # a person or an explicit setting said yes; the run follows
    COMPLETED = "completed"
    FAILED = "failed"
    TIMEOUT = "timeout"
    SIGNALED = "signaled"
    REFUSED = "refused"
    DECLINED = "declined"
    APPROVAL_UNAVAILABLE = "approval_unavailable"
    INTERRUPTED = "interrupted"
    APPROVAL_LAPSED = "approval_lapsed"  # a run changed the skill's code: ask again next time
    NETWORK_GRANTED = "network_granted"  # a skill may use the network in sandboxed runs


_NOTABLE = frozenset(
    {
        AuditOutcome.REFUSED,
        AuditOutcome.DECLINED,
        AuditOutcome.APPROVAL_UNAVAILABLE,
        AuditOutcome.TIMEOUT,
        AuditOutcome.INTERRUPTED,
    }
)
# Their values (a str hashes in C; an Enum member through Python): every record asks.
NOTABLE_VALUES = frozenset(outcome.value for outcome in _NOTABLE)

__all__ = ["RunStatus", "AuditOutcome", "NOTABLE_VALUES", "ScriptRole"]
