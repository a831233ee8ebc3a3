"""The approval request for installing skill files, and its ONE call to the gate.

Installing copies third-party code, so it passes the gate like an environment install
(docs/architecture.md, *Installed skills*): one request per skill with
``ApprovalRequest.skill_install`` (source, commit, every file, the scripts among them, what
an update changes, with a diff) and no scripts to run; all of them are asked about with ONE
question (``gate.decide_each``); No installs nothing. The gate re-hashes the staged copy
before a Yes counts (``gate.staged_is_current``).

Example:
    >>> requests = [install_request(s, action="install", source=..., commit=..., target=...)]
    >>> decide(manager, requests, approver)      # raises unless every skill may be installed
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.run.approval import (
    ApprovalRequest,
    Approver,
    SkillInstallInfo,
    skill_install_hash,
)
from skill_magics.core.sources.snapshot import StagedSkill

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager, _UseDefault


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
    )
    return ApprovalRequest(
        skill_name=staged.folder,
        scripts=(),
        content_hash=skill_install_hash(info),
        request_id=uuid.uuid4().hex,
        skill_install=info,
    )


def chosen_approver(
    manager: SkillManager, approver: Approver | None | _UseDefault
) -> Approver | None:
    """``approver``, or the manager's for USE_DEFAULT (None: the caller decided), as
    ``execute_skill_script`` chooses."""
    from skill_magics.core.manager import USE_DEFAULT

    if approver is USE_DEFAULT:
        return manager.approver
    return approver  # type: ignore[return-value]


def decide(
    manager: SkillManager,
    requests: Sequence[ApprovalRequest],
    approver: Approver | None | _UseDefault,
) -> None:
    """Plan -> GATE: one question for every skill of ``requests``; raises (audited by the
    gate) unless every one may be installed. ``approver`` None: the caller decided."""
    chosen = chosen_approver(manager, approver)
    if chosen is None or not requests:
        return
    for verdict in manager.gate.decide_each(list(requests), chosen):
        verdict.raise_if_blocked()


__all__ = ["install_request", "decide", "chosen_approver"]
