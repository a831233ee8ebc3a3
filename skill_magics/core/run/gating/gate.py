"""The approval gate: the one place that answers "may this run?".

Every capability plans a run (plan.py) and hands the plan to the one call site
(pipeline.py: ``run_planned``), which passes its request through this gate and, when allowed,
launches it (executor.py). See docs/architecture.md for the pipeline. The gate owns:

- asking: :meth:`ApprovalGate.decide` calls the approver (a person behind a panel, a
  terminal prompt, configuration, an agent's policy) unless a "Yes in session" still covers
  the request; :meth:`decide_each` does it for several skills at once with ONE question;
- answers that come later (a click on a panel after the cell returned): :meth:`settle`;
- staleness: an approval is for the files the request showed; when they changed before the
  run starts, the run is refused (:meth:`check_current`);
- session approvals bound to fingerprints (``store``), and whether one survives a run that
  wrote files into the skill (:meth:`keep_session_approval`, around every launch);
- the audit of every decision: approved, declined, unavailable, interrupted, stale, lapsed;
- who approves (:func:`choose_approver`): the one rule for ``approver=`` arguments, where a
  run a *model* asked for never runs unasked.

A decision comes back as a :class:`Verdict`; nothing here runs a process.

Example:
    >>> from skill_magics.core.base.audit import AuditLog
    >>> from skill_magics.core.catalog.discovery import SkillFinder
    >>> gate = ApprovalGate(SkillFinder(["skills"]), AuditLog())
    >>> plan = manager.plan("csv-profiler", "profile", {"csv": "a,b\\n1,2\\n"})
    >>> gate.decide(plan.request, lambda request: "yes_once").allowed  # nothing runs here
    True
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from skill_magics.core.base import envdirs, fingerprint
from skill_magics.core.base.audit import CODE_LABEL, AuditLog, arguments_preview, code_preview
from skill_magics.core.base.errors import (
    ApprovalDeclined,
    ApprovalPending,
    ApprovalStale,
    ApprovalUnavailable,
    RunInterrupted,
    SkillMagicsError,
)
from skill_magics.core.base.status import AuditOutcome, RunStatus
from skill_magics.core.catalog.discovery import SkillFinder
from skill_magics.core.installed.lock import folder_files, tree_digest
from skill_magics.core.run.gating.approval import (
    INSTALL_LABEL,
    MANAGER_APPROVER,
    Answer,
    ApprovalRequest,
    Approver,
    ApproverArg,
    Caller,
    Decision,
    SkillInstallInfo,
    code_approval_hash,
    coerce_decision,
    combine_requests,
    decides_alone,
    install_approval_hash,
    no_weaker_within,
)
from skill_magics.core.run.gating.store import ApprovalStore

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun

SESSION = "session approval"  # who decided when a stored "Yes in session" covered the request
BY_APPROVER = "approver"  # who decided when an approver returned a bare Decision

NO_APPROVER_MESSAGE = (
    "No approver is configured, so a script the model chose was not run: pass approver=... "
    "to the tool call or tools (or set manager.approver), e.g. "
    "approver=lambda request: 'yes_once' to let the agent run scripts unattended"
)


@dataclass(frozen=True)
class Verdict:
    """The gate's answer. ``status`` None: it may run; else why not (declined, unavailable,
    pending, refused) with ``message`` saying what to do. ``pending`` is the open question
    (``ApprovalPending.decision``) when ``status`` is PENDING."""

    status: RunStatus | None = None
    message: str = ""
    decision: Decision | None = None
    by: str = ""
    pending: object | None = None

    @property
    def allowed(self) -> bool:
        return self.status is None

    def raise_if_blocked(self) -> None:
        """For callers that raise instead of returning a status (the Python API)."""
        if self.status is None:
            return
        if self.status is RunStatus.DECLINED:
            raise ApprovalDeclined(self.message)
        if self.status is RunStatus.REFUSED:
            raise ApprovalStale(self.message)
        raise ApprovalUnavailable(self.message)


ALLOWED = Verdict()


class ApprovalGate:
    """Decides whether runs may start; see the module docstring for what it owns.

    ``audit`` is where every decision is recorded (the manager's AuditLog).
    """

    def __init__(self, finder: SkillFinder, audit: AuditLog) -> None:
        self.finder = finder
        self.audit = audit
        self.store = ApprovalStore()

    # -- asking ------------------------------------------------------------------------------

    def decide(self, request: ApprovalRequest, approver: Approver | None) -> Verdict:
        """Ask ``approver`` about ``request``; None means the Python caller decided (allowed,
        nothing asked). A stored "Yes in session" at the request's fingerprints answers
        without asking. Every outcome but a session approval is audited per script.

        A RunInterrupted from the approver (interrupted while waiting) is audited and
        re-raised: the cell ends there.
        """
        if approver is None:
            return ALLOWED
        if self.store.covers(request):
            return Verdict(decision=Decision.YES_IN_SESSION, by=SESSION)
        try:
            answer = approver(request)
        except ApprovalPending as exc:
            # Not decided yet: the click that decides is settled (and audited) later.
            return Verdict(RunStatus.PENDING, str(exc), pending=exc.decision)
        except ApprovalUnavailable as exc:
            self.audit_decision(
                request, AuditOutcome.APPROVAL_UNAVAILABLE, f"ApprovalUnavailable: {exc}"
            )
            return Verdict(RunStatus.APPROVAL_UNAVAILABLE, str(exc))
        except RunInterrupted as exc:
            self.audit_decision(request, AuditOutcome.INTERRUPTED, str(exc))
            raise
        if isinstance(answer, Answer):
            return self.settle(request, answer.decision, answer.by)
        return self.settle(request, coerce_decision(answer), BY_APPROVER)

    def decide_each(
        self, requests: Sequence[ApprovalRequest], approver: Approver | None
    ) -> list[Verdict]:
        """One verdict per request, asking at most ONE question for all of them.

        Skills already approved in session, or that the approver answers alone
        (configuration, ``approver.decides_alone``), are decided one by one without anyone
        being asked; the rest share one combined request. "Yes in session" then approves
        each skill at its own fingerprint; a No declines them all.
        """
        if approver is None:  # the caller decided: nothing is asked, nothing audited
            return [ALLOWED] * len(requests)
        verdicts: list[Verdict | None] = [None] * len(requests)
        asked: list[int] = []
        for i, request in enumerate(requests):
            if self.store.covers(request) or decides_alone(approver, request):
                verdicts[i] = self.decide(request, approver)
            else:
                asked.append(i)
        if asked:
            combined = self.decide(combine_requests([requests[i] for i in asked]), approver)
            for i in asked:
                # A Yes covers each skill only at the files its own request showed; an
                # allowed part carries the one answer and who gave it (a trace, the audit).
                current = self.check_current(requests[i]) if combined.allowed else combined
                if combined.allowed and current.allowed:
                    current = replace(current, decision=combined.decision, by=combined.by)
                verdicts[i] = current
        missing = [i for i, v in enumerate(verdicts) if v is None]
        if missing:  # never happens; if a change made it happen, fail closed
            raise RuntimeError(f"no verdict for requests {missing}")
        return [v for v in verdicts if v is not None]

    def decide_scope(
        self, request: ApprovalRequest, approver: Approver | None
    ) -> tuple[Verdict, Approver]:
        """ONE question for the runs a *model* will choose within ``request.scope`` (an
        evaluation): (the verdict, the approver for those runs).

        The returned approver answers each later request with this decision, without asking
        anyone: Yes once (audited per run, "by ... for <purpose>") when it is for the same
        skill, scripts the scope listed, the code still the approved code (data written
        meanwhile does not count: :meth:`is_current`) and a sandbox no weaker, inside the
        scope's folder; No (audited as declined) after a No. Anything else (another skill,
        Python code, an install, changed code, a weaker sandbox, a question that was never
        answered) is refused as unavailable, audited, and never asked again.
        """
        verdict = self.decide(request, approver)
        purpose = request.scope.purpose if request.scope is not None else "this scope"
        listed = {script.path for script in request.scripts}
        by = f"{verdict.by or BY_APPROVER} for {purpose}"

        def scoped(call: ApprovalRequest) -> Answer:
            for part in call.requests:
                inside = (
                    part.skill_name == request.skill_name
                    and part.code is None
                    and part.install is None
                    and {script.path for script in part.scripts} <= listed
                    and no_weaker_within(part.sandbox, request.sandbox)
                )
                if not inside:
                    raise ApprovalUnavailable(
                        f"{describe(call)} is outside the approval given for {purpose}: nothing ran"
                    )
            if verdict.status is RunStatus.DECLINED:
                return Answer(Decision.NO, by)
            if not verdict.allowed:
                raise ApprovalUnavailable(
                    f"{describe(call)}: no approval was given for {purpose} "
                    f"({verdict.message or verdict.status}); nothing ran"
                )
            if not self.is_current(request):
                raise ApprovalUnavailable(
                    f"the code of '{request.skill_name}' changed after the approval for "
                    f"{purpose}; nothing ran: start it again to review the new code"
                )
            return Answer(Decision.YES_ONCE, by)

        return verdict, scoped

    def settle(self, request: ApprovalRequest, decision: Decision | str, by: str) -> Verdict:
        """Apply a decision given now or later (a click after the cell returned): a Yes for
        files that changed since the request is refused; "Yes in session" is remembered for
        each skill at its fingerprint; everything is audited (a session approval excepted)."""
        decision = coerce_decision(decision)
        if decision is Decision.NO:
            message = (
                f"Running {describe(request)} was declined: nothing ran ({decision.label} by "
                f"{by}). Run it again to be asked again"
            )
            self.audit_decision(request, AuditOutcome.DECLINED, f"ApprovalDeclined: {message}")
            return Verdict(RunStatus.DECLINED, message, decision, by)
        if not request.is_combined:  # decide_each checks the parts of a combined one
            current = self.check_current(request)
            if not current.allowed:
                return current
        if decision is Decision.YES_IN_SESSION:
            for part in request.requests:  # each skill at its own fingerprint
                self.store.approve(
                    part.skill_name,
                    part.content_hash,
                    part.sandbox,
                    part.environment,
                    self.store.binding(part),  # the MCP digest set and the signer
                )
        if by != SESSION:
            self.audit_decision(request, AuditOutcome.APPROVED, f"{decision.value} by {by}")
        return Verdict(decision=decision, by=by)

    # -- staleness ---------------------------------------------------------------------------

    def is_current(self, request: ApprovalRequest) -> bool:
        """Is the code ``request`` showed still the code of its skills?

        A change of code (a script, a module it may import, SKILL.md: ``fingerprint.is_code``)
        makes it stale. Data files written meanwhile (a run's output in its cwd, e.g. by a
        concurrent tool call) do not, when the request knows what its fingerprint was made
        of (``request.entries``); without that, any change makes it stale.
        """
        return all(self._part_current(part)[0] for part in request.requests)

    def watch(self, request: ApprovalRequest) -> CodeWatch:
        """A :class:`CodeWatch` for ``request``: ``is_current``, cheap to ask before every
        item of a batch."""
        return CodeWatch(self, request)

    def _part_current(
        self, part: ApprovalRequest, *, snapshot: bool = False
    ) -> tuple[bool, fingerprint.StatSnapshot | None]:
        """is_current for one skill's request, and (``snapshot``) a StatSnapshot of the
        files it was decided on."""
        if part.skill_install is not None:  # skill files to install: the staged copy
            return staged_is_current(part.skill_install), None
        snap = None
        try:
            skill = self.finder.get_skill(part.skill_name)  # an MCP skill's copy: re-hashed
            base = skill.base_dir
            if snapshot:
                entries, snap = fingerprint.skill_snapshot(base)
            else:
                entries = fingerprint.skill_entries(base)
        except (SkillMagicsError, OSError):
            return False, None
        # An MCP skill's copy now holds another set of {uri, digest} than the one asked about.
        if skill.binding != (part.mcp.binding if part.mcp is not None else ""):
            return False, None
        if envdirs.environment_id(base) != part.environment:
            return False, None  # the managed environment was rebuilt: other code would run
        now = fingerprint.fingerprint_of(entries)
        if part.code is not None:
            now = code_approval_hash(now, part.code)
        elif part.install is not None and not part.scripts:
            now = install_approval_hash(now, part.install.packages)
        if now == part.content_hash:
            return True, snap
        if part.entries is None:
            return False, None
        changed = fingerprint.changed_entries(dict(part.entries), entries)
        if any(fingerprint.is_code(base, rel) for rel in changed):
            return False, None
        return True, snap

    def check_current(self, request: ApprovalRequest) -> Verdict:
        """ALLOWED, or REFUSED (audited per script) when the files changed since ``request``
        was made: the person decided on other code, so none of it runs on that decision."""
        if self.is_current(request):
            return ALLOWED
        names = ", ".join(request.skill_names)
        message = (
            f"{names}: the skill's files changed after the approval was asked; nothing ran. "
            "Run it again to review the new code"
        )
        self.audit_decision(request, AuditOutcome.REFUSED, f"ApprovalStale: {message}")
        return Verdict(RunStatus.REFUSED, message)

    def environment_rebuilt(self, skill_name: str, where: str) -> None:
        """A new managed environment of ``skill_name`` was published: its "Yes in session"
        ends (other packages run its code now), audited as ``approval_lapsed``. A rebuild by
        another process ends it too: the request's ``environment`` no longer matches."""
        if self.store.revoke(skill_name):
            self.audit.event(
                skill_name,
                INSTALL_LABEL,
                None,
                AuditOutcome.APPROVAL_LAPSED,
                reason=f"the skill's environment was rebuilt ({where}): the session approval "
                "lapsed; the next run asks again",
            )

    # -- auditing ----------------------------------------------------------------------------

    def audit_decision(self, request: ApprovalRequest, outcome: AuditOutcome, reason: str) -> None:
        """One audit record per script (or the code) of every skill ``request`` covers."""
        for part in request.requests:
            if part.code is not None:
                scripts, preview = [CODE_LABEL], code_preview(part.code)
            elif part.skill_install is not None:
                info = part.skill_install
                at = f" at {info.commit}" if info.commit else ""
                scripts, preview = [INSTALL_LABEL], f"{info.action} from {info.source}{at}"
            elif part.install is not None and not part.scripts:
                scripts, preview = [INSTALL_LABEL], " ".join(part.install.packages)
            else:
                scripts = [s.path for s in part.scripts]
                preview = arguments_preview(part.arguments, part.argv)
            for script in scripts:
                self.audit.event(part.skill_name, script, preview, outcome, reason=reason)

    # -- session approvals across a run ------------------------------------------------------

    def keep_session_approval(self, prepared: PreparedRun) -> Callable[[], None] | None:
        """Called by the call site around a launch of a skill approved "in session".

        Before the run: note the skill's files. After it: when the run changed only data
        files (an output in its cwd), move the approval to the new fingerprint so they do not
        lapse it; when it changed code (a script, a module it may import:
        ``fingerprint.is_code``) revoke it and audit ``approval_lapsed``: the next run asks
        again. A change made by another process during the run is attributed to the run.
        An MCP skill's approval is left as it is (what a run writes into its copy never
        reaches a later run).
        """
        name = prepared.skill_name
        if not self.store.approvals().get(name):
            return None  # nothing to keep: no fingerprint computed
        try:
            skill = self.finder.get_skill(name)
            if skill.binding:
                # An MCP skill's copy: whatever the run writes there is discarded before the
                # next use (the copy is fetched again, every file verified: core/mcp/runs.py),
                # so the approval stays with the verified files it was given for.
                return None
            before = fingerprint.skill_entries(skill.base_dir)
        except (SkillMagicsError, OSError):
            return None
        before_hash = fingerprint.fingerprint_of(before)
        if not self.store.is_approved(name, before_hash):
            return None
        skipped_before = fingerprint.skipped_entries(skill.base_dir)

        def finish() -> None:
            try:
                after = fingerprint.skill_entries(skill.base_dir)
            except (SkillMagicsError, OSError) as exc:
                # The files cannot be compared any more (the run nested folders deeper than
                # the fingerprint walks): fail closed, as for a change of code.
                after, code = {}, [f"the whole skill: {exc}"]
            else:
                changed = fingerprint.changed_entries(before, after)
                changed += fingerprint.changed_entries(
                    skipped_before, fingerprint.skipped_entries(skill.base_dir)
                )
                code = [rel for rel in changed if fingerprint.is_code(skill.base_dir, rel)]
            if not code:
                self.store.rebase(name, before_hash, fingerprint.fingerprint_of(after))
                return
            shown = ", ".join(code[:5]) + (f" (+{len(code) - 5} more)" if len(code) > 5 else "")
            # Revoke, not just leave it at the old hash: changes in venv/ or __pycache__/ do
            # not move the fingerprint, so the old approval would still match.
            self.store.revoke(name, before_hash)
            reason = (
                f"the run changed code in the skill ({shown}): the session approval lapsed; "
                "the next run asks again"
            )
            self.audit.event(
                name, prepared.script_rel, None, AuditOutcome.APPROVAL_LAPSED, reason=reason
            )

        return finish


