"""The checks every member of an archive gets, zip or tar.gz (``archive.py``, ``tarball.py``).

One line naming the archive, the member and the rule, and nothing written: no absolute path,
no ``..``, no name a skill file cannot have (``names.path_problem``), no member listed twice,
no file that is also a folder, and no more than the limits of an install
(``snapshot.LIMITS_TEXT``). What only one format has (zip's modes, methods and ratio, tar's
member types) stays in its module.

Example:
    >>> members = Members("pdf.skill")
    >>> members.add("pdf/SKILL.md", "pdf/SKILL.md", size=120)
    >>> members.check_name("pdf/../../x", "pdf/../../x")
    Traceback (most recent call last):
    skill_magics.core.base.errors.UnsafeArchiveError: Refused pdf.skill: member 'pdf/../../x' ...
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from skill_magics.core.base.errors import UnsafeArchiveError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.names import path_problem
from skill_magics.core.sources.snapshot import LIMITS_TEXT, MAX_FILES, MAX_TOTAL_BYTES


@dataclass
class Members:
    """What one archive's walk has seen so far; ``archive`` is its name as shown."""

    archive: str
    seen: set[str] = field(default_factory=set)
    folders: set[str] = field(default_factory=set)
    files: int = 0
    total: int = 0

    def refuse(self, member: str, why: str) -> UnsafeArchiveError:
        return UnsafeArchiveError(
            f"Refused {self.archive}: member {visible(member)!r} {why}; nothing was written"
        )

    def check_name(self, raw: str, path: str) -> None:
        """Refuse ``path`` (``raw`` as the archive spells it) if it is absolute, climbs out
        with ``..`` or is no name a skill's file may have."""
        if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
            raise self.refuse(raw, "has an absolute path")
        if ".." in path.replace("\\", "/").split("/"):
            raise self.refuse(raw, "climbs out with '..'")
        problem = path_problem(path) if path else "has an empty name"
        if problem is not None:
            raise self.refuse(raw, problem.replace("it ", "", 1))

    def add(self, raw: str, path: str, *, size: int | None) -> None:
        """Count a member whose name passed :meth:`check_name`: a folder (``size`` None,
        or a file that is skipped) or a file of ``size`` bytes, within the limits."""
        if path in self.seen:
            raise self.refuse(raw, "is listed twice")
        self.seen.add(path)
        parts = path.split("/")
        self.folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
        if size is None:
            return
        self.files += 1
        self.total += size
        if self.files > MAX_FILES or self.total > MAX_TOTAL_BYTES:
            raise UnsafeArchiveError(
                f"Refused {self.archive}: it expands to more than the limits of {LIMITS_TEXT} "
                f"(at {visible(raw)!r}: {self.files:,} files, {self.total:,} bytes); "
                "nothing was written"
            )

    def check_folders(self, files: Iterable[str]) -> None:
        """Refuse a file that is also a folder of another member."""
        clash = self.folders & set(files)
        if clash:
            raise self.refuse(sorted(clash)[0], "is both a file and a folder")


__all__ = ["Members"]
