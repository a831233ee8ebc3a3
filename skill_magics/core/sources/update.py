"""``sync_skills`` and ``update_skills``: the install folder against its lock's sources.

- **sync** re-creates the locked skills exactly (on a new machine, after a deletion): each
  is fetched at its locked commit (an archive or folder is read again) and must give the
  very digests the lock records, else nothing is written. Skills that already match are
  left alone.
- **update** fetches each skill's ref again (the default branch when none was given),
  lists what changed (files, and a unified diff of the text files, in the approval panel),
  installs only after approval and rewrites the lock. Declined: nothing changes, the lock
  included.

Both refuse to overwrite files edited since the install (``verify_skills`` lists them)
unless ``force``; both pass the gate like an install (one question for all skills).

Example (not run as a doctest: it fetches the skills' sources)::

    report = update_skills(".agents/skills", ["pdf"], manager=manager)
    [(s.folder, s.status, s.changes) for s in report.skills]
    # -> [('pdf', 'updated', ('changed scripts/extract.py',))]
"""

from __future__ import annotations

import difflib
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from skill_magics.core.base.errors import LockFileError, SkillExistsError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.lock import (
    MISSING,
    Lock,
    LockedSkill,
    computed_hash,
    record_changes,
)
from skill_magics.core.installed.signature import Signature
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg
from skill_magics.core.sources import request as gate_request
from skill_magics.core.sources import signing
from skill_magics.core.sources.install import (
    RESTORED,
    UNCHANGED,
    UPDATED,
    CopyPlan,
    InstalledSkill,
    InstallReport,
    OnMessage,
    audited,
    commit_plans,
    install_folder,
    plural,
    say,
    use_folder,
)
from skill_magics.core.sources.kinds import SOURCE_KINDS, read_lock
from skill_magics.core.sources.snapshot import Snapshot, StagedSkill, skill_at, stage
from skill_magics.core.sources.spec import SourceSpec, parse_source
from skill_magics.core.sources.verify import changes_by_skill

MAX_DIFF_CHARS = 200_000
MAX_DIFF_FILE = 256 * 1024


def sync_skills(
    folder: str | os.PathLike[str] | None = None,
    *,
    force: bool = False,
    manager: SkillManager | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_message: OnMessage | None = None,
    cancel: threading.Event | None = None,
) -> InstallReport:
    """Re-create the skills of ``folder``'s lock exactly (missing or different ones only).

    Each comes from its locked commit (or archive / folder) and must give the locked
    digests, else LockFileError and nothing is written. Edited skills are replaced only with
    ``force``. Passes the gate like an install.
    """
    manager = manager if manager is not None else SkillManager()
    path = install_folder(folder)
    with audited(manager, str(path), "sync"):
        lock = read_lock(path)
        states = changes_by_skill(lock)
        _refuse_edits(states, force, "sync")
        todo = [lock.skills[n] for n, lines in states.items() if lines]
        if not todo:
            use_folder(manager, path)
            return InstallReport(
                "sync",
                path,
                lock.path,
                message=f"All {plural(len(lock.skills), 'skill')} in {path} match "
                f"{lock.path.name}: nothing to do",
            )
        say(on_message, f"Re-creating from {lock.path.name}: {', '.join(s.folder for s in todo)}")

        def plan(locked: LockedSkill, snap: Snapshot, staged: StagedSkill) -> CopyPlan:
            if staged.tree != locked.tree:
                lines = record_changes(
                    {f.path: f for f in locked.files}, {f.path: f for f in staged.files}
                )
                raise LockFileError(
                    f"{locked.folder}: {locked.origin} no longer gives the locked files "
                    f"({', '.join(lines[:5])}); nothing was written. Run update_skills (%skills "
                    "update) to review the new files"
                )
            signature = signing.verify_staged(snap, [staged], locked.source)[locked.folder]
            changed = signing.signer_change(locked.signature, signature)
            if changed:
                raise LockFileError(
                    f"{locked.folder}: {locked.origin} gives the locked files, but the "
                    f"{changed}; nothing was written. Run update_skills (%skills update) to "
                    "review the new signer"
                )
            return CopyPlan(
                staged,
                path / locked.folder,
                RESTORED,
                replace(locked, signature=signature),
                tuple(states[locked.folder]),
            )

        _check_sources(todo)
        plans = _fetch_and_plan(todo, lambda s: s.commit or s.ref, plan, cancel, pinned=True)
        return _apply(manager, path, lock, plans, "sync", approver, write=False)


