"""Helpers and fixtures for the tests that need a working bubblewrap (no tests in here).

Without one they skip loudly, unless ``SKILL_MAGICS_SANDBOX_REQUIRED=1`` (``make test`` and
CI set it): then they fail, so CI can never pass without having run them.

The ``bwrap`` and ``box`` fixtures (tests/conftest.py) are built by :func:`require_bwrap` and
:func:`make_box`.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.launching import sandbox as sandboxing

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


def make_box(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_skill: Any) -> Any:
    """A workspace (the cwd), a fake HOME with planted credentials, a skills folder."""
    ws = tmp_path / "ws"
    home = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    for d in (ws, home / ".ssh", home / ".aws", elsewhere):
        d.mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("-----BEGIN FAKE PRIVATE KEY-----\n")
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = FAKEAWS\n")
    (home / ".netrc").write_text("machine x login me password FAKENETRC\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.chdir(ws)
    monkeypatch.delenv(sandboxing.BWRAP_ENV_VAR, raising=False)
    skills = tmp_path / "skills"
    skills.mkdir()

    class Box:
        root = tmp_path

        def __init__(self) -> None:
            self.ws, self.home, self.elsewhere, self.skills = ws, home, elsewhere, skills

        def skill(self, name: str, scripts: dict[str, str], **meta: str) -> Path:
            fm: dict = {"name": name, "description": f"Test skill {name}."}
            if meta:
                fm["metadata"] = meta
            return make_skill(skills, name, frontmatter=fm, scripts=scripts)

        def manager(self, **kwargs: Any) -> SkillManager:
            kwargs.setdefault("sandbox", "workspace-write")
            return SkillManager([skills], **kwargs)

    return Box()
