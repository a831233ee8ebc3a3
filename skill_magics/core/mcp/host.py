"""The host side of SEP-2640: a server's skills, listed and read under the host's rules.

:class:`McpSkillsHost` wraps one :class:`~.connection.Connection`. It lists (paged, capped),
gets, and reads files lazily, one at a time, when asked; every read is checked against the
listing (digest and size; a file not listed is a mismatch; SKILL.md's frontmatter compared
with the entry field by field) and only ever goes to this server, for a URI this skill listed.
A ``"dynamic"`` skill's files may be read (under its own URI prefix) but are never checked
against a digest, and such a skill has no approval binding (:func:`.wire.binding` is None).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.errors import McpError, McpSkillMismatchError, SkillParseError
from skill_magics.core.mcp.connection import Connection
from skill_magics.core.mcp.wire import (
    MAX_BYTES,
    MAX_ENTRIES,
    MAX_PAGES,
    SKILL_MD,
    SkillEntry,
    frontmatter_difference,
    frontmatter_of,
    parse_entry,
    sha256_digest,
    split_uri,
)


@dataclass(frozen=True)
class FetchedFile:
    """A file read from the server and verified (``verified`` False: a dynamic skill's)."""

    path: str
    uri: str
    data: bytes
    verified: bool


class McpSkillsHost:
    """The skills of one server, by the host's label (see the module docstring)."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.label = connection.label

    # -- listing ---------------------------------------------------------------------------

    def list_skills(self) -> list[SkillEntry]:
        """Every skill the server lists, checked (one bad entry refuses the listing: a
        server that lies about one skill is not trusted for the others' names either)."""
        entries: list[SkillEntry] = []
        seen_uris: set[str] = set()
        seen_names: dict[str, str] = {}  # name -> the URI that listed it first
        seen_cursors: set[str] = set()
        cursor: str | None = None
        for _page in range(MAX_PAGES):
            params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
            result = self.connection.request("skills/list", params)
            skills = result.get("skills")
            if not isinstance(skills, list):
                raise self._bad("skills/list", "its result has no 'skills' list")
            for raw in skills:
                entry = parse_entry(self.label, raw)
                if entry.uri in seen_uris:
                    raise self._bad("skills/list", f"skill {entry.uri!r} is listed twice")
                seen_uris.add(entry.uri)
                if entry.name in seen_names:  # LABEL/NAME must name one skill, not the first
                    raise self._bad(
                        "skills/list",
                        f"two skills are named {entry.name!r} ({seen_names[entry.name]!r} and "
                        f"{entry.uri!r}): {self.label}/{entry.name} could name either; the "
                        "server must give them different names",
                    )
                seen_names[entry.name] = entry.uri
                entries.append(entry)
                if len(entries) > MAX_ENTRIES:
                    raise self._bad("skills/list", f"it lists more than {MAX_ENTRIES} skills")
            cursor = result.get("nextCursor")
            if cursor is None:
                return entries
            if not isinstance(cursor, str) or cursor in seen_cursors:
                raise self._bad("skills/list", f"it sent the cursor {cursor!r} again")
            seen_cursors.add(cursor)
        raise self._bad("skills/list", f"it pages on past {MAX_PAGES} pages")

    def get_skill(self, uri: str) -> SkillEntry:
        """One skill by its SKILL.md URI (``skills/get``), checked."""
        result = self.connection.request("skills/get", {"uri": uri})
        entry = parse_entry(self.label, result.get("skill"))
        if entry.uri != uri:
            raise self._bad(f"skills/get {uri}", f"it answered with skill {entry.uri!r}")
        return entry

    def find(self, name: str) -> SkillEntry:
        """The listed skill called ``name`` (without the label)."""
        for entry in self.list_skills():
            if entry.name == name:
                return entry
        raise McpError(f"MCP server '{self.label}' lists no skill named {name!r}")

    # -- reading ---------------------------------------------------------------------------

    def read(self, entry: SkillEntry, path: str) -> FetchedFile:
        """One file of ``entry``, read now and verified (the SKILL.md's frontmatter too)."""
        self._own(entry)
        if entry.files is None:
            return self._read_dynamic(entry, path)
        listed = entry.file(path)
        if listed is None:
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': skill {entry.name!r}, file {path!r}: not in the "
                "skill's listing (an unlisted file is a mismatch); nothing of it is used"
            )
        what = f"skill {entry.name!r}, file {path!r}"

        def verify(data: bytes) -> None:  # in the read's span: verified, or refused there
            if len(data) != listed.size:
                raise McpSkillMismatchError(
                    f"MCP server '{self.label}': skill {entry.name!r}, file {path!r}: "
                    f"{len(data)} bytes, the listing said {listed.size}; nothing of it is used"
                )
            digest = sha256_digest(data)
            if digest != listed.digest:
                raise McpSkillMismatchError(
                    f"MCP server '{self.label}': skill {entry.name!r}, file {path!r}: digest "
                    f"{digest[:19]}..., the listing said {listed.digest[:19]}... (changed "
                    "since it was listed, or a lie); nothing of it is used"
                )

        data = self.connection.read(listed.uri, listed.size, what, verify)
        if path == SKILL_MD:
            self._compare_frontmatter(entry, data)
        return FetchedFile(path, listed.uri, data, True)

    def _read_dynamic(self, entry: SkillEntry, path: str) -> FetchedFile:
        uri = entry.prefix + "/".join(_quote(p) for p in path.split("/"))
        split_uri(self.label, uri, f"skill {entry.name!r}")  # refuses '..' and the like
        data = self.connection.read(uri, MAX_BYTES, f"skill {entry.name!r}, file {path!r}")
        if path == SKILL_MD:
            self._compare_frontmatter(entry, data)
        return FetchedFile(path, uri, data, False)

    def fetch_all(self, entry: SkillEntry) -> Iterator[FetchedFile]:
        """Every listed file, one read at a time, each verified before the next is asked
        for (the caller decides when: nothing is prefetched). SKILL.md comes first."""
        self._own(entry)
        if entry.files is None:
            raise McpError(
                f"MCP server '{self.label}': skill {entry.name!r} is dynamic (its files are "
                "not listed), so it cannot be fetched whole or bound to an approval"
            )
        order = sorted(entry.files, key=lambda f: (f.path != SKILL_MD, f.path))
        for f in order:
            yield self.read(entry, f.path)

    def _compare_frontmatter(self, entry: SkillEntry, data: bytes) -> None:
        try:
            fetched = frontmatter_of(data.decode("utf-8"))
        except (UnicodeDecodeError, SkillParseError) as exc:
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': skill {entry.name!r}, file 'SKILL.md': its "
                f"frontmatter cannot be read ({exc}); nothing of it is used"
            ) from None
        diff = frontmatter_difference(entry.frontmatter, fetched)
        if diff is not None:
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': skill {entry.name!r}, file 'SKILL.md': {diff}; "
                "nothing of it is used"
            )

    def _own(self, entry: SkillEntry) -> None:
        # No reads across servers: an entry another server listed is never read here.
        if entry.label != self.label:
            raise McpError(
                f"MCP server '{self.label}' cannot read skill {entry.qualified_name!r}: it "
                f"was listed by server '{entry.label}'"
            )

    def _bad(self, what: str, why: str) -> McpSkillMismatchError:
        return McpSkillMismatchError(f"MCP server '{self.label}': {what}: {why}")


def _quote(segment: str) -> str:
    from urllib.parse import quote

    return quote(segment, safe="")
