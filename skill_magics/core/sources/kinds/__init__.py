"""Where skills are installed from: the registered source kinds (docs/architecture.md,
*Registered kinds*; the kind: ``base.py``, :class:`SourceKind`).

``SOURCE_KINDS`` is the table, in the order a source string is offered to each kind's
``parse`` (a site's index before git's https URLs; a repository before a plain folder):
``wellknown_source.py``, ``git_source.py``, ``archive_source.py``, ``folder_source.py``.
``spec.parse_source``, ``install.open_snapshot``, ``update`` (``reopen``), the lock
(:func:`read_lock`, :func:`lock_fields`), ``foreign_locks`` and the ``%skills`` usage read it.
A new kind: a subclass in a module of its own and one line below;
``tests/test_registered_kinds.py`` checks its hooks. Nothing here fetches anything: the
kinds import what opens a source when they open one.

Example:
    >>> list(SOURCE_KINDS.names())
    ['well-known', 'git', 'archive', 'folder']
    >>> described()
    "a site's well-known index (https://HOST), a git URL, a .skill/.zip file or a folder"
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from skill_magics.core.base.registry import Registry
from skill_magics.core.installed import lock as _lock
from skill_magics.core.sources.kinds.archive_source import ArchiveSource
from skill_magics.core.sources.kinds.base import ForeignEntry, SourceKind
from skill_magics.core.sources.kinds.folder_source import FolderSource
from skill_magics.core.sources.kinds.git_source import GitSource
from skill_magics.core.sources.kinds.wellknown_source import WellKnownSource

SOURCE_KINDS: Registry[SourceKind] = Registry(
    "source kind", SourceKind, [WellKnownSource(), GitSource(), ArchiveSource(), FolderSource()]
)


def described() -> str:
    """The kinds as a person names them, for usage texts ("a git URL, ... or a folder")."""
    texts = [kind.description for kind in SOURCE_KINDS]
    return ", ".join(texts[:-1]) + " or " + texts[-1] if len(texts) > 1 else "".join(texts)


def checked_entry(key: Any, locked: _lock.LockedSkill) -> _lock.LockedSkill:
    """A lock entry read back, checked by its kind (ValueError: an unknown ``type``, or
    what its kind needs missing)."""
    kind = SOURCE_KINDS.find(locked.kind)
    if kind is None:
        raise ValueError(f"skill {key!r} has type {locked.kind!r}")
    return kind.check_locked(locked)


def read_lock(folder: Path, *, missing_ok: bool = False) -> _lock.Lock:
    """``lock.read_lock`` with every entry checked by its kind (what installs, updates and
    verifies read: an entry of no registered kind is refused in one line)."""
    return _lock.read_lock(folder, missing_ok=missing_ok, check=checked_entry)


def lock_fields(locked: _lock.LockedSkill) -> dict[str, str]:
    """The ``skills`` CLI's fields for ``locked``, from its kind (written, never read back)."""
    return SOURCE_KINDS.get(locked.kind).lock_fields(locked)


__all__ = [
    "SOURCE_KINDS",
    "ArchiveSource",
    "FolderSource",
    "ForeignEntry",
    "GitSource",
    "SourceKind",
    "WellKnownSource",
    "checked_entry",
    "described",
    "lock_fields",
    "read_lock",
]
