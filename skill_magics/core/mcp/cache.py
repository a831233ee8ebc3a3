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
  after the write, a folder or a link included) is a mismatch: :meth:`McpCache.verify`. The
  record itself is checked first: its files must hash to its binding (the one the server's
  listing is compared with), each at the path its URI names, so a record rewritten to vouch
  for changed bytes is no record;
- a copy that fails that is never repaired in place: :func:`refetch` discards it whole and
  fetches every file again (core/mcp/runs.py does, before a run is planned);
- each copy has a folder of its own per digest set, ``LABEL/NAME/KEY`` (KEY: a hash of its
  binding), written once and never replaced while it verifies: two kernels that give one
  label to two servers, or a server that changes while a run of its old copy goes on, each
  run from their own bytes, never from a folder swapped under them. Copies not used for
  KEEP_S are removed when another copy of that skill is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import shutil
import stat
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.base.errors import McpCacheError, McpError
from skill_magics.core.base.safefs import (
    DIR_FLAGS,
    READ_FLAGS,
    NotPrivate,
    open_private_root,
    remove_aside,
    write_file,
)
from skill_magics.core.catalog.frontmatter import name_problems
from skill_magics.core.installed.names import path_problem
from skill_magics.core.mcp.host import FetchedFile, McpSkillsHost
from skill_magics.core.mcp.wire import (
    SkillEntry,
    binding,
    binding_of,
    check_label,
    sha256_digest,
    skill_path_segments,
    split_uri,
)

