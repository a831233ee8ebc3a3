"""The stdio transport of our MCP connections: the SDK's, with a bound on each message.

The SDK's stdio reader joins and splits its whole buffer for every 64 KiB chunk it reads: a
server that sends one 40 MB line costs quadratic CPU (a core busy long after the call timed
out) and holds all of it in memory. This reader looks for the line end in the new chunk
only, and stops at :data:`MAX_MESSAGE_BYTES`: the server's process tree is killed, the
session sees its connection end, and :attr:`StdioTransport.overflow` says how much it sent.

What else it does is the SDK's (``mcp.client.stdio``): the server in a session and process
group of its own, the SDK's default environment plus what it is given, JSON-RPC parse
errors handed to the session as values (the first one kept in :attr:`garbage` for the
connection's error), and on close its stdin closed, then its group terminated.
"""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from typing import Any, TextIO

from skill_magics.core.base.visible import visible
from skill_magics.core.mcp.wire import MAX_BYTES

# One JSON-RPC message from a server, at most: a file of a skill is at most MAX_BYTES, and
# its text in JSON may take twice that (every newline escaped) plus the envelope.
MAX_MESSAGE_BYTES = 2 * MAX_BYTES + (1 << 20)
_COUNT_REST_S = 2.0  # past the bound, the rest of the message is counted (not kept) this long
_EXIT_WAIT_S = 2.0  # a server given no more input has this long to exit before SIGTERM
_TERM_WAIT_S = 2.0  # then this long before SIGKILL


GARBAGE_SHOWN = 80  # characters of a server's stray stdout line an error quotes


def shown_line(line: bytes, limit: int = GARBAGE_SHOWN) -> str:
    """A stray stdout line as an error quotes it: decoded, control characters made
    visible, cut at a word boundary with an ellipsis (never mid-word), in quotes."""
    text = " ".join(visible(line.decode("utf-8", "replace")).split())
    if len(text) > limit:
        cut = text[:limit].rsplit(" ", 1)[0] if " " in text[:limit] else text[:limit]
        text = cut + " …"
    return repr(text)


@dataclass(frozen=True)
class Overflow:
    """A message longer than the bound: ``sent`` bytes of it read (``complete``: all of
    it; else it was still sending when counting stopped)."""

    sent: int
    limit: int
    complete: bool

    def text(self) -> str:
        more = "" if self.complete else "more than "
        return (
            f"sent {more}{_mb(self.sent)} in one message, more than the {_mb(self.limit)} allowed"
        )


class StdioTransport:
    """One server process and its pipes; use :meth:`open` as the SDK ``Client``'s transport."""

    def __init__(
        self,
        command: tuple[str, ...],
        *,
        env: Mapping[str, str] | None,
        cwd: str | None,
        errlog: TextIO,
        max_message: int = MAX_MESSAGE_BYTES,
    ) -> None:
        self.command = command
        self.env = env
        self.cwd = cwd
        self.errlog = errlog
        self.max_message = max_message
        self.pid: int | None = None
        self.overflow: Overflow | None = None
        self.garbage: str | None = None  # the first line that was not JSON-RPC, as shown
        self.kill_now = False  # set when the connection gives up on the server: no grace

    @asynccontextmanager
    async def open(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio
        from mcp.client.stdio import get_default_environment

        process = await anyio.open_process(
            list(self.command),
            env=get_default_environment() | dict(self.env or {}),
            stderr=self.errlog,
            cwd=self.cwd,
            start_new_session=True,
        )
        self.pid = process.pid
        read_writer, read_stream = anyio.create_memory_object_stream[Any](0)
        write_stream, write_reader = anyio.create_memory_object_stream[Any](0)

        async def reader() -> None:
            try:
                async with read_writer:
                    await self._read(process, read_writer)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass  # our own shutdown, or the session went away

        async def writer() -> None:
            assert process.stdin is not None  # opened with pipes
            try:
                async with write_reader:
                    async for message in write_reader:
                        json = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                        await process.stdin.send((json + "\n").encode("utf-8"))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                await read_writer.aclose()  # the session sees the end, no request hangs

        async with anyio.create_task_group() as tg:
            tg.start_soon(reader)
            tg.start_soon(writer)
            try:
                yield read_stream, write_stream
            finally:
                with anyio.CancelScope(shield=True):
                    await self._stop(process)
                    for stream in (read_stream, write_stream, read_writer, write_reader):
                        await stream.aclose()
                tg.cancel_scope.cancel()

    async def _read(self, process: Any, out: Any) -> None:
        """Lines of the server's stdout to the session, each parsed; linear in what is read
        (the line end is looked for in each new chunk only), and bounded."""
        parts: list[bytes] = []
        size = 0
        async for chunk in _chunks(process.stdout):
            start = 0
            while True:
                end = chunk.find(b"\n", start)
                piece = chunk[start:] if end < 0 else chunk[start:end]
                size += len(piece)
                if size > self.max_message:
                    await self._refuse(process, size, complete=end >= 0)
                    return
                parts.append(piece)
                if end < 0:
                    break
                line, parts, size = b"".join(parts), [], 0
                start = end + 1
                if line.strip():
                    await out.send(self._parse(line))

    def _parse(self, line: bytes) -> Any:
        import mcp_types as types
        from mcp.shared.message import SessionMessage

        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except ValueError as exc:
            if self.garbage is None:
                self.garbage = shown_line(line)
            return exc

    async def _refuse(self, process: Any, size: int, *, complete: bool) -> None:
        """Past the bound: count the rest of the message (never kept), then kill the server
        (it is not waited for: what it sends is refused whatever else it does)."""
        import anyio

        if not complete:
            with anyio.move_on_after(_COUNT_REST_S):
                async for chunk in _chunks(process.stdout):
                    end = chunk.find(b"\n")
                    size += len(chunk) if end < 0 else end
                    if end >= 0:
                        complete = True
                        break
                    if size > 64 * self.max_message:
                        break
        self.overflow = Overflow(size, self.max_message, complete)
        self.kill_now = True
        _kill_tree(process.pid)

    async def _stop(self, process: Any) -> None:
        """The server's stdin closed; it exits, or its process tree is terminated (at once
        when the connection gave up on it)."""
        import anyio
        from mcp.os.posix.utilities import terminate_posix_process_tree

        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdin.aclose()
        if self.kill_now:
            _kill_tree(process.pid)
        elif not await _exited(process, _EXIT_WAIT_S):
            if sys.platform == "win32":  # pragma: no cover - the SDK's stdio is used there
                process.kill()
            else:
                await terminate_posix_process_tree(process, _TERM_WAIT_S)
        await _exited(process, _TERM_WAIT_S)
        with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            await process.stdout.aclose()


async def _chunks(stream: Any) -> AsyncIterator[bytes]:
    import anyio

    while True:
        try:
            yield await stream.receive(1 << 16)
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            return


async def _exited(process: Any, timeout: float) -> bool:
    """Did the process exit within ``timeout``? (returncode polled: ``wait()`` also waits
    for the pipes, which a child that inherited them keeps open)."""
    import anyio

    with anyio.move_on_after(timeout):
        while process.returncode is None:
            await anyio.sleep(0.01)
    return process.returncode is not None


def _kill_tree(pid: int) -> None:
    """SIGKILL the server's process group and every process below it (one that left the
    group with setsid included, while its parent still holds it)."""
    import psutil

    try:
        below = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        below = []
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)
    for proc in below:
        with suppress(psutil.Error):
            proc.kill()


def _mb(n: int) -> str:
    return f"{n / 1e6:.1f} MB"
