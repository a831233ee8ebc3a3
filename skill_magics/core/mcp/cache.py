"""The host-only disk cache of MCP skills: verified files, kept where a skill's scripts can
run from later, still marked as coming from MCP after a restart.

Rules (SEP-2640's, and ours for folders others can write):

- the root (default ``$XDG_CACHE_HOME/skill-magics/mcp``, or ``SKILL_MAGICS_MCP_CACHE``) is
  made ``0700`` and must be owned by us; one that is a link, someone else's, or open to the
  group or others is refused, not repaired (someone may already have planted files);
- the root must lie outside every skill discovery path (and none inside it): cached skills
  are never found as local skills, only through their server's label;
- only bytes that passed the host's checks are written, each file whole or not at all, never
  through a link (``safefs.write_file`` under folder descriptors opened ``O_NOFOLLOW``); a
  skill is assembled in a fresh folder and renamed into place, so a reader sees the old copy
  or the new one, never a mix;
- ``origin.json`` beside the files records the label, the server, the skill's URI and every
  file's ``{uri, digest, size}``: after a restart the copy is still an MCP skill, with the
  binding its approval needs;
- every use re-hashes every file against that record, and a file that is not in it (planted
  after the write) is a mismatch: :meth:`McpCache.verify`.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.catalog.frontmatter import name_problems
from skill_magics.core.base.errors import McpCacheError
from skill_magics.core.mcp.host import FetchedFile, McpSkillsHost
from skill_magics.core.mcp.wire import SkillEntry, binding, check_label, sha256_digest
from skill_magics.core.base.safefs import DIR_FLAGS, READ_FLAGS, write_file

CACHE_VAR = "SKILL_MAGICS_MCP_CACHE"
ORIGIN = "origin.json"
FILES = "files"


def default_root() -> Path:
    override = os.environ.get(CACHE_VAR)
    if override:
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "skill-magics" / "mcp"


@dataclass(frozen=True)
class CachedSkill:
    """A cached skill: where its files are and where they came from."""

    label: str
    name: str
    base_dir: Path  # the skill folder (SKILL.md and the rest)
    uri: str
    server: str
    files: dict[str, dict[str, Any]]  # path -> {uri, digest, size}
    binding: str

    @property
    def origin(self) -> str:
        return f"mcp:{self.label}"


class McpCache:
    """See the module docstring. ``discovery_dirs``: the folders skills are found in (None:
    the default ones, ``default_skill_dirs()``); the root may overlap none of them."""

    def __init__(
        self,
        root: str | os.PathLike[str] | None = None,
        *,
        discovery_dirs: Iterable[str | os.PathLike[str]] | None = None,
    ) -> None:
        self.root = Path(os.path.abspath(root if root is not None else default_root()))
        if discovery_dirs is None:
            from skill_magics.core.catalog.discovery import default_skill_dirs

            discovery_dirs = default_skill_dirs()
        self.discovery_dirs = [Path(d) for d in discovery_dirs]

    # -- the root --------------------------------------------------------------------------

    def check_outside(self, discovery_dirs: Iterable[str | os.PathLike[str]]) -> None:
        """Refuse a root inside a discovery path, or one holding a discovery path."""
        root = os.path.realpath(self.root)
        for d in discovery_dirs:
            real = os.path.realpath(d)
            if _within(root, real) or _within(real, root):
                raise McpCacheError(
                    f"MCP skill cache {str(self.root)!r} overlaps the skill folder {str(d)!r}: "
                    f"cached skills must never be found as local ones; set {CACHE_VAR} to a "
                    "folder outside every skill path"
                )

    def _open_root(self) -> int:
        """The root's descriptor, made 0700 if missing; refused when unsafe."""
        self.check_outside(self.discovery_dirs)
        if not self.root.exists() and not self.root.is_symlink():
            os.makedirs(self.root.parent, exist_ok=True)
            try:
                os.mkdir(self.root, 0o700)
            except FileExistsError:
                pass
        try:
            fd = os.open(self.root, DIR_FLAGS)
        except OSError as exc:
            raise McpCacheError(
                f"MCP skill cache {str(self.root)!r} cannot be opened as a folder (a link? "
                f"{exc.strerror}): remove it or set {CACHE_VAR}"
            ) from None
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            os.close(fd)
            raise McpCacheError(
                f"MCP skill cache {str(self.root)!r} is not ours alone (owner uid "
                f"{st.st_uid}, mode {stat.S_IMODE(st.st_mode):o}): others may have written "
                f"into it; remove it (it is made again, 0700) or set {CACHE_VAR}"
            )
        return fd

    # -- writing ---------------------------------------------------------------------------

    def store(self, entry: SkillEntry, server: str, fetched: Sequence[FetchedFile]) -> CachedSkill:
        """Write a skill's verified files (every listed file, each checked by the host)."""
        check_label(entry.label)
        value = binding(entry)
        if entry.files is None or value is None:
            raise McpCacheError(
                f"MCP server '{entry.label}': skill {entry.name!r} is dynamic: it is never "
                "cached (its files are not bound to digests)"
            )
        got = {f.path: f for f in fetched}
        for listed in entry.files:
            f = got.get(listed.path)
            if f is None or not f.verified or sha256_digest(f.data) != listed.digest:
                raise McpCacheError(
                    f"MCP server '{entry.label}': skill {entry.name!r}, file {listed.path!r}: "
                    "not fetched and verified, so not cached"
                )
        if set(got) - {f.path for f in entry.files}:
            raise McpCacheError(
                f"MCP server '{entry.label}': skill {entry.name!r}: a file not in the listing "
                "was given to the cache"
            )
        origin = {
            "origin": "mcp",
            "label": entry.label,
            "name": entry.name,
            "server": server,
            "uri": entry.uri,
            "binding": value,
            "files": {
                f.path: {"uri": f.uri, "digest": f.digest, "size": f.size} for f in entry.files
            },
        }
        root = self._open_root()
        try:
            label_fd = _subdir(root, entry.label)
            try:
                tmp = f".{entry.name}.{secrets.token_hex(8)}.tmp"
                os.mkdir(tmp, 0o700, dir_fd=label_fd)
                try:
                    tmp_fd = os.open(tmp, DIR_FLAGS, dir_fd=label_fd)
                    try:
                        files_fd = _subdir(tmp_fd, FILES)
                        try:
                            for listed in entry.files:
                                _write_at(files_fd, listed.path, got[listed.path].data)
                        finally:
                            os.close(files_fd)
                        write_file(tmp_fd, ORIGIN, json.dumps(origin, indent=1), mode=0o600)
                    finally:
                        os.close(tmp_fd)
                    _replace_dir(label_fd, tmp, entry.name)
                except BaseException:
                    _rmtree_at(label_fd, tmp)
                    raise
            finally:
                os.close(label_fd)
        finally:
            os.close(root)
        return self.verify(entry.label, entry.name)

    # -- reading ---------------------------------------------------------------------------

    def verify(self, label: str, name: str) -> CachedSkill:
        """The cached skill, every file re-hashed against its origin record (and nothing
        else there): one line naming the label, the file and what differed otherwise.
        Every folder on the way is opened without following a link (a run may one day
        write there)."""
        check_label(label)
        if name_problems(name):  # names come from folders here: never a path of two parts
            raise McpCacheError(f"MCP skill cache: {name!r} is not a skill name")
        fds: list[int] = [self._open_root()]
        try:
            for part in (label, name):
                try:
                    fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
                except OSError:
                    raise McpCacheError(
                        f"MCP skill cache: {label}/{name} is not cached (or not a folder)"
                    ) from None
            origin = self._origin(fds[-1], label, name)
            listed: dict[str, dict[str, Any]] = origin["files"]
            try:
                fds.append(os.open(FILES, DIR_FLAGS, dir_fd=fds[-1]))
            except OSError:
                raise McpCacheError(
                    f"MCP skill cache: {label}/{name} has no files folder; fetch it again"
                ) from None
            files_fd = fds[-1]
            for path in sorted(set(_walk_files(files_fd)) - set(listed)):
                raise McpCacheError(
                    f"MCP skill cache: {label}/{name}, file {path!r}: not in what was verified "
                    "(planted after the download?); nothing of it runs: fetch it again"
                )
            for path, rec in sorted(listed.items()):
                data = _read_at(files_fd, path, int(rec["size"]) + 1)
                if data is None:
                    raise McpCacheError(
                        f"MCP skill cache: {label}/{name}, file {path!r}: missing or not a "
                        "regular file; nothing of it runs: fetch it again"
                    )
                if len(data) != rec["size"] or sha256_digest(data) != rec["digest"]:
                    raise McpCacheError(
                        f"MCP skill cache: {label}/{name}, file {path!r}: its bytes changed "
                        "since they were verified; nothing of it runs: fetch it again"
                    )
        finally:
            for fd in fds:
                os.close(fd)
        return CachedSkill(
            label,
            name,
            self.root / label / name / FILES,
            origin["uri"],
            origin["server"],
            listed,
            origin["binding"],
        )

    def recorded(self, label: str, name: str) -> dict[str, Any] | None:
        """The origin record of a cached skill, NOT re-hashed (None: not cached or no valid
        record): what was verified when it was written, to tell whether a server's listing
        still matches it. Its files are re-hashed by :meth:`verify` before any use."""
        check_label(label)
        if name_problems(name):
            return None
        fds: list[int] = [self._open_root()]
        try:
            for part in (label, name):
                fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
            return self._origin(fds[-1], label, name)
        except (OSError, McpCacheError):
            return None
        finally:
            for fd in fds:
                os.close(fd)

    def _origin(self, skill_fd: int, label: str, name: str) -> dict[str, Any]:
        data = _read_at(skill_fd, ORIGIN, 1 << 20)
        try:
            origin = json.loads(data or b"")
            ok = (
                origin.get("origin") == "mcp"
                and origin.get("label") == label
                and origin.get("name") == name
                and isinstance(origin.get("files"), dict)
                and all(
                    isinstance(r, dict) and isinstance(r.get("size"), int)
                    for r in origin["files"].values()
                )
            )
        except (ValueError, AttributeError):
            ok = False
        if not ok:
            raise McpCacheError(
                f"MCP skill cache: {label}/{name} has no valid origin record; fetch it again"
            )
        return origin

    def cached(self) -> list[CachedSkill]:
        """Every cached skill that still verifies (the others are left out)."""
        out: list[CachedSkill] = []
        if not self.root.is_dir():
            return out
        for label_dir in sorted(self.root.iterdir()):
            if label_dir.is_symlink() or not label_dir.is_dir():
                continue
            for skill_dir in sorted(label_dir.iterdir()):
                if skill_dir.name.startswith("."):
                    continue
                try:
                    out.append(self.verify(label_dir.name, skill_dir.name))
                except McpCacheError:
                    continue
        return out


