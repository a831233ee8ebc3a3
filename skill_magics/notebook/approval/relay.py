"""The comm relay: on ipykernel 7.x, a panel's widget messages reach the cell that waits.

ipykernel 7 reads the shell socket on its "Shell channel" thread and forwards each message to
the thread that handles it: a subshell's, or, without a ``subshell_id`` (VS Code, whose
kernel proxy never uses subshells; JupyterLab with subshells off), the main thread, which is
blocked by the very cell waiting for the click. So the click would wait for the cell, and
the cell for the click (microsoft/vscode-jupyter#17360, Kirill888/jupyter-ui-poll#56).

The relay puts itself in front of that forwarding (the shell stream's receive callback, set
in the shell channel thread once, on first use): a ``comm_msg`` or ``comm_close`` for one of
the widgets being waited on (:func:`diverted`) goes into that wait's inbox instead, whatever
its ``subshell_id``; everything else goes on exactly as before. The waiting thread takes the
messages from the inbox and hands each to the kernel's own handler (``shell_handlers``), so
widget callbacks run on the thread that runs the cell, as they always do. Messages left in
the inbox when the wait ends are handled then, so no typed value or click is lost; later ones
go to the main thread again.

The ipykernel internals read here (``shell_channel_thread``, ``shell_stream``,
``shell_channel_thread_main``) are the same from 7.0 to 7.4 (read in each release's source;
run by the kernel matrix on 7.3 and 7.4); when one is missing, :func:`available` is False and
the caller does not block.
"""

from __future__ import annotations

import inspect
import queue
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

RELAYED = frozenset({"comm_msg", "comm_close"})
INSTALL_TIMEOUT_S = 10.0  # how long to wait for the shell channel thread to take the router

_lock = threading.Lock()  # the inboxes (shell channel thread and waiting threads)
_install_lock = threading.Lock()  # one router per kernel, even for two waits at once


class _Router:
    """The shell stream's receive callback: diverts the waited-on comms, forwards the rest."""

    def __init__(self, kernel: Any, forward: Any) -> None:
        self.kernel = kernel
        self.forward = forward
        self.inboxes: dict[str, queue.SimpleQueue[Any]] = {}  # comm_id -> inbox (under _lock)

    def __call__(self, msg: Any) -> Any:
        if self.inboxes and self._divert(msg):
            return None
        return self.forward(msg)

    def _divert(self, msg: Any) -> bool:
        session = self.kernel.session
        try:
            _idents, frames = session.feed_identities(msg, copy=False)
            peek = session.deserialize(frames, content=False, copy=False)
            if peek["header"].get("msg_type") not in RELAYED:
                return False
            comm_id = session.unpack(peek["content"]).get("comm_id")
        except Exception:  # not ours to judge: the kernel's own routing logs bad messages
            return False
        with _lock:
            inbox = self.inboxes.get(comm_id) if isinstance(comm_id, str) else None
            if inbox is None:
                return False
            inbox.put(msg)
        return True


def _router(kernel: Any) -> _Router | None:
    return getattr(kernel, "_skill_magics_relay", None)


def available(kernel: Any) -> bool:
    """Whether this kernel forwards shell messages from a shell channel thread (7.x)."""
    thread = getattr(kernel, "shell_channel_thread", None)
    return (
        thread is not None
        and getattr(kernel, "shell_stream", None) is not None
        and getattr(kernel, "session", None) is not None
        and hasattr(kernel, "shell_channel_thread_main")
        and getattr(thread, "io_loop", None) is not None
        and thread.is_alive()
    )


def install(kernel: Any, timeout: float = INSTALL_TIMEOUT_S) -> _Router | None:
    """Put the router in front of the kernel's forwarding (once); None when unavailable."""
    router = _router(kernel)
    if router is not None:
        return router
    if not available(kernel):
        return None
    stream = kernel.shell_stream
    done = threading.Event()
    made: list[_Router] = []

    def swap() -> None:  # in the shell channel thread, the only user of the shell stream
        try:
            forward = getattr(stream, "_recv_callback", None) or kernel.shell_channel_thread_main
            router = _Router(kernel, forward)
            stream.on_recv(router, copy=False)
            made.append(router)
        finally:
            done.set()

    with _install_lock:  # two waits at once (a subshell cell) install one router
        router = _router(kernel)
        if router is not None:
            return router
        kernel.shell_channel_thread.io_loop.add_callback(swap)
        if not done.wait(timeout) or not made:
            return None
        kernel._skill_magics_relay = made[0]
        return made[0]


