"""A local folder, its files as they are on disk (core/sources/snapshot.py: FolderSnapshot)."""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from skill_magics.core.base.errors import LockFileError, SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.sources.kinds.base import ForeignEntry, SourceKind
from skill_magics.core.sources.sourcespec import FOLDER, SCHEME, SourceSpec

if TYPE_CHECKING:
    from skill_magics.core.installed.lock import LockedSkill
    from skill_magics.core.sources.snapshot import Snapshot


class FolderSource(SourceKind):
    """A folder that is not a repository's top folder (the git kind claims those first)."""

    name = FOLDER
    description = "a folder"

    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        if SCHEME.match(text) is not None:
            return None
        path = Path(text).expanduser()
        absolute = Path(os.path.abspath(path))
        if not absolute.exists() or absolute.is_file():
            return None
        if ref:
            raise SourceError(
                f"{visible(str(path))} is a folder, not a git repository's top folder: a ref "
                "(--ref) needs a repository (give its top folder and --path SUBFOLDER)"
            )
        return SourceSpec(FOLDER, str(absolute), None, subfolder)

    def open(
        self,
        spec: SourceSpec,
        *,
        cancel: threading.Event | None = None,
        wanted: Sequence[str] | None = None,
    ) -> Snapshot:
        from skill_magics.core.sources.snapshot import FolderSnapshot

        return FolderSnapshot(spec)

    def check_locked(self, locked: LockedSkill) -> LockedSkill:
        return replace(locked, url=None, digest=None)

    def lock_fields(self, locked: LockedSkill) -> dict[str, str]:
        path = f"{locked.path}/SKILL.md" if locked.path else "SKILL.md"
        return {"skillPath": path, "sourceType": "local"}

    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        if entry.source_type != "local":
            return None
        if entry.source is None:
            raise LockFileError(f"{entry.what}: no source folder")
        source = entry.source
        location = os.fspath(entry.base / source) if not os.path.isabs(source) else source
        return location, entry.name


__all__ = ["FolderSource"]
