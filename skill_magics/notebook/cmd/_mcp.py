"""``%skills add mcp LABEL -- COMMAND...`` / ``%skills add mcp LABEL URL`` and
``%skills remove mcp LABEL``: the skills of an MCP server (SEP-2640), named ``LABEL/skill``.
"""

from __future__ import annotations

import sys
from typing import Any

from IPython.core.error import UsageError

from skill_magics.core.base.errors import McpError
from skill_magics.notebook.cmd import SkillsHost

ADD_USAGE = (
    "%skills add mcp LABEL [--timeout S] [--connect-timeout S] -- COMMAND [ARG...]  or  "
    "%skills add mcp LABEL [--timeout S] [--connect-timeout S] URL"
)
_OPTIONS = {"--timeout": "timeout", "--connect-timeout": "connect_timeout"}
REMOVE_USAGE = "%skills remove mcp LABEL"


def is_mcp(args: list[str]) -> bool:
    """``mcp LABEL ...``: a lone ``mcp`` stays a folder name (``%skills add mcp``)."""
    return len(args) >= 2 and args[0] == "mcp"


def _options(rest: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--timeout S`` / ``--connect-timeout S`` (or ``=S``) before the command or URL."""
    found: dict[str, Any] = {}
    while rest and rest[0] != "--" and rest[0].startswith("--"):
        flag, eq, value = rest[0].partition("=")
        if flag not in _OPTIONS:
            raise UsageError(f"Unknown option {flag!r}. Usage: {ADD_USAGE}")
        if not eq:
            if len(rest) < 2:
                raise UsageError(f"{flag} needs a number of seconds. Usage: {ADD_USAGE}")
            value, rest = rest[1], rest[2:]
        else:
            rest = rest[1:]
        try:
            found[_OPTIONS[flag]] = float(value)
        except ValueError:
            raise UsageError(f"{flag} takes seconds (a number), not {value!r}") from None
    return found, rest


def our_server(command: list[str]) -> list[str]:
    """``python -m skill_magics.mcp ...`` runs with the kernel's interpreter: a bare
    ``python`` is whatever PATH finds, which need not have skill_magics or the MCP SDK (the
    demo kernel's PATH did not: issue 44). Any other command is left as written."""
    if command[:1] in (["python"], ["python3"]) and command[1:3] == ["-m", "skill_magics.mcp"]:
        return [sys.executable, *command[1:]]
    return command


def add(magics: SkillsHost, args: list[str]) -> Any:
    label = args[1]
    timeouts, rest = _options(args[2:])
    if rest[:1] == ["--"] and len(rest) > 1:
        where: dict[str, Any] = {"command": our_server(rest[1:])}
    elif len(rest) == 1 and rest[0].startswith(("http://", "https://")):
        where = {"url": rest[0]}
    else:
        raise UsageError(f"Usage: {ADD_USAGE}")
    try:
        skills = magics.manager.add_mcp_server(label, **where, **timeouts)
    except McpError as exc:
        raise UsageError(exc.magic_text()) from None
    names = [e.qualified_name for e in skills]
    shown = ", ".join(names[:8]) + (f", +{len(names) - 8} more" if len(names) > 8 else "")
    print(
        f"Added MCP server '{label}': {len(names)} skill{'s' if len(names) != 1 else ''}"
        f"{' (' + shown + ')' if names else ''}, listed with their origin in %skills; "
        "their files are read only when needed, and their scripts run after approval "
        "(%%skillrun LABEL/NAME.SCRIPT)"
    )
    return None


def remove(magics: SkillsHost, args: list[str]) -> Any:
    if len(args) != 2:
        raise UsageError(f"Usage: {REMOVE_USAGE}")
    if not magics.manager.remove_mcp_server(args[1]):
        raise UsageError(f"No MCP server is labelled {args[1]!r} (%skills lists them)")
    print(f"Removed MCP server '{args[1]}'")
    return None


def show(magics: SkillsHost, qualified: str) -> Any | None:
    """``%skills show LABEL/NAME`` for a skill of an added MCP server: its origin, files and
    SKILL.md, read now (that one file, verified). None: no MCP server has that label."""
    import html

    from skill_magics.core.base.visible import visible
    from skill_magics.core.mcp.servers import servers_of
    from skill_magics.core.mcp.wire import SKILL_MD, binding
    from skill_magics.notebook.render.display import Display

    label, _, name = qualified.partition("/")
    server = servers_of(magics.manager).get(label)
    if server is None:
        return None
    try:
        server.refresh()  # the server's listing now: a skill added since shows
    except McpError as exc:
        raise UsageError(exc.magic_text()) from None
    entry = next((e for e in server.skills if e.name == name), None)
    if entry is None:
        names = ", ".join(e.qualified_name for e in server.skills) or "none"
        raise UsageError(f"MCP server '{label}' lists no skill {name!r} (it lists: {names})")
    try:
        skill_md = server.host.read(entry, SKILL_MD).data.decode("utf-8", errors="replace")
    except McpError as exc:
        raise UsageError(exc.magic_text()) from None
    value = binding(entry)
    files = (
        "dynamic (files known only when read; never bound to digests)"
        if entry.files is None
        else f"{len(entry.files)} files, {entry.total_size} bytes: "
        + ", ".join(visible(f.path) for f in entry.files)
    )
    lines = [
        f"{visible(entry.qualified_name)}: from MCP server '{label}' ({visible(server.origin)})",
        f"uri: {visible(entry.uri)}",
        f"files: {files}",
        f"approval binds to: {value or 'nothing (dynamic)'}",
        f"scripts: run after approval bound to that value, from a verified copy "
        f"(%%skillrun {visible(entry.qualified_name)}.SCRIPT)"
        if value
        else "scripts: never run (dynamic: no approval could be bound to its code)",
        "",
        visible(skill_md)
        if "\n" not in skill_md
        else "\n".join(visible(line) for line in skill_md.splitlines()),
    ]
    text = "\n".join(lines)
    head = "".join(f"<p>{html.escape(line)}</p>" for line in lines[:5])
    body = f"<pre>{html.escape(lines[-1])}</pre>"
    return Display(text, f'<div class="skill-magics-mcp-skill">{head}{body}</div>')
