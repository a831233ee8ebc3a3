"""The comm relay: on ipykernel 7.x, a panel's widget messages reach the cell that waits.

ipykernel 7 reads the shell socket on its "Shell channel" thread and forwards each message to
the thread that handles it: a subshell's, or, without a ``subshell_id`` (VS Code, whose
kernel proxy never uses subshells; JupyterLab with subshells off), the main thread, which is
blocked by the very cell waiting for the click. So the click would wait for the cell, and
the cell for the click (microsoft/vscode-jupyter#17360, Kirill888/jupyter-ui-poll#56).

The relay puts itself in front of that forwarding (the shell stream's receive callback, set
in the shell channel thread once, on first use). While a thread waits (:func:`diverted`,
entered *before* the panel is built):

- every comm the waiting thread opens (the panel's widgets) is diverted from the moment it is
  registered, before its ``comm_open`` leaves the kernel: a ``comm_msg`` or ``comm_close``
  for it goes into that wait's inbox, whatever its ``subshell_id``, so even a click sent the
  instant the comm opens reaches the waiting thread. The waiting thread takes the messages
  from the inbox and hands each to the kernel's own handler (``shell_handlers``), so widget
  callbacks run on the thread that runs the cell, as they always do; messages left in the
  inbox when the wait ends are handled then, so no typed value or click is lost. The inbox
  is bounded: when it is full the shell channel thread waits for the waiting thread, which
  is taking messages out;
- everything else bound for the waiting thread's shell (other widgets' updates, the next
  cell of Run All) is held, in order, in a backlog in front of that shell's pipe and fed into
  the pipe only as fast as it takes them. Without it the shell channel thread blocks once the
  pipe is full (ZeroMQ's high-water mark: about 3,500 messages), and stops reading the shell
  socket, the click included. The held messages are handled by that shell after the cell,
  exactly as they would have been without the relay (same thread, same order). The backlog
  is bounded too (:data:`HOLD_LIMIT` messages, :data:`HOLD_BYTES`): past it the relay stops
  reading the shell socket until the shell takes some, and a click behind that many
  messages waits as it did before.

Everything else goes on exactly as before; when no thread waits and nothing is held, the
router only forwards.

The ipykernel internals read here (``shell_channel_thread``, ``shell_stream``,
``shell_channel_thread_main``, the subshell manager's pipes, ``comm_manager``) are the same
from 7.0 to 7.4 (read in each release's source; run by the kernel matrix on 7.3 and 7.4);
when one is missing, :func:`available` is False and the caller does not block (a missing
pipe or comm manager only turns the backlog or the early capture off).
"""

from __future__ import annotations

import asyncio
import inspect
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

RELAYED = frozenset({"comm_msg", "comm_close"})
INSTALL_TIMEOUT_S = 10.0  # how long to wait for the shell channel thread to take the router
INBOX_BOUND = 1000  # a wait's own messages not yet taken (then the shell channel thread waits)
HOLD_LIMIT = 100_000  # messages held for a waiting shell before the relay stops reading
HOLD_BYTES = 256 * 2**20  # ... or bytes held
FLUSH_EVERY_S = 0.02  # how often a backlog looks whether its shell's pipe has room
_NO_SHELL = object()  # a waiting thread that is no shell of the kernel's (held: nothing)

_lock = threading.Lock()  # the router's tables (shell channel thread and waiting threads)
_install_lock = threading.Lock()  # one router per kernel, even for two waits at once


class Inbox:
    """A bounded first-in-first-out queue from the shell channel thread to one waiting thread.

    ``put`` waits while it is full, and returns False once the wait has ended (``close``):
    the message then takes the kernel's ordinary route.
    """

    def __init__(self, bound: int = INBOX_BOUND) -> None:
        self.bound = bound
        self._items: deque[Any] = deque()
        self._cond = threading.Condition()
        self.closed = False

    def put(self, item: Any) -> bool:
        with self._cond:
            while len(self._items) >= self.bound and not self.closed:
                self._cond.wait(0.5)
            if self.closed:
                return False
            self._items.append(item)
            self._cond.notify_all()
            return True

    def get(self, timeout: float) -> Any:
        """The oldest message; ``queue.Empty`` when none came within ``timeout`` s."""
        with self._cond:
            if not self._items and not self._cond.wait_for(lambda: self._items, timeout):
                raise queue.Empty
            item = self._items.popleft()
            self._cond.notify_all()
            return item

    def close(self) -> list[Any]:
        """No more puts; returns what is left, in order."""
        with self._cond:
            self.closed = True
            rest = list(self._items)
            self._items.clear()
            self._cond.notify_all()
            return rest


