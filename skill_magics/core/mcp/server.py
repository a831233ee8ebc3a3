"""Our skills served per SEP-2640: ``python -m skill_magics.mcp serve [DIR...]``.

The skills are the ones our discovery finds in the folders given (``SkillFinder``: hidden
folders, ``venv/``, ``node_modules/`` ... are not searched). Each is served at
``skill://<name>/`` with every regular file under it except what a skill does not ship:
hidden names (``.env`` and the like may hold secrets), ``venv/``, ``.venv/``,
``node_modules/``, ``__pycache__/``, ``.git/``, ``site-packages/``, links (never followed:
a link in a skill folder could point anywhere) and special files. Digests and sizes are
computed from the files when a listing is asked for, and a read serves the file's bytes as
they are then (re-opened relative to the skill folder, no link followed), so a file changed
in between is served changed and a host's digest check catches it. Read-only: no tools, no
writes. A skill over the limits (512 files, 16 MiB) is left out, with a line on stderr.

The SDK is imported inside :func:`build_server` and the ``run_*`` functions only.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, unquote

from skill_magics.core.catalog.discovery import SkillFinder
from skill_magics.core.catalog.frontmatter import name_problems
from skill_magics.core.mcp.wire import (
    EXTENSION_ID,
    MAX_BYTES,
    MAX_FILES,
    SKILL_MD,
    frontmatter_of,
    sha256_digest,
)
from skill_magics.core.base.paths import read_fd
from skill_magics.core.base.safefs import DIR_FLAGS, READ_FLAGS

NOT_SHIPPED = frozenset({"venv", ".venv", "node_modules", "__pycache__", ".git", "site-packages"})
PAGE_SIZE = 50


@dataclass(frozen=True)
class ServedFile:
    path: str
    digest: str
    size: int


@dataclass(frozen=True)
class ServedSkill:
    """A skill folder as served: its name, folder, frontmatter and files (at scan time)."""

    name: str
    base_dir: Path
    frontmatter: dict[str, Any]
    files: tuple[ServedFile, ...]

    @property
    def uri(self) -> str:
        return f"skill://{quote(self.name, safe='')}/{SKILL_MD}"

    def file_uri(self, path: str) -> str:
        return f"skill://{quote(self.name, safe='')}/{quote(path, safe='/')}"

    def entry(self) -> dict[str, Any]:
        """The SEP-2640 ``Skill`` object."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [
                {"uri": self.file_uri(f.path), "digest": f.digest, "size": f.size}
                for f in self.files
            ],
        }


class SkillFolders:
    """The skills under some folders, rescanned on every listing (they may be edited while
    served)."""

    def __init__(self, dirs: Sequence[str | os.PathLike[str]]) -> None:
        self.dirs = [Path(d).absolute() for d in dirs]
        self._finder = SkillFinder(self.dirs)

    def scan(self) -> list[ServedSkill]:
        self._finder.reload()
        served = []
        for meta in self._finder.list_skills():
            skill = _serve(meta.name, meta.path.parent)
            if skill is not None:
                served.append(skill)
        return sorted(served, key=lambda s: s.name)

    def skill(self, name: str) -> ServedSkill | None:
        """One skill, scanned now (only that one's files are read)."""
        self._finder.reload()
        for meta in self._finder.list_skills():
            if meta.name == name:
                return _serve(meta.name, meta.path.parent)
        return None

    def read(self, uri: str) -> bytes | None:
        """The current bytes of a served file by its URI (None: not a served file)."""
        if not uri.startswith("skill://"):
            return None
        name, _, rel = uri[len("skill://") :].partition("/")
        skill = self.skill(unquote(name))
        if skill is None:
            return None
        path = unquote(rel)
        if path not in {f.path for f in skill.files}:
            return None
        return _read_at(skill.base_dir, path)


