"""argv templates for batches: ``--value {km} --from km`` filled from each row.

Each word of the template stays exactly one argv element (no shell, no splitting): a word
that is just ``{km}`` becomes the row's value as text; a word with text around placeholders
(``--value={km}``) gets them substituted inside it. ``{{`` and ``}}`` are literal braces.
``{}`` is the whole item (for a list of plain values). Strings are used as they are; other
values as JSON (``3``, ``1.5``, ``true``, ``null``).

Example:
    >>> fill_argv(("--value", "{km}", "--to", "mi"), [{"km": 5}, {"km": 42.195}])
    [('--value', '5', '--to', 'mi'), ('--value', '42.195', '--to', 'mi')]
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

_FIELD = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def placeholders(template: Sequence[str]) -> list[str]:
    """The field names used in ``template`` ("" for ``{}``), in order."""
    names = []
    for word in template:
        for match in _FIELD.finditer(word):
            if match.group(0) not in ("{{", "}}"):
                names.append(match.group(1).strip())
    return names


def _text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _field(item: Any, name: str, index: int) -> str:
    if name == "":
        return _text(item)
    if not isinstance(item, dict):
        raise ValueError(
            f"item {index} is a {type(item).__name__}, so {{{name}}} has nothing to name: "
            "use {} for the whole item, or map over rows (dicts or a DataFrame)"
        )
    if name not in item:
        known = ", ".join(sorted(map(str, item))) or "none"
        raise ValueError(f"item {index} has no field {name!r} for {{{name}}} (fields: {known})")
    return _text(item[name])


def fill_argv(template: Sequence[str], items: Sequence[Any]) -> list[tuple[str, ...]]:
    """One argv per item; a missing field raises ValueError naming it and the fields known."""
    out = []
    for index, item in enumerate(items):
        argv = []
        for word in template:

            def sub(match: re.Match[str], item: Any = item, index: int = index) -> str:
                token = match.group(0)
                if token == "{{":
                    return "{"
                if token == "}}":
                    return "}"
                return _field(item, match.group(1).strip(), index)

            argv.append(_FIELD.sub(sub, word))
        out.append(tuple(argv))
    return out


__all__ = ["fill_argv", "placeholders"]
