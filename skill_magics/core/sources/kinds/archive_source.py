"""A ``.skill`` or ``.zip`` file (core/sources/archive.py checks every member first)."""

from __future__ import annotations

import os
import threading
import zipfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.sources.kinds.base import ForeignEntry, SourceKind
from skill_magics.core.sources.sourcespec import ARCHIVE, ARCHIVE_SUFFIXES, SCHEME, SourceSpec

if TYPE_CHECKING:
    from skill_magics.core.installed.lock import LockedSkill
    from skill_magics.core.sources.snapshot import Snapshot


class ArchiveSource(SourceKind):
    """A local zip archive."""

    name = ARCHIVE
    description = "a .skill/.zip file"

    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        if SCHEME.match(text) is not None:
            return None
        path = Path(text).expanduser()
        absolute = Path(os.path.abspath(path))
        if not absolute.is_file():
            return None
        if absolute.suffix.lower() not in ARCHIVE_SUFFIXES or not zipfile.is_zipfile(absolute):
            raise SourceError(
                f"{visible(str(path))} is not a .skill or .zip archive: give one, a git URL or "
                "a folder"
            )
        if ref:
            raise SourceError("An archive has no refs: leave out ref (--ref)")
        return SourceSpec(ARCHIVE, str(absolute), None, subfolder)

    def open(
        self,
        spec: SourceSpec,
        *,
        cancel: threading.Event | None = None,
        wanted: Sequence[str] | None = None,
    ) -> Snapshot:
        from skill_magics.core.sources.archive import ZipSnapshot

        return ZipSnapshot(spec)

    def check_locked(self, locked: LockedSkill) -> LockedSkill:
        return replace(locked, url=None, digest=None)

    def lock_fields(self, locked: LockedSkill) -> dict[str, str]:
        return {}  # the skills CLI has no archive source type: none are written

    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        return None  # nor does it write one


__all__ = ["ArchiveSource"]
