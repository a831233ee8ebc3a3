"""The MCP servers a manager was given (``manager.add_mcp_server``), by label.

Each is one open :class:`~.connection.Connection` and the last checked listing of its skills
(names shown as ``label/name``, marked with their origin). Kept beside the manager, not in
it: :func:`servers_of` maps a manager to its servers (a weak reference: a manager that is
gone closes nothing here, its connections end with their threads and stdio pipes).

Runs of their scripts go through :mod:`.runs` (the finder's source for ``LABEL/NAME``).
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skill_magics.core.base.errors import McpError
from skill_magics.core.mcp.connection import (
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_TIMEOUT,
    Connection,
    connect,
)
from skill_magics.core.mcp.host import McpSkillsHost
from skill_magics.core.mcp.wire import SkillEntry, check_label


@dataclass
class McpServer:
    """One added server: how it was reached, its connection and its checked skills."""

    label: str
    origin: str  # the command line or URL, as shown to people
    connection: Connection
    host: McpSkillsHost
    skills: list[SkillEntry]
    # Why the last re-listing failed (None: it succeeded): ``skills`` is then the listing
    # before it, shown with this reason (a run lists again, and refuses, on its own).
    error: str | None = None
    _listing: threading.Thread | None = None  # a re-listing under way (refresh(wait=...))

    def refresh_in_background(self) -> threading.Thread:
        """The re-listing of this server under way, started now if none is: one at a time,
        however often a person types ``%skills`` while a server is slow."""
        if self._listing is None or not self._listing.is_alive():

            def quietly() -> None:
                try:
                    self.refresh()
                except McpError:
                    pass  # kept in self.error

            self._listing = threading.Thread(
                target=quietly, name=f"skill-magics-mcp-list-{self.label}", daemon=True
            )
            self._listing.start()
        return self._listing

    def refresh(self) -> list[SkillEntry]:
        """List its skills again (a listing that fails keeps nothing of the new one)."""
        try:
            self.skills = self.host.list_skills()
        except McpError as exc:
            self.error = str(exc)
            raise
        self.error = None
        return self.skills


class McpServers:
    """Servers by label (see the module docstring). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._servers: dict[str, McpServer] = {}
        atexit.register(self.close_all)

    def add(
        self,
        label: str,
        *,
        command: Sequence[str] | None = None,
        url: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> McpServer:
        """Connect, list its skills (checked), and keep it under ``label``."""
        check_label(label)
        with self._lock:
            if label in self._servers:
                text = (
                    f"MCP server label '{label}' is already in use "
                    f"({self._servers[label].origin}): choose another label, or remove it "
                    "first "
                )
                raise McpError(
                    text + f"(manager.remove_mcp_server('{label}'))",
                    magic=text + f"(%skills remove mcp {label})",
                )
        conn = connect(
            label,
            command=command,
            url=url,
            env=env,
            timeout=timeout,
            connect_timeout=connect_timeout,
        )
        try:
            host = McpSkillsHost(conn)
            server = McpServer(label, conn.spec.origin, conn, host, host.list_skills())
        except BaseException:
            conn.close()
            raise
        with self._lock:
            if label in self._servers:  # added meanwhile by another thread
                conn.close()
                raise McpError(f"MCP server label '{label}' is already in use")
            self._servers[label] = server
        return server

    def remove(self, label: str) -> bool:
        """Close and forget a server; False when no server has that label."""
        with self._lock:
            server = self._servers.pop(label, None)
        if server is None:
            return False
        server.connection.close()
        return True

    def get(self, label: str) -> McpServer | None:
        with self._lock:
            return self._servers.get(label)

    def servers(self) -> list[McpServer]:
        with self._lock:
            return [self._servers[k] for k in sorted(self._servers)]

    def refresh(self, label: str | None = None, *, wait: float | None = None) -> list[McpServer]:
        """List the skills of ``label``'s server (None: of every server) again, so skills
        added on a server appear and removed ones go, without adding it again. A server
        that fails keeps its last listing and says why in ``error``; never raises.
        ``wait``: list the servers side by side and wait at most that long in all; a server
        still listing keeps its last listing, marked (its listing lands when it answers)."""
        chosen = self.servers() if label is None else [s for s in [self.get(label)] if s]
        if wait is None:
            for server in chosen:
                try:
                    server.refresh()
                except McpError:
                    pass  # kept in server.error, shown beside its last listing
            return chosen
        deadline = time.monotonic() + wait
        listing = [(server, server.refresh_in_background()) for server in chosen]
        for server, thread in listing:
            thread.join(max(0.0, deadline - time.monotonic()))
            if thread.is_alive():
                server.error = f"it did not answer within {wait:g} s; still asked"
        return chosen

    def skills(self) -> list[SkillEntry]:
        """Every listed skill of every server, by qualified name."""
        entries = [e for s in self.servers() for e in s.skills]
        return sorted(entries, key=lambda e: e.qualified_name)

    def close_all(self) -> None:
        with self._lock:
            servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            server.connection.close()


_BY_OWNER: weakref.WeakKeyDictionary[object, McpServers] = weakref.WeakKeyDictionary()
_BY_OWNER_LOCK = threading.Lock()


def servers_of(owner: object) -> McpServers:
    """The MCP servers of ``owner`` (a SkillManager), made on first use."""
    with _BY_OWNER_LOCK:
        found = _BY_OWNER.get(owner)
        if found is None:
            found = _BY_OWNER[owner] = McpServers()
        return found
