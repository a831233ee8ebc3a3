"""scripts/screenshots.py makes every image in docs/ from a neutral folder (issue 44,
Deliver 5): the pictures show the command, interpreter and working folder of a run, so they
must never show this machine's checkout, venv or home."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location("screenshots", REPO / "scripts/screenshots.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_docs_images_are_made_in_a_neutral_place(chromium_path: str, tmp_path: Path) -> None:
    shots = _script()
    place = tmp_path / "demo"
    made = shots.make(tmp_path / "out", place)
    assert sorted(p.name for p in made) == sorted(
        p.name for p in (REPO / "docs/images").glob("*.png")
    )
    for path in made:
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 5_000
    assert not place.exists(), "the neutral place is removed afterwards"
    # The guard refuses this machine's paths and not the neutral place's.
    shots.check_neutral(f"{place}/.venv/bin/python {place}/skills/x/scripts/a.py", place)
    with pytest.raises(SystemExit, match="this machine's path"):
        shots.check_neutral(f"{sys.prefix}/bin/python", place)
    with pytest.raises(SystemExit, match="this machine's path"):
        shots.check_neutral(f"{REPO}/skill_magics/examples/skills/x", place)
    # A place beside the checkout whose name starts like it is not the checkout.
    beside = Path(f"{REPO}-tmp") / "demo"
    shots.check_neutral(f"{beside}/.venv/bin/python {beside}/skills/x/scripts/a.py", beside)
    with pytest.raises(SystemExit, match="this machine's path"):
        shots.check_neutral(f"cd {REPO} && {beside}/.venv/bin/python", beside)
