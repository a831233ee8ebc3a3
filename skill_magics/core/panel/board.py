"""What the Skills side panel shows and may do in one kernel: a second view of the gate.

The board answers the channel's requests (core/panel/channel.py): ``state`` (the waiting
questions, the session's grants and pre-approvals, recent runs), ``skills`` (what the
kernel can run), ``skill_md``, ``result`` (a recent run's result tabs), ``decide``,
``revoke``, ``install`` and ``add_dir``. It
decides nothing itself: a question waiting in a cell is the cell's own object (the approval
panel), and ``decide`` puts the answer into it exactly as its button does, so the first
answer wins in either view and the gate (core/run/gating/gate.py) settles, remembers and audits
it as always. An install asked from the side panel goes through the same gate as
``%skills install``; its question waits on the board (a :class:`BoardQuestion`) instead of
in a cell.

Everything sent is text: secret values masked (``redact_known``) and the request described
by the same function as the cell's panel (the notebook passes ``summary_text``, the text view
of the panel's one model, summary.py). The board holds process state only: a kernel restart
empties it.

Example (not run as a doctest: it needs a manager)::

    board = Board(lambda: manager, questions=lambda: panels, describe=summary_text)
    board.handle("state", {})["waiting"]     # [{"id": ..., "summary": ..., ...}]
    board.handle("decide", {"id": "...", "choice": "yes_once"})
"""

from __future__ import annotations

import os
import secrets as _secrets
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from skill_magics.core.base.errors import (
    ApprovalUnavailable,
    SidePanelError,
    SkillMagicsError,
)
from skill_magics.core.base.paths import open_inside
from skill_magics.core.base.secrets import redact_known
from skill_magics.core.run.gating.approval import Answer, ApprovalRequest, Decision

if TYPE_CHECKING:
    from skill_magics.core.base.recent import KeptResult
    from skill_magics.core.manager import SkillManager

BY_SIDE_PANEL = "decided in the side panel"  # who decided, in the cell's panel and the audit
RECENT_RUNS = 30  # audit records the panel shows
SKILL_MD_MAX = 200_000  # characters of SKILL.md sent
INSTALL_WAIT_S = 600.0  # how long an install asked from the panel waits for its answer


class Question(Protocol):
    """A request that waits for an answer: the cell's ApprovalPanel, or a BoardQuestion."""

    request: ApprovalRequest
    decision: Decision | None
    decided_by: str | None
    withdrawn: str | None

    def decide(self, decision: Decision | str, by: str) -> bool: ...


@dataclass(eq=False)
class BoardQuestion:
    """A question asked on the board only (an install from the panel): first answer wins."""

    request: ApprovalRequest
    decision: Decision | None = None
    decided_by: str | None = None
    withdrawn: str | None = None
    event: threading.Event = field(default_factory=threading.Event)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def decide(self, decision: Decision | str, by: str) -> bool:
        with self._lock:
            if self.decision is not None or self.withdrawn is not None:
                return False
            self.decision, self.decided_by = Decision(decision), by
        self.event.set()
        return True

    def withdraw(self, reason: str) -> None:
        with self._lock:
            if self.decision is None:
                self.withdrawn = reason
        self.event.set()


@dataclass
class InstallJob:
    """An install asked from the panel: its messages so far, and how it ended."""

    source: str
    messages: list[str] = field(default_factory=list)
    done: bool = False
    error: str = ""


