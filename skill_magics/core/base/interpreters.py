"""Which program runs a script: by extension, else by shebang; skill venvs for Python.

Example:
    >>> spec = interpreter_for(Path("scripts/x.py"))
    >>> spec.script_type, spec.interpreter
    ('python', 'python3')
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path

# extension -> (script_type, interpreter name as users write it in allowed_interpreters)
EXTENSIONS: dict[str, tuple[str, str]] = {
    ".py": ("python", "python3"),
    ".sh": ("bash", "bash"),
    ".bash": ("bash", "bash"),
    ".js": ("node", "node"),
    ".mjs": ("node", "node"),
    ".cjs": ("node", "node"),  # CommonJS next to ESM (obra/superpowers' server.cjs)
    ".rb": ("ruby", "ruby"),
    ".pl": ("perl", "perl"),
    # `tsx` from PATH, only when "tsx" is allowed. Never `npx tsx`: with cwd = the skill, npx
    # runs the skill's own node_modules/.bin/tsx, or downloads tsx when it finds none.
    ".ts": ("typescript", "tsx"),
}

# Interpreter names that mean the same program for allow-listing purposes.
ALIASES: dict[str, str] = {
    "python": "python3",
    "python3": "python3",
    "nodejs": "node",
    "zsh": "zsh",
}

DEFAULT_ALLOWED: tuple[str, ...] = ("python3", "bash", "sh", "node")

# canonical() interpreter name -> script_type
_SHEBANG_TYPES = {
    "python3": "python",
    "bash": "bash",
    "sh": "sh",
    "node": "node",
    "ruby": "ruby",
    "perl": "perl",
    "tsx": "typescript",
}


@dataclass(frozen=True)
class InterpreterSpec:
    """How a script is run. ``interpreter`` is the allow-list name; ``argv`` the command prefix."""

    script_type: str
    interpreter: str
    argv: tuple[str, ...]  # e.g. ("python3",), ("tsx",), ("/bin/bash", "-e"); never "env"


def canonical(name: str) -> str:
    """Normalise an interpreter name for allow-list comparison (python -> python3)."""
    base = os.path.basename(name)
    if base.startswith("python3.") or base == "python":
        base = "python3"
    return ALIASES.get(base, base)


def parse_shebang(first_line: str) -> tuple[str, ...] | None:
    """``#!/usr/bin/env -S python3 -u`` -> ("python3", "-u"); None when not a shebang."""
    if not first_line.startswith("#!"):
        return None
    try:
        parts = shlex.split(first_line[2:].strip())
    except ValueError:
        parts = first_line[2:].split()
    if not parts:
        return None
    if os.path.basename(parts[0]) == "env":
        rest = parts[1:]
        # env's own options (-S, -i, ...) come before the program; the program's flags after it
        while rest and rest[0].startswith("-"):
            rest = rest[1:]
        return tuple(rest) or None
    return tuple(parts)


def read_first_line(path: Path, limit: int = 256) -> str:
    try:
        with open(path, "rb") as fh:
            head = fh.read(limit)
    except OSError:
        return ""
    return head.split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")


def interpreter_for(path: Path, first_line: str | None = None) -> InterpreterSpec | None:
    """Interpreter by extension, else by shebang; None when the file is not a script."""
    ext = path.suffix.lower()
    if ext in EXTENSIONS:
        script_type, name = EXTENSIONS[ext]
        return InterpreterSpec(script_type, name, (name,))
    if first_line is None:
        first_line = read_first_line(path)
    shebang = parse_shebang(first_line)
    if not shebang:
        return None
    # By canonical name: #!/usr/bin/python3.11 is Python (the skill's venv or the kernel's
    # runs it, and its docstring describes it), not a program called "python3.11".
    name = canonical(shebang[0])
    script_type = _SHEBANG_TYPES.get(name, name)
    # Keep absolute interpreter paths (#!/bin/bash) as written, flags after it too.
    return InterpreterSpec(script_type, name, tuple(shebang))


# Where a skill's own interpreter may be, in the order looked at (POSIX, then Windows).
VENV_PYTHON_CANDIDATES = tuple(
    f"{venv}/{rel}"
    for venv in ("venv", ".venv")
    for rel in ("bin/python", "bin/python3", "Scripts/python.exe")
)


def skill_venv_python(skill_base_dir: Path) -> Path | None:
    """The Python of the skill's own ``venv/`` or ``.venv/`` (POSIX or Windows layout)."""
    for rel in VENV_PYTHON_CANDIDATES:
        candidate = Path(skill_base_dir) / rel
        if candidate.is_file():
            return candidate
    return None


__all__ = [
    "VENV_PYTHON_CANDIDATES",
    "EXTENSIONS",
    "DEFAULT_ALLOWED",
    "InterpreterSpec",
    "canonical",
    "parse_shebang",
    "read_first_line",
    "interpreter_for",
    "skill_venv_python",
]
