"""Skills a website publishes in a well-known index, as a Snapshot (one per install).

``https://HOST/.well-known/agent-skills/index.json`` (the discovery RFC v0.2.0, agentskills
PR #254) lists ``{"$schema": ".../discovery/0.2.0/schema.json", "skills": [{name, type:
"skill-md" | "archive", description, url, digest: "sha256:<hex>"}]}``. For each chosen entry
the artifact is downloaded (https only; http only to this machine), its sha256 must be the
index's digest before anything is opened, and an archive (zip or tar.gz, told by its first
bytes) is checked whole by the same rules as a ``.skill`` file (``archive.py``,
``tarball.py``). The skill's files appear under ``<name>/`` (the index name is the folder
name), so finding, staging, the gate and the lock work as for any other source; the lock
keeps the index URL as the source and, per skill, the artifact's ``url`` and ``digest``.

- install and update read the index (:func:`open_index`);
- sync fetches the locked ``url`` and requires the locked ``digest`` (:func:`open_pinned`).

Example (not run as a doctest: it fetches a site's skill index)::

    with open_index(parse_source("https://example.com"), ["pdf"]) as snap:
        [e.path for e in snap.entries]
    # -> ['pdf/SKILL.md', 'pdf/scripts/extract.py']
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import tempfile
import threading
import urllib.error
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urljoin, urlsplit

from skill_magics.core.base.errors import RunInterrupted, SourceError, UnsafeArchiveError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.names import name_problem
from skill_magics.core.installed.signature import NO_ANCHORS, Anchors, Signature
from skill_magics.core.sources.snapshot import (
    FILE,
    MAX_SKILL_MD_BYTES,
    MAX_TOTAL_BYTES,
    Entry,
    Snapshot,
    find_skills,
)
from skill_magics.core.sources.sourcespec import ARCHIVE, SourceSpec, is_loopback
from skill_magics.core.sources.sshsig import MAX_SIG

SCHEMA_V2 = "https://schemas.agentskills.io/discovery/0.2.0/schema.json"
SKILL_MD = "skill-md"
ARCHIVE_TYPE = "archive"
MAX_INDEX_BYTES = 1 << 20
TIMEOUT_S = 30.0
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class IndexEntry:
    """One skill of an index: its name (the folder it installs as), type, artifact URL and
    the digest the artifact must have."""

    name: str
    kind: str  # SKILL_MD or ARCHIVE_TYPE ("": told by the artifact's first bytes)
    url: str
    digest: str
    description: str = ""


# -- fetching -------------------------------------------------------------------------------


def allowed_url(url: str, index: str) -> bool:
    """https anywhere; http only when both it and the index are on this machine."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return True
    return (
        parts.scheme == "http"
        and is_loopback(parts.hostname or "")
        and is_loopback(urlsplit(index).hostname or "")
    )


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to a URL the index could have named itself."""

    def __init__(self, index: str) -> None:
        self.index = index

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001
        if not allowed_url(newurl, self.index):
            raise SourceError(
                f"{visible(req.full_url)} redirects to {visible(newurl)}, which is not https; "
                "nothing was installed. Ask the site to serve its skills over https"
            )
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def fetch(
    url: str,
    index: str,
    limit: int,
    out: BinaryIO | None = None,
    cancel: threading.Event | None = None,
) -> bytes:
    """The bytes at ``url`` (at most ``limit``; into ``out`` when given, returning b"").
    ``cancel`` set (Kernel > Interrupt): RunInterrupted between chunks."""
    if not allowed_url(url, index):
        raise SourceError(
            f"{visible(url)} is not an https URL; nothing was installed. Ask the site to publish "
            "its skills over https"
        )
    opener = urllib.request.build_opener(_Redirects(index))
    request = urllib.request.Request(url, headers={"User-Agent": "skill-magics"})
    data = bytearray()
    size = 0
    try:
        with opener.open(request, timeout=TIMEOUT_S) as response:
            while True:
                if cancel is not None and cancel.is_set():
                    raise RunInterrupted(
                        f"Fetching {visible(url)} was interrupted; nothing was installed"
                    )
                chunk = response.read(1 << 16)
                if not chunk:
                    break
                size += len(chunk)
                if size > limit:
                    raise SourceError(
                        f"{visible(url)} is larger than {limit:,} bytes; nothing was installed"
                    )
                if out is None:
                    data += chunk
                else:
                    out.write(chunk)
    except (SourceError, RunInterrupted):
        raise  # a refused redirect or a size over the limit: already one line naming the fix
    except urllib.error.HTTPError as exc:
        raise SourceError(
            f"{visible(url)} answered HTTP {exc.code}; nothing was installed. Check the address "
            "(a site publishes skills at https://HOST/.well-known/agent-skills/index.json)"
        ) from None
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        raise SourceError(
            f"Cannot fetch {visible(url)} ({visible(str(reason))}); nothing was installed. Check "
            "the address and the network"
        ) from None
    return bytes(data)


# -- the index ------------------------------------------------------------------------------


def read_index(index: str) -> list[IndexEntry]:
    """The entries of the index at ``index``; SourceError (one line) when it is not one."""
    raw = fetch(index, index, MAX_INDEX_BYTES)
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise SourceError(
            f"{visible(index)} is not JSON ({exc}); give the site's address (https://HOST) or "
            "its index.json"
        ) from None
    return parse_index(data, index)


def parse_index(data: Any, index: str) -> list[IndexEntry]:
    """Checked entries of an index document (names, types, URLs, digests)."""
    if not isinstance(data, dict) or not isinstance(data.get("skills"), list):
        raise SourceError(f"{visible(index)} has no 'skills' list: it is not a skills index")
    schema = data.get("$schema")
    if not isinstance(schema, str) or "/discovery/0.2" not in schema:
        raise SourceError(
            f"{visible(index)} is not a discovery 0.2 index ($schema {visible(str(schema))!r}); "
            "ask the site to publish one (agentskills discovery 0.2.0: url and digest per skill)"
        )
    out: list[IndexEntry] = []
    seen: set[str] = set()
    for item in data["skills"]:
        if not isinstance(item, dict):
            raise SourceError(f"{visible(index)}: a skills entry is not an object")
        name = item.get("name")
        what = visible(str(name))
        if not isinstance(name, str) or name_problem(name) is not None or "/" in name:
            raise SourceError(f"{visible(index)}: the skill name {what!r} cannot be a folder name")
        if name in seen:
            raise SourceError(f"{visible(index)}: the skill {what!r} is listed twice")
        seen.add(name)
        kind = item.get("type")
        if kind not in (SKILL_MD, ARCHIVE_TYPE):
            raise SourceError(
                f"{visible(index)}: skill {what!r} has type {visible(str(kind))!r} (expected "
                "'skill-md' or 'archive')"
            )
        digest = item.get("digest")
        if not isinstance(digest, str) or not _DIGEST.match(digest):
            raise SourceError(
                f"{visible(index)}: skill {what!r} has no digest 'sha256:<64 hex>': it cannot be "
                "verified, so it is not installed"
            )
        url = item.get("url")
        if not isinstance(url, str) or not url.strip():
            raise SourceError(f"{visible(index)}: skill {what!r} has no url")
        full = urljoin(index, url.strip())
        if not allowed_url(full, index):
            raise SourceError(
                f"{visible(index)}: skill {what!r} is at {visible(full)}, not an https URL; "
                "ask the site to serve it over https"
            )
        about = item.get("description")
        out.append(IndexEntry(name, kind, full, digest, about if isinstance(about, str) else ""))
    if not out:
        raise SourceError(f"{visible(index)} lists no skills")
    return out


# -- the snapshot ---------------------------------------------------------------------------


class WellKnownSnapshot(Snapshot):
    """The chosen entries' files under ``<name>/``, each artifact's digest verified first."""

    def __init__(
        self,
        spec: SourceSpec,
        entries: Sequence[IndexEntry],
        cancel: threading.Event | None = None,
    ) -> None:
        super().__init__(spec)
        self.cancel = cancel
        self.tmp = Path(tempfile.mkdtemp(prefix="skill-magics-wellknown-"))
        self.inner: list[Snapshot] = []
        self.where: dict[str, tuple[Snapshot, Entry]] = {}
        self.pins: dict[str, dict[str, str]] = {}
        self.signed: dict[str, tuple[Path, Path]] = {}  # name -> (artifact, its .sig)
        self.bundles: dict[str, Path] = {}  # name -> its sigstore bundle, when one was published
        try:
            for entry in entries:
                self._add(entry)
        except BaseException:
            self.close()
            raise

    def _add(self, entry: IndexEntry) -> None:
        path = self.tmp / f"{entry.name}.download"
        with open(path, "wb") as fh:
            fetch(entry.url, self.spec.location, MAX_TOTAL_BYTES, fh, self.cancel)
        digest = "sha256:" + _file_sha256(path)
        if digest != entry.digest:
            raise SourceError(
                f"{entry.name}: {visible(entry.url)} has digest {digest[:19]}..., the index says "
                f"{entry.digest[:19]}...; nothing was installed. Ask the site to fix its index, or "
                "leave this skill out (choose others with --skill NAME)"
            )
        self.pins[entry.name] = {"url": entry.url, "digest": entry.digest}
        self._fetch_signature(entry, path)
        with open(path, "rb") as fh:
            magic = fh.read(2)
        if entry.kind == SKILL_MD or (not entry.kind and magic not in (b"PK", b"\x1f\x8b")):
            size = path.stat().st_size
            if size > MAX_SKILL_MD_BYTES:
                raise SourceError(f"{entry.name}: its SKILL.md is larger than 1 MB; not installed")
            item = Entry(f"{entry.name}/SKILL.md", FILE, size, False, str(path))
            self.entries.append(item)
            self.where[item.path] = (self, item)
            return
        try:
            inner = _open_archive(path, entry.name)
        except UnsafeArchiveError as exc:
            raise UnsafeArchiveError(
                f"{exc}. Ask the site to republish {entry.name}, or leave it out (choose others "
                "with --skill NAME)"
            ) from None
        self.inner.append(inner)
        found = find_skills(inner)
        if len(found) != 1:
            raise SourceError(
                f"{entry.name}: its archive holds {len(found)} skills ("
                + ", ".join(visible(f.path) for f in found[:5])
                + "); an index entry is one skill. Ask the site to publish them one by one"
            )
        (skill,) = found
        for item in skill.entries:
            rel = item.path[len(skill.path) + 1 :] if skill.path else item.path
            outer = Entry(f"{entry.name}/{rel}", item.kind, item.size, item.executable, item.key)
            self.entries.append(outer)
            self.where[outer.path] = (inner, item)

    def copy_to(self, entry: Entry, out: BinaryIO) -> None:
        owner, item = self.where[entry.path]
        if owner is self:
            with open(item.key, "rb") as fh:
                shutil.copyfileobj(fh, out)
        else:
            owner.copy_to(item, out)

    def lock_fields(self, path: str) -> dict[str, Any]:
        return dict(self.pins.get(path, {}))

    def _fetch_signature(self, entry: IndexEntry, path: Path) -> None:
        """``URL.sig`` beside the artifact, when the site publishes one, and
        ``URL.sigstore.json`` when the ``sigstore`` package is here to verify it (kept with a
        link to the artifact's bytes as downloaded, before an archive is opened and
        renamed)."""
        import importlib.util

        from skill_magics.core.trust.sigstore import MAX_BUNDLE

        wanted = [(".sig", MAX_SIG)]
        if importlib.util.find_spec("sigstore") is not None:
            wanted.append((".sigstore.json", MAX_BUNDLE))
        found: dict[str, Path] = {}
        for suffix, limit in wanted:
            target = self.tmp / f"{entry.name}.artifact{suffix}"
            try:
                with open(target, "wb") as fh:
                    fetch(entry.url + suffix, self.spec.location, limit, fh, self.cancel)
            except SourceError:
                target.unlink(missing_ok=True)
                continue  # none published (or not reachable)
            found[suffix] = target
        if not found:
            return  # the skill is unsigned
        artifact = self.tmp / f"{entry.name}.artifact"
        os.link(path, artifact)
        self.signed[entry.name] = (artifact, found.get(".sig", Path(f"{artifact}.sig")))
        if ".sigstore.json" in found:
            self.bundles[entry.name] = found[".sigstore.json"]

    def signature(self, path: str, signers: str | None, anchors: Anchors = NO_ANCHORS) -> Signature:
        if path not in self.signed:
            return Signature.unsigned("no .sig beside the artifact")
        from skill_magics.core.sources.archive import detached_signature

        artifact, sig = self.signed[path]
        bundle = self.bundles.get(path)
        return detached_signature(artifact, signers, sig, bundle=bundle, anchors=anchors)

    def close(self) -> None:
        for inner in self.inner:
            inner.close()
        self.inner = []
        shutil.rmtree(self.tmp, ignore_errors=True)


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _open_archive(path: Path, name: str) -> Snapshot:
    """A zip or tar.gz (told by the first bytes, not the URL) as a checked Snapshot."""
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head.startswith(b"PK"):
        from skill_magics.core.sources.archive import ZipSnapshot

        named = path.with_name(f"{name}.zip")
        path.rename(named)
        return ZipSnapshot(SourceSpec(ARCHIVE, str(named)))
    if head.startswith(b"\x1f\x8b"):
        from skill_magics.core.sources.tarball import TarSnapshot

        return TarSnapshot(SourceSpec(ARCHIVE, str(path)), f"{name}.tar.gz")
    raise SourceError(
        f"{name}: its archive is neither zip nor tar.gz; nothing was installed. Ask the site to "
        "publish a .zip or .tar.gz"
    )


def index_listing(source: str) -> str:
    """What the index at ``source`` (``https://HOST`` or its index URL) offers, one skill a
    line (name, type, description), and how to install some: nothing is downloaded but the
    index. SourceError when ``source`` is not a well-known index."""
    from skill_magics.core.sources.sourcespec import source_text, well_known_index

    index = well_known_index(source_text(source))
    if index is None:
        raise SourceError(
            f"{visible(source)} is not a site's well-known index: --list needs https://HOST "
            "(or its /.well-known/agent-skills/index.json)"
        )
    entries = read_index(index)
    width = max(len(e.name) for e in entries)
    lines = [f"{len(entries)} skill(s) in {visible(index)}:"]
    lines += [
        f"  {e.name.ljust(width)}  {e.kind:<8}  {visible(e.description)[:100]}" for e in entries
    ]
    lines.append(f"Install some with %skills install {visible(source)} --skill NAME [--skill ...]")
    return "\n".join(lines)


def open_index(
    spec: SourceSpec,
    wanted: Sequence[str] | None = None,
    cancel: threading.Event | None = None,
) -> WellKnownSnapshot:
    """The index's skills (``wanted``: only these, by name), downloaded and verified."""
    entries = read_index(spec.location)
    if wanted is not None:
        by_name = {e.name: e for e in entries}
        missing = [w for w in wanted if w.strip().strip("/") not in by_name]
        if missing:
            raise SourceError(
                f"No skill {visible(missing[0])!r} in {visible(spec.location)}: it lists "
                + ", ".join(sorted(by_name))
            )
        entries = [by_name[w.strip().strip("/")] for w in dict.fromkeys(wanted)]
    return WellKnownSnapshot(spec, entries, cancel)


def open_pinned(
    spec: SourceSpec,
    pins: Sequence[tuple[str, str, str]],
    cancel: threading.Event | None = None,
) -> WellKnownSnapshot:
    """The locked artifacts ``(name, url, digest)`` again, each required to have its digest
    (the index is not read: a sync restores what was locked)."""
    # The kind is told by the artifact's first bytes (the lock keeps url and digest only).
    entries = [IndexEntry(n, "", url, digest) for n, url, digest in pins]
    return WellKnownSnapshot(spec, entries, cancel)


__all__ = [
    "IndexEntry",
    "WellKnownSnapshot",
    "open_index",
    "open_pinned",
    "read_index",
    "index_listing",
    "parse_index",
    "fetch",
    "SCHEMA_V2",
]
