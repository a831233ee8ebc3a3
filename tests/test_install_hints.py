"""A missing optional package is named so that `pip install` finds it.

skill-magics is not on PyPI yet, so a hint like `pip install 'skill-magics[dask]'` cannot
resolve: each one-line error names the package itself (the extra's content). Each case runs in
a fresh interpreter with the package hidden (a None entry in sys.modules makes its import fail).
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

CASES = {
    "dask": (
        "import sys; sys.modules['distributed'] = None\n"
        "from skill_magics.core.run.batch.dask_backend import connect\n"
        "try:\n    connect('tcp://127.0.0.1:1')\nexcept Exception as exc:\n    print(exc)\n",
        "pool='tcp://127.0.0.1:1' needs Dask: pip install 'dask[distributed]'",
    ),
    "uv": (
        "import sys; sys.modules['uv'] = None\n"
        "from skill_magics.core.run.env.build import choose_installer\n"
        "try:\n    choose_installer('uv')\nexcept Exception as exc:\n    print(exc)\n"
        "print(choose_installer(None)[0])\n",  # not refused: without uv, venv + pip
        "uv was asked for but is not installed: pip install uv\npip",
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_hint_names_a_package_pip_can_find(case: str, tmp_path) -> None:
    code, expected = CASES[case]
    env = dict(os.environ, PATH=str(tmp_path))  # no uv (nor anything else) on PATH
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == expected
    assert "skill-magics[" not in out.stdout
