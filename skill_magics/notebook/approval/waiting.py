"""How a cell can wait for an approval click (docs/architecture.md, *Waiting for a click*).

Which strategy works depends on the kernel, and must not depend on the frontend: JupyterLab
sends widget messages on kernel subshells (ipykernel >= 7), VS Code and JupyterLab with
subshells off on the main shell, which the waiting cell itself blocks.

- ipykernel >= 7.4, the cell awaits (magics/rewrite.py): the kernel dispatches widget
  messages while a top-level ``await`` is pending (AWAIT);
- ipykernel 7.x, a blocking wait: the panel's widget messages are relayed from the kernel's
  shell channel thread to the waiting thread, which handles them (RELAY, approval/relay.py);
- ipykernel 6.x: pump ``kernel.do_one_iteration()`` (deferring other cells, replayed later);
- anything else, or after ``approval_timeout``: do not block; a later click runs the script.

Nobody can click when the execute_request has ``allow_stdin`` false (nbclient, papermill,
nbconvert): that is HEADLESS. Without a kernel (terminal IPython) we ask with ``input()``
when stdin is a TTY. ``approval_ui = "stdin"`` (or "terminal") asks with ``input()`` in a
notebook too: the frontend's input box (an ``input_request``; Colab shows one), STDIN.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import enum
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from skill_magics.notebook.approval import relay
from skill_magics.notebook.compat import ipykernel_version

SLICE_S = 0.25  # wait granularity: short enough that Kernel > Interrupt feels immediate


class Strategy(enum.StrEnum):
    AWAIT = "await"
    RELAY = "relay"
    THREAD = "thread"
    PUMP = "pump"
    NONBLOCKING = "nonblocking"
    HEADLESS = "headless"
    TERMINAL = "terminal"
    STDIN = "stdin"
    UNAVAILABLE = "unavailable"


def get_kernel(shell: Any) -> Any | None:
    """The ipykernel Kernel behind ``shell`` (None in terminal IPython or a bare shell)."""
    kernel = getattr(shell, "kernel", None)
    return kernel if kernel is not None and hasattr(kernel, "shell_handlers") else None


def stdin_allowed(kernel: Any) -> bool:
    """Whether the current execute_request allows stdin (False for nbclient/papermill)."""
    try:
        parent = kernel.get_parent("shell")
    except Exception:  # very old ipykernel: no get_parent
        parent = getattr(kernel, "_parent_header", None)
    content = (parent or {}).get("content") or {}
    if "allow_stdin" in content:
        return bool(content["allow_stdin"])
    return bool(getattr(kernel, "_allow_stdin", True))


def supports_await(shell: Any) -> bool:
    """ipykernel >= 7.4 dispatches widget messages while a top-level await is pending."""
    version = ipykernel_version()
    if get_kernel(shell) is None or version is None or version < (7, 4):
        return False
    if not getattr(shell, "autoawait", False):
        return False
    try:  # ipykernel only runs the cell as a coroutine with IPython's asyncio runner
        from IPython.core.async_helpers import _asyncio_runner
    except ImportError:
        return False
    return getattr(shell, "loop_runner", None) is _asyncio_runner


def choose(shell: Any, *, in_coroutine: bool, mode: str = "auto") -> Strategy:
    """Pick the waiting strategy for this cell.

    ``mode`` is ``SkillMagics.approval_ui``: "auto", "widgets" (force a blocking widget wait:
    await in a coroutine, else the relay where the kernel has one, else a thread event),
    "nonblocking", or "stdin"/"terminal" (ask with ``input()``: the frontend's input box in
    a kernel, else a terminal).
    """
    kernel = get_kernel(shell)
    if kernel is not None and not stdin_allowed(kernel):
        return Strategy.HEADLESS
    if mode in ("stdin", "terminal"):
        if kernel is not None:  # this request allows stdin: the frontend shows an input box
            return Strategy.STDIN
        return Strategy.TERMINAL if _stdin_is_tty() else Strategy.UNAVAILABLE
    if mode == "nonblocking":
        return Strategy.NONBLOCKING
    if mode == "widgets":
        if in_coroutine:
            return Strategy.AWAIT
        return Strategy.RELAY if relay.available(kernel) else Strategy.THREAD
    if kernel is None:
        return Strategy.TERMINAL if _stdin_is_tty() else Strategy.UNAVAILABLE
    version = ipykernel_version() or (0,)
    if in_coroutine and version >= (7, 4):
        return Strategy.AWAIT
    if version >= (7, 0) and relay.available(kernel):
        # Blocking: the shell channel thread hands the panel's messages to this thread,
        # whether the frontend sent them on a subshell (JupyterLab) or not (VS Code).
        return Strategy.RELAY
    if (6, 0) <= version < (7, 0) and hasattr(kernel, "do_one_iteration"):
        return Strategy.PUMP
    return Strategy.NONBLOCKING


def _stdin_is_tty() -> bool:
    try:
        return sys.stdin is not None and sys.stdin.isatty()
    except (ValueError, OSError):
        return False


# -- waiting ------------------------------------------------------------------------------


def wait_event(event: threading.Event, timeout: float, stop: threading.Event | None = None) -> bool:
    """Wait in short slices so KeyboardInterrupt lands promptly; True when set in time.

    ``stop`` set (the awaiting cell was interrupted) ends the wait early with False.
    """
    deadline = time.monotonic() + timeout
    while not event.is_set():
        remaining = deadline - time.monotonic()
        if remaining <= 0 or (stop is not None and stop.is_set()):
            return False
        event.wait(min(SLICE_S, remaining))
    return True


def wait_for_click(
    shell: Any,
    event: threading.Event,
    timeout: float,
    stop: threading.Event | None = None,
    inbox: Any = None,
) -> bool:
    """The blocking wait for a click on a panel just shown; True when clicked.

    ``inbox``: the relay's (RELAY: approval/relay.py ``diverted``), whose messages are
    handled here; without one, a plain wait for a click handled on another thread (THREAD).
    """
    kernel = get_kernel(shell)
    if inbox is not None and kernel is not None:
        return relay.wait(kernel, inbox, event, timeout, stop, SLICE_S)
    return wait_event(event, timeout, stop)


def wait_pumping(shell: Any, event: threading.Event, timeout: float) -> bool:
    """ipykernel 6.x: process kernel messages (widget clicks) until ``event`` is set.

    Other cells that arrive meanwhile (Run All) are held back and replayed, in order, after
    the current cell finishes, so they never run inside this one.
    """
    kernel = get_kernel(shell)
    if kernel is None:
        return wait_event(event, timeout)
    deferred: list[tuple[Any, ...]] = []
    original = kernel.shell_handlers.get("execute_request")
    kernel.shell_handlers["execute_request"] = lambda *args: deferred.append(args)
    parent = kernel.get_parent("shell")
    ident = _parent_ident(kernel)
    runner = _LoopThread()
    deadline = time.monotonic() + timeout
    try:
        while not event.is_set():
            if time.monotonic() >= deadline:
                return False
            try:
                runner.run(_one_iteration(kernel), timeout=5)
            finally:
                _restore_parent(kernel, ident, parent)
            if not _queued(kernel):  # more waiting (a flood of widget updates): no pause
                event.wait(0.02)
        return True
    finally:
        runner.stop()
        if original is not None:
            kernel.shell_handlers["execute_request"] = original
        if deferred:
            _replay_after_cell(shell, kernel, deferred)


def _queued(kernel: Any) -> bool:
    """Whether shell messages already read wait in the kernel's queue (6.x ``msg_queue``)."""
    try:
        return bool(kernel.msg_queue.qsize())
    except Exception:  # no such queue: pause between iterations as before
        return False


