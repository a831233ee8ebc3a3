"""A frontend that connects while a cell waits for a click is answered (issue 44).

A reloaded page (or a second client) starts with a ``kernel_info_request`` on the main shell.
ipykernel 7 hands shell messages to the shell one at a time, so while a cell waits for an
approval that request waits behind it: the page reads "Unknown", a new cell stays ``[*]``, and
only Kernel > Interrupt (dropping the queued cells) or ``approval_timeout`` ended it.

While a cell waits (:func:`answering`), the relay's router (approval/relay.py, in the shell
channel thread) answers a ``kernel_info_request`` bound for the waiting shell itself, as
ipykernel's own handler would (``kernel.kernel_info``), framed by busy/idle statuses with that
request as parent, then says again that the kernel is busy (with the waiting cell as parent;
a frontend shows the last status of any shell, so a subshell's idle can still follow). The
request is not passed on, so it is answered once. The reloaded page does not show the waiting
panel (JupyterLab shows a request's outputs only in the page that sent it): a page that shows
it, Kernel > Interrupt or ``approval_timeout`` ends the wait. On ipykernel 6.x the pumping
wait (PUMP) handles kernel_info itself; elsewhere nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from skill_magics.notebook.approval import relay

ANSWERED = "kernel_info_request"


def _shell_of(parent: Any) -> Any:
    """The subshell id the waiting cell's request ran on (None: the main shell)."""
    header = (parent or {}).get("header") or {}
    return header.get("subshell_id")


def waiting_parent(kernel: Any) -> Any:
    """The shell request this thread runs (the waiting cell's), or {}: read it on the
    cell's own thread (ipykernel 7 keeps it in a context variable)."""
    try:
        return (kernel.get_parent("shell") or {}) if kernel is not None else {}
    except Exception:  # noqa: BLE001 - no parent known: the main shell, no busy re-statement
        return {}


@contextmanager
def answering(kernel: Any, waiting_parent: Any) -> Iterator[bool]:
    """While inside, a kernel_info_request for the shell the waiting cell (its request:
    ``waiting_parent``) runs on is answered by the shell channel thread (yields False where
    the kernel has no relay: nothing changes)."""
    router = relay.install(kernel) if kernel is not None and relay.available(kernel) else None
    if router is None:
        yield False
        return
    shell = _shell_of(waiting_parent)

    def hook(header: dict[str, Any], raw: Any) -> bool:
        if header.get("msg_type") != ANSWERED or header.get("subshell_id") != shell:
            return False
        _answer(kernel, raw, waiting_parent)
        return True

    router.interceptors.append(hook)
    try:
        yield True
    finally:
        try:
            router.interceptors.remove(hook)
        except ValueError:
            pass


def _answer(kernel: Any, raw: Any, waiting_parent: Any) -> None:
    """What ipykernel's kernel_info_request handler sends, from the shell channel thread."""
    session = kernel.session
    try:
        idents, frames = session.feed_identities(raw, copy=False)
        request = session.deserialize(frames, content=True, copy=False)
        kernel._publish_status("busy", "shell", parent=request)
        content = {"status": "ok"}
        content.update(kernel.kernel_info)
        session.send(kernel.shell_stream, "kernel_info_reply", content, request, idents)
        kernel._publish_status("idle", "shell", parent=request)
        if waiting_parent:
            kernel._publish_status("busy", "shell", parent=waiting_parent)
    except Exception:  # noqa: BLE001 - never break the kernel's reading of its shell socket
        kernel.log.error("skill_magics could not answer kernel_info", exc_info=True)


__all__ = ["answering", "waiting_parent"]
