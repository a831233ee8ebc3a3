"""What an earlier session of this IPython did that this one has not (issue 44 item 8).

``%skills add DIR`` lasts one kernel: after a restart a skill of that folder is "not found",
and the closest name in the folders searched (an unrelated skill) was all the error offered.
IPython keeps every session's input in its history database: a ``%skills add`` line of an
earlier session whose folder holds the skill asked for is what the person needs to run again.
Read only when a skill is not found; nothing is written.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

SEARCHED = 500  # history lines of earlier sessions looked at, newest first


def added_before(shell: Any, name: str) -> tuple[str, str] | None:
    """(the ``%skills add`` line, its folder) of an earlier session whose folder holds a
    skill called ``name``, the newest first; None when there is none (or no history)."""
    history = getattr(shell, "history_manager", None)
    if history is None or not name or not getattr(history, "enabled", False):
        return None
    try:
        rows = list(history.search("*skills add *", raw=True, n=SEARCHED))
    except Exception:  # noqa: BLE001 - a locked or damaged history database: no hint
        return None
    current = getattr(history, "session_number", None)
    for session, _line, source in reversed(rows):
        if session == current:
            continue
        for text in str(source).splitlines():
            folder = _added_folder(text)
            if folder is not None and _holds(folder, name):
                return text.strip(), folder
    return None


def _added_folder(line: str) -> str | None:
    """DIR of a ``%skills add DIR`` line (not ``mcp``, not an option), else None."""
    text = line.strip()
    if not text.startswith("%skills add "):
        return None
    try:
        words = shlex.split(text[len("%skills add ") :])
    except ValueError:
        return None
    if len(words) != 1 or words[0].startswith("-") or words[0] == "mcp" or "{" in words[0]:
        return None
    return words[0]


def _holds(folder: str, name: str) -> bool:
    from skill_magics.core.catalog.discovery import SkillFinder

    path = Path(folder).expanduser()
    if not path.is_dir():
        return False
    try:
        return any(m.name == name for m in SkillFinder([path]).list_skills())
    except Exception:  # noqa: BLE001 - an unreadable folder: no hint from it
        return False


def restart_hint(shell: Any, name: str) -> str | None:
    """The not-found line when an earlier session added the skill's folder, else None."""
    found = added_before(shell, name)
    if found is None:
        return None
    line, folder = found
    return (
        f"No skill named {name!r} in this kernel: it is in {folder}, which an earlier session "
        f"added with `{line}` (a kernel restart forgets added folders): run that line again, "
        "or put the folder in SKILL_MAGICS_PATH"
    )


__all__ = ["added_before", "restart_hint"]