async def _one_iteration(kernel: Any) -> None:
    result = kernel.do_one_iteration()
    if asyncio.iscoroutine(result) or isinstance(result, asyncio.Future):
        await result


def _parent_ident(kernel: Any) -> Any:
    ident = getattr(kernel, "_parent_ident", None)
    if isinstance(ident, dict):  # ipykernel 6.x keeps one per channel
        return ident.get("shell")
    return ident


def _restore_parent(kernel: Any, ident: Any, parent: Any) -> None:
    try:
        kernel.set_parent(ident, parent, "shell")
    except TypeError:  # older signature without channel
        kernel.set_parent(ident, parent)


def _replay_after_cell(shell: Any, kernel: Any, deferred: list[tuple[Any, ...]]) -> None:
    """Queue the held-back execute_requests behind the current cell, in order.

    They go through the kernel's own dispatcher (``schedule_dispatch`` into ``msg_queue``),
    not a task of their own: a replayed cell then runs inside ``dispatch_queue``, so while it
    pumps for a click nobody awaits ``msg_queue.get()``. Otherwise tornado's ``put_nowait``
    hands the click to that pending getter on the blocked loop, where it waits unread until
    the cell gives up (Run All with two approval cells).
    """

    async def run_one(stream: Any, ident: Any, parent: Any) -> None:
        _restore_parent(kernel, ident, parent)
        if getattr(kernel, "_aborting", False):
            kernel._send_abort_reply(stream, parent, ident)
            return
        # The handler in place now: while another cell pumps, it holds this one back again.
        handler = kernel.shell_handlers["execute_request"]
        # dispatch_shell reported busy/idle when the message was held back: say it again,
        # and arm SIGINT as it does (pre_handler_hook), so Kernel > Interrupt works here too.
        kernel._publish_status("busy", "shell")
        _call_hook(kernel, "pre_handler_hook")
        try:
            result = handler(stream, ident, parent)
            if asyncio.iscoroutine(result):
                await result
        except KeyboardInterrupt:  # as dispatch_shell: an interrupt must not end the kernel
            kernel.log.error("KeyboardInterrupt caught in kernel.")
        finally:
            _call_hook(kernel, "post_handler_hook")
            sys.stdout.flush()
            sys.stderr.flush()
            kernel._publish_status("idle", "shell")

    def hook(*_args: Any) -> None:
        shell.events.unregister("post_execute", hook)
        # Requests that arrived while the wait ended (after the held-back ones) are still in
        # the queue: take them out, queue the held-back cells, put them back behind.
        later = []
        while True:
            try:
                later.append(kernel.msg_queue.get_nowait())
            except Exception:  # QueueEmpty (tornado's or asyncio's)
                break
        for args in deferred:
            kernel.schedule_dispatch(run_one, *args)
        for item in later:
            kernel.msg_queue.put_nowait(item)

    shell.events.register("post_execute", hook)


