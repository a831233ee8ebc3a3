"""A ``.tar.gz`` archive as a Snapshot, checked whole before anything is written.

Well-known indexes (docs/architecture.md, *Installed skills*) publish skills as zip or tar.gz
archives; a tar.gz gets the same refusals as a ``.skill`` file (``archive.py``,
``members.py``), in one line naming the member and the rule: no absolute path, ``..``,
backslash, control or bidi character, ``.git`` component, member listed twice, file that is
also a folder; no symbolic or hard link, device or FIFO; at most :data:`~archive.MAX_MEMBERS`
members, and the files' limits of an install. Members are read with ``extractfile``: nothing
is extracted by tarfile itself, so its own link handling never runs. The walk stops at the
first member over a limit, so a gzip bomb is decompressed no further than the limits.
"""

from __future__ import annotations

import tarfile
from typing import BinaryIO

from skill_magics.core.base.errors import UnsafeArchiveError
from skill_magics.core.base.visible import visible
from skill_magics.core.sources.archive import MAX_MEMBERS
from skill_magics.core.sources.members import Members
from skill_magics.core.sources.snapshot import FILE, Entry, Snapshot
from skill_magics.core.sources.sourcespec import SourceSpec


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

    def _check(self) -> None:
        members = Members(self.name)
        count = 0
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
            members.check_name(raw, path)
            if info.issym() or info.islnk():
                raise members.refuse(
                    raw, "is a link: links are never extracted (they can point outside the skill)"
                )
            if not (info.isreg() or info.isdir()):
                raise members.refuse(raw, "is a device, FIFO or other special file")
            members.add(raw, path, size=None if info.isdir() else info.size)
            if info.isdir():
                continue
            self.members[path] = info
            self.entries.append(Entry(path, FILE, info.size, bool(info.mode & 0o111), path))
        members.check_folders(self.members)

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