CACHE_VAR = "SKILL_MAGICS_MCP_CACHE"
KEEP_S = 24 * 3600  # a copy unused this long goes when another copy of its skill is written
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
        try:
            return open_private_root(self.root, create=True)
        except NotPrivate as exc:
            raise McpCacheError(
                f"MCP skill cache {exc}: others may have written into it; remove it (it is "
                f"made again, 0700) or set {CACHE_VAR}"
            ) from None
        except OSError as exc:
            raise McpCacheError(
                f"MCP skill cache {str(self.root)!r} cannot be opened as a folder (a link? "
                f"{exc.strerror}): remove it or set {CACHE_VAR}"
            ) from None

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
        for listed in entry.files:  # the installer's rule, before anything is written
            problem = path_problem(listed.path)
            if problem is not None:
                raise McpCacheError(
                    f"MCP server '{entry.label}': skill {entry.name!r}, file "
                    f"{_shown(listed.path)!r}: {problem}; nothing of it is cached"
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
        key = copy_key(value)
        try:  # the same bytes already here (another kernel, an earlier session): kept as is
            return self.verify(entry.label, entry.name, value)
        except McpCacheError:
            self.discard(entry.label, entry.name, value)  # nothing, or a copy that fails
        root = self._open_root()
        try:
            label_fd = _subdir(root, entry.label)
            try:
                name_fd = _subdir(label_fd, entry.name)
                try:
                    self._write_copy(name_fd, key, origin, entry.files, got)
                    _remove_unused(name_fd, key)
                finally:
                    os.close(name_fd)
            finally:
                os.close(label_fd)
        finally:
            os.close(root)
        return self.verify(entry.label, entry.name, value)

    @staticmethod
    def _write_copy(
        name_fd: int,
        key: str,
        origin: dict[str, Any],
        listed: Sequence[Any],
        got: dict[str, FetchedFile],
    ) -> None:
        """Assemble a copy in a fresh folder and rename it to ``key`` (a copy of the same
        key written meanwhile by another kernel is the same bytes: ours is dropped)."""
        tmp = f".{key}.{secrets.token_hex(8)}.tmp"
        os.mkdir(tmp, 0o700, dir_fd=name_fd)
        try:
            tmp_fd = os.open(tmp, DIR_FLAGS, dir_fd=name_fd)
            try:
                files_fd = _subdir(tmp_fd, FILES)
                try:
                    for file in listed:
                        _write_at(files_fd, file.path, got[file.path].data)
                finally:
                    os.close(files_fd)
                write_file(tmp_fd, ORIGIN, json.dumps(origin, indent=1), mode=0o600)
            finally:
                os.close(tmp_fd)
            try:
                os.rename(tmp, key, src_dir_fd=name_fd, dst_dir_fd=name_fd)
            except OSError:  # written meanwhile: verified by the caller like any copy
                _rmtree_at(name_fd, tmp)
        except BaseException:
            _rmtree_at(name_fd, tmp)
            raise

    # -- reading ---------------------------------------------------------------------------

    def _open_copy(self, label: str, name: str, binding: str | None) -> list[int]:
        """Descriptors of the root, ``label``, ``name`` and the copy (the copy of
        ``binding``, or the one written last when None), each opened without following a
        link; the caller closes them. OSError when there is no such copy."""
        check_label(label)
        if name_problems(name):  # names come from folders here: never a path of two parts
            raise McpCacheError(f"MCP skill cache: {name!r} is not a skill name")
        fds: list[int] = [self._open_root()]
        try:
            for part in (label, name):
                fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
            key = copy_key(binding) if binding is not None else _newest(fds[-1])
            fds.append(os.open(key, DIR_FLAGS, dir_fd=fds[-1]))
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds

    def verify(self, label: str, name: str, binding: str | None = None) -> CachedSkill:
        """The cached copy of ``binding`` (None: the one written last), every file re-hashed
        against its origin record (and nothing else there): one line naming the label, the
        file and what differed otherwise. Every folder on the way is opened without
        following a link (a run may write there)."""
        try:
            fds = self._open_copy(label, name, binding)
        except OSError:
            raise McpCacheError(
                f"MCP skill cache: {label}/{name} is not cached (or not a folder)"
            ) from None
        try:
            origin = self._origin(fds[-1], label, name, binding)
            listed: dict[str, dict[str, Any]] = origin["files"]
            try:
                fds.append(os.open(FILES, DIR_FLAGS, dir_fd=fds[-1]))
            except OSError:
                raise McpCacheError(
                    f"MCP skill cache: {label}/{name} has no files folder; fetch it again"
                ) from None
            found = _differences(fds[-1], listed)
            if found:
                path, kind = found[0]
                raise McpCacheError(
                    f"MCP skill cache: {label}/{name}, file {path!r}: {_SAID[kind]}{_BY}; "
                    "nothing of it runs: the next run fetches it again"
                )
            os.utime(fds[-2])  # used now: kept past KEEP_S, and the one a restart takes
        finally:
            for fd in fds:
                os.close(fd)
        return CachedSkill(
            label,
            name,
            self.root / label / name / copy_key(origin["binding"]) / FILES,
            origin["uri"],
            origin["server"],
            listed,
            origin["binding"],
        )

    def differences(self, label: str, name: str, binding: str) -> list[str]:
        """What the copy of ``binding`` holds that was not verified, in a few words each
        ("added out.txt", "changed scripts/a.py", "missing x"; the whole copy when it cannot
        be read): [] when every file still matches its record. For the audit of a copy that
        is discarded and fetched again (:func:`refetch`)."""
        fds: list[int] = []
        try:
            fds = self._open_copy(label, name, binding)
            listed = self._origin(fds[-1], label, name, binding)["files"]
            fds.append(os.open(FILES, DIR_FLAGS, dir_fd=fds[-1]))
            found = _differences(fds[-1], listed)
        except (OSError, McpCacheError) as exc:
            return [f"the whole copy ({exc})"]
        finally:
            for fd in fds:
                os.close(fd)
        return [f"{_WORD[kind]} {_shown(path)}" for path, kind in found]

    def present(self, label: str, name: str, binding: str) -> bool:
        """Is there anything at the place of the copy of ``binding`` (valid or not)?"""
        return os.path.lexists(self.root / label / name / copy_key(binding))

    def discard(self, label: str, name: str, binding: str) -> None:
        """Remove the copy of ``binding`` whole (moved aside first, so no reader sees half
        of it): whatever was written into it is gone. Nothing when it is not there."""
        check_label(label)
        if name_problems(name):
            raise McpCacheError(f"MCP skill cache: {name!r} is not a skill name")
        fds: list[int] = [self._open_root()]
        try:
            for part in (label, name):
                try:
                    fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
                except OSError:
                    return
            _remove(fds[-1], copy_key(binding))
        finally:
            for fd in fds:
                os.close(fd)

    def recorded(self, label: str, name: str, binding: str | None = None) -> dict[str, Any] | None:
        """The origin record of the copy of ``binding`` (None: the one written last), NOT
        re-hashed (None: not cached or no valid record): what was verified when it was
        written. Its files are re-hashed by :meth:`verify` before any use."""
        try:
            fds = self._open_copy(label, name, binding)
        except (OSError, McpCacheError):
            return None
        try:
            return self._origin(fds[-1], label, name, binding)
        except McpCacheError:
            return None
        finally:
            for fd in fds:
                os.close(fd)

    def _origin(
        self, skill_fd: int, label: str, name: str, binding: str | None = None
    ) -> dict[str, Any]:
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
            # The record is what every re-hash trusts: its files must be the ones its binding
            # was computed from, each at the path its URI names (a record rewritten to match
            # changed files, or with digests swapped between files, is no record).
            ok = ok and _record_consistent(label, origin)
            # In the folder of another digest set it vouches for nothing here.
            ok = ok and (binding is None or origin["binding"] == binding)
        except (ValueError, AttributeError, TypeError):
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
                except McpCacheError:  # the copy written last does not verify: left out
                    continue
        return out


def fetch_into(cache: McpCache, host: McpSkillsHost, entry: SkillEntry) -> CachedSkill:
    """Read every file of ``entry`` from its server (each verified as it arrives) and store
    them: what a run of an MCP skill will start from. A mismatch stores nothing."""
    fetched = list(host.fetch_all(entry))
    return cache.store(entry, host.connection.spec.origin, fetched)


def refetch(cache: McpCache, host: McpSkillsHost, entry: SkillEntry) -> CachedSkill:
    """Discard a cached copy (one that no longer matches its record) and fetch every file
    again, each verified, into a fresh folder. Nothing of the old copy is kept: a file a run
    or anyone else wrote there never reaches a later run, even when the fetch fails."""
    value = binding(entry)
    if value is not None:
        cache.discard(entry.label, entry.name, value)
    return fetch_into(cache, host, entry)


# What a file of a copy can be that its record does not say: a kind -> words for errors.
_SAID = {
    "planted": "not in what was verified (written there after the download",
    "missing": "missing or not a regular file (removed after the download",
    "changed": "its bytes changed since they were verified (after the download",
}
_BY = ": by a script that writes beside itself, or by someone else)"
_WORD = {"planted": "added", "missing": "missing", "changed": "changed"}


def _record_consistent(label: str, origin: dict[str, Any]) -> bool:
    """Do the record's files hash to its binding, each at the path its URI names?"""
    try:
        scheme, authority, base = skill_path_segments(label, origin.get("uri"))
        pairs = []
        for path, rec in origin["files"].items():
            at = split_uri(label, rec.get("uri"), "cache record")
            if at[:2] != (scheme, authority) or "/".join(at[2][len(base) :]) != path:
                return False
            if at[2][: len(base)] != base or not isinstance(rec.get("digest"), str):
                return False
            pairs.append((rec["uri"], rec["digest"]))
    except McpError:
        return False
    return binding_of(pairs) == origin.get("binding")


def _shown(path: str) -> str:
    """A path a run may have named (any bytes) as one short printable line."""
    text = path if path.isprintable() else repr(path)
    return text if len(text) <= 120 else text[:117] + "..."


def _differences(files_fd: int, listed: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    """(path, kind) for every file below ``files_fd`` that its record does not say: planted
    (not listed), missing (or not a regular file), changed (size or digest)."""
    folders = {p.rsplit("/", i)[0] + "/" for p in listed for i in range(1, p.count("/") + 1)}
    found = set(_walk_files(files_fd)) - set(listed) - folders
    out = [(path, "planted") for path in sorted(found)]
    for path, rec in sorted(listed.items()):
        data = _read_at(files_fd, path, int(rec["size"]) + 1)
        if data is None:
            out.append((path, "missing"))
        elif len(data) != rec["size"] or sha256_digest(data) != rec["digest"]:
            out.append((path, "changed"))
    return out


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _subdir(parent_fd: int, name: str) -> int:
    """Open (making it 0700 if missing) the folder ``name`` in ``parent_fd``, no link."""
    if name in ("", ".", "..") or "/" in name:
        raise McpCacheError(f"MCP skill cache: {name!r} is not one folder name")
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
    except FileExistsError:
        if not stat.S_ISDIR(os.stat(name, dir_fd=parent_fd, follow_symlinks=False).st_mode):
            # A link or a file planted where a folder of ours goes: removed, never followed.
            os.unlink(name, dir_fd=parent_fd)
            os.mkdir(name, 0o700, dir_fd=parent_fd)
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
    included: all of them are mismatches unless listed; a listed one must read as a file),
    and every folder as ``path/`` (a link to a folder included, which a walk that does not
    follow links lists as a folder: a planted ``scripts/json -> elsewhere`` would be
    imported by a script, so it must show)."""
    out: list[str] = []
    top = os.dup(top_fd)  # fwalk closes nothing of ours, but keep the caller's fd untouched
    try:
        for root, dirs, names, fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            out.extend(os.path.normpath(os.path.join(root, n)) for n in names)
            for d in dirs:
                path = os.path.normpath(os.path.join(root, d))
                link = stat.S_ISLNK(os.stat(d, dir_fd=fd, follow_symlinks=False).st_mode)
                out.append(path if link else path + "/")
    finally:
        os.close(top)
    return out


def copy_key(binding: str) -> str:
    """The folder name of a copy: a hash of its binding (its full {uri, digest} set).

    >>> copy_key("mcp-sha256:00")
    '7b1590b17addee342f65'
    """
    return hashlib.sha256(binding.encode()).hexdigest()[:20]


def _newest(name_fd: int) -> str:
    """The copy of a skill written (or used) last: OSError when there is none."""
    copies = []
    with os.scandir(name_fd) as it:
        for item in it:
            if not item.name.startswith(".") and item.is_dir(follow_symlinks=False):
                copies.append((item.stat(follow_symlinks=False).st_mtime_ns, item.name))
    if not copies:
        raise FileNotFoundError("no copy")
    return max(copies)[1]


def _remove(parent_fd: int, name: str) -> None:
    """Move ``name`` aside, then delete it (a reader never sees half of it)."""
    remove_aside(parent_fd, name)


def _remove_unused(name_fd: int, keep: str) -> None:
    """Remove the other copies of a skill not written or used for KEEP_S (a run of one in
    another kernel may still go on: those are young)."""
    now = time.time()
    with os.scandir(name_fd) as it:
        old = [
            item.name
            for item in it
            if item.name != keep
            and item.is_dir(follow_symlinks=False)
            and now - item.stat(follow_symlinks=False).st_mtime > KEEP_S
        ]
    for name in old:
        _remove(name_fd, name)


def _rmtree_at(parent_fd: int, name: str) -> None:
    try:
        shutil.rmtree(name, dir_fd=parent_fd)
    except OSError:
        pass
