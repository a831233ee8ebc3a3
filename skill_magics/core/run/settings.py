"""Run settings checked in one place: the time limit and the output cap.

Every layer (SkillManager, ScriptExecutor, ``%config SkillMagics.timeout``) calls these, so
the allowed range and the message naming the fix are written once.

Example:
    >>> check_timeout(60)
    60.0
    >>> check_timeout(0)
    Traceback (most recent call last):
    ValueError: timeout 0 s is out of range: use 1 to 600 seconds
"""

from __future__ import annotations

from typing import Any

MIN_TIMEOUT = 1
MAX_TIMEOUT = 600
DEFAULT_TIMEOUT = 30.0
DEFAULT_MAX_OUTPUT_SIZE = 10 * 2**20  # bytes kept per stream; the rest is counted


def check_timeout(timeout: Any) -> float:
    """``timeout`` as seconds (float); ValueError naming the range when it is not 1-600."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}: use e.g. 60")
    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise ValueError(
            f"timeout {timeout!r} s is out of range: use {MIN_TIMEOUT} to {MAX_TIMEOUT} seconds"
        )
    return float(timeout)


def check_max_output_size(value: Any) -> int:
    """``value`` as a byte count >= 0; ValueError naming the fix otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_output_size {value!r} is invalid: use a number of bytes >= 0")
    return value


__all__ = [
    "MIN_TIMEOUT",
    "MAX_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "check_timeout",
    "check_max_output_size",
]
