"""notebook/compat.py on this venv's stack (IPython 8.6+, ipywidgets 8); the old stack's side
(IPython 7.34, ipywidgets 7.7 as Colab pins them) runs in a real kernel:
tests/test_compat_kernel.py under ``scripts/kernel-matrix.sh colab``."""

from __future__ import annotations

from pathlib import Path

import ipywidgets as w
import pytest
from IPython.core.interactiveshell import InteractiveShell

from skill_magics.core.manager import SkillManager
from skill_magics.notebook import compat
from skill_magics.notebook.completion import IDENTIFIER, make_completer


@pytest.mark.parametrize(
    "text,expected",
    [
        ("7.34.0", (7, 34, 0)),
        ("8.1.0rc1", (8, 1, 0)),
        ("6.17.1.dev0", (6, 17, 1)),
        ("10", (10,)),
        ("", ()),
        ("x.1", ()),
    ],
)
def test_parse_version(text: str, expected: tuple[int, ...]) -> None:
    assert compat.parse_version(text) == expected


def test_loaded_version_never_imports() -> None:
    assert compat.loaded_version("skill_magics_no_such_module") is None
    assert compat.loaded_version("IPython") is not None


def test_tab_titles_and_view_on_ipywidgets_8() -> None:
    assert compat.ipywidgets_version() >= (8,)
    tab = compat.tab([w.HTML("a"), w.HTML("b")], ["first", "second"])
    assert compat.tab_titles(tab) == ["first", "second"]
    view = compat.widget_view(tab)
    assert view == tab._repr_mimebundle_()[compat.WIDGET_MIME]
    assert view["model_id"] == tab.model_id


@pytest.fixture
def manager(tmp_path: Path, make_skill) -> SkillManager:
    bang = "#!/usr/bin/env python3\nprint('hi')\n"
    for name, scripts in {"pdf": ["extract", "merge"], "csv": ["x"]}.items():
        files = {f"scripts/{s}.py": bang for s in scripts}
        make_skill(tmp_path, name, {"name": name, "description": "d"}, files, executable=False)
    return SkillManager([tmp_path])


def test_completer_lines(manager: SkillManager) -> None:
    """The same answers on both IPython APIs: the cursor line is None on IPython 7."""
    complete = make_completer(lambda: manager)
    for line in (0, None):
        assert complete("%%skillrun pd", line) == ("pd", ["pdf.extract", "pdf.merge"])
        assert complete("%%skillrun ", line) == ("", ["csv.x", "pdf.extract", "pdf.merge"])
    assert complete("%%skillrun pd", 2) is None  # a later line of the cell: not the magic
    assert complete("%skills show c", 0) == ("c", ["csv"])
    assert complete("%skills list c", 0) is None
    assert complete("print(pd", 0) is None


def test_the_v2_matcher_is_registered_once_and_removed(manager: SkillManager) -> None:
    shell = InteractiveShell.instance()
    completer = shell.Completer
    assert compat.matcher_api_v2()
    complete = make_completer(lambda: manager)
    compat.add_completer(completer, IDENTIFIER, complete)
    compat.add_completer(completer, IDENTIFIER, complete)
    ours = [m for m in completer.custom_matchers if m.matcher_identifier == IDENTIFIER]
    assert len(ours) == 1
    line_matchers = [getattr(m, "matcher_identifier", "") for m in completer.magic_arg_matchers]
    assert IDENTIFIER not in line_matchers
    compat.remove_completer(completer, IDENTIFIER)
    assert not [m for m in completer.custom_matchers if m.matcher_identifier == IDENTIFIER]