def choose_approver(
    approver: ApproverArg, manager_approver: Approver | None, caller: Caller
) -> Approver | None:
    """The one approver rule (docs/architecture.md, *Who approves*).

    ``approver`` is what a call was given: :data:`MANAGER_APPROVER` (every signature's
    default) means ``manager_approver``. Then ``None`` means: for a person's own call
    (``Caller.PERSON``: the Python API, %%skillrun, %skill_context, %%skillpy) "I decided:
    run", nothing asked; for a call a model made (``Caller.MODEL``: tools, LangChain, an agent
    loop) it is never run unasked: an approver that refuses (audited as
    approval_unavailable; a "Yes in session" a person gave still counts).
    """
    chosen = manager_approver if approver is MANAGER_APPROVER else approver
    if chosen is None and Caller(caller) is Caller.MODEL:
        return _refuse_unattended
    return chosen  # type: ignore[return-value]


class CodeWatch:
    """Is the code a request showed still its skills' code? Asked before EVERY item of a
    batch (docs/architecture.md, *Batch runs*), so it must be cheap:

    - fast path: nothing the last full check looked at moved (``StatSnapshot.unchanged``:
      one stat per folder, file and link target; no listing, no reading);
    - otherwise the full ``is_current`` check (a walk; only files whose identity changed
      are hashed again), which also takes the next snapshot.

    Once stale, always stale. Thread-safe: concurrent items share one answer.
    """

    def __init__(self, gate: ApprovalGate, request: ApprovalRequest) -> None:
        self.gate = gate
        self.request = request
        self._snapshots: dict[int, fingerprint.StatSnapshot] = {}
        self._stale = False
        self._lock = threading.Lock()
        self.full_checks = 0  # how many times the fast path could not answer (for benches)

    def current(self) -> bool:
        with self._lock:
            if self._stale:
                return False
            for i, part in enumerate(self.request.requests):
                snap = self._snapshots.get(i)
                if snap is not None and snap.unchanged() and self._same_environment(part):
                    continue
                self.full_checks += 1
                ok, snap = self.gate._part_current(part, snapshot=True)
                if not ok or snap is None:
                    self._stale = True
                    self._snapshots.clear()
                    return False
                self._snapshots[i] = snap
            return True

    def _same_environment(self, part: ApprovalRequest) -> bool:
        """A rebuilt managed environment (outside the skill folder, so outside the snapshot)
        is other code: one readlink, as cheap as the snapshot."""
        try:
            base = self.gate.finder.get_skill(part.skill_name).base_dir
        except SkillMagicsError:
            return False
        return envdirs.environment_id(base) == part.environment