def update_skills(
    folder: str | os.PathLike[str] | None = None,
    names: Sequence[str] | str | None = None,
    *,
    force: bool = False,
    manager: SkillManager | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_message: OnMessage | None = None,
    cancel: threading.Event | None = None,
) -> InstallReport:
    """Fetch the locked skills' refs again (``names``: some of them, by folder or SKILL.md
    name), show what changed and, after approval, install the new files and rewrite the
    lock. Declined: nothing changes. Edited skills are replaced only with ``force``."""
    manager = manager if manager is not None else SkillManager()
    path = install_folder(folder)
    with audited(manager, str(path), "update"):
        lock = read_lock(path)
        selected = _select(lock, [names] if isinstance(names, str) else names)
        states = changes_by_skill(lock)
        _refuse_edits({s.folder: states[s.folder] for s in selected}, force, "update")
        say(
            on_message,
            f"Checking {plural(len(selected), 'skill')} for updates: "
            + ", ".join(s.folder for s in selected),
        )

        def plan(locked: LockedSkill, snap: Snapshot, staged: StagedSkill) -> CopyPlan:
            signature = signing.verify_staged(snap, [staged], locked.source)[locked.folder]
            signer = signing.signer_change(locked.signature, signature)
            now = replace(
                locked,
                signature=signature,
                commit=snap.commit,
                files=staged.files,
                tree=staged.tree,
                computed_hash=computed_hash(staged.staged),
                **snap.lock_fields(locked.path),
            )
            target = path / locked.folder
            local = states[locked.folder]
            if staged.tree == locked.tree and not signer:
                status = RESTORED if local else UNCHANGED
                return CopyPlan(staged, target, status, now, tuple(local))
            changes = record_changes(
                {f.path: f for f in locked.files}, {f.path: f for f in staged.files}
            )
            # Another signer over the same bytes is a change a person sees, never silent.
            return CopyPlan(staged, target, UPDATED, now, (*([signer] if signer else []), *changes))

        _check_sources(selected)
        plans = _fetch_and_plan(selected, lambda s: s.ref, plan, cancel)
        return _apply(manager, path, lock, plans, "update", approver, write=True)


def verify_signatures(
    folder: str | os.PathLike[str] | None = None,
    *,
    cancel: threading.Event | None = None,
) -> list[str]:
    """Verify every locked skill's signature again at its locked commit (or archive,
    artifact) and compare it with the signer the lock names: one line per difference
    (``"<folder>: signer: A -> B"``), empty when all agree. What agrees is recorded for
    runs (core/trust/record.py): how a lock cloned from elsewhere becomes trusted here.
    Nothing is installed or changed."""
    path = install_folder(folder)
    lock = read_lock(path)
    lines: list[str] = []
    verified: list[tuple[str, Signature, str]] = []

    def plan(locked: LockedSkill, snap: Snapshot, staged: StagedSkill) -> CopyPlan:
        if staged.tree != locked.tree:
            lines.append(f"{locked.folder}: {locked.origin} no longer gives the locked files")
        else:
            signature = snap.signature(staged.found.path, signing.signers_file(), signing.anchors())
            changed = signing.signer_change(locked.signature, signature)
            if changed:
                lines.append(f"{locked.folder}: {changed}")
            else:
                verified.append((locked.tree, signature, locked.source))
        return CopyPlan(staged, path / locked.folder, UNCHANGED, locked)

    skills = [lock.skills[k] for k in sorted(lock.skills)]
    _plans, tmp = _fetch_and_plan(skills, lambda s: s.commit or s.ref, plan, cancel, pinned=True)
    tmp.cleanup()
    signing.remember(verified)
    return lines


