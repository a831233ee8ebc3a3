"""Strict JSON encoding of script arguments (what a script reads on stdin).

Strict means: a dict with str keys all the way down, finite numbers only, no sets or other
objects, no cycles, at most MAX_ARGUMENT_DEPTH levels; UTF-8 without ASCII escaping; at most
10 MiB of *bytes*.

Example:
    >>> encode_arguments({"name": "Zoë", "sizes": [1, 2.5]})
    b'{"name": "Zo\\xc3\\xab", "sizes": [1, 2.5]}'
    >>> encode_arguments({1: "x"})
    Traceback (most recent call last):
    skill_magics.core.base.errors.ArgumentSerializationError: Argument key 1 in arguments ...
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from typing import Any

from skill_magics.core.base.audit import safe_repr, safe_str
from skill_magics.core.base.errors import ArgumentSerializationError, ArgumentSizeError

MAX_ARGUMENT_BYTES = 10 * 2**20
# Counted here, not left to json.dumps: it raises RecursionError near 1,000 levels on Python
# 3.11/3.12 but encodes far deeper on 3.13; and a script's json.load recurses per level too.
MAX_ARGUMENT_DEPTH = 500

_LEAVES = (str, int, float, bool, type(None))
# json.dumps with these options builds an encoder per call; this one is built once (its
# encode() keeps no state between calls).
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
# And json's C encoder itself, made once with the same options, where there is one. It
# skips the check for cycles: validate() has refused them already.
_C_ENCODE = (
    json.encoder.c_make_encoder(  # type: ignore[attr-defined]
        None,
        _ENCODER.default,
        json.encoder.encode_basestring,
        None,
        _ENCODER.key_separator,
        _ENCODER.item_separator,
        False,
        False,
        False,
    )
    if getattr(json.encoder, "c_make_encoder", None) is not None
    else None
)


_FLAT = frozenset({str, int, bool, type(None)})  # exact types: a subclass takes the walk


def _flat(arguments: dict) -> bool:
    """Is ``arguments`` one level of str keys and plain leaves (finite floats included)?
    True means :func:`validate` has nothing to refuse; False only means "walk it"."""
    for key, value in arguments.items():
        kind = type(value)
        if type(key) is not str or (
            kind not in _FLAT and (kind is not float or not math.isfinite(value))
        ):
            return False
    return True


def _fmt(path: list[str]) -> str:
    return "arguments" + "".join(path)


def validate(arguments: Any) -> None:
    """Walk the value once and raise ArgumentSerializationError naming the offending path.

    Iterative (deep nesting cannot hit the recursion limit) and path-aware for cycles: a
    list shared twice is fine (JSON just repeats it), a list containing itself is not.
    """
    if type(arguments) is dict and _flat(arguments):
        return  # the usual shape (a row, a few options): no walk needed
    if not isinstance(arguments, dict):
        raise ArgumentSerializationError(
            f"Arguments must be a dict (a JSON object), got {type(arguments).__name__}: "
            "wrap the value, e.g. {'items': value}, or pass dict(value)"
        )
    active: set[int] = set()  # ids of containers on the current path
    # Stack items: (container, path) to visit, or (None, id) exit markers. Leaves are checked
    # inline so a list of a million numbers does not cost a million stack entries.
    stack: list[tuple[Any, Any]] = [(arguments, [])]
    while stack:
        value, path = stack.pop()
        if value is None:
            active.discard(path)
            continue
        ident = id(value)
        if ident in active:
            raise ArgumentSerializationError(
                f"Argument {_fmt(path)} refers back to a value that contains it (circular "
                "reference): pass a copy without the cycle"
            )
        active.add(ident)
        stack.append((None, ident))
        if isinstance(value, dict):
            for key in value:
                if not isinstance(key, str):
                    raise ArgumentSerializationError(
                        f"Argument key {safe_repr(key)} in {_fmt(path)} is "
                        f"{type(key).__name__}, not str: JSON object keys are strings, use "
                        f"{safe_str(key)!r} instead"
                    )
            items: Any = ((f"[{k!r}]", v) for k, v in value.items())
        else:
            items = ((f"[{i}]", v) for i, v in enumerate(value))
        for step, item in items:
            if isinstance(item, _LEAVES):
                if isinstance(item, float) and not math.isfinite(item):
                    raise ArgumentSerializationError(
                        f"Argument {_fmt([*path, step])} is {item!r}, which JSON cannot "
                        "represent: use None or a string such as 'NaN'"
                    )
            elif isinstance(item, (dict, list, tuple)):
                if len(path) + 2 > MAX_ARGUMENT_DEPTH:  # the arguments dict is level 1
                    raise ArgumentSerializationError(
                        f"Arguments nest objects/lists more than {MAX_ARGUMENT_DEPTH} levels "
                        "deep: pass a flatter value (or write it to a file and pass its path)"
                    )
                stack.append((item, [*path, step]))
            else:
                raise _unsupported(item, [*path, step])


def _unsupported(value: Any, path: list[str]) -> ArgumentSerializationError:
    if isinstance(value, (set, frozenset)):
        hint = "use a list (e.g. sorted(value))"
    elif isinstance(value, Mapping):
        hint = "convert it with dict(value)"
    elif isinstance(value, bytes):
        hint = "decode it to str or base64-encode it"
    else:
        hint = "convert it to str, int, float, list or dict first"
    return ArgumentSerializationError(
        f"Argument {_fmt(path)} has type {type(value).__name__!r}, which JSON cannot represent: "
        f"{hint}"
    )


def encode_arguments(arguments: Any, limit: int = MAX_ARGUMENT_BYTES) -> bytes:
    """``arguments`` as strict UTF-8 JSON bytes; raises ArgumentSerializationError/SizeError."""
    if type(arguments) is not dict or not _flat(arguments):  # (flat: nothing to refuse)
        validate(arguments)
    try:
        text = "".join(_C_ENCODE(arguments, 0)) if _C_ENCODE else _ENCODER.encode(arguments)
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise ArgumentSerializationError(
            f"Arguments contain text that is not valid Unicode ({exc.reason}): "
            "remove lone surrogate characters (often from badly decoded file names)"
        ) from None
    except (ValueError, TypeError, RecursionError) as exc:
        # e.g. an int with more digits than Python will convert to text.
        raise ArgumentSerializationError(
            f"Arguments cannot be encoded as JSON ({exc}): pass plain str/int/float/list/dict"
        ) from None
    if len(data) > limit:
        raise ArgumentSizeError(
            f"Arguments are {len(data):,} bytes of JSON, over the {limit:,}-byte limit "
            f"({limit / 2**20:g} MiB): write the data to a file and pass its path instead"
        )
    return data


def normalize_argv(argv: Any) -> tuple[str, ...]:
    """argv items as strings, passed verbatim (never through a shell).

    Accepts str, os.PathLike, int and float items; a lone str is refused, since iterating it
    would pass one character per argument.
    """
    if isinstance(argv, (str, bytes)):
        raise ArgumentSerializationError(
            f"argv must be a list of strings, got a single {type(argv).__name__} {argv!r}: "
            "use shlex.split(...) or a list such as ['--input', 'data.csv']"
        )
    try:
        items = list(argv)
    except TypeError:
        raise ArgumentSerializationError(
            f"argv must be a list of strings, got {type(argv).__name__}: "
            "pass a list such as ['--input', 'data.csv']"
        ) from None
    out: list[str] = []
    for index, item in enumerate(items):
        if isinstance(item, bool) or not isinstance(item, (str, os.PathLike, int, float)):
            raise ArgumentSerializationError(
                f"argv[{index}] is {type(item).__name__} {safe_repr(item)}: pass strings, "
                "e.g. str(value)"
            )
        text = os.fspath(item) if isinstance(item, os.PathLike) else str(item)
        if isinstance(text, bytes) or "\0" in text:
            raise ArgumentSerializationError(
                f"argv[{index}] contains a NUL byte or is bytes: command-line arguments must be "
                "text without NUL characters"
            )
        out.append(text)
    return tuple(out)


__all__ = [
    "MAX_ARGUMENT_BYTES",
    "MAX_ARGUMENT_DEPTH",
    "validate",
    "encode_arguments",
    "normalize_argv",
]
