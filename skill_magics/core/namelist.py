"""The one parser for settings that hold a list of names.

``"python3 bash"`` or ``"python3, bash"`` is a list written as one string (a likely shorthand
in ``%config`` and keyword arguments), not a sequence of letters; any other iterable gives
its items as strings.

Example:
    >>> name_list("OPENAI_API_KEY, HF_TOKEN")
    ('OPENAI_API_KEY', 'HF_TOKEN')
    >>> name_list(["python3", "bash"])
    ('python3', 'bash')
"""

from __future__ import annotations

from collections.abc import Iterable


def name_list(value: Iterable[object] | str | None) -> tuple[str, ...]:
    """The names in ``value``: words of a string (spaces or commas), else each item as str."""
    if value is None:
        return ()
    if isinstance(value, str):
        return tuple(value.replace(",", " ").split())
    return tuple(str(item) for item in value)


__all__ = ["name_list"]
