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
from skill_magics.core.base.paths import MAX_COMPONENT_BYTES, folder_name_problem
from skill_magics.core.base.visible import hides_characters, visible

MAX_PATH_CHARS = 1024
MAX_PATH_DEPTH = 32

# Characters that read as a path separator and are none: a name holding one shows a folder
# that is not there ("scripts\u2215run.py" reads as scripts/run.py). Division and fraction
# slashes, fullwidth and small solidi, big solidus, set minus, box-drawing diagonals.
LOOKALIKE_SEPARATORS = frozenset(
    "\u2044\u2215\u2216\u2571\u2572\u29f5\u29f8\u29f9\ufe68\uff0f\uff3c"
)


def lookalike_problem(text: str) -> str | None:
    """Why ``text`` may not name a file or folder for its look-alike separator, or None.

    >>> lookalike_problem("scripts\u2215run.py")
    'it holds U+2215, which looks like a path separator and is none'
    >>> lookalike_problem("données.csv") is None
    True
    """
    for char in text:
        if char in LOOKALIKE_SEPARATORS:
            return f"it holds U+{ord(char):04X}, which looks like a path separator and is none"
    return None


def name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an installed skill's folder name, or None when it can: the
    core rule (``paths.folder_name_problem``: one folder name), and for installs also no
    bidi or other invisible controls, no surrounding space, and no leading dot (a hidden
    folder is not searched) or dash."""
    problem = folder_name_problem(name)
    if problem is not None:
        return problem
    if hides_characters(name) or name != name.strip():
        return "it holds control, bidi, invisible or surrounding space characters"
    lookalike = lookalike_problem(name)
    if lookalike is not None:
        return lookalike
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
    """Why ``path`` (``/``-separated, relative) cannot name a file inside a skill, or None:
    absolute, ``..``, control, bidi or invisible characters, a look-alike separator, deeper than
    MAX_PATH_DEPTH, or a part longer than a file system takes (MAX_COMPONENT_BYTES). The
    rule for every source: the installer's files and an MCP server's alike.

    >>> path_problem("data/données.csv") is None
    True
    >>> path_problem("a" * 300)
    'a part of it is longer than 255 bytes'
    """
    if not path:
        return "it is empty"
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        return "it is absolute"
    if "\\" in path:
        return "it uses backslashes"
    if "\0" in path or hides_characters(path):
        return "it holds control, bidi or invisible characters"
    lookalike = lookalike_problem(path)
    if lookalike is not None:
        return lookalike
    parts = path.split("/")
    if len(parts) > MAX_PATH_DEPTH:
        return f"it is nested deeper than {MAX_PATH_DEPTH} folders"
    if len(path) > MAX_PATH_CHARS:
        return f"it is longer than {MAX_PATH_CHARS} characters"
    for part in parts:
        if part in ("", ".", ".."):
            return "it has an empty, . or .. component"
        if part == ".git":
            return "it has a .git component"
        if len(part.encode("utf-8", "surrogatepass")) > MAX_COMPONENT_BYTES:
            return f"a part of it is longer than {MAX_COMPONENT_BYTES} bytes"
        problem = folder_name_problem(part)  # lone surrogates: no file system's text
        if problem is not None:
            return f"a part of it cannot be a file name ({problem})"
    return None


def relative_path(path: str, what: str = "file") -> str:
    """``path`` when it is a clean relative path (no ``..``, not absolute), else SourceError."""
    problem = path_problem(path)
    if problem is not None:
        raise SourceError(f"The {what} path {visible(path)!r} is refused: {problem}")
    return path


__all__ = [
    "LOOKALIKE_SEPARATORS",
    "folder_name",
    "lookalike_problem",
    "name_problem",
    "relative_path",
    "path_problem",
]
