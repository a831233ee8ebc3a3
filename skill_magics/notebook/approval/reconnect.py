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
request is not passed on, so it is answered once. On ipykernel 6.x the pumping wait (PUMP)
handles kernel_info itself; elsewhere nothing changes.

JupyterLab shows a request's outputs only in the page that sent it, so the reloaded page
would not show the waiting panel. Each panel shown records where (:func:`shown`): the cell
id the frontend sent in the execute_request's metadata (``cellId``: JupyterLab 4, Notebook
7), that request's msg_id, the output's display id, the panel widget's model id and the
cell's execution count. The side panel's state carries it (:func:`place`, core/panel/
board.py), and the labextension of a page that did not send that request re-attaches the
cell to it: the live panel appears in its cell again, its buttons decide, and the run's
outputs (the panel's update, the result) follow in that cell
(labextension/src/reattach.ts).
"""

from __future__ import annotations

import weakref
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
def answering(kernel: Any, waiting_parent: Any, inbox: Any = None) -> Iterator[bool]:
    """While inside, a kernel_info_request for the shell the waiting cell (its request:
    ``waiting_parent``) runs on is answered by the shell channel thread (yields False where
    the kernel has no relay: nothing changes). With the wait's ``inbox`` (RELAY), what a
    connecting page's widget manager sends first to restore the widgets is handled by the
    waiting thread too (:func:`_restoring`), so a panel shown again is drawn and clicked."""
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

    hooks = [hook] if inbox is None else [hook, _restoring(kernel, shell, inbox)]
    router.interceptors.extend(hooks)
    try:
        yield True
    finally:
        for one in hooks:
            try:
                router.interceptors.remove(one)
            except ValueError:
                pass


CONTROL_TARGET = "jupyter.widget.control"  # ipywidgets 8: all widget states in one reply


def _restoring(kernel: Any, shell: Any, inbox: Any) -> Any:
    """A hook giving the waiting thread what a page's widget manager sends when it connects
    (JupyterLab's ``_loadFromKernel``): the ``comm_open`` of the control comm (sent on the
    main shell before its subshell exists) and that comm's messages, or, for an older
    backend, ``comm_info_request``. Held behind the waiting cell, the page would wait for
    the cell and draw no widget of this kernel, the panel shown again included."""
    control: set[str] = set()  # the control comms opened while the cell waits

    def hook(header: dict[str, Any], raw: Any) -> bool:
        kind = header.get("msg_type")
        if kind == "comm_info_request":
            return header.get("subshell_id") == shell and bool(inbox.put(raw))
        if kind != "comm_open" and (kind not in ("comm_msg", "comm_close") or not control):
            return False  # (a flood of widget updates costs nothing here)
        try:  # a peek, as the relay's router does: the handler checks the signature once
            session = kernel.session
            _idents, frames = session.feed_identities(raw, copy=False)
            content = session.unpack(
                session.deserialize(frames, content=False, copy=False)["content"]
            )
        except Exception:  # noqa: BLE001 - not ours to judge: the kernel's routing logs it
            return False
        comm_id = content.get("comm_id") if isinstance(content, dict) else None
        if not isinstance(comm_id, str):
            return False
        if kind == "comm_open":
            if content.get("target_name") != CONTROL_TARGET or header.get("subshell_id") != shell:
                return False
            control.add(comm_id)
        elif comm_id not in control:  # its later messages, on whichever shell
            return False
        elif kind == "comm_close":
            control.discard(comm_id)
        return bool(inbox.put(raw))

    return hook


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


# panel -> where it is shown (weak: a panel kept nowhere else is forgotten)
_PLACES: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def shown(panel: Any, parent: Any, handle: Any, shell: Any) -> None:
    """Record that ``panel`` is displayed (its display ``handle``) by the cell whose request
    is ``parent`` and waits for it (until :func:`forget`: a page attached to a request that
    ended would wait for ever); nothing when the frontend sent no cell id (VS Code, Colab,
    nbclassic)."""
    display_id = getattr(handle, "display_id", None)
    metadata = (parent or {}).get("metadata") or {}
    header = (parent or {}).get("header") or {}
    cell_id, request = metadata.get("cellId"), header.get("msg_id")
    model_id = getattr(getattr(panel, "widget", None), "model_id", None)
    if not all(isinstance(v, str) and v for v in (cell_id, request, display_id, model_id)):
        return
    # the running cell's number (what its execute_input said): IPython 7-9 give the cell's
    # ExecutionResult to the displayhook while it runs, whenever they advance the counter
    count = getattr(
        getattr(getattr(shell, "displayhook", None), "exec_result", None), "execution_count", None
    )
    try:
        _PLACES[panel] = {
            "cell_id": cell_id,
            "request": request,
            "display_id": display_id,
            "model_id": model_id,
            "execution_count": count if isinstance(count, int) else None,
        }
    except TypeError:  # not weakly referable: not a panel of ours
        pass


def forget(panel: Any) -> None:
    """The cell that showed ``panel`` stops waiting for it (see :func:`shown`)."""
    try:
        _PLACES.pop(panel, None)
    except TypeError:
        pass


def place(question: Any) -> dict[str, Any] | None:
    """Where ``question`` is shown (see :func:`shown`), or None (asked elsewhere)."""
    try:
        found = _PLACES.get(question)
    except TypeError:
        return None
    return dict(found) if found is not None else None


__all__ = ["answering", "forget", "place", "shown", "waiting_parent"]