class Board:
    """The side panel's requests for one kernel (see the module docstring).

    ``manager``: returns the kernel's SkillManager; ``questions``: the cell questions shown
    so far (undecided ones are listed); ``describe``: the text of a request, as the cell's
    panel shows it; ``preapprovals``: what configuration approves without asking
    (``{"key", "what"}``: ``auto_approve``, ...), which ``revoke_preapproval(key)`` ends;
    ``show_result``: the tabs of a kept run result, as the cell's result shows them;
    ``place``: where a question is shown (its cell), for a reloaded page.
    """

    def __init__(
        self,
        manager: Callable[[], SkillManager],
        questions: Callable[[], Sequence[Question]],
        describe: Callable[[ApprovalRequest], str],
        preapprovals: Callable[[], list[dict[str, str]]] = list,
        revoke_preapproval: Callable[[str], bool] | None = None,
        show_result: Callable[[KeptResult], dict[str, Any]] | None = None,
        place: Callable[[Any], dict[str, Any] | None] | None = None,
    ) -> None:
        self._manager = manager
        self._questions = questions
        self._describe = describe
        self._preapprovals = preapprovals
        self._revoke_preapproval = revoke_preapproval
        self._show_result = show_result
        self._place = place
        self._ids: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
        self._board: list[BoardQuestion] = []  # questions of installs asked from the panel
        self._jobs: list[InstallJob] = []
        self._lock = threading.Lock()

    # -- the channel's entry point ------------------------------------------------------------

    def handle(self, op: str, args: dict[str, Any]) -> Any:
        """Answer one request of the channel; unknown operations are refused."""
        ops: dict[str, Callable[[dict[str, Any]], Any]] = {
            "state": self.state,
            "skills": self.skills,
            "skill_md": self.skill_md,
            "result": self.result,
            "decide": self.decide,
            "revoke": self.revoke,
            "install": self.install,
            "add_dir": self.add_dir,
        }
        action = ops.get(op)
        if action is None:
            raise SidePanelError(f"unknown side panel request {op!r}: use one of {sorted(ops)}")
        return _masked(action(args))

    # -- reading ------------------------------------------------------------------------------

    def _id(self, question: Any) -> str:
        with self._lock:
            found = self._ids.get(question)
            if found is None:
                found = self._ids[question] = _secrets.token_hex(12)
            return found

    def waiting(self) -> list[tuple[str, Question]]:
        """(id, question) of every question still open, oldest first."""
        with self._lock:
            board = list(self._board)
        open_ = [
            q for q in [*self._questions(), *board] if q.decision is None and q.withdrawn is None
        ]
        return [(self._id(q), q) for q in open_]

    def state(self, _args: dict[str, Any]) -> dict[str, Any]:
        """What changes while a person looks: questions, grants, runs, installs."""
        manager = self._manager()
        waiting = [
            {
                "id": qid,
                "skills": list(q.request.skill_names),
                "summary": self._describe(q.request),
                "install": q.request.skill_install is not None,
                "cell": self.cell_of(q),
            }
            for qid, q in self.waiting()
        ]
        grants = [
            {"skill": name, "fingerprint": digest[:12]}
            for name, digest in sorted(manager.approvals.approvals().items())
        ]
        runs = [
            {
                "time": rec.timestamp,
                "skill": rec.skill,
                "script": rec.script,
                "outcome": str(rec.outcome.value),
                "exit_code": rec.exit_code,
                "duration_ms": rec.duration_ms,
                "reason": rec.reason or "",
                "arguments": rec.arguments,  # redacted and cut when recorded (audit.py)
                "start": rec.start or "",
                "sandbox": (rec.sandbox or {}).get("mode", ""),
                "result": manager.audit.results.id_of(rec),  # "" when none is kept
            }
            for rec in reversed(manager.audit.records()[-RECENT_RUNS:])
        ]
        with self._lock:
            jobs = [
                {"source": j.source, "messages": j.messages[-20:], "done": j.done, "error": j.error}
                for j in self._jobs[-5:]
            ]
        return {
            "waiting": waiting,
            "grants": grants,
            "preapprovals": self._preapprovals(),
            "runs": runs,
            "installs": jobs,
        }

    def cell_of(self, question: Any) -> dict[str, Any] | None:
        """Where a question is shown in a notebook (``place``: the cell id, the request's
        msg_id, display id, widget model id, execution count), so a page reloaded while it
        waits can show it in its cell again (labextension/src/reattach.ts); None: nowhere."""
        if self._place is None:
            return None
        try:
            return self._place(question)
        except Exception:  # noqa: BLE001 - the list must still be served
            return None

    def skills(self, _args: dict[str, Any]) -> dict[str, Any]:
        """Every skill the kernel sees: name, description, origin, signer, scripts, env."""
        from skill_magics.core.base import envdirs
        from skill_magics.core.trust.installed import origin_of

        manager = self._manager()
        rows = []
        for meta in manager.list_skills():
            folder = Path(meta.path).parent
            row: dict[str, Any] = {
                "name": meta.name,
                "description": meta.description,
                "path": str(meta.path),
                "scripts": [],
                "origin": f"local folder {folder.parent}",
                "signer": "",
                "environment": "",
            }
            try:
                skill = manager.get_skill(meta.name)
                row["scripts"] = [str(s.path) for s in skill.scripts if s.runnable]
                origin = origin_of(folder, meta.name)
                row["origin"] = f"{origin.kind}: {origin.source}"
                row["signer"] = origin.signature.describe()
                env = envdirs.environment_id(folder)
                row["environment"] = f"managed environment {env[:12]}" if env else "none"
            except (SkillMagicsError, OSError, ValueError) as exc:
                row["problem"] = f"{type(exc).__name__}: {exc}"
            rows.append(row)
        rows += _mcp_rows(manager)
        return {"skills": rows, "dirs": [str(d) for d in manager.skill_dirs]}

    def skill_md(self, args: dict[str, Any]) -> dict[str, Any]:
        """The text of a listed skill's SKILL.md (only a skill the kernel lists)."""
        name = str(args.get("name", ""))
        manager = self._manager()
        for meta in manager.list_skills():
            if meta.name == name:
                # Read as the catalog reads it: a regular file, never a FIFO or a link out.
                with os.fdopen(open_inside("SKILL.md", Path(meta.path).parent), "rb") as fh:
                    text = fh.read(SKILL_MD_MAX).decode("utf-8", "replace")
                return {"name": name, "path": str(meta.path), "text": text}
        raise SidePanelError(f"no skill {name!r} in this kernel: refresh the list")

    def result(self, args: dict[str, Any]) -> dict[str, Any]:
        """The result tabs of one of THIS kernel's recent runs, by the id its row in
        ``state`` carries (core/base/recent.py: the last runs, each stream cut)."""
        run_id = str(args.get("id", ""))
        results = self._manager().audit.results
        kept = results.get(run_id) if run_id else None
        if kept is None:
            raise SidePanelError(
                f"no result {run_id!r} in this kernel: another kernel's run, one from before "
                f"a restart, or older than the last {results.keep_count} runs; refresh the list"
            )
        if self._show_result is None:
            raise SidePanelError("this kernel's side panel shows no run results")
        return self._show_result(kept)

    # -- acting -------------------------------------------------------------------------------

    def decide(self, args: dict[str, Any]) -> dict[str, Any]:
        """Answer an open question of THIS kernel, as its button would (first answer wins)."""
        qid, choice = str(args.get("id", "")), str(args.get("choice", ""))
        try:
            decision = Decision(choice)
        except ValueError:
            raise SidePanelError(
                f"{choice!r} is not an answer: use yes_once, yes_in_session or no"
            ) from None
        for found, question in self.waiting():
            if found == qid:
                if question.decide(decision, BY_SIDE_PANEL):
                    return {"decided": decision.value}
                break
        for question in [*self._questions(), *self._board]:
            if self._ids.get(question) == qid and question.decision is not None:
                raise SidePanelError(
                    f"already decided: {question.decision.label} ({question.decided_by})"
                )
        raise SidePanelError(
            "no such question waits in this kernel (answered, withdrawn, or another kernel's)"
        )

    def revoke(self, args: dict[str, Any]) -> dict[str, Any]:
        """Forget a "Yes in session" (as ``%skills revoke NAME``), or end a pre-approval
        (``{"preapproval": key}``): the next run asks again."""
        if "preapproval" in args:
            key = str(args["preapproval"])
            if self._revoke_preapproval is None or not self._revoke_preapproval(key):
                raise SidePanelError(f"no pre-approval {key!r} in this kernel: refresh the list")
            return {"revoked": key}
        name = str(args.get("skill", ""))
        store = self._manager().approvals
        if not store.revoke(name):
            have = ", ".join(sorted(store.approvals())) or "none"
            raise SidePanelError(f"no session approval for {name!r} (approved: {have})")
        return {"revoked": name}

    def add_dir(self, args: dict[str, Any]) -> dict[str, Any]:
        """Search one more folder for skills (as ``%skills add PATH``)."""
        path = str(args.get("path", "")).strip()
        if not path:
            raise SidePanelError("give the folder to add")
        folder = Path(path).expanduser()
        if not folder.is_dir():
            raise SidePanelError(f"{folder} is not a folder: give an existing folder of skills")
        added = self._manager().add_dir(folder)
        return {"added": str(added)}

    def install(self, args: dict[str, Any]) -> dict[str, Any]:
        """Install skills from ``source`` as ``%skills install SOURCE`` does, in a thread:
        the gate asks, and the question waits on the board (Waiting for you)."""
        source = str(args.get("source", "")).strip()
        if not source:
            raise SidePanelError("give a source: a git URL, a path, a .skill file or https://HOST")
        job = InstallJob(source)
        with self._lock:
            self._jobs.append(job)
            del self._jobs[:-20]
        threading.Thread(
            target=self._install, args=(job,), name="skm-side-panel-install", daemon=True
        ).start()
        return {"started": source}

    def _install(self, job: InstallJob) -> None:
        from skill_magics.core.sources.install import install_skills

        def note(message: str) -> None:
            with self._lock:
                job.messages.append(str(message))

        try:
            report = install_skills(
                job.source, manager=self._manager(), approver=self._ask, on_message=note
            )
            note(report.message)
        except (SkillMagicsError, OSError, ValueError) as exc:
            job.error = f"{type(exc).__name__}: {exc}"
        finally:
            job.done = True

    def _ask(self, request: ApprovalRequest) -> Answer:
        """The approver of an install asked from the panel: a question on the board."""
        question = BoardQuestion(request)
        with self._lock:
            self._board.append(question)
        try:
            if not question.event.wait(INSTALL_WAIT_S):
                question.withdraw(f"no answer within {INSTALL_WAIT_S:g} s")
            if question.decision is None:
                raise ApprovalUnavailable(
                    f"no answer in the side panel within {INSTALL_WAIT_S:g} s: nothing was "
                    "installed; install again"
                )
            return Answer(question.decision, question.decided_by or BY_SIDE_PANEL)
        finally:
            with self._lock:
                self._board.remove(question)


def _mcp_rows(manager: SkillManager) -> list[dict[str, Any]]:
    """The skills of the MCP servers added to ``manager``, as last listed (none added: the
    SDK is never imported; a server is not asked again here, ``%skills`` does that)."""
    from skill_magics.core.mcp.servers import servers_of

    rows = []
    for server in servers_of(manager).servers():
        for entry in server.skills:
            rows.append(
                {
                    "name": entry.qualified_name,
                    "description": str(entry.frontmatter.get("description") or ""),
                    "path": "",
                    "scripts": [],
                    "origin": f"mcp: {server.label} ({server.origin})",
                    "signer": f"unsigned (MCP server {server.label})",
                    "environment": "",
                }
            )
    return rows


def _masked(value: Any) -> Any:
    """Every text of an answer with secret values masked (``****``)."""
    if isinstance(value, str):
        return redact_known(value)
    if isinstance(value, dict):
        return {k: _masked(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_masked(v) for v in value]
    return value


__all__ = ["BY_SIDE_PANEL", "Board", "BoardQuestion", "Question"]
