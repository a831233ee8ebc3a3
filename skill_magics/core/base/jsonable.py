"""Plain JSON values from what a notebook holds (pandas and NumPy), for ``%%skillrun --eval``.

The executor accepts strict JSON only (str keys, no NaN, no foreign types) and says so when
it gets anything else. A data scientist's values are rarely that: ``df.head().to_dict()`` has
integer index keys, ``df["n"].sum()`` is a NumPy integer, a missing value is NaN, NaT or
``pd.NA``, a date is a ``Timestamp``. This converts those the way ``DataFrame.to_json`` does,
without importing NumPy or pandas (it recognises them by shape):

- dict keys that are int, float, bool or None become their JSON text (``0`` -> ``"0"``),
  as ``json.dumps`` writes them, timestamp keys ISO text; other keys stay (refused later);
- tuples become lists; NumPy scalars their Python value (``.item()``), arrays lists;
- NaN, NaT and ``pd.NA`` become ``None`` (JSON null);
- dates, times and timestamps become ISO 8601 text (``.isoformat()``).

Anything else is left as it is, so the executor's error still names what is wrong. Two keys
that would become the same JSON key (``1`` and ``"1"``) raise ArgumentSerializationError.

Example:
    >>> to_jsonable({0: {"a": float("nan")}, "when": datetime.date(2026, 1, 2)})
    {'0': {'a': None}, 'when': '2026-01-02'}
"""

from __future__ import annotations

import datetime
import math
from typing import Any

from skill_magics.core.base.errors import ArgumentSerializationError

MAX_DEPTH = 200  # deeper values are left as they are (the executor reports its own limits)


def _key(key: Any) -> Any:
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool):
        return {None: "null", True: "true", False: "false"}[key]
    if _is_numpy(key):  # before float: numpy.float64 is a float whose repr names NumPy
        return _key(key.item())
    if isinstance(key, int):
        return str(key)
    if isinstance(key, float) and math.isfinite(key):
        return repr(float(key))
    if isinstance(key, (datetime.date, datetime.time)):  # a DatetimeIndex's keys
        return key.isoformat()
    return key


def _is_numpy(value: Any) -> bool:
    """A NumPy scalar or array (or anything shaped like one: ``dtype`` plus ``item``)."""
    return hasattr(value, "dtype") and hasattr(value, "item") and hasattr(value, "tolist")


def _is_missing(value: Any) -> bool:
    if isinstance(value, float):
        return math.isnan(value)
    return type(value).__name__ in ("NaTType", "NAType")


def _convert_dict(value: dict, depth: int, path: set[int]) -> dict:
    out: dict = {}
    original: dict = {}
    for k, v in value.items():
        key = _key(k)
        if key in out:  # {1: .., "1": ..}: JSON has one key for both; never drop one silently
            raise ArgumentSerializationError(
                f"Keys {original[key]!r} and {k!r} both become {key!r} in JSON: rename one "
                "of them (or convert the value yourself before --eval)"
            )
        original[key] = k
        out[key] = _convert(v, depth + 1, path)
    return out


def to_jsonable(value: Any) -> Any:
    """``value`` with notebook types turned into plain JSON ones (see the module doc)."""
    return _convert(value, 0, set())


def _convert(value: Any, depth: int, path: set[int]) -> Any:
    # ``path``: the containers above this one; a value that contains itself is left as it
    # is, so the executor reports the circular reference (as it does without --eval).
    if depth > MAX_DEPTH or value is None or isinstance(value, (str, bool, int)):
        return value
    if _is_missing(value):
        return None
    if isinstance(value, float):
        return value
    if isinstance(value, (dict, list, tuple)):
        if id(value) in path:
            return value
        path.add(id(value))
        try:
            if isinstance(value, dict):
                return _convert_dict(value, depth, path)
            return [_convert(v, depth + 1, path) for v in value]
        finally:
            path.discard(id(value))
    if _is_numpy(value):
        return _convert(value.tolist(), depth + 1, path)  # scalar -> number, array -> list
    if isinstance(value, (datetime.date, datetime.time)):  # pandas Timestamp is a datetime
        return value.isoformat()
    return value


__all__ = ["to_jsonable"]
