"""One live connection to a skills MCP server, over the official ``mcp`` SDK (stdio or
streamable HTTP), usable from synchronous code (a notebook cell, a worker thread).

The SDK is async (anyio) and its ``Client`` must be entered and left in one task, so each
connection owns a daemon thread running its own event loop: one task holds the ``Client``
open, and every call is a coroutine submitted to that loop and waited for with a timeout.
A server that hangs (never answers the handshake, a request, or a read) gives a one-line
:class:`McpError` naming its label and what it did not answer; so does one that exits, sends
garbage instead of JSON-RPC, or does not offer skills.

Each connect is a session (thread, loop, client; for stdio our bounded transport,
:mod:`.stdio`). A call that times out, whose answer is refused for its size, or that finds
the connection closed ends its session and kills the server's process tree: nothing of it
keeps a core busy or a process running, and the next call connects again.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import os
import sys
import tempfile
import threading
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.errors import McpError, McpSkillMismatchError
from skill_magics.core.base.extras import install_hint
from skill_magics.core.mcp.stdio import StdioTransport
from skill_magics.core.mcp.wire import EXTENSION_ID, check_label
from skill_magics.core.trace import hooks as traced

DEFAULT_TIMEOUT = 30.0
# Starting a stdio server may take a while (an interpreter importing its SDK, `uvx` fetching
# a package): the handshake gets its own, longer limit.
DEFAULT_CONNECT_TIMEOUT = 60.0
_GRACE = 5.0  # past the loop's own timeout, the caller's wait on the thread gives up too
_THREAD_PREFIX = "skill-magics-mcp-"


@dataclass(frozen=True)
class ServerSpec:
    """How to reach a server: ``command`` (stdio: argv, started by us) or ``url``
    (streamable HTTP), never both; ``label`` is the host's namespace for its skills."""

    label: str
    command: tuple[str, ...] | None = None
    url: str | None = None
    env: Mapping[str, str] | None = None
    timeout: float = DEFAULT_TIMEOUT
    cwd: str | None = None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT

    def __post_init__(self) -> None:
        check_label(self.label)
        if (self.command is None) == (self.url is None):
            raise McpError(
                f"MCP server '{self.label}': give either command=[...] (stdio) or url=... "
                "(streamable HTTP), not both or neither"
            )
        if self.command is not None:
            if (
                isinstance(self.command, str)
                or not self.command
                or not all(isinstance(a, str) and a and "\x00" not in a for a in self.command)
            ):
                raise McpError(
                    f"MCP server '{self.label}': command must be a non-empty list of "
                    "arguments, e.g. ['python', '-m', 'skill_magics.mcp', 'serve', 'skills']"
                )
            object.__setattr__(self, "command", tuple(self.command))
        if self.url is not None and self.env:
            raise McpError(
                f"MCP server '{self.label}': env= is for a server we start (command=[...]); "
                "an HTTP server has its own environment"
            )
        if self.url is not None and not (
            isinstance(self.url, str) and self.url.startswith(("http://", "https://"))
        ):
            raise McpError(
                f"MCP server '{self.label}': url must start with http:// or https://, "
                f"not {self.url!r}"
            )
        for name in ("timeout", "connect_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not (
                isinstance(value, (int, float)) and 0 < value <= 600
            ):
                raise McpError(
                    f"MCP server '{self.label}': {name} must be more than 0 and at most 600 "
                    f"seconds, not {value!r}"
                )

    @property
    def origin(self) -> str:
        """Where the skills come from, for people and the cache's origin record."""
        return self.url if self.url is not None else " ".join(self.command or ())