@dataclass
class _Wait:
    """One waiting thread's: its inbox, the comms diverted to it, the shell it blocks."""

    inbox: Inbox
    shell: object  # the subshell id it runs on (None: the main shell), or _NO_SHELL
    comm_ids: set[str] = field(default_factory=set)
    depth: int = 1  # a wait inside a widget callback of a wait on the same thread shares it


class _Router:
    """The shell stream's receive callback: diverts the waited-on comms, holds what is bound
    for a waiting shell, forwards the rest."""

    def __init__(self, kernel: Any, stream: Any, forward: Any) -> None:
        self.kernel = kernel
        self.stream = stream
        self.forward = forward
        # under _lock:
        self.waits: dict[int, _Wait] = {}  # thread ident -> its wait
        self.by_comm: dict[str, _Wait] = {}  # comm_id -> the wait it is diverted to
        self.waiting_shells: set[object] = set()  # shells whose thread is waiting
        # shell channel thread only:
        self.held: dict[object, deque[Any]] = {}  # shell -> messages held for it, in order
        self.held_bytes = 0
        self.paused = False  # stopped reading the shell socket: too much held
        # hook(header, raw) -> True when it answered the message itself (reconnect.py)
        self.interceptors: list[Any] = []

    # -- the shell channel thread -----------------------------------------------------------

    def __call__(self, msg: Any) -> Any:
        if not (self.waits or self.held or self.interceptors):
            return self.forward(msg)
        try:
            header, content = self._peek(msg)
        except Exception:  # not ours to judge: the kernel's own routing logs bad messages
            return self.forward(msg)
        if any(hook(header, msg) for hook in list(self.interceptors)):
            return None
        if header.get("msg_type") in RELAYED and self._divert(msg, content):
            return None
        shell = header.get("subshell_id")
        with _lock:
            hold = shell in self.waiting_shells
        if hold or shell in self.held:
            self._hold(shell, msg)
            return None
        return self.forward(msg)

    def _peek(self, msg: Any) -> tuple[dict[str, Any], Any]:
        session = self.kernel.session
        _idents, frames = session.feed_identities(msg, copy=False)
        peek = session.deserialize(frames, content=False, copy=False)
        header = peek["header"]
        if header.get("msg_type") not in RELAYED:
            return header, None
        return header, session.unpack(peek["content"])

    def _divert(self, msg: Any, content: Any) -> bool:
        comm_id = content.get("comm_id") if isinstance(content, dict) else None
        with _lock:
            wait = self.by_comm.get(comm_id) if isinstance(comm_id, str) else None
        # Outside the lock: a full inbox waits for its thread, which may need the lock to end.
        return wait is not None and wait.inbox.put(msg)

    def _hold(self, shell: object, msg: Any) -> None:
        backlog = self.held.get(shell)
        if backlog is None:
            backlog = self.held[shell] = deque()
            asyncio.ensure_future(self._feed(shell, backlog))
        backlog.append(msg)
        self.held_bytes += _size(msg)
        held = sum(len(b) for b in self.held.values())
        if not self.paused and (held >= HOLD_LIMIT or self.held_bytes >= HOLD_BYTES):
            self.paused = True  # leave the rest on the shell socket until the shell takes some
            self.stream.stop_on_recv()

    async def _feed(self, shell: object, backlog: deque[Any]) -> None:
        """Move held messages into ``shell``'s pipe, in order, only while it has room: the
        shell channel thread must never block on a pipe nobody reads."""
        pipe = _pipe(self.kernel, shell)
        try:
            while backlog:
                if pipe is not None and not pipe.poll(0, _pollout()):
                    await asyncio.sleep(FLUSH_EVERY_S)
                    continue
                msg = backlog.popleft()
                self.held_bytes -= _size(msg)
                result = self.forward(msg)
                if inspect.isawaitable(result):
                    await result
                self._resume_if_room()
        finally:
            self.held.pop(shell, None)
            self._resume_if_room()

    def _resume_if_room(self) -> None:
        held = sum(len(b) for b in self.held.values())
        if self.paused and held < HOLD_LIMIT // 2 and self.held_bytes < HOLD_BYTES // 2:
            self.paused = False
            self.stream.on_recv(self, copy=False)

    # -- the comm manager (any thread) --------------------------------------------------------

    def registered(self, comm_id: Any) -> None:
        """A comm was registered on this thread: divert it if this thread waits."""
        if not isinstance(comm_id, str):
            return
        with _lock:
            wait = self.waits.get(threading.get_ident())
            if wait is not None:
                wait.comm_ids.add(comm_id)
                self.by_comm[comm_id] = wait


