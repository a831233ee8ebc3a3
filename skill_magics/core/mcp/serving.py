"""Our skills server as a background process of this one (a notebook's kernel):
``python -m skill_magics.mcp serve --http PORT DIR...`` started, listed and stopped here
(``%skills serve mcp``), never outliving this process.

- The port is bound HERE, before anything starts: a port in use is a one-line error at once
  (no race with another process between a check and the server's own bind), port 0 takes a
  free one, and the listening socket is handed to the server (``--listen-fd``).
- The server holds the read end of a pipe whose write end only this process has
  (``--lifeline-fd``): when this process ends in any way (exit, a kernel restart, SIGKILL)
  the pipe reaches EOF and the server exits at once. :func:`stop` closes it too; atexit
  stops every server left.
- It is ready when our own host (:mod:`.connection`) has listed its skills over HTTP, so the
  names printed are what an agent will see. Its stderr (skills left out, a crash) goes to a
  file of ours, read back into the result and into :func:`running`.

Read-only like the command line: the same server, the same folders' skills.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import IO

from skill_magics.core.base.errors import McpError

DEFAULT_HOST = "127.0.0.1"
READY_TIMEOUT = 60.0  # the server imports the SDK and uvicorn before it accepts
STOP_WAIT = 5.0
CLIENT_NAME = "my-skills"  # the name the client snippets give the server


class ServeState(Enum):
    RUNNING = "running"
    EXITED = "exited"


@dataclass(frozen=True)
class ServedInfo:
    """One server started here: where it listens, what it serves, whether it still runs."""

    host: str
    port: int
    dirs: tuple[Path, ...]
    pid: int
    state: ServeState
    skills: tuple[str, ...]  # listed when it became ready
    exit_code: int | None = None
    notes: tuple[str, ...] = ()  # its stderr lines (skills left out, why it exited)

    @property
    def url(self) -> str:
        return _url(self.host, self.port)

    def line(self) -> str:
        where = ", ".join(str(d) for d in self.dirs)
        if self.state is ServeState.RUNNING:
            return f"{self.url} · pid {self.pid} · serving {where}"
        last = f": {self.notes[-1]}" if self.notes else ""
        return f"{self.url} · exited (code {self.exit_code}){last} · was serving {where}"


def _url(host: str, port: int) -> str:
    return f"http://{f'[{host}]' if ':' in host else host}:{port}/mcp"


class _Served:
    """The handle of one server: its process, the write end of its lifeline, its stderr."""

    def __init__(
        self,
        host: str,
        port: int,
        dirs: tuple[Path, ...],
        proc: subprocess.Popen[bytes],
        lifeline: int,
        log: IO[str],
    ) -> None:
        self.host, self.port, self.dirs = host, port, dirs
        self.proc = proc
        self.lifeline: int | None = lifeline
        self.log = log
        self.skills: tuple[str, ...] = ()

    def notes(self) -> tuple[str, ...]:
        try:
            self.log.flush()
            self.log.seek(0)
            text = self.log.read()[-8192:]
        except (OSError, ValueError):
            return ()
        return tuple(" ".join(line.split())[:300] for line in text.splitlines() if line.strip())

    def info(self) -> ServedInfo:
        code = self.proc.poll()
        return ServedInfo(
            self.host,
            self.port,
            self.dirs,
            self.proc.pid,
            ServeState.RUNNING if code is None else ServeState.EXITED,
            self.skills,
            code,
            self.notes(),
        )

    def stop(self, *, keep_log: bool = False) -> None:
        """Close the lifeline (the server exits at once), wait, kill if it did not."""
        if self.lifeline is not None:
            with contextlib.suppress(OSError):
                os.close(self.lifeline)
            self.lifeline = None
        try:
            self.proc.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if not keep_log:
            with contextlib.suppress(OSError, ValueError):
                self.log.close()


_LOCK = threading.Lock()
_SERVED: dict[int, _Served] = {}  # by port


def serve(
    dirs: Sequence[str | os.PathLike[str]],
    *,
    port: int | None = None,
    host: str = DEFAULT_HOST,
    ready_timeout: float = READY_TIMEOUT,
) -> ServedInfo:
    """Start serving the skills of ``dirs`` over streamable HTTP on ``host:port`` (None or 0:
    a free port) and wait until it lists them. Raises :class:`McpError` (one line) when a
    folder is missing, the port is in use, or the server does not come up (nothing is left
    running then)."""
    folders = tuple(Path(d).expanduser().absolute() for d in dirs)
    if not folders:
        raise McpError(
            "No skill folder to serve: give folders (serve(['skills'])) or configure some",
            magic="No skill folder to serve: give folders (%skills serve mcp DIR...) or add "
            "some (%skills add DIR)",
        )
    missing = next((d for d in folders if not d.is_dir()), None)
    if missing is not None:
        raise McpError(f"{missing} is not a folder: give folders of skills to serve")
    if port is not None and (
        isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535
    ):
        raise McpError(f"Port {port!r} is not a TCP port: give 1-65535, or none for a free one")
    sock = _bind(host, port or 0)
    try:
        bound = int(sock.getsockname()[1])
        served = _start(host, bound, folders, sock)
    finally:
        sock.close()  # the server holds its own copy now: the port is freed when it ends
    try:
        served.skills = _wait_ready(served, ready_timeout)
    except BaseException:
        served.stop()
        raise
    with _LOCK:
        gone = _SERVED.pop(bound, None)  # one that exited on its own, listed until now
        _SERVED[bound] = served
    if gone is not None:
        gone.stop()
    return served.info()


def _bind(host: str, port: int) -> socket.socket:
    with _LOCK:
        ours = port in _SERVED and _SERVED[port].proc.poll() is None
    if ours:
        raise McpError(
            f"This process already serves skills on port {port}: stop it first "
            f"(serving.stop({port})) or give another port",
            magic=f"This kernel already serves skills on port {port}: stop it first "
            f"(%skills serve --stop {port}) or give another port (--http PORT)",
        )
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    # As uvicorn binds: a port left in TIME_WAIT by an earlier server is free to use.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise McpError(
                f"Port {port} on {host} is in use by another program: give another port "
                "(port=...), or none for a free one",
                magic=f"Port {port} on {host} is in use by another program: give another "
                "port (%skills serve mcp --http PORT), or leave --http out for a free one",
            ) from None
        raise McpError(f"Cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _start(host: str, port: int, dirs: tuple[Path, ...], sock: socket.socket) -> _Served:
    read_end, write_end = os.pipe()  # both close-on-exec: only the server gets the read end
    log = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
    argv = [
        sys.executable,
        # -P: the kernel's working folder is not put on sys.path, so a module a skill's
        # script left there (mcp.py, uvicorn.py) is never imported in place of the real one.
        "-P",
        "-m",
        "skill_magics.mcp",
        "serve",
        "--http",
        str(port),
        "--host",
        host,
        "--listen-fd",
        str(sock.fileno()),
        "--lifeline-fd",
        str(read_end),
        *(str(d) for d in dirs),
    ]
    try:
        # Not under the tree guard: it outlives the thread that starts it (the guard's
        # parent-death signal follows the thread); its lifeline pipe ends it with the kernel.
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=log,
            pass_fds=(sock.fileno(), read_end),
            env=_server_env(),
            start_new_session=True,  # a Ctrl-C meant for a cell never reaches it
        )
    except OSError as exc:
        os.close(write_end)
        log.close()
        raise McpError(f"Could not start the skills server: {exc}") from None
    finally:
        os.close(read_end)
    return _Served(host, port, dirs, proc, write_end, log)


# What the server needs of the kernel's environment: finding programs and its home, the
# locale, a temp folder, and PYTHONPATH (how this kernel may import skill_magics itself).
# Nothing else: the kernel's API keys and tokens are no business of a server of files.
_ENV_KEPT = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "PYTHONPATH",
)


def _server_env() -> dict[str, str]:
    return {k: os.environ[k] for k in _ENV_KEPT if k in os.environ}


def _wait_ready(served: _Served, timeout: float) -> tuple[str, ...]:
    """The names it lists, read by our host over HTTP (the socket already listens: the
    connection waits in its backlog until the server accepts)."""
    from skill_magics.core.mcp.connection import connect
    from skill_magics.core.mcp.host import McpSkillsHost

    url = _url(served.host, served.port)
    try:
        with connect("served", url=url, connect_timeout=timeout, timeout=timeout) as conn:
            names = tuple(e.name for e in McpSkillsHost(conn).list_skills())
    except McpError as exc:
        served.stop(keep_log=True)  # its last stderr line says why
        notes = served.notes()
        why = notes[-1] if notes else str(exc)
        raise McpError(f"The skills server on port {served.port} did not start: {why}") from None
    if served.proc.poll() is not None:  # answered by something else, and ours is gone
        raise McpError(f"The skills server on port {served.port} exited at start")
    return names


def running() -> list[ServedInfo]:
    """Every server started here, by port (those that exited on their own too)."""
    with _LOCK:
        served = [_SERVED[p] for p in sorted(_SERVED)]
    return [s.info() for s in served]


def stop(port: int | None = None) -> int:
    """Stop the server on ``port`` (None: every one); how many were stopped (0: none)."""
    with _LOCK:
        ports = sorted(_SERVED) if port is None else [port] if port in _SERVED else []
        chosen = [_SERVED.pop(p) for p in ports]
    for served in chosen:
        served.stop()
    return len(chosen)


def client_configs(url: str, name: str = CLIENT_NAME) -> dict[str, str]:
    """How Claude Code, VS Code and Codex reach a server at ``url`` (streamable HTTP)."""
    import json

    vscode = json.dumps({"servers": {name: {"type": "http", "url": url}}})
    return {
        "Claude Code": f"claude mcp add --transport http {name} {url}",
        "VS Code (.vscode/mcp.json)": vscode,
        "Codex (~/.codex/config.toml)": f'[mcp_servers.{name}]\nurl = "{url}"',
    }


atexit.register(stop)

__all__ = ["ServeState", "ServedInfo", "serve", "running", "stop", "client_configs"]