def _check_sources(skills: Sequence[LockedSkill]) -> None:
    """The policy's ``[sources] allow`` for each locked source, before anything is fetched
    (a lock may come from anywhere: a source it names is checked as if typed)."""
    for locked in skills:
        signing.check_source_allowed(locked.source)


def _select(lock: Lock, names: Sequence[str] | None) -> list[LockedSkill]:
    if not lock.skills:
        raise LockFileError(f"{lock.path} lists no skills: install some first")
    if not names:
        return [lock.skills[k] for k in sorted(lock.skills)]
    out = []
    for name in dict.fromkeys(names):
        hit = lock.skills.get(name) or next(
            (s for s in lock.skills.values() if s.name == name), None
        )
        if hit is None:
            raise LockFileError(
                f"No skill {visible(name)!r} in {lock.path}: it lists "
                + ", ".join(sorted(lock.skills))
            )
        out.append(hit)
    return out


def _refuse_edits(states: dict[str, list[str]], force: bool, action: str) -> None:
    """Files edited since the install are never overwritten silently (a missing folder is
    not an edit: there is nothing to lose)."""
    edited = {n: lines for n, lines in states.items() if lines and lines != [MISSING]}
    if edited and not force:
        shown = "; ".join(
            f"{n} ({', '.join(lines[:3])}{', ...' if len(lines) > 3 else ''})"
            for n, lines in sorted(edited.items())
        )
        raise SkillExistsError(
            f"Changed since they were installed: {shown}. Nothing was written: pass "
            f"force=True (%skills {action} --force) to replace them with the source's files"
        )


def locked_spec(locked: LockedSkill, ref: str | None) -> SourceSpec:
    """The source of a locked skill, checked again as if typed (a lock may be hostile)."""
    spec = parse_source(locked.source, ref=ref)
    if spec.kind != locked.kind:
        raise LockFileError(
            f"{locked.folder}: {visible(locked.source)} is no longer a {locked.kind} source "
            f"(it is a {spec.kind}); install the skill again"
        )
    return spec


PlanFn = Callable[[LockedSkill, Snapshot, StagedSkill], CopyPlan]


def _fetch_and_plan(
    skills: Sequence[LockedSkill],
    ref_of: Callable[[LockedSkill], str | None],
    plan: PlanFn,
    cancel: threading.Event | None,
    *,
    pinned: bool = False,
) -> tuple[list[CopyPlan], tempfile.TemporaryDirectory]:
    """One fetch per (source, ref); each skill staged and turned into a plan. A well-known
    source: ``pinned`` (sync) fetches the locked artifacts, else the index is read again."""
    tmp = tempfile.TemporaryDirectory(prefix="skill-magics-stage-")
    plans: list[CopyPlan] = []
    try:
        groups: dict[tuple[str, str, str], list[LockedSkill]] = {}
        for locked in skills:
            groups.setdefault((locked.kind, locked.source, ref_of(locked) or ""), []).append(locked)
        for i, ((_kind, _source, ref), group) in enumerate(groups.items()):
            spec = locked_spec(group[0], ref or None)
            dest = Path(tmp.name) / str(i)
            dest.mkdir()
            with _open_group(spec, group, cancel, pinned) as snap:
                for locked in group:
                    found = skill_at(snap, locked.path, locked.folder)
                    (staged,) = stage(snap, [found], dest)
                    plans.append(plan(locked, snap, staged))
    except BaseException:
        tmp.cleanup()
        raise
    return plans, tmp


