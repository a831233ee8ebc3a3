"""Git repositories: ``https://``, ``ssh://``, scp-like ``user@host:path``, ``file:///``, a
local repository's top folder, and a GitHub or GitLab browser URL with the ref and folder in
it (core/sources/git.py fetches them)."""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from skill_magics.core.base.errors import LockFileError, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.sources.kinds.base import ForeignEntry, SourceKind
from skill_magics.core.sources.sourcespec import (
    BROWSE,
    GIT,
    SCHEME,
    SCP,
    SourceSpec,
    check_ref,
    check_subfolder,
    check_url,
    is_repository,
)

if TYPE_CHECKING:
    from skill_magics.core.installed.lock import LockedSkill
    from skill_magics.core.sources.snapshot import Snapshot

_OWNER_REPO = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")
TRANSPORTS = ("https", "ssh", "file")  # encrypted or local; anything else is refused


class GitSource(SourceKind):
    """A git repository, fetched shallow at one ref."""

    name = GIT
    description = "a git URL"

    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        browse = BROWSE.match(text)
        if browse is not None:
            path = (browse.group("path") or "").strip("/")
            if browse.group("kind") == "blob":  # a link to SKILL.md: its folder
                path = path.rsplit("/", 1)[0] if "/" in path else ""
            location = f"https://{browse.group('host')}/{browse.group('repo')}"
            return SourceSpec(
                GIT,
                location,
                ref or check_ref(browse.group("ref")),
                subfolder or check_subfolder(path),
            )
        scheme = SCHEME.match(text)
        if scheme is not None:
            name, sep = scheme.group("scheme").lower(), scheme.group("sep")
            if sep != "://" or name not in TRANSPORTS:
                return None  # not git's: refused unless another kind claims it
            check_url(text, name, sep)
            return SourceSpec(GIT, text.rstrip("/"), ref, subfolder)
        scp = SCP.match(text)
        if scp is not None and not os.path.exists(text):
            if re.search(r"\s", text):
                raise SourceError(f"The URL {text!r} holds whitespace")
            return SourceSpec(GIT, text, ref, subfolder)
        absolute = Path(os.path.abspath(Path(text).expanduser()))
        if absolute.exists() and not absolute.is_file() and is_repository(absolute):
            return SourceSpec(GIT, str(absolute), ref, subfolder)
        return None

    def open(
        self,
        spec: SourceSpec,
        *,
        cancel: threading.Event | None = None,
        wanted: Sequence[str] | None = None,
    ) -> Snapshot:
        from skill_magics.core.sources.git import GitSnapshot

        return GitSnapshot(spec, cancel=cancel)

    def check_locked(self, locked: LockedSkill) -> LockedSkill:
        from dataclasses import replace

        return replace(locked, url=None, digest=None)  # a well-known index's fields only

    def lock_fields(self, locked: LockedSkill) -> dict[str, str]:
        out = {"skillPath": f"{locked.path}/SKILL.md" if locked.path else "SKILL.md"}
        if locked.source.startswith("https://github.com/"):
            out["sourceType"] = "github"
        else:
            gitlab = locked.source.startswith("https://gitlab.com/")
            out["sourceType"] = "gitlab" if gitlab else "git"
            out["sourceUrl"] = locked.source
        return out

    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        if entry.source_type == "github":
            source = (entry.source or "").removeprefix("https://github.com/").removesuffix(".git")
            if not _OWNER_REPO.match(source):
                raise LockFileError(
                    f"{entry.what}: source {visible(str(source))!r} is not OWNER/REPO"
                )
            return f"https://github.com/{source}", entry.folder
        if entry.source_type in ("git", "gitlab"):
            location = entry.url or entry.source or ""
            if not location:
                raise LockFileError(f"{entry.what}: no sourceUrl for this git source")
            return location, entry.folder
        return None


__all__ = ["GitSource"]
