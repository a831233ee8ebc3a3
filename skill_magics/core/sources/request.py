"""The approval request for installing skill files, and its ONE call to the gate.

Installing copies third-party code, so it passes the gate like an environment install
(docs/architecture.md, *Installed skills*): one request per skill with
``ApprovalRequest.skill_install`` (source, commit, every file, the scripts among them, what
an update changes, with a diff) and no scripts to run; all of them are asked about with ONE
question (``gate.decide_each``); No installs nothing. The gate re-hashes the staged copy
before a Yes counts (``gate.staged_is_current``). The question is asked, and the files are
copied, through the one call site (:func:`run_approved`: ``manager.run_planned``).

Example (not run as a doctest: it installs skills)::

    requests = [install_request(s, action="install", source=..., commit=..., target=...)]
    done = run_approved(manager, requests, approver, copy_them)  # raises unless all may be
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.installed.signature import Signature
from skill_magics.core.run.gating.approval import (
    ApprovalRequest,
    ApproverArg,
    SkillInstallInfo,
    skill_install_hash,
)
from skill_magics.core.run.pipeline import ActionPlan
from skill_magics.core.sources.snapshot import StagedSkill

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager

T = TypeVar("T")


def install_request(
    staged: StagedSkill,
    *,
    action: str,
    source: str,
    commit: str | None,
    target: Path,
    replaces: str = "",
    changes: Sequence[str] = (),
    diff: str = "",
    signature: Signature | None = None,
) -> ApprovalRequest:
    """What a person sees before ``staged`` is copied to ``target``."""
    scripts = tuple(
        sorted(
            s.path.as_posix() for s in ScriptDetector(allow_typescript=True).detect(staged.staged)
        )
    )
    info = SkillInstallInfo(
        action=action,
        source=source,
        commit=commit or "",
        path=staged.found.path,
        target=str(target),
        files=tuple((f.path, f.size) for f in staged.files),
        scripts=scripts,
        tree=staged.tree,
        replaces=replaces,
        changes=tuple(changes),
        diff=diff,
        staged=str(staged.staged),
        signature=signature.describe() if signature is not None else "",
    )
    return ApprovalRequest(
        skill_name=staged.folder,
        scripts=(),
        content_hash=skill_install_hash(info),
        request_id=uuid.uuid4().hex,
        skill_install=info,
    )


def run_approved(
    manager: SkillManager,
    requests: Sequence[ApprovalRequest],
    approver: ApproverArg,
    act: Callable[[], T],
) -> T:
    """Steps 2 and 3 of an install through the one call site (``manager.run_planned`` with
    an ``ActionPlan``): ONE question for every skill of ``requests`` (the gate); only when
    every one may be installed does ``act()`` run (copy the staged files, write the lock),
    and its value is returned. Raises (audited by the gate) otherwise: nothing is written.
    ``approver``: the manager's by default; None: the caller decided (a person's own call,
    docs/architecture.md, *Who approves*)."""
    outcome = manager.run_planned(ActionPlan(tuple(requests), act), approver)
    outcome.raise_if_blocked()
    return outcome.value


__all__ = ["install_request", "run_approved"]
