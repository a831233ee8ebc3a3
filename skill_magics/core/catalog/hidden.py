"""Skills that discovery does not see because they sit in hidden folders.

Discovery skips dot-folders (``.git``, ``.venv``, caches). Some collections keep their skills
there on purpose: openai/skills has ``skills/.curated``, ``.system`` and ``.experimental``.
This module counts the SKILL.md files under a search folder's hidden subfolders, so the user
is told how many were skipped and which folder to add (docs/architecture.md, *Real skills*).

Example:
    >>> hidden_skills(Path("skills"))
    {'skills/.system': 1}
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

MAX_DEPTH = 5
# Hidden folders that are tooling, never skill collections: not walked.
NOT_COLLECTIONS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        ".tox",
        ".nox",
        ".cache",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        ".idea",
        ".vscode",
    }
)
SKIP = frozenset({"node_modules", "__pycache__", "venv", "site-packages"})


def hidden_skills(root: Path | str, max_depth: int = MAX_DEPTH) -> dict[str, int]:
    """{hidden folder: number of SKILL.md under it} for the hidden folders below ``root``
    that discovery skips (the outermost hidden folder on each path)."""
    counts: dict[str, int] = {}

    def walk(path: str, depth: int, hidden_top: str | None) -> None:
        try:
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return
        if hidden_top is not None and any(e.name in ("SKILL.md", "skill.md") for e in entries):
            counts[hidden_top] = counts.get(hidden_top, 0) + 1
            return  # a skill's own subfolders are its files
        if hidden_top is None and any(e.name in ("SKILL.md", "skill.md") for e in entries):
            return  # a visible skill: discovery sees it, and its subfolders are its files
        if depth >= max_depth:
            return
        for entry in entries:
            name = entry.name
            if name in SKIP or name in NOT_COLLECTIONS:
                continue
            try:
                if not entry.is_dir(follow_symlinks=False):
                    continue
            except OSError:
                continue
            top = hidden_top
            if top is None and name.startswith("."):
                top = entry.path
            walk(entry.path, depth + 1, top)

    walk(os.fspath(root), 0, None)
    return counts


def hidden_message(root: Path | str, counts: dict[str, int]) -> str:
    """One line: how many SKILL.md lie in hidden folders under ``root`` and how to add them."""
    total = sum(counts.values())
    folders = sorted(counts)
    shown = ", ".join(f"{os.path.basename(f)} ({counts[f]})" for f in folders[:6])
    if len(folders) > 6:
        shown += f", +{len(folders) - 6} more"
    example = folders[0] if folders else os.fspath(root)
    return (
        f"{total} SKILL.md file{'s' if total != 1 else ''} under {root} lie in hidden folders, "
        f"which are not searched: {shown}. Add a folder to use them, e.g. "
        f"%skills add {example} (Python: manager.add_dir({example!r}))"
    )


class HiddenNotes:
    """The notes of one list of search folders (:func:`hidden_message` for each with hidden
    skills), remembered until the folders change or :meth:`clear` (a rescan). Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._seen: tuple[tuple[Path, ...], list[str]] | None = None

    def lines(self, dirs: Sequence[Path]) -> list[str]:
        key = tuple(dirs)
        with self._lock:
            if self._seen is not None and self._seen[0] == key:
                return list(self._seen[1])
        lines = [hidden_message(root, counts) for root in key if (counts := hidden_skills(root))]
        with self._lock:
            self._seen = (key, lines)
        return list(lines)

    def clear(self) -> None:
        with self._lock:
            self._seen = None


__all__ = ["HiddenNotes", "hidden_skills", "hidden_message"]
