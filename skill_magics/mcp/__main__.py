"""``python -m skill_magics.mcp serve [--http PORT] [--host HOST] [DIR...]``.

Serves the skills found in each DIR (default: ./skills) per SEP-2640, read-only, over stdio
(what Claude Code, VS Code and Codex start as a "command" MCP server) or, with ``--http``,
over streamable HTTP at ``http://HOST:PORT/mcp``.

Two options are for a process that starts the server for itself (``%skills serve mcp``,
core/mcp/serving.py): ``--listen-fd FD`` serves on a socket that process already bound and
listens on (so it saw a port in use at once), and ``--lifeline-fd FD`` makes the server exit
as soon as that pipe reaches EOF, i.e. when the process holding its write end ends, however
it ends.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m skill_magics.mcp")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve skill folders over MCP (SEP-2640 skills)")
    serve.add_argument("dirs", nargs="*", metavar="DIR", help="folders of skills (./skills)")
    serve.add_argument("--http", type=int, metavar="PORT", help="streamable HTTP on PORT")
    serve.add_argument("--host", default="127.0.0.1", help="HTTP host (127.0.0.1)")
    serve.add_argument(
        "--listen-fd", type=int, metavar="FD", help="serve HTTP on this listening socket"
    )
    serve.add_argument(
        "--lifeline-fd", type=int, metavar="FD", help="exit when this pipe reaches EOF"
    )
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
        from skill_magics.core.base.extras import install_hint

        print(
            f"skill-magics mcp: the MCP SDK is missing: {install_hint('mcp', 'mcp>=2.3')}",
            file=sys.stderr,
        )
        return 2
    if args.lifeline_fd is not None:
        _watch_lifeline(args.lifeline_fd)
    if args.listen_fd is not None:
        import socket

        server.run_http(dirs, args.host, args.http or 0, sock=socket.socket(fileno=args.listen_fd))
    elif args.http is not None:
        server.run_http(dirs, args.host, args.http)
    else:
        server.run_stdio(dirs)
    return 0


def _watch_lifeline(fd: int) -> None:
    """Exit at once when the pipe's write end is closed (its holder stopped us or ended).
    Read-only server: nothing to flush, so no graceful wait for open connections."""

    def watch() -> None:
        while True:
            try:
                if not os.read(fd, 1024):
                    break
            except InterruptedError:
                continue
            except OSError:
                break
        os._exit(0)

    threading.Thread(target=watch, name="skill-magics-mcp-lifeline", daemon=True).start()


if __name__ == "__main__":
    sys.exit(main())
