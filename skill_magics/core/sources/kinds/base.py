"""The source kind: where skills are installed from (a git repository, an archive, a folder,
a site's well-known index, ...), as one class per kind.

A kind reads a source string (:meth:`SourceKind.parse`), opens what it names as a
:class:`~skill_magics.core.sources.snapshot.Snapshot` (:meth:`~SourceKind.open`, and again
for ``sync``/``update``: :meth:`~SourceKind.reopen`), and says what its entries in
``skills-lock.json`` hold besides the common fields (:meth:`~SourceKind.check_locked` when
read, :meth:`~SourceKind.lock_fields` when written) and which of the ``skills`` CLI's
``sourceType`` it reads back (:meth:`~SourceKind.from_foreign`). The table is
``SOURCE_KINDS`` in ``core/sources/kinds/__init__.py``: a new kind is a subclass in a module of
its own and one line there (docs/architecture.md, *Registered kinds*).
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from skill_magics.core.installed.lock import LockedSkill
    from skill_magics.core.sources.snapshot import Snapshot
    from skill_magics.core.sources.sourcespec import SourceSpec


@dataclass(frozen=True)
class ForeignEntry:
    """One entry of another tool's lock (the ``skills`` CLI's), its fields as read: untrusted
    text, checked by the kind that claims its ``source_type``. ``what`` names it in errors."""

    source_type: str | None
    source: str | None
    url: str | None  # sourceUrl
    name: str
    folder: str  # the skill's folder in the source (from skillPath), checked
    base: Path  # the folder the lock is in: a relative local source is relative to it
    what: str


class SourceKind(ABC):
    """One kind of source. Every hook is asked of the kind named by a spec's or a locked
    skill's ``kind``; :meth:`parse` is asked of each kind in the table's order until one
    claims the source string."""

    @property
    @abstractmethod
    def name(self) -> str:
        """``SourceSpec.kind`` and the lock entry's ``type`` ("git")."""

    @property
    @abstractmethod
    def description(self) -> str:
        """How a person names such a source, for the usage text ("a git URL")."""

    @abstractmethod
    def parse(self, text: str, ref: str | None, subfolder: str) -> SourceSpec | None:
        """The spec when ``text`` (stripped, checked: ``sourcespec.source_text``) names a
        source of this kind; None when it does not (the next kind is asked); SourceError
        (one line, the fix) when it is this kind's but refused. ``ref`` and ``subfolder``
        are checked already. The spec's ``location`` is what the lock records as
        ``source``: parsed again (sync, update) it must give this kind again."""

    @abstractmethod
    def open(
        self,
        spec: SourceSpec,
        *,
        cancel: threading.Event | None = None,
        wanted: Sequence[str] | None = None,
    ) -> Snapshot:
        """The source's files (``wanted``: the skills' paths the caller wants, when the
        kind can fetch only those). The snapshot's ``spec`` (and ``commit``, and its
        ``lock_fields(path)``) are what the lock records for the skills installed from it."""

    def reopen(
        self,
        spec: SourceSpec,
        locked: Sequence[LockedSkill],
        *,
        cancel: threading.Event | None = None,
        pinned: bool = False,
    ) -> Snapshot:
        """The source again for ``sync``/``update`` of the skills ``locked`` from it:
        ``pinned`` (sync): what the lock recorded where the kind can fetch exactly that;
        else what the source offers now. By default ``open`` again: a folder, an archive
        and a git ref (the spec holds the locked ref) have no other pinned form."""
        return self.open(spec, cancel=cancel)

    @abstractmethod
    def check_locked(self, locked: LockedSkill) -> LockedSkill:
        """The lock entry as this kind keeps it (fields of other kinds dropped); ValueError
        (naming the field) when it lacks what the kind needs (the lock is untrusted:
        checked on every read)."""

    @abstractmethod
    def lock_fields(self, locked: LockedSkill) -> dict[str, str]:
        """The ``skills`` CLI's v1 fields written beside ours (``sourceType``, ``skillPath``,
        ``sourceUrl``), so that tool can restore from our lock; never read back."""

    @abstractmethod
    def from_foreign(self, entry: ForeignEntry) -> tuple[str, str] | None:
        """For an entry of the ``skills`` CLI's lock whose ``sourceType`` is this kind's:
        (the source to install from, the skill to take: its folder or name); None for
        another ``sourceType``; LockFileError (one line) when it is this kind's but
        unusable."""

    def __repr__(self) -> str:
        return f"<source kind {self.name!r}>"


__all__ = ["ForeignEntry", "SourceKind"]
