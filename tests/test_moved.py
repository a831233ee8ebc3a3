"""Module paths of the layout before issue 30 still import, as the same module, with a warning."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

from skill_magics.core.moved import MOVED


@pytest.mark.parametrize("old", sorted(MOVED))
def test_an_old_path_gives_the_module_at_its_new_place(old: str) -> None:
    code = (
        "import importlib, warnings\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        f"    old = importlib.import_module({old!r})\n"
        f"new = importlib.import_module({MOVED[old]!r})\n"
        "assert old is new, (old, new)\n"
        # A moved package's submodule: the package warns first, then the module itself.
        f"mine = [c for c in caught if str(c.message).startswith({old!r} + ' ')]\n"
        "print(mine[0].category.__name__, mine[0].message)\n"
    )
    # A fresh interpreter: the first import of the old path is the one that must warn.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.startswith("DeprecationWarning " + old + " is deprecated"), out.stdout
    assert f"use {MOVED[old]} instead" in out.stdout


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
