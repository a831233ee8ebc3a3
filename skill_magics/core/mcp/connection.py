"""One live connection to a skills MCP server, over the official ``mcp`` SDK (stdio or
streamable HTTP), usable from synchronous code (a notebook cell, a worker thread).

The SDK is async (anyio) and its ``Client`` must be entered and left in one task, so each
connection owns a daemon thread running its own event loop: one task holds the ``Client``
open, and every call is a coroutine submitted to that loop and waited for with a timeout.
A server that hangs (never answers the handshake, a request, or a read) gives a one-line
:class:`McpError` naming its label and what it did not answer; so does one that exits, sends
garbage instead of JSON-RPC, or does not offer skills.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import concurrent.futures
import logging
import os
import tempfile
import threading
from collections.abc import Coroutine, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from skill_magics.core.base.errors import McpError, McpSkillMismatchError
from skill_magics.core.mcp.wire import EXTENSION_ID, check_label
from skill_magics.core.trace import hooks as traced

DEFAULT_TIMEOUT = 30.0
# Starting a stdio server may take a while (an interpreter importing its SDK, `uvx` fetching
# a package): the handshake gets its own, longer limit.
DEFAULT_CONNECT_TIMEOUT = 60.0
_GRACE = 5.0  # past the loop's own timeout, the caller's wait on the thread gives up too
_THREAD_PREFIX = "skill-magics-mcp-"
# Lines a server sent that were not JSON-RPC, by connection thread (the SDK's stdio reader
# logs each with a traceback and drops it; we say it in the connection's one-line error).
_GARBAGE: dict[str, str] = {}


class _GarbageLog(logging.Handler):
    """Keeps the SDK's "Failed to parse JSONRPC message" reports of our connections (and so
    keeps their tracebacks off a notebook's stderr: a handler exists, no last-resort print)."""

    def emit(self, record: logging.LogRecord) -> None:
        name = threading.current_thread().name
        if name.startswith(_THREAD_PREFIX) and name not in _GARBAGE:
            exc = record.exc_info[1] if record.exc_info else None
            detail = " ".join(str(exc).split())[:120] if exc is not None else ""
            _GARBAGE[name] = detail or record.getMessage()


_GARBAGE_LOG = _GarbageLog(logging.WARNING)


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


