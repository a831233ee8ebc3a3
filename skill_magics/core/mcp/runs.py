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
- a copy that no longer matches what was verified (a script that writes into its own folder,
  or anyone else who wrote there) is discarded whole when the next run is planned and every
  file fetched again, each verified, into a fresh folder (audited ``copy_refetched``, naming
  what was found): the run goes on with the verified bytes, and nothing written into the old
  copy reaches it;
- every use of the copy (:meth:`McpRemote.skill`: planning, the gate's staleness checks)
  re-hashes every file against what was verified; a file changed or planted on disk after
  the run was planned refuses it before any process starts (audited);
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
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import McpCacheError, McpError, McpSkillMismatchError
from skill_magics.core.base.fingerprint import SKIP_DIRS
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.frontmatter import load_skill_metadata
from skill_magics.core.mcp.cache import McpCache, fetch_into, refetch
from skill_magics.core.mcp.origin import McpOriginInfo
from skill_magics.core.mcp.servers import McpServers, servers_of
from skill_magics.core.mcp.skill import McpSkill
from skill_magics.core.mcp.wire import SKILL_MD, SkillEntry, SkillFile, binding

COPY_LABEL = "<mcp copy>"  # the "script" a copy fetched again is audited under


class McpRemote:
    """MCP servers' skills for a finder (``SkillFinder.remote``); see the module docstring.
    ``skill_dirs``: the finder's folders now (the cache may overlap none of them); ``audit``:
    where a copy fetched again is recorded (the manager's log)."""

    def __init__(
        self,
        servers: McpServers,
        skill_dirs: Callable[[], Iterable[Path]],
        audit: AuditLog | None = None,
    ) -> None:
        self.servers = servers
        self.skill_dirs = skill_dirs
        self.audit = audit
        self._lock = threading.Lock()
        self._changes: dict[str, tuple[str, ...]] = {}  # LABEL/NAME -> changes at last fetch
        # LABEL/NAME -> the binding of the copy this session runs: its own server's bytes,
        # whatever another kernel with a server of the same label fetched (cache.py).
        self._bindings: dict[str, str] = {}

    def cache(self) -> McpCache:
        return McpCache(discovery_dirs=list(self.skill_dirs()))

    def skill(self, name: str, detector: ScriptDetector) -> McpSkill:
        """The cached copy of ``LABEL/NAME``, every file re-hashed now."""
        label, _, bare = name.partition("/")
        with self._lock:
            value = self._bindings.get(name)
        cached = self.cache().verify(label, bare, value)
        metadata = load_skill_metadata(cached.base_dir / SKILL_MD)
        if metadata.name != bare:
            raise McpCacheError(
                f"MCP skill cache: {name}: its SKILL.md names {metadata.name!r}; fetch it again"
            )
        with self._lock:
            changes = self._changes.get(name, ())
        origin = McpOriginInfo(f"mcp:{label}", cached.server, cached.binding, changes)
        return McpSkill(metadata, name, origin, detector=detector)

    def fetch(self, name: str, *, repair: bool = True) -> None:
        """Bring the copy of ``LABEL/NAME`` to the server's current listing (see above);
        ``repair`` False: a copy that no longer verifies is left as it is (to be refused:
        a batch's items share it, so it is never swapped under a running item)."""
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
        with self._lock:
            before = self._bindings.get(name)
        # What this session ran before (else the copy used last): what the panel says changed.
        old = cache.recorded(label, bare, before)
        if old is not None and old.get("binding") != value:
            with self._lock:
                self._changes[name] = _changes(old["files"], entry.files)
        if cache.recorded(label, bare, value) is not None:
            # A copy of what the server lists; its files are what was verified, or it is
            # replaced whole (a run may have written into its own folder: never stuck, and
            # nothing it wrote survives into this run).
            found = cache.differences(label, bare, value) if repair else []
            if found:
                refetch(cache, server.host, entry)
                self._refetched(name, found)
        elif cache.present(label, bare, value):  # its record was rewritten
            if repair:
                refetch(cache, server.host, entry)
                self._refetched(name, ["the origin record: missing, or not matching its binding"])
            # else left to be refused by the re-hash, as above
        else:
            fetch_into(cache, server.host, entry)
        with self._lock:
            self._bindings[name] = value

    def _refetched(self, name: str, shown: list[str]) -> None:
        """Audit a copy discarded and fetched again, naming what it held."""
        if self.audit is None:
            return
        listed = ", ".join(shown[:8]) + (f" (+{len(shown) - 8} more)" if len(shown) > 8 else "")
        self.audit.event(
            name,
            COPY_LABEL,
            None,
            AuditOutcome.COPY_REFETCHED,
            reason=f"the cached copy held what was not verified ({listed}): discarded whole "
            "and fetched again from the server, every file verified; nothing of the old copy "
            "ran",
        )


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


def add_server(
    owner: object,
    finder: Any,
    audit: AuditLog,
    label: str,
    *,
    command: Sequence[str] | None,
    url: str | None,
    env: Mapping[str, str] | None,
    timeout: float,
    connect_timeout: float,
) -> list[SkillEntry]:
    """``SkillManager.add_mcp_server``: the team policy's ``[sources] allow`` first (before
    the server's process starts; a refusal audited), then the server, and ``LABEL/NAME``
    resolving through ``finder`` (the manager's SkillFinder) to a verified cached copy."""
    from skill_magics.core.policy import PolicyError
    from skill_magics.core.policy.runs import check_added_source

    # Matched by its label or by what it is (as the cache records it: connection.origin).
    endpoint = url if url is not None else " ".join(command or ())
    try:
        check_added_source(f"mcp:{label}", (endpoint,) if endpoint else ())
    except PolicyError as exc:
        audit.refused(f"{label}/*", "(add MCP server)", None, exc)
        raise
    servers = servers_of(owner)
    server = servers.add(
        label, command=command, url=url, env=env, timeout=timeout, connect_timeout=connect_timeout
    )
    if finder.remote is None:
        finder.remote = McpRemote(servers, lambda: finder.skill_dirs, audit)
    return list(server.skills)


__all__ = ["McpRemote", "add_server"]
