"""Helpers with optional and type-only imports."""
from __future__ import annotations

from typing import TYPE_CHECKING

try:
    import numpy as np
except ImportError:
    np = None

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["describe"]


def describe(xs: Sequence[int]) -> str:
    return f"{len(xs)} values, numpy {'present' if np is not None else 'absent'}"
