"""A ``.skill`` or ``.zip`` archive as a Snapshot, checked whole before anything is written.

A ``.skill`` file is a zip of one skill folder (``name/SKILL.md``, ``name/scripts/...``: what
skill-creator's ``package_skill.py`` writes); a ``.zip`` may hold several skills or a whole
repository (GitHub's "Download ZIP" puts everything under ``repo-main/``). Either way every
member is checked when the archive is opened, and one bad member refuses the whole archive
in one line naming the member and the rule:

- no absolute path (``/x``, ``C:x``), no ``..`` component, no backslashes, no control or
  bidi characters, no member listed twice, no file that is also a folder;
- no symbolic link, device, FIFO or socket (the Unix mode in ``external_attr``);
- no encrypted member, no compression method other than stored/deflate/bzip2/lzma;
- at most :data:`MAX_MEMBERS` members, :data:`~snapshot.MAX_FILES` files and
  :data:`~snapshot.MAX_TOTAL_BYTES` bytes uncompressed in all, and no member that expands
  more than :data:`MAX_RATIO` times (a zip bomb); while copying, a member that yields more
  bytes than it declared is stopped.

``__MACOSX/`` folders (macOS resource forks) are skipped.

Example (not run as a doctest: it needs a .skill archive)::

    with ZipSnapshot(parse_source("pdf.skill")) as snap:
        [e.path for e in snap.entries][:2]
    # -> ['pdf/SKILL.md', 'pdf/scripts/extract.py']
"""

from __future__ import annotations

import stat
import zipfile
from typing import BinaryIO

from skill_magics.core.base.errors import UnsafeArchiveError
from skill_magics.core.sources.names import path_problem
from skill_magics.core.sources.snapshot import (
    FILE,
    LIMITS_TEXT,
    MAX_FILES,
    MAX_TOTAL_BYTES,
    Entry,
    Snapshot,
)
from skill_magics.core.sources.spec import ARCHIVE, SourceSpec
from skill_magics.core.base.visible import visible

MAX_MEMBERS = 20_000  # files and folders
MAX_RATIO = 200  # uncompressed / compressed, for members over RATIO_FLOOR bytes
RATIO_FLOOR = 1 << 20
METHODS = {
    zipfile.ZIP_STORED: "stored",
    zipfile.ZIP_DEFLATED: "deflate",
    zipfile.ZIP_BZIP2: "bzip2",
    zipfile.ZIP_LZMA: "lzma",
}
_KINDS = {
    stat.S_IFLNK: "a symbolic link",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
}


class ZipSnapshot(Snapshot):
    """The files of a zip archive, every member checked (see the module docstring)."""

    def __init__(self, spec: SourceSpec) -> None:
        if spec.kind != ARCHIVE:
            raise ValueError("ZipSnapshot needs an archive source")
        super().__init__(spec)
        self.name = visible(spec.location.rsplit("/", 1)[-1])
        try:
            self.zip = zipfile.ZipFile(spec.location)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise UnsafeArchiveError(f"{self.name} is not a readable zip archive ({exc})") from None
        try:
            self._check()
        except BaseException:
            self.zip.close()
            raise

    def _refuse(self, member: str, why: str) -> UnsafeArchiveError:
        return UnsafeArchiveError(
            f"Refused {self.name}: member {visible(member)!r} {why}; nothing was written"
        )

    def _check(self) -> None:
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise UnsafeArchiveError(
                f"Refused {self.name}: {len(infos):,} members, over the limit of "
                f"{MAX_MEMBERS:,}; nothing was written"
            )
        seen: set[str] = set()
        folders: set[str] = set()
        total = files = 0
        for info in infos:
            name = info.filename
            path = name.rstrip("/") if info.is_dir() else name
            problem = path_problem(path) if path else "has an empty name"
            if problem is not None:
                if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
                    raise self._refuse(name, "has an absolute path")
                if ".." in path.replace("\\", "/").split("/"):
                    raise self._refuse(name, "climbs out with '..'")
                raise self._refuse(name, problem.replace("it ", "", 1))
            mode = info.external_attr >> 16
            kind = _KINDS.get(stat.S_IFMT(mode))
            if kind is not None:
                raise self._refuse(name, f"is {kind}: links and device files are never extracted")
            if info.flag_bits & 0x1:
                raise self._refuse(name, "is encrypted")
            if info.compress_type not in METHODS:
                raise self._refuse(name, f"uses compression method {info.compress_type}")
            if path in seen:
                raise self._refuse(name, "is listed twice")
            seen.add(path)
            parts = path.split("/")
            folders.update("/".join(parts[:i]) for i in range(1, len(parts)))
            if info.is_dir() or parts[0] == "__MACOSX":
                continue
            files += 1
            total += info.file_size
            if files > MAX_FILES or total > MAX_TOTAL_BYTES:
                raise UnsafeArchiveError(
                    f"Refused {self.name}: it expands to more than the limits of {LIMITS_TEXT} "
                    f"(at {visible(name)!r}: {files:,} files, {total:,} bytes); nothing was written"
                )
            if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(
                info.compress_size, 1
            ):
                raise self._refuse(
                    name,
                    f"expands {info.file_size:,} bytes from {info.compress_size:,} (more than "
                    f"{MAX_RATIO} times: a zip bomb?)",
                )
            executable = bool(mode) and stat.S_ISREG(mode) and bool(mode & 0o111)
            self.entries.append(Entry(path, FILE, info.file_size, executable, name))
        clash = folders & {e.path for e in self.entries}
        if clash:
            raise self._refuse(sorted(clash)[0], "is both a file and a folder")

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        try:
            with self.zip.open(entry.key) as member:
                left = entry.size + 1  # one byte more shows a member that lies about its size
                while True:
                    chunk = member.read(min(1 << 16, left))
                    if not chunk:
                        break
                    left -= len(chunk)
                    out.write(chunk)
                    if left <= 0:
                        break
        except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError) as exc:
            raise UnsafeArchiveError(
                f"Refused {self.name}: member {visible(entry.key)!r} cannot be read ({exc}); "
                "nothing was installed"
            ) from None

    def close(self) -> None:
        self.zip.close()


__all__ = ["ZipSnapshot", "MAX_MEMBERS", "MAX_RATIO"]
