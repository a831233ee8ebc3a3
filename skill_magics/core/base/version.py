"""The installed package's version, read once from its metadata (pyproject.toml is the source).

Example:
    >>> VERSION
    '0.1.0'
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version


def _read() -> str:
    try:
        return version("skill-magics")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "0+unknown"


VERSION = _read()

__all__ = ["VERSION"]
