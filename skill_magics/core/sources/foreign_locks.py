"""Other tools' locks and provenance as sources: ``sync_from(PATH)`` installs exactly what
they name and, unlike the tools that wrote them, verifies each skill's hash first.

Read (docs/architecture.md, *Installed skills*):

- the ``skills`` CLI's project ``skills-lock.json`` v1: ``{version: 1, skills: {NAME:
  {source, sourceType, sourceUrl?, ref?, skillPath?, computedHash}}}``; ``computedHash`` is
  that tool's folder hash (``lock.computed_hash``), checked over the staged files;
- its global ``~/.agents/.skill-lock.json`` v3: ``{version: 3, skills: {NAME: {source,
  sourceType, sourceUrl, skillPath?, skillFolderHash}}}``; ``skillFolderHash`` is a git tree
  SHA (40 hex, GitHub sources) or the folder hash (64 hex);
- ``gh skill``'s provenance in an installed SKILL.md: ``metadata.github-repo``,
  ``github-path``, ``github-ref``, ``github-tree-sha``, ``github-pinned`` (a folder holding
  such skills, or one SKILL.md); the tree SHA is checked.

Each source is checked as if typed (``spec.parse_source``: no ``ext::``, no plain http, ...).
Skills from one source are installed with one question (``install_skills`` with a
``verify`` hook run after staging, before anyone is asked); a hash that differs refuses that
source in one line naming the fix, and nothing of it is written. Our own lock then pins them
as any install, with the ``computedHash`` the other tool reads.

Example (not run as a doctest: it installs from a lock file)::

    reports = sync_from("skills-lock.json", into=".agents/skills", manager=manager)
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.base.errors import LockFileError, SkillMagicsError, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.catalog.frontmatter import parse_skill_md
from skill_magics.core.installed.lock import MAX_LOCK_BYTES, computed_hash
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg
from skill_magics.core.sources.install import (
    InstallReport,
    OnMessage,
    install_skills,
    say,
    skill_name,
)
from skill_magics.core.sources.kinds import SOURCE_KINDS, ForeignEntry
from skill_magics.core.sources.snapshot import StagedSkill
from skill_magics.core.sources.spec import check_ref, check_subfolder

COMPUTED = "computedHash"
TREE_SHA = "git tree SHA"
_SHA1 = re.compile(r"^[0-9a-f]{40}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_OWNER_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
MAX_SCAN_DEPTH = 4


@dataclass(frozen=True)
class ForeignSkill:
    """One skill another tool recorded: where to fetch it and the hash it must have."""

    name: str  # the key in that lock, or the SKILL.md name
    source: str  # a source string install_skills accepts
    ref: str | None
    want: str  # which skill in the source: its path there, or its name
    scheme: str  # COMPUTED or TREE_SHA
    expected: str
    origin: str  # "skills-lock.json v1", ... (for messages)


# -- git's tree hash ------------------------------------------------------------------------


def git_tree_sha(folder: Path) -> str:
    """The git tree object id of ``folder`` as committed (files 100644/100755, subfolders
    40000, empty folders left out, entries in git's order), computed without git."""
    return _tree(os.fspath(folder)).hex() or "4b825dc642cb6eb9a060e54bf8d69288fbee4904"


def _tree(path: str) -> bytes:
    items: list[tuple[bytes, bytes]] = []
    with os.scandir(path) as it:
        for entry in it:
            name = os.fsencode(entry.name)
            if entry.is_dir(follow_symlinks=False):
                sub = _tree(entry.path)
                if sub:
                    items.append((name + b"/", b"40000 " + name + b"\0" + sub))
            elif entry.is_file(follow_symlinks=False):
                blob = hashlib.sha1(usedforsecurity=False)
                blob.update(b"blob %d\0" % entry.stat(follow_symlinks=False).st_size)
                with open(entry.path, "rb") as fh:
                    for chunk in iter(lambda: fh.read(1 << 16), b""):
                        blob.update(chunk)
                mode = b"100755" if os.access(entry.path, os.X_OK) else b"100644"
                items.append((name, mode + b" " + name + b"\0" + blob.digest()))
    if not items:
        return b""
    body = b"".join(line for _key, line in sorted(items))
    return hashlib.sha1(b"tree %d\0" % len(body) + body, usedforsecurity=False).digest()


# -- reading the other tools' files ---------------------------------------------------------


def read_foreign(path: str | os.PathLike[str]) -> tuple[str, list[ForeignSkill]]:
    """(what was read, the skills it names) from a lock file or a folder of skills that
    carry ``gh skill`` provenance; LockFileError (one line) when it is none of those."""
    where = Path(os.path.abspath(os.path.expanduser(os.fspath(path))))
    if where.is_dir():
        return "gh skill metadata", _gh_folder(where)
    if where.name in ("SKILL.md", "skill.md"):
        return "gh skill metadata", _gh_skills([where])
    try:
        with open(where, "rb") as fh:
            raw = fh.read(MAX_LOCK_BYTES + 1)
        data = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise LockFileError(
            f"{visible(str(where))} does not exist: give a skills-lock.json, ~/.agents/"
            ".skill-lock.json, or a folder of skills installed by gh skill"
        ) from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise LockFileError(f"{visible(str(where))} is not a JSON lock ({exc})") from None
    if not isinstance(data, dict) or not isinstance(data.get("skills"), dict):
        raise LockFileError(f"{visible(str(where))} has no 'skills' object: not a skills lock")
    version = data.get("version")
    entries = data["skills"]
    ours = any(isinstance(e, dict) and "files" in e and "type" in e for e in entries.values())
    if version == 1 and not ours:
        return f"{where.name} v1", [
            _cli_entry(str(k), e, where.parent, f"{where.name} v1", COMPUTED, "computedHash")
            for k, e in entries.items()
        ]
    if version == 3:
        return f"{where.name} v3", [
            _cli_entry(str(k), e, where.parent, f"{where.name} v3", "", "skillFolderHash")
            for k, e in entries.items()
        ]
    if version == 1:
        raise LockFileError(
            f"{visible(str(where))} is skill-magics' own lock: use %skills sync "
            f"{visible(str(where.parent))} (sync_skills) for it"
        )
    raise LockFileError(
        f"{visible(str(where))} has version {visible(str(version))!r}: this version reads the "
        "skills CLI's v1 (skills-lock.json) and v3 (~/.agents/.skill-lock.json)"
    )


def _text(entry: dict[str, Any], key: str) -> str | None:
    value = entry.get(key)
    return value.strip() if isinstance(value, str) and value.strip() else None


def _cli_entry(
    name: str, entry: Any, base: Path, origin: str, scheme: str, hash_key: str
) -> ForeignSkill:
    what = f"{visible(name)} ({origin})"
    if not isinstance(entry, dict):
        raise LockFileError(f"{what}: the entry is not an object")
    kind = _text(entry, "sourceType")
    source = _text(entry, "source")
    url = _text(entry, "sourceUrl")
    ref = _text(entry, "ref")
    expected = (_text(entry, hash_key) or "").lower()
    if not scheme:  # v3: a git tree SHA for GitHub sources, else the folder hash
        scheme = TREE_SHA if _SHA1.match(expected) else COMPUTED
    if not (_SHA1 if scheme == TREE_SHA else _SHA256).match(expected):
        raise LockFileError(
            f"{what} has no {hash_key} to verify ({visible(expected)!r}); nothing was installed. "
            "Install it afresh with %skills install SOURCE and review its files"
        )
    skill_path = _text(entry, "skillPath") or ""
    folder = skill_path.rsplit("/", 1)[0] if "/" in skill_path else ""
    if skill_path and not skill_path.lower().endswith("skill.md"):
        folder = skill_path.rstrip("/")
    folder = check_subfolder(folder)
    if ref is not None:
        ref = check_ref(ref)
    if kind == "node_modules":
        raise LockFileError(
            f"{what} comes from an npm package in node_modules: install the package with npm, "
            "then %skills install node_modules/PACKAGE"
        )
    # Each registered source kind reads back the sourceType it writes (kinds/: from_foreign).
    entry_in = ForeignEntry(kind, source, url, name, folder, base, what)
    found = next(
        (f for f in (k.from_foreign(entry_in) for k in SOURCE_KINDS) if f is not None), None
    )
    if found is None:
        raise LockFileError(f"{what}: sourceType {visible(str(kind))!r} is not one this reads")
    location, want = found
    return ForeignSkill(name, location, ref, want, scheme, expected, origin)


def _gh_folder(folder: Path) -> list[ForeignSkill]:
    found: list[Path] = []
    for top, dirs, files in os.walk(folder):
        depth = Path(top).relative_to(folder).parts
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") or d == ".agents")
        if len(depth) >= MAX_SCAN_DEPTH:
            dirs[:] = []
        if "SKILL.md" in files:
            found.append(Path(top) / "SKILL.md")
    skills = _gh_skills(found, quiet=True)
    if not skills:
        raise LockFileError(
            f"No SKILL.md with gh skill metadata (metadata.github-repo) under "
            f"{visible(str(folder))}: give a skills-lock.json or a folder gh skill installed into"
        )
    return skills


def _gh_skills(paths: Sequence[Path], quiet: bool = False) -> list[ForeignSkill]:
    out = []
    for md in paths:
        try:
            data, _body, _warnings = parse_skill_md(md.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, SkillMagicsError, ValueError) as exc:
            if quiet:
                continue
            raise LockFileError(f"{visible(str(md))} cannot be read ({exc})") from None
        meta = data.get("metadata")
        meta = meta if isinstance(meta, dict) else {}
        repo = meta.get("github-repo")
        if not isinstance(repo, str):
            if quiet:
                continue
            raise LockFileError(f"{visible(str(md))} has no metadata.github-repo (gh skill's)")
        name = str(data.get("name") or md.parent.name)
        what = f"{visible(name)} (gh skill metadata)"
        repo = repo.strip().removeprefix("https://github.com/").removesuffix(".git")
        if not _OWNER_REPO.match(repo):
            raise LockFileError(f"{what}: github-repo {visible(repo)!r} is not OWNER/REPO")
        tree = str(meta.get("github-tree-sha") or "").lower()
        if not _SHA1.match(tree):
            raise LockFileError(
                f"{what} has no github-tree-sha to verify; nothing was installed. Install it "
                "afresh with %skills install SOURCE and review its files"
            )
        pinned, ref = meta.get("github-pinned"), meta.get("github-ref")
        chosen = pinned if isinstance(pinned, str) and pinned else ref
        path = check_subfolder(str(meta.get("github-path") or ""))
        if path.lower().endswith("skill.md"):
            path = path.rsplit("/", 1)[0] if "/" in path else ""
        out.append(
            ForeignSkill(
                name,
                f"https://github.com/{repo}",
                check_ref(chosen) if isinstance(chosen, str) and chosen else None,
                path,
                TREE_SHA,
                tree,
                "gh skill metadata",
            )
        )
    return out


# -- installing them ------------------------------------------------------------------------


def hash_of(staged: StagedSkill, scheme: str) -> str:
    """The staged copy's hash in ``scheme`` (COMPUTED or TREE_SHA)."""
    return git_tree_sha(staged.staged) if scheme == TREE_SHA else computed_hash(staged.staged)


def _verifier(group: Sequence[ForeignSkill]) -> Any:
    def verify(staged: StagedSkill) -> None:
        names = {staged.found.path, staged.folder}
        skill = next((s for s in group if s.want in names), None)
        if skill is None:
            md = skill_name(staged)
            skill = next((s for s in group if md in (s.want, s.name)), None)
        if skill is None:  # never installed unverified
            raise LockFileError(f"{staged.folder}: not named by the lock; nothing was installed")
        got = hash_of(staged, skill.scheme)
        if got != skill.expected:
            raise LockFileError(
                f"{visible(skill.name)}: the source gives {skill.scheme} {got[:12]}..., "
                f"{skill.origin} says {skill.expected[:12]}...; nothing was installed. The "
                "source changed since that lock was written: review it with %skills install "
                f"{visible(skill.source)}"
            )

    return verify


def sync_from(
    path: str | os.PathLike[str],
    *,
    into: str | os.PathLike[str] | None = None,
    force: bool = False,
    manager: SkillManager | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_message: OnMessage | None = None,
    cancel: threading.Event | None = None,
) -> list[InstallReport]:
    """Install exactly the skills another tool's lock (or gh skill metadata) at ``path``
    names, each verified against its recorded hash before anyone is asked; one question per
    source. Raises LockFileError / SourceError naming the fix; a source already installed
    stops nothing before it."""
    manager = manager if manager is not None else SkillManager()
    what, skills = read_foreign(path)
    if not skills:
        raise LockFileError(f"{visible(os.fspath(path))} names no skills")
    groups: dict[tuple[str, str], list[ForeignSkill]] = {}
    for skill in skills:
        groups.setdefault((skill.source, skill.ref or ""), []).append(skill)
    say(on_message, f"Read {what}: {len(skills)} skill(s) from {len(groups)} source(s)")
    reports = []
    for (source, ref), group in groups.items():
        wanted = [s.want for s in group]
        try:
            reports.append(
                install_skills(
                    source,
                    into=into,
                    skills=wanted,
                    ref=ref or None,
                    force=force,
                    manager=manager,
                    approver=approver,
                    on_message=on_message,
                    cancel=cancel,
                    verify=_verifier(group),
                )
            )
        except SourceError as exc:
            raise SourceError(f"{', '.join(s.name for s in group)}: {exc}") from None
    return reports


__all__ = ["ForeignSkill", "read_foreign", "sync_from", "git_tree_sha", "hash_of"]