def _size(msg: Any) -> int:
    return sum(len(frame) for frame in msg)  # a zmq.Frame's length is its size: no copy


def _pollout() -> int:
    import zmq

    return zmq.POLLOUT


def _pipe(kernel: Any, shell: object) -> Any:
    """The socket the shell channel thread writes ``shell``'s messages to (None: unknown)."""
    manager = getattr(kernel.shell_channel_thread, "manager", None)
    getter = getattr(manager, "get_shell_channel_to_subshell_socket", None)
    try:
        return getter(shell) if callable(getter) else None
    except Exception:  # a subshell deleted meanwhile: the kernel's routing answers for it
        return None


def _shell_of_this_thread(kernel: Any) -> object:
    """The subshell id this thread runs (None: the main shell), or _NO_SHELL."""
    thread = kernel.shell_channel_thread
    if threading.current_thread() is getattr(thread, "parent_thread", threading.main_thread()):
        return None
    finder = getattr(getattr(thread, "manager", None), "subshell_id_from_thread_id", None)
    try:
        return finder(threading.get_ident()) if callable(finder) else _NO_SHELL
    except Exception:  # not a shell of this kernel (a helper thread)
        return _NO_SHELL


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
            router = _Router(kernel, stream, forward)
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
        _watch_comms(kernel, made[0])
        kernel._skill_magics_relay = made[0]
        return made[0]


def _watch_comms(kernel: Any, router: _Router) -> None:
    """Tell the router of every comm registered, before its comm_open is sent (the comm
    package registers a comm, then publishes it)."""
    manager = getattr(kernel, "comm_manager", None)
    original = getattr(manager, "register_comm", None)
    if manager is None or not callable(original):
        return

    def register_comm(comm: Any) -> Any:
        router.registered(getattr(comm, "comm_id", None))
        return original(comm)

    manager.register_comm = register_comm


@contextmanager
def diverted(kernel: Any, comm_ids: Iterable[str] = ()) -> Iterator[Inbox | None]:
    """While inside, this thread's comms (the ones it opens inside, and ``comm_ids``) come to
    the yielded inbox, and what else is bound for this thread's shell is held in order
    (None: unavailable). Enter it before the panel is built.

    On leaving, what is still in the inbox is handled on this thread, after the comms were
    given back to the kernel's routing, so nothing is lost or handled twice.
    """
    router = install(kernel)
    if router is None:
        yield None
        return
    me = threading.get_ident()
    with _lock:
        wait = router.waits.get(me)
        if wait is None:
            wait = router.waits[me] = _Wait(Inbox(), _shell_of_this_thread(kernel))
            if wait.shell is not _NO_SHELL:
                router.waiting_shells.add(wait.shell)
        else:
            wait.depth += 1
        for comm_id in comm_ids:
            wait.comm_ids.add(comm_id)
            router.by_comm[comm_id] = wait
    try:
        yield wait.inbox
    finally:
        with _lock:
            wait.depth -= 1
            last = wait.depth == 0
            if last:
                del router.waits[me]
                router.waiting_shells.discard(wait.shell)
                for comm_id in wait.comm_ids:
                    if router.by_comm.get(comm_id) is wait:
                        del router.by_comm[comm_id]
        if last:
            for msg in wait.inbox.close():
                handle(kernel, msg)


def divert(kernel: Any, comm_ids: Iterable[str]) -> None:
    """Also divert ``comm_ids`` to this thread's wait (inside :func:`diverted`)."""
    router = _router(kernel)
    if router is None:
        return
    with _lock:
        wait = router.waits.get(threading.get_ident())
        if wait is None:
            return
        for comm_id in comm_ids:
            wait.comm_ids.add(comm_id)
            router.by_comm[comm_id] = wait


def handle_all(kernel: Any, inbox: Inbox) -> None:
    """Handle every message in ``inbox`` now, in order."""
    while True:
        try:
            msg = inbox.get(0)
        except queue.Empty:
            return
        handle(kernel, msg)


def wait(
    kernel: Any,
    inbox: Inbox,
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

    async def run() -> None:
        await awaitable

    helper = threading.Thread(target=asyncio.run, args=(run(),), daemon=True)
    helper.start()
    helper.join()


__all__ = [
    "RELAYED",
    "INBOX_BOUND",
    "HOLD_LIMIT",
    "HOLD_BYTES",
    "Inbox",
    "available",
    "install",
    "diverted",
    "divert",
    "wait",
    "handle",
    "handle_all",
]
