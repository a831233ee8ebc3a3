"""Module paths of the layout before issue 30 still import, as the same module, with a warning."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

from skill_magics.core.moved import MOVED

# Every old path imported in turn by one fresh interpreter (not one each: 68 interpreters
# cost 15 s of CPU per Python), parents before their submodules (sorted), so each old path's
# first import is the one checked; nothing else imports an old path (the test below).
CHECK_ALL = """
import importlib, json, sys, warnings
for old, new in json.loads(sys.argv[1]):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        module = importlib.import_module(old)
    # A moved package's submodule: the package warns first, then the module itself.
    mine = [c for c in caught if str(c.message).startswith(old + " ")]
    said = f"{mine[0].category.__name__} {mine[0].message}" if mine else ""
    same = module is importlib.import_module(new)
    print(json.dumps({"old": old, "same": same, "said": said}))
"""


@pytest.fixture(scope="module")
def imported() -> dict[str, dict]:
    """What importing each old path did, in one fresh interpreter."""
    pairs = json.dumps(sorted(MOVED.items()))
    out = subprocess.run(
        [sys.executable, "-c", CHECK_ALL, pairs], capture_output=True, text=True, check=True
    )
    return {row["old"]: row for row in map(json.loads, out.stdout.splitlines())}


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_gives_the_module_at_its_new_place(old: str, imported) -> None:
    row = imported[old]
    assert row["same"], (old, MOVED[old])
    assert row["said"].startswith("DeprecationWarning " + old + " is deprecated"), row
    assert f"use {MOVED[old]} instead" in row["said"]


def test_from_import_of_an_old_path_works() -> None:
    with pytest.warns(DeprecationWarning, match="skill_magics.core.prompt.tools"):
        sys.modules.pop("skill_magics.core.tools", None)
        from skill_magics.core.tools import handle_tool_call  # noqa: F401
    from skill_magics.core.prompt import tools

    assert handle_tool_call is tools.handle_tool_call


def test_new_paths_and_unmoved_modules_import_without_a_warning() -> None:
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "import skill_magics.core.manager, skill_magics.core.run.gating.gate\n"
        + "".join(f"import {new}\n" for new in sorted(MOVED.values()))
    )
    subprocess.run([sys.executable, "-W", "error", "-c", code], check=True)


def test_a_name_never_there_is_still_not_found() -> None:
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("skill_magics.core.nothing_here")
