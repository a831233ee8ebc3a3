"""Interpreter choice: extension first, then shebang; skill venvs for Python."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from skill_magics.core.base.interpreters import (
    canonical,
    interpreter_for,
    parse_shebang,
    skill_venv_python,
)


@pytest.mark.parametrize(
    ("name", "script_type", "interpreter"),
    [
        ("x.py", "python", "python3"),
        ("x.sh", "bash", "bash"),
        ("x.bash", "bash", "bash"),
        ("x.js", "node", "node"),
        ("x.rb", "ruby", "ruby"),
        ("x.pl", "perl", "perl"),
        ("X.PY", "python", "python3"),
    ],
)
def test_extension_wins(tmp_path, name, script_type, interpreter):
    path = tmp_path / name
    path.write_text("#!/bin/sh\n")  # the shebang must not override the extension
    spec = interpreter_for(path)
    assert (spec.script_type, spec.interpreter) == (script_type, interpreter)


def test_typescript_runs_tsx_itself_never_npx(tmp_path):
    # npx would prefer the skill's node_modules/.bin/tsx, or download one.
    spec = interpreter_for(tmp_path / "x.ts", first_line="")
    assert spec.argv == ("tsx",) and spec.interpreter == "tsx"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("#!/usr/bin/env python3", ("python3",)),
        ("#!/usr/bin/env -S python3 -u", ("python3", "-u")),
        ("#!/bin/bash -e", ("/bin/bash", "-e")),
        ("#! /usr/bin/perl", ("/usr/bin/perl",)),
        ("# not a shebang", None),
        ("#!", None),
    ],
)
def test_parse_shebang(line, expected):
    assert parse_shebang(line) == expected


def test_shebang_fallback_for_extensionless_files(tmp_path):
    tool = tmp_path / "tool"
    tool.write_text("#!/usr/bin/env python3\nprint(1)\n")
    spec = interpreter_for(tool)
    assert (spec.script_type, spec.interpreter, spec.argv) == ("python", "python3", ("python3",))
    sh = tmp_path / "run"
    sh.write_text("#!/bin/bash\r\necho hi\r\n")
    assert interpreter_for(sh).argv == ("/bin/bash",)
    plain = tmp_path / "notes"
    plain.write_text("hello\n")
    assert interpreter_for(plain) is None


def test_canonical_names():
    assert canonical("/usr/bin/python3.11") == "python3"
    assert canonical("python") == "python3"
    assert canonical("/bin/bash") == "bash"


def test_the_skills_venv_python_is_chosen_first(tmp_path):
    from skill_magics.core.base.envdirs import choose_python

    assert choose_python(tmp_path)[0] == sys.executable
    venv_python = tmp_path / ".venv" / "bin" / "python"
    venv_python.parent.mkdir(parents=True)
    venv_python.write_text("")
    assert skill_venv_python(tmp_path) == venv_python
    win = tmp_path / "w" / "venv" / "Scripts" / "python.exe"
    win.parent.mkdir(parents=True)
    win.write_text("")
    assert skill_venv_python(tmp_path / "w") == win
    assert Path(choose_python(tmp_path)[0]) == venv_python


@pytest.mark.parametrize(
    "line",
    ["#!/usr/bin/python3.11", "#!/usr/bin/env python3.12 -u", "#!/usr/bin/python", "#!python3"],
)
def test_any_python_shebang_is_python(tmp_path, line):
    # script_type "python" is what sends it to the skill's venv or the kernel's Python.
    spec = interpreter_for(tmp_path / "tool", first_line=line)
    assert (spec.script_type, spec.interpreter) == ("python", "python3")


def test_nodejs_shebang_is_node(tmp_path):
    spec = interpreter_for(tmp_path / "tool", first_line="#!/usr/bin/env nodejs")
    assert (spec.script_type, spec.interpreter) == ("node", "node")
