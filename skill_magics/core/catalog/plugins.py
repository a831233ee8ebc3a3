"""Agent Plugins (1.0.0): a folder with a root ``plugin.json`` whose skills live one level
deep in ``skills/<name>/SKILL.md``, and whose ``mcp.json`` names MCP servers.

The finder (``discovery.py``) searches a plugin folder only there: its other folders are the
plugin's own code, hooks and agents, not skills. Each skill found so knows its plugin
(:func:`plugin_of`), which ``%skills`` lists it under and ``%skills show`` names. The MCP
servers are read and offered, never started by the listing (:data:`MCP_NOTE`): starting a
command someone else wrote is the person's decision, ``%skills add mcp LABEL -- COMMAND``.

Everything read from a plugin is someone else's: ``plugin.json`` and ``mcp.json`` are read
with a size limit, their fields type-checked, and a problem becomes a note on the plugin,
never an exception in a listing.

Example:
    >>> plugin = read_plugin(Path("layouts/my-plugin"))
    >>> plugin.name, [s.name for s in plugin.mcp_servers]
    ('my-plugin', ['github'])
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_magics.core.base.visible import visible

PLUGIN_FILE = "plugin.json"
MCP_FILE = "mcp.json"
SKILLS_DIR = "skills"
MAX_JSON_BYTES = 1 << 20
MCP_NOTE = "offered, not started: %skills add mcp LABEL -- COMMAND takes their skills"


@dataclass(frozen=True)
class McpServer:
    """One server of ``mcp.json``: a command (stdio) or a URL (http/sse)."""

    name: str
    transport: str  # "stdio", "http" or "sse"
    command: tuple[str, ...] = ()
    url: str = ""
    env: tuple[str, ...] = ()  # the variable names it asks for (values never kept)

    def describe(self) -> str:
        what = " ".join(self.command) if self.command else self.url
        return f"{self.name} ({self.transport}: {what})"


@dataclass(frozen=True)
class Plugin:
    """A plugin folder: its name and manifest, and what its ``mcp.json`` offers."""

    root: Path
    name: str
    version: str = ""
    description: str = ""
    schema: str = ""
    mcp_servers: tuple[McpServer, ...] = ()
    problems: tuple[str, ...] = field(default=())
    mcp_note: str = MCP_NOTE


def is_plugin(folder: str | os.PathLike[str]) -> bool:
    """Does ``folder`` hold a root ``plugin.json`` (a regular file, not a link)?"""
    path = os.path.join(os.fspath(folder), PLUGIN_FILE)
    return os.path.isfile(path) and not os.path.islink(path)


def _load(path: Path) -> tuple[Any, str]:
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path.name} cannot be read ({exc.strerror or exc})"
    if len(raw) > MAX_JSON_BYTES:
        return None, f"{path.name} is larger than 1 MB: not read"
    try:
        return json.loads(raw.decode("utf-8")), ""
    except (UnicodeDecodeError, ValueError) as exc:
        return None, f"{path.name} is not JSON ({exc})"


def read_plugin(folder: str | os.PathLike[str]) -> Plugin | None:
    """The plugin at ``folder`` (None when it has no ``plugin.json``)."""
    root = Path(os.path.abspath(os.fspath(folder)))
    if not is_plugin(root):
        return None
    problems: list[str] = []
    data, problem = _load(root / PLUGIN_FILE)
    if problem:
        problems.append(problem)
    data = data if isinstance(data, dict) else {}
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        problems.append("plugin.json has no 'name': the folder name is used")
        name = root.name
    servers, more = _mcp_servers(root)
    return Plugin(
        root=root,
        name=visible(name.strip()),
        version=visible(str(data.get("version") or "")),
        description=visible(str(data.get("description") or "")),
        schema=visible(str(data.get("$schema") or "")),
        mcp_servers=servers,
        problems=tuple(problems + more),
    )


def _mcp_servers(root: Path) -> tuple[tuple[McpServer, ...], list[str]]:
    data, problem = _load(root / MCP_FILE)
    if data is None:
        return (), [problem] if problem else []
    table = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(table, dict):
        return (), ["mcp.json has no 'mcpServers' (or 'servers') object"]
    out: list[McpServer] = []
    problems: list[str] = []
    for key, spec in table.items():
        name = visible(str(key))
        if not isinstance(spec, dict):
            problems.append(f"mcp.json server {name!r} is not an object")
            continue
        env = spec.get("env")
        names = tuple(visible(str(k)) for k in env) if isinstance(env, dict) else ()
        command = spec.get("command")
        url = spec.get("url")
        if isinstance(command, str) and command:
            raw = spec.get("args")
            args = raw if isinstance(raw, list) else []
            argv = (command, *(str(a) for a in args))
            out.append(McpServer(name, "stdio", tuple(visible(a) for a in argv), env=names))
        elif isinstance(url, str) and url:
            kind = str(spec.get("type") or "http")
            out.append(McpServer(name, "sse" if kind == "sse" else "http", url=visible(url)))
        else:
            problems.append(f"mcp.json server {name!r} has neither 'command' nor 'url'")
    return tuple(out), problems


def plugin_skill_dirs(root: str | os.PathLike[str]) -> list[str]:
    """The folders of a plugin that are skills: ``skills/<name>/`` holding a SKILL.md, one
    level deep, sorted; links to folders are not followed out of the plugin."""
    top = os.path.join(os.fspath(root), SKILLS_DIR)
    if os.path.islink(top) or not os.path.isdir(top):
        return []
    out = []
    with os.scandir(top) as it:
        for entry in sorted(it, key=lambda e: e.name):
            if entry.is_dir(follow_symlinks=False) and any(
                os.path.isfile(os.path.join(entry.path, f)) for f in ("SKILL.md", "skill.md")
            ):
                out.append(entry.path)
    return out


def plugin_of(base_dir: str | os.PathLike[str]) -> Plugin | None:
    """The plugin a skill folder belongs to (its ``skills/`` parent's folder has a
    ``plugin.json``), or None. Two stats for a skill that is in no plugin."""
    base = Path(os.path.abspath(os.fspath(base_dir)))
    if base.parent.name != SKILLS_DIR or not is_plugin(base.parent.parent):
        return None
    return read_plugin(base.parent.parent)


def group_by_plugin(
    skills: Iterable[tuple[str, str | os.PathLike[str]]],
) -> list[tuple[Plugin, list[str]]]:
    """(Plugin, its skills' names) for the ``(name, base_dir)`` pairs that came in a plugin,
    by plugin folder: what ``%skills`` lists, and where an MCP host will find the servers
    the plugins offer (``Plugin.mcp_servers``)."""
    found: dict[Path, tuple[Plugin, list[str]]] = {}
    for name, base in skills:
        plugin = plugin_of(base)
        if plugin is not None:
            found.setdefault(plugin.root, (plugin, []))[1].append(name)
    return [found[k] for k in sorted(found)]


__all__ = [
    "group_by_plugin",
    "Plugin",
    "McpServer",
    "MCP_NOTE",
    "is_plugin",
    "read_plugin",
    "plugin_of",
    "plugin_skill_dirs",
]