def describe(request: ApprovalRequest) -> str:
    """``skill (scripts/a.py, scripts/b.py)`` for messages."""
    installs = [p.skill_install for p in request.requests if p.skill_install is not None]
    if installs and not request.scripts:
        first = installs[0]
        return f"{request.skill_name} (an {first.action} of skill files from {first.source})"
    paths = ", ".join(s.path for s in request.scripts) or (
        "an install of " + ", ".join(request.install.packages)
        if request.install is not None and request.code is None
        else "Python code"
    )
    return f"{request.skill_name} ({paths})"


def staged_is_current(info: SkillInstallInfo) -> bool:
    """Are the staged skill files still the ones the request showed (same tree digest)?"""
    if not info.staged:
        return False
    files, other = folder_files(Path(info.staged))
    return not other and tree_digest(list(files.values())) == info.tree


def _refuse_unattended(request: ApprovalRequest) -> Decision:
    raise ApprovalUnavailable(
        f"{NO_APPROVER_MESSAGE} (skill {request.skill_name!r}, "
        f"{', '.join(s.path for s in request.scripts) or 'code'})"
    )


__all__ = [
    "ALLOWED",
    "ApprovalGate",
    "NO_APPROVER_MESSAGE",
    "SESSION",
    "Verdict",
    "choose_approver",
    "describe",
]
