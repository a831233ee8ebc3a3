"""A ``.skill`` or ``.zip`` archive as a Snapshot, checked whole before anything is written.

A ``.skill`` file is a zip of one skill folder (``name/SKILL.md``, ``name/scripts/...``: what
skill-creator's ``package_skill.py`` writes); a ``.zip`` may hold several skills or a whole
repository (GitHub's "Download ZIP" puts everything under ``repo-main/``). Either way every
member is checked when the archive is opened, and one bad member refuses the whole archive
in one line naming the member and the rule (the rules a tar.gz shares: ``members.py``):

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

import os
import stat
import zipfile
from pathlib import Path
from typing import BinaryIO

from skill_magics.core.base.errors import UnsafeArchiveError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import NO_ANCHORS, Anchors, Signature, SignatureState
from skill_magics.core.sources.members import Members
from skill_magics.core.sources.snapshot import FILE, Entry, Snapshot
from skill_magics.core.sources.sourcespec import ARCHIVE, SourceSpec

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

    def _check(self) -> None:
        infos = self.zip.infolist()
        if len(infos) > MAX_MEMBERS:
            raise UnsafeArchiveError(
                f"Refused {self.name}: {len(infos):,} members, over the limit of "
                f"{MAX_MEMBERS:,}; nothing was written"
            )
        members = Members(self.name)
        for info in infos:
            name = info.filename
            path = name.rstrip("/") if info.is_dir() else name
            members.check_name(name, path)
            mode = info.external_attr >> 16
            kind = _KINDS.get(stat.S_IFMT(mode))
            if kind is not None:
                raise members.refuse(name, f"is {kind}: links and device files are never extracted")
            if info.flag_bits & 0x1:
                raise members.refuse(name, "is encrypted")
            if info.compress_type not in METHODS:
                raise members.refuse(name, f"uses compression method {info.compress_type}")
            skipped = info.is_dir() or path.split("/")[0] == "__MACOSX"
            members.add(name, path, size=None if skipped else info.file_size)
            if skipped:
                continue
            if info.file_size > RATIO_FLOOR and info.file_size > MAX_RATIO * max(
                info.compress_size, 1
            ):
                raise members.refuse(
                    name,
                    f"expands {info.file_size:,} bytes from {info.compress_size:,} (more than "
                    f"{MAX_RATIO} times: a zip bomb?)",
                )
            executable = bool(mode) and stat.S_ISREG(mode) and bool(mode & 0o111)
            self.entries.append(Entry(path, FILE, info.file_size, executable, name))
        members.check_folders(e.path for e in self.entries)

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

    def signature(self, path: str, signers: str | None, anchors: Anchors = NO_ANCHORS) -> Signature:
        return detached_signature(Path(self.spec.location), signers, anchors=anchors)

    def close(self) -> None:
        self.zip.close()


def detached_signature(
    artifact: Path,
    signers: str | None,
    sig: Path | None = None,
    *,
    bundle: Path | None = None,
    anchors: Anchors = NO_ANCHORS,
) -> Signature:
    """The detached SSH signature ``ARTIFACT.sig`` (or ``sig``) beside an archive, verified
    by ``ssh-keygen`` (core/sources/sshsig.py), and a sigstore bundle beside it
    (``ARTIFACT.sigstore.json``, or ``bundle``) verified by the ``sigstore`` package when it
    is installed (core/trust/sigstore.py). Either one BAD: BAD (the install is refused);
    else the signed one (SSH first); unsigned when there is neither."""
    from skill_magics.core.sources.sshsig import verify_detached
    from skill_magics.core.trust.signers import file_digest
    from skill_magics.core.trust.sigstore import bundle_beside, verify_bundle

    subject = f"archive {file_digest(artifact)[:23]}"
    sig = sig if sig is not None else artifact.with_name(artifact.name + ".sig")
    results = []
    if os.path.isfile(sig):
        results.append(verify_detached(artifact, sig, signers, subject))
    bundle = bundle if bundle is not None else bundle_beside(artifact)
    if bundle is not None:
        results.append(
            verify_bundle(artifact, bundle, anchors.sigstore, anchors.sigstore_root, subject)
        )
    if not results:
        return Signature.unsigned(f"no {visible(sig.name)}")
    for state in (SignatureState.BAD, SignatureState.SIGNED, SignatureState.UNKNOWN):
        found = next((r for r in results if r.state is state), None)
        if found is not None:
            return found
    return results[0]


__all__ = ["ZipSnapshot", "MAX_MEMBERS", "MAX_RATIO"]
