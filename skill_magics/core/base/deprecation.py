"""Old names kept for one release: they still work, warn, and name the new spelling.

One rule for every renamed argument, option or function (issue 30, *each name means one
thing*): the old spelling gives the same result plus a warning (``DeprecationWarning`` in
Python code; the notebook layer passes ``FutureWarning``, which Jupyter shows); giving the old
and the new spelling together is a one-line error, since which one wins would be a guess.

Example:
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     pool = renamed_argument(None, "tcp://sched:8786", new="pool=", old="executor=")
    >>> pool, caught[0].category.__name__
    ('tcp://sched:8786', 'DeprecationWarning')
    >>> str(caught[0].message)
    'executor= is deprecated and will be removed in the next release: use pool= instead'
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def deprecation_message(old: str, new: str) -> str:
    return f"{old} is deprecated and will be removed in the next release: use {new} instead"


def renamed_argument(
    value: Any,
    old_value: Any,
    *,
    new: str,
    old: str,
    category: type[Warning] = DeprecationWarning,
    stacklevel: int = 3,
) -> Any:
    """``value`` (the new spelling), or ``old_value`` with a warning; None means not given.

    ``stacklevel`` 3 points the warning at the caller of the function that calls this."""
    if old_value is None:
        return value
    if value is not None:
        raise ValueError(f"{old} is the old name of {new}: give {new} only")
    warnings.warn(deprecation_message(old, new), category, stacklevel=stacklevel)
    return old_value


def deprecated_alias(func: F, old: str) -> F:
    """``func`` under its old name ``old``: same call, plus a DeprecationWarning naming it."""

    @functools.wraps(func)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(deprecation_message(f"{old}()", f"{func.__name__}()"), DeprecationWarning, 2)
        return func(*args, **kwargs)

    alias.__name__ = alias.__qualname__ = old
    alias.__doc__ = f"Deprecated: the old name of :func:`{func.__name__}` (same arguments)."
    return alias  # type: ignore[return-value]


def renamed_module_name(module: str, name: str, renamed: dict[str, tuple[str, Any]]) -> Any:
    """A module's ``__getattr__`` for names it renamed: ``renamed`` maps an old name to (its
    new name, the value); the old one gives the value with a DeprecationWarning, any other
    missing name the usual AttributeError."""
    if name not in renamed:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new, value = renamed[name]
    warnings.warn(deprecation_message(name, new), DeprecationWarning, stacklevel=3)
    return value


__all__ = ["deprecated_alias", "deprecation_message", "renamed_argument", "renamed_module_name"]
