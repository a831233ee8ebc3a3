"""The kernel's end of the Skills side panel (core/panel/): wiring only.

At ``%load_ext`` in an ipykernel the channel starts (core/panel/channel.py: a thread serving
a private unix socket, named from the kernel's connection file, answering only requests
signed with its connection key), so the Jupyter server that owns this kernel
(``skill_magics.server``) can show and answer its questions even while a cell blocks the
kernel's main thread. The questions are the cell panels this kernel shows
(``SkillMagics.panels``); an answer from the side panel goes into the same panel object a
click does, so the first answer wins in either view and the cell's panel says who decided.

Kernels without the server part (VS Code, plain IPython, Colab) see no difference: nobody
connects, and terminal IPython has no connection file, so nothing starts. Set
``SKILL_MAGICS_SIDE_PANEL=0`` to keep the channel off.
"""

from __future__ import annotations

import os
import sys
from typing import Any

_ATTR = "_skill_magics_side_panel"  # the ChannelServer on the shell


def connection_file(shell: Any) -> str:
    """This kernel's connection file ("" outside an ipykernel kernel)."""
    if getattr(shell, "kernel", None) is None or "ipykernel" not in sys.modules:
        return ""
    try:
        from ipykernel.connect import get_connection_file

        return str(get_connection_file())
    except Exception:  # noqa: BLE001 - no kernel app (an embedded shell): no side panel
        return ""


def start(shell: Any, magics: Any) -> Any:
    """Serve the side panel for ``magics`` (a SkillMagics) in this kernel; the server, or
    None when there is no kernel to serve (or it is turned off). Idempotent."""
    if os.environ.get("SKILL_MAGICS_SIDE_PANEL", "1") == "0":
        return None
    running = getattr(shell, _ATTR, None)
    if running is not None:
        return running
    path = connection_file(shell)
    key = getattr(getattr(shell.kernel, "session", None), "key", b"") if path else b""
    if not path or not key:
        return None
    from skill_magics.core.base.errors import SidePanelError
    from skill_magics.core.panel import channel

    board: list[Any] = []  # made on the first request: %load_ext stays light

    def handle(op: str, args: dict[str, Any]) -> Any:
        if not board:
            board.append(_board(magics))
        return board[0].handle(op, args)

    try:
        server = channel.serve(path, key, handle)
    except (SidePanelError, OSError) as exc:
        print(f"skill_magics: the Skills side panel is off: {exc}", file=sys.stderr)
        return None
    setattr(shell, _ATTR, server)
    return server


def stop(shell: Any) -> None:
    """Close the channel (``%unload_ext``)."""
    server = getattr(shell, _ATTR, None)
    if server is not None:
        server.close()
        delattr(shell, _ATTR)


def _board(magics: Any) -> Any:
    from skill_magics.core.panel.board import Board
    from skill_magics.notebook.approval import reconnect
    from skill_magics.notebook.approval.panel import summary_text

    return Board(
        lambda: magics.manager,
        questions=lambda: list(magics.panels),
        describe=summary_text,
        preapprovals=lambda: preapprovals(magics),
        revoke_preapproval=lambda key: revoke_preapproval(magics, key),
        show_result=lambda kept: result_view(kept, magics.max_display_chars),
        place=reconnect.place,
    )


def result_view(kept: Any, max_display_chars: int = 100_000) -> dict[str, Any]:
    """A kept run result (core/base/recent.py) as the side panel shows it: the header and
    the five tabs of the cell's result (render/sections.py), as text (ANSI codes stripped,
    control characters made visible); a stream the store cut says so in its notes."""
    from skill_magics.core.base.recent import STREAM_BYTES
    from skill_magics.notebook.render.ansi import strip_ansi
    from skill_magics.notebook.render.sections import header, message, sections
    from skill_magics.notebook.result import SkillRunResult

    rec = kept.record
    run = SkillRunResult.from_execution(
        rec.skill, rec.script, kept.result, max_display_chars=max_display_chars
    )
    h = header(run)
    tabs = []
    for section in sections(run):
        notes = list(section.notes)
        dropped = kept.dropped.get(section.title, 0)
        if dropped:
            notes.append(
                f"the side panel keeps the first {STREAM_BYTES:,} bytes of each stream of a "
                f"run: {dropped:,} more characters of {section.title} were dropped here (the "
                f"cell's result has them: result.{section.title})"
            )
        text = strip_ansi(section.text) if section.is_output else section.text
        tabs.append(
            {
                "title": section.title,
                "text": text,
                "notes": notes,
                "placeholder": section.placeholder,
            }
        )
    return {
        "id": kept.id,
        "time": rec.timestamp,
        "name": h.name,
        "script": h.script,
        "status": str(getattr(h.status, "value", h.status)),
        "label": h.label,
        "exit_code": h.exit_code,
        "took": h.time,
        "start": h.start,
        "sandbox": h.sandbox,
        "arguments": rec.arguments,  # redacted and cut when recorded (audit.py)
        "message": message(run),
        "sections": tabs,
    }


def preapprovals(magics: Any) -> list[dict[str, str]]:
    """What configuration approves without asking: ``{"key", "what"}`` each, the key what
    :func:`revoke_preapproval` takes."""
    from skill_magics.core.base.namelist import name_list
    from skill_magics.notebook.approval.preapproval import AUTO_APPROVE_ENV

    found = []
    if not magics.require_approval:
        found.append({"key": "require_approval", "what": "SkillMagics.require_approval = False"})
    for pattern in name_list(magics.auto_approve):
        found.append({"key": f"config:{pattern}", "what": f"SkillMagics.auto_approve: {pattern}"})
    for pattern in name_list(os.environ.get(AUTO_APPROVE_ENV)):
        found.append({"key": f"env:{pattern}", "what": f"{AUTO_APPROVE_ENV}: {pattern}"})
    return found


def revoke_preapproval(magics: Any, key: str) -> bool:
    """End one pre-approval for this kernel (the next run asks); False when there was none.
    The env var's entry goes from this kernel's environment only."""
    from skill_magics.core.base.namelist import name_list
    from skill_magics.notebook.approval.preapproval import AUTO_APPROVE_ENV

    kind, _, pattern = key.partition(":")
    if key == "require_approval":
        if magics.require_approval:
            return False
        magics.require_approval = True
        return True
    if kind == "config":
        patterns = name_list(magics.auto_approve)
        if pattern not in patterns:
            return False
        magics.auto_approve = [p for p in patterns if p != pattern]
        return True
    if kind == "env":
        patterns = name_list(os.environ.get(AUTO_APPROVE_ENV))
        if pattern not in patterns:
            return False
        rest = [p for p in patterns if p != pattern]
        if rest:
            os.environ[AUTO_APPROVE_ENV] = ",".join(rest)
        else:
            os.environ.pop(AUTO_APPROVE_ENV, None)
        return True
    return False


__all__ = [
    "connection_file",
    "preapprovals",
    "result_view",
    "revoke_preapproval",
    "start",
    "stop",
]