class _Session:
    """One connect of a :class:`Connection`: a daemon thread running its own event loop, in
    which one task holds the SDK ``Client`` open (and, for stdio, our bounded transport)."""

    def __init__(self, spec: ServerSpec, errlog: Any, number: int) -> None:
        self.spec = spec
        self.errlog = errlog
        self.loop = asyncio.new_event_loop()
        self.client: Any = None
        self.stop: asyncio.Event | None = None
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.transport: StdioTransport | None = None
        self.failure: BaseException | None = None  # why the connect failed
        self.thread = threading.Thread(
            target=self._run, name=f"{_THREAD_PREFIX}{spec.label}-{number}", daemon=True
        )

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._main())
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - the transport ended
            # under us (an HTTP server that went away cancels the client's task group): no
            # traceback in the notebook; the next call connects again.
            pass
        finally:
            self.loop.close()
            if not self.done.done():
                self.done.set_result(None)

    async def _main(self) -> None:
        self.stop = asyncio.Event()
        try:
            async with asyncio.timeout(self.spec.connect_timeout):
                client = self._make_client()
                await client.__aenter__()
        except BaseException as exc:  # noqa: BLE001 - every failure becomes one line
            self.failure = exc  # said by the connection (a TimeoutError here is the
            if not self.ready.done():  # handshake's, not the wait's for ready)
                self.ready.set_result(None)
            return
        try:
            self.client = client
            self.ready.set_result(None)
            await self.stop.wait()
        finally:
            try:
                async with asyncio.timeout(_GRACE):
                    await client.__aexit__(None, None, None)
            except BaseException:  # noqa: BLE001 - closing a broken connection: nothing to say
                pass

    def _make_client(self) -> Any:
        from mcp import Client
        from mcp.client import advertise

        ext = [advertise(EXTENSION_ID, {})]
        if self.spec.url is not None:
            return Client(self.spec.url, extensions=ext, cache=None)
        command = self.spec.command or ()
        if sys.platform == "win32":  # pragma: no cover - our transport kills POSIX groups
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=command[0],
                args=list(command[1:]),
                env=dict(self.spec.env) if self.spec.env else None,
                cwd=self.spec.cwd,
            )
            return Client(stdio_client(params, errlog=self.errlog), extensions=ext, cache=None)
        # The server's stderr goes to a file of ours: a kernel's sys.stderr has no fileno,
        # and its last line explains a server that died.
        self.transport = StdioTransport(
            command, env=self.spec.env, cwd=self.spec.cwd, errlog=self.errlog
        )
        return Client(self.transport.open(), extensions=ext, cache=None)

    @property
    def alive(self) -> bool:
        return self.client is not None and self.stop is not None and not self.done.done()

    def close(self, *, kill: bool) -> None:
        """End it (``kill``: the server's process tree is killed now, no grace)."""
        if kill and self.transport is not None:
            self.transport.kill_now = True
        if self.thread.is_alive() and self.stop is not None:
            try:
                self.loop.call_soon_threadsafe(self.stop.set)
            except RuntimeError:  # its loop closed already: the session is ending on its own
                pass
        self.thread.join(timeout=_GRACE * 2)