def _serve(name: str, base: Path) -> ServedSkill | None:
    problems = name_problems(name)
    if problems:  # a host refuses a listing holding such a name: leave this one out
        print(f"skill-magics mcp: {name!r} not served: {problems[0]}", file=sys.stderr)
        return None
    listing = _files(base)
    total = sum(size for _rel, size in listing)
    if len(listing) > MAX_FILES or total > MAX_BYTES:  # from stat: nothing read yet
        print(
            f"skill-magics mcp: {name!r} not served: {len(listing)} files, {total} bytes "
            f"(at most {MAX_FILES} files and 16 MiB)",
            file=sys.stderr,
        )
        return None
    files: list[ServedFile] = []
    skill_md: bytes | None = None
    for rel, _size in listing:
        data = _read_at(base, rel)
        if data is None:  # gone or swapped for a link meanwhile: never half a skill
            print(f"skill-magics mcp: {name!r} not served: {rel!r} unreadable", file=sys.stderr)
            return None
        files.append(ServedFile(rel, sha256_digest(data), len(data)))
        if rel == SKILL_MD:
            skill_md = data
    if sum(f.size for f in files) > MAX_BYTES:  # grew while read
        print(f"skill-magics mcp: {name!r} not served: over 16 MiB", file=sys.stderr)
        return None
    if skill_md is None:
        print(f"skill-magics mcp: {name!r} not served: its SKILL.md is a link", file=sys.stderr)
        return None
    try:
        fm = frontmatter_of(skill_md.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        print(f"skill-magics mcp: {name!r} not served: {exc}", file=sys.stderr)
        return None
    return ServedSkill(name, base, fm, tuple(files))


def _files(base: Path) -> list[tuple[str, int]]:
    """(relative path, size) of the regular files a skill ships (see the module docstring)."""
    out: list[tuple[str, int]] = []
    try:
        top = os.open(base, DIR_FLAGS)
    except OSError:
        return out
    try:
        for root, dirs, names, root_fd in os.fwalk(".", dir_fd=top, follow_symlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in NOT_SHIPPED)
            for n in sorted(names):
                if n.startswith("."):
                    continue
                try:
                    st = os.stat(n, dir_fd=root_fd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode):
                    out.append((os.path.normpath(os.path.join(root, n)), st.st_size))
    finally:
        os.close(top)
    return out


def _read_at(base: Path, rel: str) -> bytes | None:
    """A file's bytes, opened folder by folder from ``base`` with no link followed."""
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return None
    fds: list[int] = []
    try:
        fds.append(os.open(base, DIR_FLAGS))
        for part in parts[:-1]:
            fds.append(os.open(part, DIR_FLAGS, dir_fd=fds[-1]))
        fd = os.open(parts[-1], READ_FLAGS, dir_fd=fds[-1])
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_BYTES:
                return None
            return read_fd(fd, MAX_BYTES + 1)
        finally:
            os.close(fd)
    except OSError:
        return None
    finally:
        for d in fds:
            os.close(d)


def build_server(folders: SkillFolders) -> Any:
    """A low-level ``mcp`` Server answering skills/list, skills/get, resources/list and
    resources/read for ``folders``."""
    import mcp_types as types
    from mcp.server.lowlevel import Server

    class GetParams(types.RequestParams):
        uri: str

    async def list_skills(ctx: Any, params: types.PaginatedRequestParams) -> dict[str, Any]:
        skills = folders.scan()
        start = _cursor_start(params.cursor)
        page = skills[start : start + PAGE_SIZE]
        result: dict[str, Any] = {
            "skills": [s.entry() for s in page],
            "ttlMs": 0,
            "cacheScope": "private",
            "resultType": "complete",
        }
        if start + PAGE_SIZE < len(skills):
            result["nextCursor"] = str(start + PAGE_SIZE)
        return result

    async def get_skill(ctx: Any, params: GetParams) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        name = unquote(params.uri.removeprefix("skill://").split("/")[0])
        s = folders.skill(name)
        if s is not None and s.uri == params.uri:
            return {
                "skill": s.entry(),
                "ttlMs": 0,
                "cacheScope": "private",
                "resultType": "complete",
            }
        raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown skill URI: {params.uri}")

    async def list_resources(
        ctx: Any, params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = [
            types.Resource(uri=s.file_uri(f.path), name=f"{s.name}/{f.path}", size=f.size)
            for s in folders.scan()
            for f in s.files
        ]
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        import base64

        from mcp.shared.exceptions import MCPError

        data = folders.read(params.uri)
        if data is None:
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown resource: {params.uri}")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            block: Any = types.BlobResourceContents(
                uri=params.uri,
                mime_type="application/octet-stream",
                blob=base64.b64encode(data).decode("ascii"),
            )
        else:
            block = types.TextResourceContents(
                uri=params.uri, mime_type=_mime(params.uri), text=text
            )
        return types.ReadResourceResult(contents=[block])

    server: Any = Server(
        "skill-magics",
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    server.add_request_handler("skills/list", types.PaginatedRequestParams, list_skills)
    server.add_request_handler("skills/get", GetParams, get_skill)
    server.extensions[EXTENSION_ID] = {}
    return server


def _cursor_start(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if not cursor.isdigit() or len(cursor) > 9:
        from mcp.shared.exceptions import MCPError
        from mcp_types import INVALID_PARAMS

        raise MCPError(code=INVALID_PARAMS, message=f"Invalid cursor: {cursor!r}")
    return int(cursor)


def _mime(uri: str) -> str:
    if uri.endswith(".md"):
        return "text/markdown"
    if uri.endswith(".py"):
        return "text/x-python"
    return "text/plain"


def run_stdio(dirs: Sequence[str | os.PathLike[str]]) -> None:
    """Serve over stdin/stdout until the client closes it."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(SkillFolders(dirs))

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def run_http(dirs: Sequence[str | os.PathLike[str]], host: str, port: int) -> None:
    """Serve over streamable HTTP at ``http://HOST:PORT/mcp``."""
    import uvicorn

    server = build_server(SkillFolders(dirs))
    app = server.streamable_http_app(host=host)
    uvicorn.run(app, host=host, port=port, log_level="warning")
