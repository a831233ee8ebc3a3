"""``python -m skill_magics.mcp serve [--http PORT] [--host HOST] [DIR...]``.

Serves the skills found in each DIR (default: ./skills) per SEP-2640, read-only, over stdio
(what Claude Code, VS Code and Codex start as a "command" MCP server) or, with ``--http``,
over streamable HTTP at ``http://HOST:PORT/mcp``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skill_magics.mcp")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve skill folders over MCP (SEP-2640 skills)")
    serve.add_argument("dirs", nargs="*", metavar="DIR", help="folders of skills (./skills)")
    serve.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on PORT")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP host (127.0.0.1)")
    args = parser.parse_args(argv)
    dirs = args.dirs or ["skills"]
    missing = [d for d in dirs if not Path(d).is_dir()]
    if missing:
        print(
            f"skill-magics mcp: {missing[0]!r} is not a folder: give folders of skills",
            file=sys.stderr,
        )
        return 2
    try:
        import mcp  # noqa: F401

        from skill_magics.core.mcp import server
    except ImportError:
        print(
            "skill-magics mcp: the MCP SDK is missing: pip install 'skill-magics[mcp]'",
            file=sys.stderr,
        )
        return 2
    if args.http is not None:
        server.run_http(dirs, args.host, args.http)
    else:
        server.run_stdio(dirs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