class Connection:
    """An open connection (see the module docstring). Use as a context manager or close().

    A call that times out, or whose answer is refused for its size, or that finds the server
    gone, ends the connection's session: the server's process tree is killed (stdio) and
    the next call connects again (a new handshake, within ``connect_timeout``)."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.label = spec.label
        self._lock = threading.Lock()  # guards _session and _closed (held briefly)
        self._connecting = threading.Lock()  # one connect at a time
        self._closed = False
        self._sessions = 0
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        self._session: _Session | None = None
        self._last: _Session | None = None  # the session an error is about
        try:
            self._session = self._connect()
        except McpError:
            self._closed = True
            self._close_errlog()
            raise

    @property
    def server_pid(self) -> int | None:
        """The pid of the stdio server of the current session (None: HTTP, or none now)."""
        session = self._session
        transport = session.transport if session is not None else None
        return transport.pid if transport is not None else None

    def _connect(self) -> _Session:
        self._sessions += 1
        session = _Session(self.spec, self._errlog, self._sessions)
        self._last = session
        session.start()
        try:
            session.ready.result(timeout=self.spec.connect_timeout + _GRACE)
        except concurrent.futures.TimeoutError:
            session.close(kill=True)
            raise self._error("did not finish connecting") from None
        if session.failure is not None:
            session.close(kill=True)
            raise self._connect_error(session.failure) from None
        exts = getattr(session.client.server_capabilities, "extensions", None) or {}
        if EXTENSION_ID not in exts:
            session.close(kill=False)
            raise self._error(f"does not offer skills (no {EXTENSION_ID} extension)")
        return session

    def _current(self, what: str) -> _Session:
        """The live session, connected again when the last one ended (one connect at a
        time; close() never waits for one: the session it makes is then closed)."""
        with self._connecting:
            with self._lock:
                if self._closed:
                    raise self._error(f"is not connected ({what})")
                session = self._session
                if session is not None and session.alive:
                    return session
                self._session = None
            if session is not None:
                session.close(kill=True)
            fresh = self._connect()
            with self._lock:
                closed = self._closed
                if not closed:
                    self._session = fresh
            if closed:
                fresh.close(kill=False)
                raise self._error(f"is not connected ({what})")
            return fresh

    def _drop(self, session: _Session) -> None:
        """End ``session`` and kill its server (the next call connects again)."""
        with self._lock:
            if self._session is session:
                self._session = None
        session.close(kill=True)

    # -- calls -----------------------------------------------------------------------------

    def _submit(self, make: Callable[[Any], Coroutine[Any, Any, Any]], what: str) -> Any:
        session = self._current(what)
        self._last = session
        timeout = self.spec.timeout

        async def bounded() -> Any:
            async with asyncio.timeout(timeout):
                return await make(session.client)

        future = asyncio.run_coroutine_threadsafe(bounded(), session.loop)
        try:
            return future.result(timeout=timeout + _GRACE)
        except (TimeoutError, concurrent.futures.TimeoutError):
            future.cancel()
            self._drop(session)
            overflow = session.transport.overflow if session.transport else None
            if overflow is not None:
                raise self._error(f"{overflow.text()} ({what}){_AGAIN}") from None
            raise self._error(f"did not answer {what} within {timeout:g} s{_AGAIN}") from None
        except McpError:
            raise  # our own checks of an answer: the connection is fine
        except Exception as exc:  # noqa: BLE001 - SDK, transport and validation errors alike
            if _answered(exc):
                raise self._error(f"failed on {what}: {_one_line(exc)}") from None
            self._drop(session)
            overflow = session.transport.overflow if session.transport else None
            if overflow is not None:
                raise self._error(f"{overflow.text()} ({what}){_AGAIN}") from None
            raise self._error(f"failed on {what}: {_one_line(exc)}{_AGAIN}") from None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request of the skills extension; the raw result object."""
        send = lambda: self._submit(lambda client: _request(client, method, params), method)  # noqa: E731
        return traced.mcp_call(self.label, method, send)

    def read(
        self,
        uri: str,
        max_bytes: int,
        what: str | None = None,
        check: Callable[[bytes], object] | None = None,
    ) -> bytes:
        """The bytes of one resource: exactly one content block, for this very URI, at most
        ``max_bytes``. ``what`` names it in errors (default ``file <uri>``). ``check(data)``:
        the caller's verification (a digest), inside the read's span, which then says
        whether the bytes were verified or refused (core/trace/hooks.mcp_call)."""

        def read() -> bytes:
            data = self._submit(
                lambda client: self._read(client, uri, max_bytes, what or f"file {uri}"),
                f"resources/read {uri}",
            )
            if check is not None:
                check(data)
            return data

        return traced.mcp_call(self.label, "resources/read", read, verified=check is not None)

    async def _read(self, client: Any, uri: str, max_bytes: int, what: str) -> bytes:
        result = await client.read_resource(uri)
        contents = getattr(result, "contents", None)
        if not isinstance(contents, list) or len(contents) != 1:
            n = len(contents) if isinstance(contents, list) else 0
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': {what}: answered {n} content blocks, not 1"
            )
        block = contents[0]
        if str(block.uri) != uri:
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': {what}: answered with the content of {block.uri}"
            )
        text = getattr(block, "text", None)
        if text is not None:
            if len(text) > max_bytes:  # UTF-8 takes at least a byte a character
                raise McpSkillMismatchError(
                    f"MCP server '{self.label}': {what}: sent more than the {max_bytes} "
                    "bytes listed"
                )
            return str(text).encode("utf-8")
        blob = getattr(block, "blob", "")
        if len(blob) > (max_bytes + 2) // 3 * 4 + 4:
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': {what}: sent more than the {max_bytes} bytes listed"
            )
        try:
            return base64.b64decode(blob, validate=True)
        except (binascii.Error, ValueError):
            raise McpSkillMismatchError(
                f"MCP server '{self.label}': {what}: its blob is not base64"
            ) from None

    # -- errors and closing ----------------------------------------------------------------

    def _error(self, what: str) -> McpError:
        session = self._last
        garbage = session.transport.garbage if session and session.transport else None
        if garbage is not None:
            what += (
                f" (it printed {garbage} on stdout, which is not JSON-RPC: a stdio MCP server "
                "writes only JSON-RPC messages there; is the command an MCP server?)"
            )
        return McpError(f"MCP server '{self.label}' ({_short(self.spec.origin)}) {what}")

    def _connect_error(self, exc: BaseException) -> McpError:
        if isinstance(exc, McpError):
            return exc
        if isinstance(exc, TimeoutError):
            return self._error(
                f"did not answer the handshake within {self.spec.connect_timeout:g} s"
                + self._stderr_tail()
            )
        return self._error(f"could not be connected: {_one_line(exc)}" + self._stderr_tail())

    def _stderr_tail(self) -> str:
        try:
            self._errlog.flush()
            self._errlog.seek(0, os.SEEK_END)
            end = self._errlog.tell()
            self._errlog.seek(max(0, end - 4096))
            lines = [ln.strip() for ln in self._errlog.read().splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its stderr: {lines[-1][:200]})" if lines else ""

    def close(self) -> None:
        """Close the connection (a stdio server is stopped); idempotent."""
        with self._lock:
            self._closed = True
            session, self._session = self._session, None
        if session is not None:
            session.close(kill=False)
        self._close_errlog()

    def _close_errlog(self) -> None:
        try:
            self._errlog.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_AGAIN = "; its connection was closed (the next use connects again)"


