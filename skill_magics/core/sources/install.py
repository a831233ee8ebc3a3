"""``install_skills``: skills from a git repository, an archive or a folder, pinned in a lock.

The pipeline (docs/architecture.md, *Installed skills*):

1. **plan**: parse the source, fetch or open it (``git.py``, ``archive.py``, ``snapshot.py``),
   find its skills, choose, stage copies in a private temporary folder (checked, hashed),
   refuse a skill that would overwrite a different one without ``force``;
2. **gate**: one approval for all of them (``request.decide``: skills, files, scripts, the
   resolved commit); No installs nothing;
3. **execute**: copy each staged skill next to its target in the install folder, check the
   copy is the approved tree, swap it in with ``os.replace``, then write the lock
   atomically; add the folder to the manager.

Everything written goes through a temporary folder and a rename, so an error or an interrupt
leaves either the old skill or the new one, never a mix; staging folders are always removed.

Example (not run as a doctest: it clones a repository)::

    report = install_skills("https://github.com/anthropics/skills", skills=["pdf"],
                            manager=manager, approver=None)
    print(report)
    # -> Installed 1 skill from https://github.com/anthropics/skills (commit 9d2f1ae1...) ...
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    ApprovalUnavailable,
    RunInterrupted,
    SkillExistsError,
    SkillMagicsError,
    SourceError,
)
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.base.visible import visible
from skill_magics.core.catalog.frontmatter import load_skill_metadata
from skill_magics.core.installed.lock import (
    LockedSkill,
    computed_hash,
    discard,
    folder_files,
    record_changes,
    tree_digest,
    write_lock_beside,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import INSTALL_LABEL, MANAGER_APPROVER, ApproverArg
from skill_magics.core.sources import request as gate_request
from skill_magics.core.sources import signing
from skill_magics.core.sources.kinds import SOURCE_KINDS, lock_fields, read_lock
from skill_magics.core.sources.snapshot import (
    FoundSkill,
    Snapshot,
    StagedSkill,
    choose_skills,
    find_skills,
    stage,
)
from skill_magics.core.sources.spec import SourceSpec, parse_source

DEFAULT_SUBDIR = Path(".agents") / "skills"

INSTALLED = "installed"
REPLACED = "replaced"
UPDATED = "updated"
RESTORED = "restored"
UNCHANGED = "unchanged"

OnMessage = Callable[[str], object]


@dataclass(frozen=True)
class InstalledSkill:
    """One skill an install, update or sync dealt with."""

    folder: str  # its folder name in the install folder
    name: str  # the name in its SKILL.md
    path: Path  # where it is now
    status: str  # installed, replaced, updated, restored or unchanged
    files: int
    tree: str
    changes: tuple[str, ...] = ()  # what an update or a replace changed


@dataclass(frozen=True)
class InstallReport:
    """What ``install_skills`` / ``update_skills`` / ``sync_skills`` did; ``str()`` is the
    one-paragraph summary."""

    action: str
    folder: Path
    lock: Path | None
    skills: tuple[InstalledSkill, ...] = ()
    notes: tuple[str, ...] = ()
    message: str = ""

    @property
    def names(self) -> list[str]:
        return [s.folder for s in self.skills]

    def __str__(self) -> str:
        return self.message


def default_folder() -> Path:
    """Where skills are installed unless told: the project's ``.agents/skills`` (under the
    current folder), which the manager searches by default."""
    return Path.cwd() / DEFAULT_SUBDIR


def install_folder(into: str | os.PathLike[str] | None) -> Path:
    """``into`` as an absolute path (default: :func:`default_folder`); SourceError when it
    exists and is not a folder."""
    folder = (
        Path(os.path.abspath(os.path.expanduser(os.fspath(into)))) if into else default_folder()
    )
    if folder.exists() and not folder.is_dir():
        raise SourceError(f"{visible(str(folder))} is not a folder: give a folder to install into")
    return folder


def open_snapshot(
    spec: SourceSpec,
    *,
    cancel: threading.Event | None = None,
    wanted: Sequence[str] | None = None,
) -> Snapshot:
    """The source's files, opened by its kind (core/sources/kinds/): a fetched git commit, a
    checked archive or a folder's listing, a well-known index's skills (``wanted``: only
    these are downloaded), ..."""
    return SOURCE_KINDS.get(spec.kind).open(spec, cancel=cancel, wanted=wanted)


def source_text(spec: SourceSpec) -> str:
    """The source as the lock and the panel show it: URL or path, ``@ref``, ``(subfolder)``."""
    return str(spec)


# -- plan: what would be copied where -------------------------------------------------------


@dataclass(frozen=True)
class CopyPlan:
    """One staged skill and what installing it means for its target folder."""

    staged: StagedSkill
    target: Path
    status: str  # INSTALLED, REPLACED, UPDATED, RESTORED or UNCHANGED (nothing to copy)
    locked: LockedSkill  # what the lock records once it is in place
    changes: tuple[str, ...] = ()  # existing files -> staged files

    @property
    def copies(self) -> bool:
        return self.status != UNCHANGED


def existing_changes(target: Path, staged: StagedSkill) -> list[str] | None:
    """None when nothing is at ``target``; else how the folder there differs from the staged
    files (``added x``: only the folder there has x); empty: the same files are there."""
    if not os.path.lexists(target):
        return None
    if target.is_symlink() or not target.is_dir():
        return ["changed (not a plain folder)"]
    have, other = folder_files(target)
    lines = record_changes({f.path: f for f in staged.files}, have)
    return lines + [f"added {o.partition(' ')[2]} ({o.partition(' ')[0]})" for o in other]


def locked_entry(
    spec: SourceSpec, commit: str | None, staged: StagedSkill, name: str
) -> LockedSkill:
    """The lock record for ``staged`` fetched from ``spec`` at ``commit``."""
    return LockedSkill(
        folder=staged.folder,
        name=visible(name or staged.folder),
        kind=spec.kind,
        source=spec.location,
        ref=spec.ref,
        commit=commit,
        subfolder=spec.subfolder,
        path=staged.found.path,
        files=staged.files,
        tree=staged.tree,
        computed_hash=computed_hash(staged.staged),
    )


def skill_name(staged: StagedSkill) -> str:
    """The staged skill's SKILL.md name; SourceError when SKILL.md cannot be read (the
    catalog would skip it, so installing it would give nothing)."""
    md = next(
        (staged.staged / n for n in ("SKILL.md", "skill.md") if (staged.staged / n).is_file()),
        None,
    )
    if md is None:
        raise SourceError(f"{staged.folder}: no SKILL.md at the top of the skill folder")
    try:
        return load_skill_metadata(md).name
    except (SkillMagicsError, OSError, UnicodeError) as exc:
        raise SourceError(
            f"{staged.folder}: its SKILL.md cannot be read ({visible(str(exc))}); nothing was "
            "installed. Fix it in the source, or choose the other skills with --skill"
        ) from None


# -- execute: move the approved copies into place ---------------------------------------------


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on the install folder while skills and the lock file change,
    so two installs into one folder do not lose each other's lock entries."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX
        yield
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def copy_checked(staged: StagedSkill, fresh: Path) -> Path:
    """Copy the staged skill to ``fresh`` (beside its target, same file system) and check the
    copy is the approved tree."""
    shutil.copytree(staged.staged, fresh, symlinks=True)
    files, other = folder_files(fresh)
    if other or tree_digest(list(files.values())) != staged.tree:
        raise SourceError(
            f"{staged.folder}: the staged files changed after they were approved; nothing "
            "was installed. Run it again to review them"
        )
    return fresh


def commit_plans(
    manager: SkillManager,
    folder: Path,
    plans: Sequence[CopyPlan],
    *,
    action: str,
    write: bool = True,
) -> tuple[list[InstalledSkill], Path | None]:
    """Step 3, all or nothing: copy every approved skill beside its target and write the new
    lock beside the old one, then swap the folders and the lock in; a failure at any point
    (a full disk, a file too large, an interrupt) puts back every folder swapped so far and
    discards the new lock, so files and lock never disagree. Each install is audited."""
    folder.mkdir(parents=True, exist_ok=True)
    done: list[InstalledSkill] = []
    lock_file = None
    with folder_lock(folder):
        lock = read_lock(folder, missing_ok=True)
        started = time.monotonic()
        work = Path(tempfile.mkdtemp(dir=folder, prefix=".skills-staging-"))
        swapped: list[tuple[Path, Path | None]] = []  # (target, its previous folder)
        lock_tmp: Path | None = None
        try:
            fresh = {
                i: copy_checked(plan.staged, work / f"new-{i}")
                for i, plan in enumerate(plans)
                if plan.copies
            }
            entries = [plan.locked for plan in plans]
            if entries and write:
                lock_tmp = write_lock_beside(lock.with_skills(entries), fields=lock_fields)
            for i, plan in enumerate(plans):
                if i in fresh:
                    old = work / f"old-{i}" if os.path.lexists(plan.target) else None
                    if old is not None:
                        os.replace(plan.target, old)
                    swapped.append((plan.target, old))
                    os.replace(fresh[i], plan.target)
            if lock_tmp is not None:
                os.replace(lock_tmp, lock.path)
                lock_tmp = None
        except BaseException as exc:
            _roll_back(swapped, work)
            if lock_tmp is not None:
                discard(lock_tmp)
            for plan in plans:
                _audit(manager, plan, action, AuditOutcome.FAILED, _why(exc), started)
            if isinstance(exc, OSError):
                kept = lock.path.name if lock.path.exists() else "no lock file"
                raise SourceError(
                    f"{action} of {plural(len(plans), 'skill')} failed ({_why(exc)}); nothing "
                    f"changed: kept the installed skills and {kept} as they were. Free space "
                    "or fix the folder, then run it again"
                ) from exc
            raise
        finally:
            shutil.rmtree(work, ignore_errors=True)
        for plan in plans:
            if plan.copies:
                _audit(
                    manager,
                    plan,
                    action,
                    AuditOutcome.COMPLETED,
                    f"{plan.status} {plan.target}: {len(plan.staged.files)} files, tree "
                    f"{plan.staged.tree[:16]}",
                    started,
                )
            done.append(
                InstalledSkill(
                    plan.staged.folder,
                    plan.locked.name,
                    plan.target,
                    plan.status,
                    len(plan.staged.files),
                    plan.staged.tree,
                    plan.changes,
                )
            )
        # What was verified, for runs (core/trust/record.py): only once the files are in.
        signing.remember(
            [(plan.locked.tree, plan.locked.signature, plan.locked.source) for plan in plans]
        )
        if done and write:
            lock_file = lock.path
        elif lock.path.exists():
            lock_file = lock.path
    return done, lock_file


def _roll_back(swapped: list[tuple[Path, Path | None]], work: Path) -> None:
    """Put back every folder swapped so far, newest first."""
    for n, (target, old) in enumerate(reversed(swapped)):
        if os.path.lexists(target):
            os.replace(target, work / f"failed-{n}")
        if old is not None:
            os.replace(old, target)


def _why(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _audit(
    manager: SkillManager,
    plan: CopyPlan,
    action: str,
    outcome: AuditOutcome,
    reason: str,
    started: float,
) -> None:
    locked = plan.locked
    at = f" at {locked.commit}" if locked.commit else ""
    manager.audit.event(
        plan.staged.folder,
        INSTALL_LABEL,
        f"{action} from {locked.origin}{at}",
        outcome,
        reason=reason,
        duration_ms=(time.monotonic() - started) * 1000,
    )


def audit_refusal(manager: SkillManager, what: str, action: str, exc: BaseException) -> None:
    """A refused install (bad source, unsafe archive, a conflict) is audited like a refused
    run: before anything was written."""
    manager.audit.event(
        what, INSTALL_LABEL, f"{action} from {what}", AuditOutcome.REFUSED, reason=_why(exc)
    )


@contextlib.contextmanager
def audited(manager: SkillManager, what: str, action: str) -> Iterator[None]:
    """Audit a refusal raised inside (the gate audits declines and unavailable approval)."""
    try:
        yield
    except (ApprovalDeclined, ApprovalUnavailable, RunInterrupted):
        raise
    except SkillMagicsError as exc:
        audit_refusal(manager, visible(what), action, exc)
        raise


def use_folder(manager: SkillManager, folder: Path) -> None:
    """Make the manager see the skills in ``folder``: add it (last) unless it is searched
    already, then rescan. Adding is held to the policy's ``[sources] allow`` (every skill
    in the folder, not only the ones just installed): a refusal says the files are there."""
    from skill_magics.core.policy import PolicyError

    real = os.path.realpath(folder)
    if any(os.path.realpath(d) == real for d in manager.skill_dirs):
        manager.reload()
        return
    try:
        manager.add_dir(folder)
    except PolicyError as exc:  # other skills there the policy does not allow (audited)
        raise PolicyError(
            f"{exc}; the skills were written to {visible(str(folder))}, which is not searched"
        ) from None


def say(on_message: OnMessage | None, text: str) -> None:
    if on_message is not None:
        on_message(text)


def plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


# -- install_skills ------------------------------------------------------------------------


def install_skills(
    source: str | os.PathLike[str],
    *,
    into: str | os.PathLike[str] | None = None,
    skills: Sequence[str] | str | None = None,
    ref: str | None = None,
    subfolder: str | None = None,
    force: bool = False,
    manager: SkillManager | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_message: OnMessage | None = None,
    cancel: threading.Event | None = None,
    verify: Callable[[StagedSkill], None] | None = None,
) -> InstallReport:
    """Install skills from ``source`` into ``into`` and record them in its skills-lock.json.

    ``source``: a git URL (https, ssh, file://) or local repository, a ``.skill``/``.zip``
    file, or a folder. ``ref``: branch, tag or commit (git). ``subfolder``: where in the
    source to look. ``skills``: names (folder, path or SKILL.md name) to install; None: all,
    named in ``on_message`` first. ``into``: default ``./.agents/skills`` (created). A skill
    folder already there with other files is replaced only with ``force``.

    Installing passes the gate (``approver``; the default is the manager's, None asks
    nobody): one approval lists every skill, its files and scripts and the commit. Raises
    SourceError / UnsafeArchiveError / SkillExistsError (nothing written), ApprovalDeclined /
    ApprovalUnavailable (nothing installed). ``verify(staged)``: called for each staged
    skill before anyone is asked (another tool's hash, ``foreign_locks.py``); it raises to
    refuse.
    """
    manager = manager if manager is not None else SkillManager()
    wanted = [skills] if isinstance(skills, str) else (list(skills) if skills is not None else None)
    with audited(manager, os.fspath(source), "install"):
        folder = install_folder(into)
        spec = parse_source(source, ref=ref, subfolder=subfolder)
        signing.check_source_allowed(spec.location)  # as the lock records it, and runs match
        with open_snapshot(spec, cancel=cancel, wanted=wanted) as snap:
            with tempfile.TemporaryDirectory(prefix="skill-magics-stage-") as tmp:
                return _install(
                    manager, snap, folder, wanted, force, approver, on_message, Path(tmp), verify
                )


def _install(
    manager: SkillManager,
    snap: Snapshot,
    folder: Path,
    wanted: list[str] | None,
    force: bool,
    approver: ApproverArg,
    on_message: OnMessage | None,
    tmp: Path,
    verify: Callable[[StagedSkill], None] | None = None,
) -> InstallReport:
    spec = snap.spec
    found = find_skills(snap)
    chosen, notes = choose_skills(snap, found, wanted)
    notes = [*snap.notes, *notes]
    at = f" (commit {snap.commit})" if snap.commit else ""
    names = ", ".join(s.folder for s in chosen)
    if wanted is None:
        say(
            on_message,
            f"Found {plural(len(found), 'skill')} in {spec}{at}; installing "
            f"{'all of them' if len(chosen) == len(found) else plural(len(chosen), 'skill')}: "
            f"{names} (choose with --skill NAME, skills=[...])",
        )
        hidden = hidden_note(chosen)
        if hidden:
            notes.append(hidden)
    for note in notes:
        say(on_message, f"Note: {note}")
    staged = stage(snap, chosen, tmp)
    if verify is not None:
        for item in staged:
            verify(item)
    signatures = signing.verify_staged(snap, staged, snap.spec.location)
    plans = []
    conflicts = []
    for item in staged:
        name = skill_name(item)
        target = folder / item.folder
        changes = existing_changes(target, item)
        if changes is None:
            status = INSTALLED
        elif not changes:
            status = UNCHANGED
        elif force:
            status = REPLACED
        else:
            conflicts.append(
                f"{item.folder} ({', '.join(changes[:3])}{', ...' if len(changes) > 3 else ''})"
            )
            continue
        plans.append(
            CopyPlan(
                item,
                target,
                status,
                replace(
                    locked_entry(spec, snap.commit, item, name),
                    signature=signatures[item.folder],
                    **snap.lock_fields(item.found.path),
                ),
                tuple(changes or ()),
            )
        )
    if conflicts:
        raise SkillExistsError(
            f"Already in {folder} with other files: {'; '.join(conflicts)}. Nothing was "
            "installed: pass force=True (--force) to replace them, or install into another "
            "folder with into= (--into DIR)"
        )
    source = source_text(spec)
    requests = [
        gate_request.install_request(
            p.staged,
            action="install",
            source=source,
            commit=snap.commit,
            target=p.target,
            replaces=_replaces_text(p),
            signature=p.locked.signature,
        )
        for p in plans
        if p.copies
    ]
    # Raises unless all may be installed; then, and only then, the copies are made.
    done, lock_file = gate_request.run_approved(
        manager,
        requests,
        approver,
        lambda: commit_plans(manager, folder, plans, action="install"),
    )
    use_folder(manager, folder)
    return InstallReport(
        "install",
        folder,
        lock_file,
        tuple(done),
        tuple(notes),
        _summary("Installed", done, source, snap.commit, folder, lock_file),
    )


def hidden_note(chosen: Sequence[FoundSkill]) -> str:
    """Which of the skills installed by "all" sit in hidden folders (openai/skills keeps
    ``.system`` and ``.experimental`` ones there: not meant for everyone), '' when none."""
    groups: dict[str, list[str]] = {}
    for skill in chosen:
        parts = skill.path.split("/")[:-1]
        hidden = [p for p in parts if p.startswith(".")]
        if hidden:
            groups.setdefault(hidden[0], []).append(skill.folder)
    if not groups:
        return ""
    listed = "; ".join(f"{folder}: {', '.join(names)}" for folder, names in sorted(groups.items()))
    count = sum(len(v) for v in groups.values())
    return (
        f"{plural(count, 'skill')} of these sit in hidden folders ({listed}) and are "
        "included; to leave them out, name the ones you want (--skill NAME, skills=[...])"
    )


def _replaces_text(plan: CopyPlan) -> str:
    if plan.status != REPLACED:
        return ""
    shown = ", ".join(plan.changes[:8]) + (
        f" (+{len(plan.changes) - 8} more)" if len(plan.changes) > 8 else ""
    )
    return f"replaces the folder already there, which differs from the source ({shown})"


def _summary(
    verb: str,
    done: Sequence[InstalledSkill],
    source: str,
    commit: str | None,
    folder: Path,
    lock_file: Path | None,
) -> str:
    at = f" (commit {commit[:12]})" if commit else ""
    moved = [s for s in done if s.status != UNCHANGED]
    same = [s for s in done if s.status == UNCHANGED]
    parts = [
        f"{verb} {plural(len(moved), 'skill')} from {source}{at} into {folder}"
        + (
            ": " + ", ".join(f"{s.folder} ({plural(s.files, 'file')}, {s.status})" for s in moved)
            if moved
            else ""
        )
    ]
    if same:
        parts.append(f"already there with the same files: {', '.join(s.folder for s in same)}")
    if lock_file is not None:
        parts.append(f"lock: {lock_file}")
    return "; ".join(parts)


__all__ = [
    "InstallReport",
    "InstalledSkill",
    "CopyPlan",
    "install_skills",
    "install_folder",
    "default_folder",
    "open_snapshot",
    "commit_plans",
    "copy_checked",
    "existing_changes",
    "locked_entry",
    "skill_name",
    "use_folder",
    "audited",
    "INSTALLED",
    "REPLACED",
    "UPDATED",
    "RESTORED",
    "UNCHANGED",
]