def _open_group(
    spec: SourceSpec, group: list[LockedSkill], cancel: threading.Event | None, pinned: bool
) -> Snapshot:
    return SOURCE_KINDS.get(spec.kind).reopen(spec, group, cancel=cancel, pinned=pinned)


def _apply(
    manager: SkillManager,
    path: Path,
    lock: Lock,
    fetched: tuple[list[CopyPlan], tempfile.TemporaryDirectory],
    action: str,
    approver: ApproverArg,
    *,
    write: bool,
) -> InstallReport:
    plans, tmp = fetched
    try:
        requests = [
            gate_request.install_request(
                p.staged,
                action=action,
                source=p.locked.where,
                commit=p.locked.commit,
                target=p.target,
                replaces=_replaces(p),
                changes=p.changes,
                signature=p.locked.signature,
                diff=text_diff(p.target, p.staged.staged, p.changes) if p.status == UPDATED else "",
            )
            for p in plans
            if p.copies
        ]
        moved_lock = write and any(p.locked != lock.skills.get(p.locked.folder) for p in plans)
        # Declined: nothing changes; allowed: the copies are made through the call site.
        done, lock_file = gate_request.run_approved(
            manager,
            requests,
            approver,
            lambda: commit_plans(manager, path, plans, action=action, write=moved_lock),
        )
    finally:
        tmp.cleanup()
    use_folder(manager, path)
    return InstallReport(action, path, lock_file, tuple(done), message=_summary(action, done, path))


def _replaces(plan: CopyPlan) -> str:
    if plan.status == RESTORED:
        return "re-creates it as the lock records it" + (
            f" (now: {', '.join(plan.changes[:5])})" if plan.changes else ""
        )
    return "replaces the installed version"


def _summary(action: str, done: Sequence[InstalledSkill], path: Path) -> str:
    moved = [s for s in done if s.status != UNCHANGED]
    same = [s for s in done if s.status == UNCHANGED]
    verb = {"sync": "Re-created", "update": "Updated"}[action]
    parts = []
    if moved:
        parts.append(
            f"{verb} {plural(len(moved), 'skill')} in {path}: "
            + ", ".join(
                f"{s.folder} ({plural(len(s.changes), 'change') if s.changes else s.status})"
                for s in moved
            )
        )
    if same:
        parts.append(f"up to date: {', '.join(s.folder for s in same)}")
    return "; ".join(parts) or f"Nothing to {action} in {path}"


def text_diff(old_dir: Path, new_dir: Path, changes: Sequence[str]) -> str:
    """A unified diff of the text files ``changes`` names (``changed/added/removed x``),
    ``old_dir`` -> ``new_dir``; binary or large files get one line. Cut at
    :data:`MAX_DIFF_CHARS`."""
    out: list[str] = []
    size = 0
    for line in changes:
        verb, _, rel = line.partition(" ")
        if verb not in ("changed", "added", "removed"):
            continue
        old, new = _text(old_dir, rel), _text(new_dir, rel)
        if old is None or new is None:
            piece = f"Binary or large file {rel} {verb}\n"
        else:
            piece = "".join(
                difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    fromfile=f"a/{rel}" if verb != "added" else "/dev/null",
                    tofile=f"b/{rel}" if verb != "removed" else "/dev/null",
                )
            )
            if piece and not piece.endswith("\n"):
                piece += "\n"
        if size + len(piece) > MAX_DIFF_CHARS:
            out.append(f"... diff cut at {MAX_DIFF_CHARS:,} characters\n")
            break
        out.append(piece)
        size += len(piece)
    return "".join(out)


def _text(folder: Path, rel: str) -> str | None:
    """The file's text ("" when it does not exist), None when binary or large."""
    path = folder.joinpath(*rel.split("/"))
    try:
        if path.is_symlink():
            return None
        if not path.exists():
            return ""
        if path.stat().st_size > MAX_DIFF_FILE:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


__all__ = ["sync_skills", "update_skills", "verify_signatures", "text_diff", "locked_spec"]