def fetch_into(cache: McpCache, host: McpSkillsHost, entry: SkillEntry) -> CachedSkill:
    """Read every file of ``entry`` from its server (each verified as it arrives) and store
    them: what a run of an MCP skill will start from. A mismatch stores nothing."""
    fetched = list(host.fetch_all(entry))
    return cache.store(entry, host.connection.spec.origin, fetched)


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _subdir(parent_fd: int, name: str) -> int:
    """Open (making it 0700 if missing) the folder ``name`` in ``parent_fd``, no link."""
    if name in ("", ".", "..") or "/" in name:
        raise McpCacheError(f"MCP skill cache: {name!r} is not one folder name")
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        pass
    return os.open(name, DIR_FLAGS, dir_fd=parent_fd)


def _write_at(top_fd: int, rel: str, data: bytes) -> None:
    parts = rel.split("/")
    fds: list[int] = []
    try:
        fd = top_fd
        for part in parts[:-1]:
            fd = _subdir(fd, part)
            fds.append(fd)
        write_file(fd, parts[-1], data, mode=0o600)
    finally:
        for d in fds:
            os.close(d)


def _read_at(top_fd: int, rel: str, limit: int) -> bytes | None:
    """At most ``limit`` bytes of the regular file ``rel`` below the folder ``top_fd``,
    every part opened without following a link (None: missing, a link, not a file)."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    fds: list[int] = []
    try:
        parent = top_fd
        for part in parts[:-1]:
            fds.append(os.open(part, DIR_FLAGS, dir_fd=parent))
            parent = fds[-1]
        fd = os.open(parts[-1], READ_FLAGS, dir_fd=parent)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                return None
            return fh.read(limit)
    except OSError:
        return None
    finally:
        for d in fds:
            os.close(d)


def _walk_files(top_fd: int) -> list[str]:
    """Every entry below the folder ``top_fd`` that is not a folder (links and special files
    included: all of them are mismatches unless listed; a listed one must read as a file)."""
    out: list[str] = []
    top = os.dup(top_fd)  # fwalk closes nothing of ours, but keep the caller's fd untouched
    try:
        for root, _dirs, names, _fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            out.extend(os.path.normpath(os.path.join(root, n)) for n in names)
    finally:
        os.close(top)
    return out


def _replace_dir(parent_fd: int, tmp: str, name: str) -> None:
    """Put the folder ``tmp`` in place of ``name`` (moving the old one aside first)."""
    old = None
    try:
        os.rename(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        return
    except OSError:
        old = f".{name}.{secrets.token_hex(8)}.old"
        os.rename(name, old, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    os.rename(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
    _rmtree_at(parent_fd, old)


def _rmtree_at(parent_fd: int, name: str) -> None:
    try:
        shutil.rmtree(name, dir_fd=parent_fd)
    except OSError:
        pass