class Connection:
    """An open connection (see the module docstring). Use as a context manager or close()."""

    def __init__(self, spec: ServerSpec) -> None:
        self.spec = spec
        self.label = spec.label
        self._loop = asyncio.new_event_loop()
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._done: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")
        name = f"{_THREAD_PREFIX}{spec.label}-{id(self):x}"
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        _watch_garbage()
        self._thread.start()
        try:
            self._ready.result(timeout=spec.connect_timeout + _GRACE)
        except concurrent.futures.TimeoutError:
            self.close()
            raise self._error("did not finish connecting") from None
        except McpError:
            self.close()
            raise

    # -- the loop thread -------------------------------------------------------------------

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._main())
        except (asyncio.CancelledError, Exception):  # noqa: BLE001 - the transport ended
            # under us (an HTTP server that went away cancels the client's task group): no
            # traceback in the notebook; every later call says "is not connected".
            pass
        finally:
            self._loop.close()
            if not self._done.done():
                self._done.set_result(None)

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        try:
            async with asyncio.timeout(self.spec.connect_timeout):
                client = self._make_client()
                await client.__aenter__()
        except BaseException as exc:  # noqa: BLE001 - every failure becomes one line
            if not self._ready.done():
                self._ready.set_exception(self._connect_error(exc))
            return
        try:
            self._client = client
            caps = client.server_capabilities
            exts = getattr(caps, "extensions", None) or {}
            if EXTENSION_ID not in exts:
                self._ready.set_exception(
                    self._error(f"does not offer skills (no {EXTENSION_ID} extension)")
                )
            else:
                self._ready.set_result(None)
                await self._stop.wait()
        finally:
            try:
                async with asyncio.timeout(_GRACE):
                    await client.__aexit__(None, None, None)
            except BaseException:  # noqa: BLE001 - closing a broken connection: nothing to say
                pass

    def _make_client(self) -> Any:
        from mcp import Client
        from mcp.client import advertise
        from mcp.client.stdio import StdioServerParameters, stdio_client

        ext = [advertise(EXTENSION_ID, {})]
        if self.spec.url is not None:
            return Client(self.spec.url, extensions=ext, cache=None)
        command = self.spec.command or ()
        params = StdioServerParameters(
            command=command[0],
            args=list(command[1:]),
            env=dict(self.spec.env) if self.spec.env else None,
            cwd=self.spec.cwd,
        )
        # The server's stderr goes to a file of ours: a kernel's sys.stderr has no fileno,
        # and its last line explains a server that died.
        return Client(stdio_client(params, errlog=self._errlog), extensions=ext, cache=None)

    # -- calls -----------------------------------------------------------------------------

    def _submit(self, coro: Coroutine[Any, Any, Any], what: str) -> Any:
        if self._client is None or self._stop is None or self._done.done():
            coro.close()
            raise self._error(f"is not connected ({what})")
        timeout = self.spec.timeout

        async def bounded() -> Any:
            async with asyncio.timeout(timeout):
                return await coro

        future = asyncio.run_coroutine_threadsafe(bounded(), self._loop)
        try:
            return future.result(timeout=timeout + _GRACE)
        except (TimeoutError, concurrent.futures.TimeoutError):
            future.cancel()
            raise self._error(f"did not answer {what} within {timeout:g} s") from None
        except McpError:
            raise
        except Exception as exc:  # noqa: BLE001 - SDK, transport and validation errors alike
            raise self._error(f"failed on {what}: {_one_line(exc)}") from None

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Send one request of the skills extension; the raw result object."""
        send = lambda: self._submit(self._request(method, params), method)  # noqa: E731
        return traced.mcp_call(self.label, method, send)

    async def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        import mcp_types
        from pydantic import TypeAdapter

        request = mcp_types.Request[dict[str, Any], str](method=method, params=params)
        result = await self._client.session.send_request(request, TypeAdapter(dict[str, Any]))
        return result

    def read(self, uri: str, max_bytes: int, what: str | None = None) -> bytes:
        """The bytes of one resource: exactly one content block, for this very URI, at most
        ``max_bytes``. ``what`` names it in errors (default ``file <uri>``)."""
        read = lambda: self._submit(  # noqa: E731
            self._read(uri, max_bytes, what or f"file {uri}"), f"resources/read {uri}"
        )
        return traced.mcp_call(self.label, "resources/read", read)

    async def _read(self, uri: str, max_bytes: int, what: str) -> bytes:
        result = await self._client.read_resource(uri)
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
        garbage = _GARBAGE.get(self._thread.name)
        if garbage is not None:
            what += f" (it sent output that is not JSON-RPC: {garbage})"
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
            self._errlog.seek(0)
            lines = [ln.strip() for ln in self._errlog.read()[-4096:].splitlines() if ln.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its stderr: {lines[-1][:200]})" if lines else ""

    def close(self) -> None:
        """Close the connection (a stdio server is stopped); idempotent."""
        if self._thread.is_alive() and self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(timeout=_GRACE * 2)
        _GARBAGE.pop(self._thread.name, None)
        try:
            self._errlog.close()
        except OSError:
            pass

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _watch_garbage() -> None:
    logger = logging.getLogger("mcp.client.stdio")
    if _GARBAGE_LOG not in logger.handlers:
        logger.addHandler(_GARBAGE_LOG)


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
    return text if len(text) <= 80 else text[:77] + "..."


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
            "Skills over MCP need the official MCP SDK: pip install 'skill-magics[mcp]'"
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
