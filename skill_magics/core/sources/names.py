"""Names and paths that come from a source, checked before they touch the disk.

Everything a source says is untrusted: a skill folder's name, a file's path in a repository
or an archive, a lock file's keys. A folder name becomes ONE path component, a file path
stays below the skill folder, and neither may hide what it is from a person reading it.

Example:
    >>> folder_name("pdf")
    'pdf'
    >>> relative_path("scripts/run.py")
    'scripts/run.py'
    >>> folder_name("../etc")
    Traceback (most recent call last):
    skill_magics.core.base.errors.SourceError: The skill folder name '../etc' is not used ...
"""

from __future__ import annotations

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.paths import folder_name_problem
from skill_magics.core.base.visible import visible

MAX_PATH_CHARS = 1024
MAX_PATH_DEPTH = 32


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an installed skill's folder name, or None when it can: the
    core rule (``paths.folder_name_problem``: one folder name), and for installs also no
    bidi or other invisible controls, no surrounding space, and no leading dot (a hidden
    folder is not searched) or dash."""
    problem = folder_name_problem(name)
    if problem is not None:
        return problem
    if visible(name) != name or name != name.strip():
        return "it holds control, bidi or surrounding space characters"
    if name.startswith("."):
        return "it starts with a dot (a hidden folder is not searched for skills)"
    if name.startswith("-"):
        return "it starts with a dash"
    return None


def folder_name(name: str, what: str = "skill folder") -> str:
    """``name`` when it is one plain folder name, else SourceError (one line, shown safely)."""
    problem = name_problem(name)
    if problem is not None:
        raise SourceError(
            f"The {what} name {visible(name)!r} is not used as a folder name: {problem}; "
            "rename it in the source, or install the other skills with skills=[...] (--skill)"
        )
    return name


def path_problem(path: str) -> str | None:
    """Why ``path`` (``/``-separated, relative) cannot name a file inside a skill, or None."""
    if not path:
        return "it is empty"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "it is absolute"
    if "\\" in path:
        return "it uses backslashes"
    if "\0" in path or visible(path) != path:
        return "it holds control or bidi characters"
    if len(path) > MAX_PATH_CHARS:
        return f"it is longer than {MAX_PATH_CHARS} characters"
    parts = path.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        return f"it is nested deeper than {MAX_PATH_DEPTH} folders"
    for part in parts:
        if part in ("", ".", ".."):
            return "it has an empty, . or .. component"
        if part == ".git":
            return "it has a .git component"
    return None


def relative_path(path: str, what: str = "file") -> str:
    """``path`` when it is a clean relative path (no ``..``, not absolute), else SourceError."""
    problem = path_problem(path)
    if problem is not None:
        raise SourceError(f"The {what} path {visible(path)!r} is refused: {problem}")
    return path


__all__ = ["folder_name", "name_problem", "relative_path", "path_problem"]
