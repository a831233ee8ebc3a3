"""A setting's default from an environment variable, checked by the setting's own rule.

Example:
    >>> import os
    >>> def check(value: str) -> str:
    ...     if value not in ("on", "off"):
    ...         raise ValueError(f"{value!r} is not on or off")
    ...     return value
    >>> os.environ["SKILL_MAGICS_DOC_MODE"] = "sideways"
    >>> from_env("SKILL_MAGICS_DOC_MODE", "off", check)
    Traceback (most recent call last):
    ...
    ValueError: SKILL_MAGICS_DOC_MODE: 'sideways' is not on or off
    >>> del os.environ["SKILL_MAGICS_DOC_MODE"]
    >>> from_env("SKILL_MAGICS_DOC_MODE", "off", check)
    'off'
"""

from __future__ import annotations

import os
from collections.abc import Callable


def from_env(var: str, default: str, check: Callable[[str], str]) -> str:
    """``$var`` checked by ``check`` when set (not blank), else ``default``; a value
    ``check`` refuses is a ValueError naming the variable."""
    value = os.environ.get(var, "").strip()
    if not value:
        return default
    try:
        return check(value)
    except ValueError as exc:
        raise ValueError(f"{var}: {exc}") from None


__all__ = ["from_env"]