@contextmanager
def diverted(kernel: Any, comm_ids: Iterable[str]) -> Iterator[queue.SimpleQueue[Any] | None]:
    """While inside, messages for ``comm_ids`` go to the yielded inbox (None: unavailable).

    On leaving, what is still in the inbox is handled on this thread, after the comms were
    given back to the kernel's routing, so nothing is lost or handled twice.
    """
    router = install(kernel)
    if router is None:
        yield None
        return
    inbox: queue.SimpleQueue[Any] = queue.SimpleQueue()
    ids = list(comm_ids)
    with _lock:
        for comm_id in ids:
            router.inboxes[comm_id] = inbox
    try:
        yield inbox
    finally:
        with _lock:
            for comm_id in ids:
                if router.inboxes.get(comm_id) is inbox:
                    del router.inboxes[comm_id]
        handle_all(kernel, inbox)


def handle_all(kernel: Any, inbox: queue.SimpleQueue[Any]) -> None:
    """Handle every message in ``inbox`` now, in order."""
    while True:
        try:
            msg = inbox.get_nowait()
        except queue.Empty:
            return
        handle(kernel, msg)


def wait(
    kernel: Any,
    inbox: queue.SimpleQueue[Any],
    event: threading.Event,
    timeout: float,
    stop: threading.Event | None = None,
    slice_s: float = 0.25,
) -> bool:
    """Handle relayed messages until ``event`` is set (True) or ``timeout`` / ``stop`` (False).

    Short slices, so Kernel > Interrupt (a KeyboardInterrupt in this thread) lands promptly.
    """
    deadline = time.monotonic() + timeout
    while not event.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (stop is not None and stop.is_set()):
            return False
        try:
            msg = inbox.get(timeout=min(slice_s, remaining))
        except queue.Empty:
            continue
        handle(kernel, msg)
    return True


def handle(kernel: Any, raw: Any) -> None:
    """What ``dispatch_shell`` does for a comm message, on this thread: check the signature,
    make it the shell parent (outputs of the widget's callbacks belong to it), call the
    kernel's handler, restore the parent of the waiting cell."""
    session = kernel.session
    try:
        idents, frames = session.feed_identities(raw, copy=False)
        msg = session.deserialize(frames, content=True, copy=False)
    except Exception:
        kernel.log.error("Invalid Message", exc_info=True)
        return
    handler = kernel.shell_handlers.get(msg["header"].get("msg_type"))
    if handler is None:
        return
    parent, ident = kernel.get_parent("shell"), _parent_ident(kernel)
    kernel.set_parent(idents, msg, channel="shell")
    try:
        result = handler(kernel.shell_stream, idents, msg)
        if inspect.isawaitable(result):
            _run_aside(result)
    except Exception:
        kernel.log.error("Exception in message handler:", exc_info=True)
    finally:
        kernel.set_parent(ident, parent, channel="shell")


def _parent_ident(kernel: Any) -> Any:
    """The shell parent's identities (7.x keeps them in a context variable)."""
    holder = getattr(kernel, "_shell_parent_ident", None)
    getter = getattr(kernel, "_get_shell_context_var", None)  # 7.1+: falls back to the shell's
    try:
        if holder is not None:
            return getter(holder) if callable(getter) else holder.get()
    except LookupError:
        pass
    return b""


def _run_aside(awaitable: Any) -> None:
    """An asynchronous handler (none is, in ipykernel 7.0-7.4): run it on a loop of its own,
    in a helper thread, since this thread's loop is busy running the waiting cell."""
    import asyncio

    async def run() -> None:
        await awaitable

    helper = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    helper.start()
    helper.join()


__all__ = ["RELAYED", "available", "install", "diverted", "wait", "handle", "handle_all"]
