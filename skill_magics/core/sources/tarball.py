"""A ``.tar.gz`` archive as a Snapshot, checked whole before anything is written.

Well-known indexes (docs/architecture.md, *Installed skills*) publish skills as zip or
tar.gz archives; a tar.gz gets the same refusals as a ``.skill`` file (``archive.py``), in one
line naming the member and the rule: no absolute path, ``..``, backslash, control or bidi
character, ``.git`` component, member listed twice, file that is also a folder; no symbolic or
hard link, device or FIFO; at most :data:`~archive.MAX_MEMBERS` members, and the files'
limits of an install. Members are read with ``extractfile``: nothing is extracted by tarfile
itself, so its own link handling never runs. The walk stops at the first member over a
limit, so a gzip bomb is decompressed no further than the limits.
"""

from __future__ import annotations

import tarfile
from typing import BinaryIO

from skill_magics.core.base.errors import UnsafeArchiveError
from skill_magics.core.sources.archive import MAX_MEMBERS
from skill_magics.core.sources.names import path_problem
from skill_magics.core.sources.snapshot import (
    FILE,
    LIMITS_TEXT,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Entry,
    Snapshot,
)
from skill_magics.core.sources.spec import SourceSpec
from skill_magics.core.base.visible import visible


class TarSnapshot(Snapshot):
    """The files of a gzip-compressed tar archive, every member checked first."""

    def __init__(self, spec: SourceSpec, name: str) -> None:
        super().__init__(spec)
        self.name = visible(name)
        try:
            self.tar = tarfile.open(spec.location, "r:gz")
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise UnsafeArchiveError(f"{self.name} is not a readable tar.gz ({exc})") from None
        self.members: dict[str, tarfile.TarInfo] = {}
        try:
            self._check()
        except (tarfile.TarError, OSError, EOFError) as exc:
            self.tar.close()
            raise UnsafeArchiveError(f"{self.name} is not a readable tar.gz ({exc})") from None
        except BaseException:
            self.tar.close()
            raise

    def _refuse(self, member: str, why: str) -> UnsafeArchiveError:
        return UnsafeArchiveError(
            f"Refused {self.name}: member {visible(member)!r} {why}; nothing was written"
        )

    def _check(self) -> None:
        seen: set[str] = set()
        folders: set[str] = set()
        count = files = total = 0
        for info in self.tar:
            count += 1
            if count > MAX_MEMBERS:
                raise UnsafeArchiveError(
                    f"Refused {self.name}: more than {MAX_MEMBERS:,} members; nothing was written"
                )
            raw = info.name
            path = raw[2:] if raw.startswith("./") else raw
            path = path.rstrip("/") if info.isdir() else path
            if info.isdir() and path in ("", "."):
                continue
            if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
                raise self._refuse(raw, "has an absolute path")
            if ".." in path.replace("\\", "/").split("/"):
                raise self._refuse(raw, "climbs out with '..'")
            problem = path_problem(path) if path else "has an empty name"
            if problem is not None:
                raise self._refuse(raw, problem.replace("it ", "", 1))
            if info.issym() or info.islnk():
                raise self._refuse(
                    raw, "is a link: links are never extracted (they can point outside the skill)"
                )
            if not (info.isreg() or info.isdir()):
                raise self._refuse(raw, "is a device, FIFO or other special file")
            if path in seen:
                raise self._refuse(raw, "is listed twice")
            seen.add(path)
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
            if info.isdir():
                continue
            files += 1
            total += info.size
            if files > MAX_FILES or total > MAX_TOTAL_BYTES:
                raise UnsafeArchiveError(
                    f"Refused {self.name}: it expands to more than the limits of {LIMITS_TEXT} "
                    f"(at {visible(raw)!r}); nothing was written"
                )
            self.members[path] = info
            self.entries.append(Entry(path, FILE, info.size, bool(info.mode & 0o111), path))
        clash = folders & set(self.members)
        if clash:
            raise self._refuse(sorted(clash)[0], "is both a file and a folder")

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        try:
            member = self.tar.extractfile(self.members[entry.key])
            if member is None:
                raise UnsafeArchiveError(f"Refused {self.name}: {visible(entry.key)!r} is no file")
            with member:
                left = entry.size + 1
                while left > 0:
                    chunk = member.read(min(1 << 16, left))
                    if not chunk:
                        break
                    left -= len(chunk)
                    out.write(chunk)
        except (tarfile.TarError, OSError, EOFError) as exc:
            raise UnsafeArchiveError(
                f"Refused {self.name}: member {visible(entry.key)!r} cannot be read ({exc}); "
                "nothing was installed"
            ) from None

    def close(self) -> None:
        self.tar.close()


__all__ = ["TarSnapshot"]
