"""Short, recognisable path labels for tables (./skills/pdf, ~/.claude/skills/x)."""

from __future__ import annotations

import os
from pathlib import Path


def display_path(path: str | os.PathLike[str] | None) -> str:
    """Relative to the working directory when inside it, ``~`` for home, else absolute."""
    if path is None:
        return ""
    p = Path(path)
    for base, prefix in ((Path.cwd(), "."), (Path.home(), "~")):
        try:
            rel = p.relative_to(base)
        except ValueError:
            continue
        return prefix if str(rel) == "." else f"{prefix}/{rel.as_posix()}"
    return str(p)


__all__ = ["display_path"]
