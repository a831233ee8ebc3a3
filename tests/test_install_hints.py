"""A missing optional package is named so that `pip install` finds it.

skill-magics is not on PyPI yet, so a hint like `pip install 'skill-magics[dask]'` cannot
resolve: each one-line error names the package itself (the extra's content), or, for an extra
of ours imported from a checkout (`make demo`, an editable install), the checkout's extra
(issue 44). Each case runs in a fresh interpreter with the package hidden (a None entry in
sys.modules makes its import fail).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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


REPO = Path(__file__).resolve().parents[1]
# The MCP SDK missing where an MCP server is added (%skills add mcp) and served (`python -m
# skill_magics.mcp serve`): the one line names the command that works for this install.
NO_MCP = (
    "import sys; sys.modules['mcp'] = None\n"
    "from skill_magics.core.mcp.connection import connect\n"
    "try:\n    connect('x', command=['true'])\nexcept Exception as exc:\n    print(exc)\n"
    "from skill_magics.mcp.__main__ import main\n"
    "print('exit', main(['serve', '.']))\n"
)


def _without_mcp(pythonpath: Path, cwd: Path) -> str:
    env = dict(os.environ, PYTHONPATH=str(pythonpath))
    out = subprocess.run(
        [sys.executable, "-c", NO_MCP],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout + out.stderr


def test_an_extra_missing_from_a_checkout_installs_from_the_checkout(tmp_path: Path) -> None:
    out = _without_mcp(REPO, tmp_path)
    hint = f"pip install -e '{REPO}[mcp]'"
    assert f"Skills over MCP need the official MCP SDK: {hint}" in out
    assert f"skill-magics mcp: the MCP SDK is missing: {hint}" in out
    assert "exit 2" in out and "skill-magics[" not in out


def test_an_extra_missing_from_a_wheel_names_its_requirements(tmp_path: Path) -> None:
    """The package as a wheel puts it: in site-packages, no pyproject.toml beside it."""
    site = tmp_path / "site"
    shutil.copytree(REPO / "skill_magics", site / "skill_magics")
    out = _without_mcp(site, tmp_path)
    assert "Skills over MCP need the official MCP SDK: pip install 'mcp>=2.3'" in out
    assert "the MCP SDK is missing: pip install 'mcp>=2.3'" in out
    assert "skill-magics[" not in out and "-e " not in out