def _call_hook(kernel: Any, name: str) -> None:
    try:
        getattr(kernel, name)()
    except Exception:  # as dispatch_shell: a hook that cannot signal is not fatal
        pass


class _LoopThread:
    """An event loop in a helper thread: the kernel's own loop is busy running this cell."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any, timeout: float) -> Any:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            return None

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=2)
        if not self.thread.is_alive():
            self.loop.close()


# -- terminal -----------------------------------------------------------------------------

_ANSWERS = {
    "o": "yes_once",
    "once": "yes_once",
    "y": "yes_once",
    "yes": "yes_once",
    "s": "yes_in_session",
    "session": "yes_in_session",
    "n": "no",
    "no": "no",
    "": "no",
}


def ask_terminal(
    summary: str, input_fn: Callable[[str], str] = input, *, full: str | None = None
) -> str:
    """Print ``summary`` and ask; returns "yes_once" | "yes_in_session" | "no".

    With ``full`` (the request with whole scripts), answering ``a`` prints it and asks again.
    Raises EOFError on Ctrl-D / closed stdin (the caller treats that as No).
    """
    print(summary)
    show_all = " / show [a]ll" if full is not None else ""
    while True:
        answer = input_fn(f"Run it? [o]nce / [s]ession / [N]o{show_all}: ").strip().lower()
        if full is not None and answer in ("a", "all"):
            print(full)
            continue
        if answer in _ANSWERS:
            return _ANSWERS[answer]
        print("Please answer o (yes once), s (yes in session) or n (no).")


__all__ = [
    "SLICE_S",
    "Strategy",
    "ipykernel_version",
    "get_kernel",
    "stdin_allowed",
    "supports_await",
    "choose",
    "wait_event",
    "wait_for_click",
    "wait_pumping",
    "ask_terminal",
]
