"""The one parser for lists of names (settings, ``SKILL_MAGICS_AUTO_APPROVE``, secrets).

A string is a list written as one string: commas and whitespace both separate (``"python3
bash"``, ``"python3, bash"``, ``"a,b"``), a shorthand in keyword arguments, ``%config
SkillMagics.auto_approve`` and environment variables, never a sequence of letters. Skill names
may not contain spaces or commas (Agent Skills: lowercase letters, digits, hyphens), nor may
interpreter or environment variable names. Any other iterable gives its items as they are
(each one name, spaces inside kept: the way to name a lenient, non-spec name such as ``"Other
Tools"``), as strings. Either way, surrounding blanks are stripped and empty names dropped;
nothing else (``;``, ``|``, hyphens) separates.

A magic's line is a list of strings (``%skill_context a,b c``, ``--skills a,b c``):
:func:`token_names` reads each token as a string list, so ``a,b`` and ``a b`` name the same
skills wherever a magic takes several.

Paths are not names (a folder may be called ``my data, 2026``): :func:`path_list` reads a
string or path as ONE path, never splitting it.

Example:
    >>> name_list("OPENAI_API_KEY, HF_TOKEN")
    ('OPENAI_API_KEY', 'HF_TOKEN')
    >>> name_list("csv-profiler unit-converter,")
    ('csv-profiler', 'unit-converter')
    >>> name_list(["python3", " bash ", ""])
    ('python3', 'bash')
    >>> token_names(["a,b", "c"]) == token_names(["a", "b", "c"]) == ("a", "b", "c")
    True
"""

from __future__ import annotations

import os
from collections.abc import Iterable


def name_list(value: Iterable[object] | str | None) -> tuple[str, ...]:
    """The names in ``value``: words of a string (spaces or commas), else each item as str;
    stripped, blanks dropped, in order (duplicates kept: callers that need a set make one)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.replace(",", " ").split())
    return tuple(name for name in (str(item).strip() for item in value) if name)


def token_names(tokens: Iterable[str] | None) -> tuple[str, ...]:
    """The names in a magic's tokens (argparse's ``nargs="+"`` or ``append`` values): each
    token read by :func:`name_list` as a string, in order."""
    return tuple(name for token in tokens or () for name in name_list(token))


def path_list(value: Iterable[object] | str | os.PathLike[str] | None) -> tuple[str, ...]:
    """The paths in ``value``: a string or path is one path (spaces and commas are part of it),
    any other iterable one path per item; empty ones dropped, nothing stripped."""
    if value is None:
        return ()
    items: Iterable[object] = [value] if isinstance(value, (str, os.PathLike)) else value
    paths = (os.fspath(i) if isinstance(i, os.PathLike) else str(i) for i in items)
    return tuple(p for p in paths if p)


__all__ = ["name_list", "path_list", "token_names"]
