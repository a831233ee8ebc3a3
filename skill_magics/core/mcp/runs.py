"""Running an MCP server's scripts (SEP-2640, issue 32 Deliver 2): the skill source the
planner resolves ``LABEL/NAME`` through (``SkillFinder.remote``).

Nothing here decides or runs: a run of an MCP skill is an ordinary :class:`PlannedRun` of its
verified cached copy, through the one call site (plan -> gate -> execute), with everything a
local run has. What MCP adds, and where:

- before a run is planned (:meth:`McpRemote.fetch`, from ``SkillFinder.resolve_script``): the
  server's CURRENT listing is read; when its {uri, digest} set differs from the cached copy's,
  every file is fetched again, each verified, and the copy replaced whole. A server that
  cannot be reached refuses the run (one line, audited): a copy is run only while the server
  still lists exactly it, so a change on the server always asks again;
- every use of the copy (:meth:`McpRemote.skill`: planning, the gate's staleness checks, the
  session approval's keeping) re-hashes every file against what was verified; a file changed
  or planted on disk refuses the run before any process starts (audited);
- a "dynamic" skill (files not listed) never runs: nothing could bind an approval to its
  code or verify what runs; nor does one that ships bytecode or an environment
  (``fingerprint.SKIP_DIRS``: ``__pycache__/``, ``venv/``...), which would run instead of
  the code the panel shows;
- the request carries :class:`McpOriginInfo` (``mcp:LABEL``, the server, the binding, what
  changed since the copy cached before); the gate keys "Yes in session" to the binding as
  well as to the copy's fingerprint.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.frontmatter import load_skill_metadata
from skill_magics.core.base.errors import McpCacheError, McpError, McpSkillMismatchError
from skill_magics.core.base.fingerprint import SKIP_DIRS
from skill_magics.core.mcp.cache import McpCache, fetch_into
from skill_magics.core.mcp.servers import McpServers
from skill_magics.core.mcp.skill import McpSkill
from skill_magics.core.mcp.wire import SKILL_MD, SkillFile, binding
from skill_magics.core.run.approval import McpOriginInfo


class McpRemote:
    """MCP servers' skills for a finder (``SkillFinder.remote``); see the module docstring.
    ``skill_dirs``: the finder's folders now (the cache may overlap none of them)."""

    def __init__(self, servers: McpServers, skill_dirs: Callable[[], Iterable[Path]]) -> None:
        self.servers = servers
        self.skill_dirs = skill_dirs
        self._lock = threading.Lock()
        self._changes: dict[str, tuple[str, ...]] = {}  # LABEL/NAME -> changes at last fetch

    def cache(self) -> McpCache:
        return McpCache(discovery_dirs=list(self.skill_dirs()))

    def skill(self, name: str, detector: ScriptDetector) -> McpSkill:
        """The cached copy of ``LABEL/NAME``, every file re-hashed now."""
        label, _, bare = name.partition("/")
        cached = self.cache().verify(label, bare)
        metadata = load_skill_metadata(cached.base_dir / SKILL_MD)
        if metadata.name != bare:
            raise McpCacheError(
                f"MCP skill cache: {name}: its SKILL.md names {metadata.name!r}; fetch it again"
            )
        with self._lock:
            changes = self._changes.get(name, ())
        origin = McpOriginInfo(f"mcp:{label}", cached.server, cached.binding, changes)
        return McpSkill(metadata, name, origin, detector=detector)

    def fetch(self, name: str) -> None:
        """Bring the copy of ``LABEL/NAME`` to the server's current listing (see above)."""
        label, _, bare = name.partition("/")
        server = self.servers.get(label)
        if server is None:
            raise McpError(
                f"No MCP server is labelled {label!r} in this session: add it "
                f"(manager.add_mcp_server('{label}', ...)) to run {name!r}",
                magic=f"No MCP server is labelled {label!r} in this session: add it "
                f"(%skills add mcp {label} -- COMMAND) to run {name!r}",
            )
        try:
            entries = server.refresh()
        except McpSkillMismatchError:
            raise
        except McpError as exc:
            raise McpError(
                f"{exc}; {name}'s scripts run only from a copy the server's current listing "
                "verifies, so nothing ran"
            ) from None
        entry = next((e for e in entries if e.name == bare), None)
        if entry is None:
            raise McpError(f"MCP server '{label}' lists no skill named {bare!r} now")
        value = binding(entry)
        if value is None or entry.files is None:
            raise McpError(
                f"MCP server '{label}': skill {bare!r} is dynamic (its files are not listed "
                "with digests): its scripts never run, since no approval could be bound to "
                "its code; read it with %skills show"
            )
        shipped = next(
            (f.path for f in entry.files if SKIP_DIRS.intersection(f.path.split("/")[:-1])), None
        )
        if shipped is not None:
            # Bytecode or an environment from a server would run instead of the code shown
            # (an unchecked-hash .pyc is loaded whatever the source says): never taken.
            raise McpError(
                f"MCP server '{label}': skill {bare!r} ships {shipped!r} (bytecode, an "
                "environment or a repository): such files are never taken from a server, so "
                "its scripts do not run; the server should list source files only"
            )
        cache = self.cache()
        old = cache.recorded(label, bare)
        if old is not None and old.get("binding") == value:
            return  # the copy is what the server lists: re-hashed when used
        changes = _changes(old["files"] if old is not None else None, entry.files)
        fetch_into(cache, server.host, entry)
        with self._lock:
            self._changes[name] = changes


def _changes(old: dict[str, Any] | None, new: Iterable[SkillFile]) -> tuple[str, ...]:
    """What differs from the copy cached before: "added x", "changed y", "removed z"."""
    if old is None:
        return ()
    now = {f.path: f for f in new}
    out = [f"added {p}" for p in sorted(set(now) - set(old))]
    out += [
        f"changed {p}"
        for p in sorted(set(now) & set(old))
        if now[p].digest != old[p].get("digest") or now[p].uri != old[p].get("uri")
    ]
    out += [f"removed {p}" for p in sorted(set(old) - set(now))]
    return tuple(out)


__all__ = ["McpRemote"]
