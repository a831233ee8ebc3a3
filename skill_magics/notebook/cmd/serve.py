"""``%skills serve mcp [--http PORT] [DIR ...]``: serve skill folders over MCP (SEP-2640) from
this kernel, read-only, to other agents; ``%skills serve``: what this kernel serves;
``%skills serve --stop [PORT]``: stop them (they also stop with the kernel, however it ends).

The process is core/mcp/serving.py's; this module parses and prints.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from skill_magics.core.base.errors import McpError
from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = (
    "mcp [--http PORT] [DIR...]: serve skill folders (default: the configured ones) over MCP "
    "to other agents; no args: what runs; --stop [PORT]"
)
USAGE = "%skills serve [mcp [--http PORT] [DIR ...] | --stop [PORT]]"

PARSER = SubcommandParser("serve", USAGE)
PARSER.add_argument("words", nargs="*")
PARSER.add_argument("--http", type=int, default=None, metavar="PORT")
PARSER.add_argument("--stop", action="store_true")


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.core.mcp import serving

    opts = _parse(args)
    if opts.stop:
        return _stop(opts)
    if opts.what is None:
        return _list(serving.running())
    dirs = opts.dirs or [d for d in magics.manager.skill_dirs if d.is_dir()]
    try:
        info = serving.serve(dirs, port=opts.http)
    except McpError as exc:
        raise UsageError(exc.magic_text()) from None
    names = ", ".join(info.skills[:8]) + (
        f", +{len(info.skills) - 8} more" if len(info.skills) > 8 else ""
    )
    count = f"{len(info.skills)} skill{'s' if len(info.skills) != 1 else ''}"
    print(
        f"Serving {count}{' (' + names + ')' if names else ''} at {info.url}, read-only, "
        f"from {', '.join(str(d) for d in info.dirs)}"
    )
    for note in info.notes:  # skills left out, and why
        print(f"  {note}")
    print(
        f"It stops with this kernel (%skills serve --stop {info.port}). Point other agents at it:"
    )
    for client, snippet in serving.client_configs(info.url).items():
        print(f"  {client}:")
        for line in snippet.splitlines():
            print(f"    {line}")
    print(
        "For a server that outlives the notebook, let the agent start it over stdio "
        "(python -m skill_magics.mcp serve DIR...: docs/mcp.md)"
    )
    return None


def _parse(args: list[str]) -> Any:
    """``what`` (None: list or stop; "mcp"), ``dirs``, ``http``, ``stop`` (``port``)."""
    opts = PARSER.parse(args)
    words = opts.words
    opts.what, opts.dirs, opts.port = None, [], None
    if opts.stop:
        if opts.http is not None or len(words) > 1 or not all(w.isdigit() for w in words):
            PARSER.error("--stop takes only a port")
        opts.port = int(words[0]) if words else None
    elif words[:1] == ["mcp"]:
        opts.what, opts.dirs = "mcp", words[1:]
    elif words or opts.http is not None:
        PARSER.error("say what to serve: mcp")
    return opts


def _stop(opts: Any) -> None:
    from skill_magics.core.mcp import serving

    port = opts.port
    count = serving.stop(port)
    if port is not None and not count:
        raise UsageError(f"This kernel serves nothing on port {port} (%skills serve lists them)")
    print(f"Stopped {count} skills server{'s' if count != 1 else ''}")
    return None


def _list(infos: list[Any]) -> None:
    if not infos:
        print("This kernel serves no skills: %skills serve mcp [--http PORT] [DIR...] starts")
        return None
    for info in infos:
        print(info.line())
    return None