def _answered(exc: BaseException) -> bool:
    """Is ``exc`` the server's own error answer (the connection still works), not the
    connection ending (``Connection closed``) or a transport failure?"""
    from mcp.shared.exceptions import MCPError
    from mcp_types import CONNECTION_CLOSED

    return isinstance(exc, MCPError) and exc.error.code != CONNECTION_CLOSED


async def _request(client: Any, method: str, params: dict[str, Any]) -> dict[str, Any]:
    import mcp_types
    from pydantic import TypeAdapter

    request = mcp_types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = await client.session.send_request(request, TypeAdapter(dict[str, Any]))
    return result


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        leaves = _leaves(exc)
        exc = leaves[0] if leaves else exc
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:300]


def _leaves(group: BaseExceptionGroup) -> list[BaseException]:
    out: list[BaseException] = []
    for e in group.exceptions:
        out.extend(_leaves(e) if isinstance(e, BaseExceptionGroup) else [e])
    return out


def _short(text: str) -> str:
    """At most 80 characters, cut at a word boundary (a command's words stay whole)."""
    if len(text) <= 80:
        return text
    cut = text[:76]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + " ..."


def connect(
    label: str,
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    cwd: str | os.PathLike[str] | None = None,
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
) -> Connection:
    """Open a connection to a skills server (``mcp`` must be installed: the [mcp] extra)."""
    try:
        import mcp  # noqa: F401
    except ImportError:
        raise McpError(
            f"Skills over MCP need the official MCP SDK: {install_hint('mcp', 'mcp>=2.3')}"
        ) from None
    return Connection(
        ServerSpec(
            label,
            tuple(command) if command is not None else None,
            url,
            env,
            timeout,
            os.fspath(cwd) if cwd is not None else None,
            connect_timeout,
        )
    )
