"""A site's well-known skills index (``https://HOST``: ``/.well-known/agent-skills/
index.json``), each artifact's digest verified (core/sources/wellknown.py)."""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from skill_magics.core.base.errors import SourceError
from skill_magics.core.sources.kinds.base import ForeignEntry, SourceKind
from skill_magics.core.sources.sourcespec import (
    SCHEME,
    WELL_KNOWN,
    SourceSpec,
    well_known_index,
)

if TYPE_CHECKING:
    from skill_magics.core.installed.lock import LockedSkill
    from skill_magics.core.sources.snapshot import Snapshot

_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


class WellKnownSource(SourceKind):
    """An index of skills a site publishes; a lock entry pins the artifact's URL and digest."""

    name = WELL_KNOWN
    description = "a site's well-known index (https://HOST)"

    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        if SCHEME.match(text) is None:
            return None
        index = well_known_index(text)
        if index is None:
            return None
        if ref:
            raise SourceError("A well-known index has no refs: leave out ref (--ref)")
        return SourceSpec(WELL_KNOWN, index, None, subfolder)

    def open(
        self,
        spec: SourceSpec,
        *,
        cancel: threading.Event | None = None,
        wanted: Sequence[str] | None = None,
    ) -> Snapshot:
        from skill_magics.core.sources.wellknown import open_index

        return open_index(spec, wanted, cancel)

    def reopen(
        self,
        spec: SourceSpec,
        locked: Sequence[LockedSkill],
        *,
        cancel: threading.Event | None = None,
        pinned: bool = False,
    ) -> Snapshot:
        """``pinned`` (sync): the locked artifacts, by URL and digest; else the index is read
        again (update)."""
        if pinned:
            from skill_magics.core.sources.wellknown import open_pinned

            pins = [(s.path, s.url or "", s.digest or "") for s in locked]
            return open_pinned(spec, pins, cancel)
        return self.open(spec, cancel=cancel, wanted=[s.path for s in locked])

    def check_locked(self, locked: LockedSkill) -> LockedSkill:
        url, digest = locked.url, locked.digest
        if url is None or not url.startswith(("https://", "http://")):
            raise ValueError(f"skill {locked.folder!r} has no artifact url")
        if digest is None or not _DIGEST.match(digest):
            raise ValueError(f"skill {locked.folder!r} has digest {digest!r}")
        return locked

    def lock_fields(self, locked: LockedSkill) -> dict[str, str]:
        # The skills CLI finds the index from the site's address.
        return {"sourceType": WELL_KNOWN, "sourceUrl": locked.source.split("/.well-known/")[0]}

    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        if entry.source_type != WELL_KNOWN:
            return None
        return entry.url or entry.source or "", entry.name


__all__ = ["WellKnownSource"]
