"""Helpers for the tests that need a working bubblewrap (no tests in here).

Without one they skip loudly, unless ``SKILL_MAGICS_SANDBOX_REQUIRED=1`` (``make test`` and
CI set it): then they fail, so CI can never pass without having run them.
"""

from __future__ import annotations

import os
import sys

import pytest

from skill_magics.core.run import sandbox as sandboxing

REQUIRED_ENV = "SKILL_MAGICS_SANDBOX_REQUIRED"


def require_bwrap() -> str:
    """The bwrap binary, proven to sandbox a run here; else skip (or fail when required)."""
    why = sandboxing.unavailable_reason()
    if why:
        loud = f"SANDBOX TESTS NOT RUN: {why}"
        print(f"\n{'!' * 78}\n{loud}\n{'!' * 78}", file=sys.stderr)
        if os.environ.get(REQUIRED_ENV) == "1":
            pytest.fail(f"{loud} ({REQUIRED_ENV}=1, so this is a failure)")
        pytest.skip(loud)
    found = sandboxing.find_bwrap()
    assert found is not None
    return found
