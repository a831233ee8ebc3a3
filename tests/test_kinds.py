"""Entry points and helpers (catalog/kinds.py), module scripts run as ``python -m`` from the
skill root, and the one-pass source analysis they rest on (catalog/pysource.py).

Real layouts (tests/real_layouts.py), real processes: nothing is mocked."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from skill_magics.core.catalog.pysource import analyze
from skill_magics.core.errors import HelperScriptError, InterpreterNotFoundError
from skill_magics.core.manager import SkillManager
from skill_magics.core.tools import tool_specs
from tests.real_layouts import add_skill_venv, write_all

KINDS = {
    "creator": {
        "scripts/__init__.py": ("helper", ""),
        "scripts/package_skill.py": ("entry", "scripts.package_skill"),
        "scripts/run_eval.py": ("entry", "scripts.run_eval"),
        "scripts/utils.py": ("helper", ""),
    },
    "office": {
        "scripts/convert.py": ("entry", ""),  # sibling import: runs as a file
        "scripts/nomain.py": ("helper", ""),  # no guard, no shebang, not imported, not named
        "scripts/office/__init__.py": ("helper", ""),
        "scripts/office/soffice.py": ("helper", ""),  # imported by convert.py, main guard or not
        "scripts/office/validate.py": ("entry", ""),
        "scripts/office/validators/__init__.py": ("helper", ""),
        "scripts/office/validators/base.py": ("helper", ""),  # imported, has a main guard
    },
    "pep": {"scripts/table.py": ("entry", "")},
}


@pytest.fixture
def manager(tmp_path: Path) -> SkillManager:
    return SkillManager([write_all(tmp_path / "skills")])


def test_kinds_and_modules_follow_the_rules(manager: SkillManager) -> None:
    for skill, expected in KINDS.items():
        got = {s.path.as_posix(): (s.kind, s.module) for s in manager.get_skill(skill).scripts}
        assert got == expected, skill


def test_shebang_exec_bit_and_other_languages_make_entries(tmp_path: Path, make_skill) -> None:
    base = make_skill(
        tmp_path,
        "misc",
        scripts={
            "scripts/bang.py": "#!/usr/bin/env python3\nprint(1)\n",
            "scripts/plain.py": "print(1)\n",
            "scripts/run.sh": "echo hi\n",
            "scripts/x.py": "print(2)\n",
        },
        body="x",
        executable=False,
    )
    (base / "scripts/x.py").chmod(0o755)
    kinds = {s.name: s.kind for s in SkillManager([tmp_path]).get_skill("misc").scripts}
    assert kinds == {"bang": "entry", "plain": "helper", "run": "entry", "x": "entry"}


def test_referencing_a_script_in_skill_md_makes_it_an_entry(tmp_path: Path) -> None:
    root = write_all(tmp_path / "skills")
    md = root / "office" / "SKILL.md"
    md.write_text(md.read_text() + "\nAlso `python scripts/nomain.py`.\n")
    kinds = {s.name: s.kind for s in SkillManager([root]).get_skill("office").scripts}
    assert kinds["nomain"] == "entry"


def test_helpers_are_never_tools(manager: SkillManager) -> None:
    scripts = {s.script for s in tool_specs(manager, ["office", "creator"]) if s.kind == "script"}
    assert scripts == {
        "scripts/convert.py",
        "scripts/office/validate.py",
        "scripts/package_skill.py",
        "scripts/run_eval.py",
    }


def test_running_a_helper_refuses_naming_the_entry_points(manager: SkillManager) -> None:
    with pytest.raises(HelperScriptError) as info:
        manager.execute_skill_script("office", "scripts/office/validators/base.py")
    message = str(info.value)
    assert "\n" not in message and "helper module" in message
    assert "scripts/convert.py" in message and "scripts/office/validate.py" in message
    assert manager.audit.records()[-1].outcome == "refused"


def test_module_script_runs_with_python_m_from_the_skill_root(manager: SkillManager) -> None:
    skill = manager.get_skill("creator")
    plan = manager.plan("creator", "run_eval", argv=["SKILL.md"], cwd="skill")
    command = plan.prepared.command
    assert command[1:] == ("-m", "scripts.run_eval", "SKILL.md")
    assert plan.request.scripts[0].command == command  # the panel shows the exact command
    assert plan.request.scripts[0].cwd == str(skill.base_dir.resolve())
    out = manager.executor.run(plan.prepared).json()
    assert out["first"] == "---" and out["name"] == "__main__"
    assert out["spec"] == "scripts.run_eval" and out["cwd"] == str(skill.base_dir.resolve())


def test_module_script_from_the_workspace_cannot_be_shadowed(
    manager: SkillManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The notebook's folder has its own scripts/utils.py and a data file: the data file is
    # found (cwd = workspace), the decoy module is not (-P keeps the cwd off sys.path).
    work = tmp_path / "work"
    (work / "scripts").mkdir(parents=True)
    (work / "scripts" / "__init__.py").write_text("")
    (work / "scripts" / "utils.py").write_text("raise SystemExit('decoy imported')\n")
    (work / "notes.md").write_text("hello from the workspace\n")
    monkeypatch.chdir(work)
    plan = manager.plan("creator", "run_eval", argv=["notes.md"])  # default: workspace
    assert plan.prepared.command[1:4] == ("-P", "-m", "scripts.run_eval")
    assert plan.request.scripts[0].cwd == str(work.resolve())
    result = manager.executor.run(plan.prepared)
    assert result.success, result.stderr
    out = result.json()
    assert out["first"] == "hello from the workspace"
    assert out["cwd"] == str(work.resolve())
    assert out["sys_path0"] == str(manager.get_skill("creator").base_dir.resolve())


def test_module_script_in_a_skill_venv_without_dash_p_runs_from_the_skill_only(
    manager: SkillManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A .venv the user made in the skill folder with an older Python (Ubuntu 22.04's is 3.10):
    # its python lacks -P. A wrapper stands in for that interpreter; pyvenv.cfg gives its age.
    base = manager.get_skill("creator").base_dir
    (base / ".venv" / "bin").mkdir(parents=True)
    python = base / ".venv" / "bin" / "python"
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    (base / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\nversion = 3.10.12\n")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InterpreterNotFoundError) as info:
        manager.execute_skill_script("creator", "run_eval", argv=["x"])
    message = str(info.value)
    assert "\n" not in message and "is 3.10" in message and "cwd='skill'" in message
    assert manager.audit.records()[-1].outcome == "refused"
    # What it must not refuse: the same venv from the skill folder (no -P needed), an
    # interpreter of unknown version (no pyvenv.cfg), and a venv of a Python with -P.
    done = manager.execute_skill_script("creator", "run_eval", argv=["SKILL.md"], cwd="skill")
    assert done.success and done.json()["first"] == "---", done.stderr
    (base / ".venv" / "pyvenv.cfg").unlink()
    (tmp_path / "notes.md").write_text("from the workspace\n")
    done = manager.execute_skill_script("creator", "run_eval", argv=["notes.md"])
    assert done.success and done.json()["first"] == "from the workspace", done.stderr
    shutil.rmtree(base / ".venv")
    add_skill_venv(base, {})
    done = manager.execute_skill_script("creator", "run_eval", argv=["notes.md"])
    assert done.success and done.json()["first"] == "from the workspace", done.stderr


def test_sibling_imports_run_as_a_file_from_any_cwd(
    manager: SkillManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # validators/base.py imports defusedxml (the skill's requirements.txt): the skill's own
    # venv has it, whatever the running Python has installed.
    python = add_skill_venv(manager.get_skill("office").base_dir, {"defusedxml": "0.7.1"})
    monkeypatch.chdir(tmp_path)
    result = manager.execute_skill_script("office", "convert", argv=["a.docx"])
    assert result.success, result.stderr
    assert result.json() == {"converted": ["a.docx"]}
    validate = manager.execute_skill_script("office", "scripts/office/validate.py", cwd="skill")
    assert validate.success, validate.stderr
    assert validate.json() == {"validator": "BaseValidator"}
    command = manager.plan("office", "convert").prepared.command
    assert command[0] == str(python) and command[1].endswith("scripts/convert.py")


def test_env_has_skill_base_dir_and_workspace_whatever_the_cwd(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    code = (
        "import json, os\nif __name__ == '__main__':\n    print(json.dumps([os.getcwd(), "
        "os.environ['SKILL_BASE_DIR'], os.environ['SKILL_WORKSPACE']]))\n"
    )
    base = make_skill(tmp_path / "skills", "envy", scripts={"scripts/env.py": code}, body="x")
    work = tmp_path / "work"
    other = tmp_path / "other"
    work.mkdir()
    other.mkdir()
    monkeypatch.chdir(work)
    manager = SkillManager([tmp_path / "skills"])
    real = str(base.resolve())
    for cwd, expected in (("skill", real), ("workspace", str(work)), (other, str(other))):
        got = manager.execute_skill_script("envy", "env", cwd=cwd).json()
        assert got == [expected, str(base), str(work)], cwd
    manager.run_cwd = "skill"
    assert manager.execute_skill_script("envy", "env").json()[0] == real


def test_a_bad_cwd_is_one_line_naming_the_fix(manager: SkillManager, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="not a folder: pass 'skill', 'workspace'"):
        manager.execute_skill_script("office", "convert", cwd=tmp_path / "nope")
    with pytest.raises(ValueError, match="not a folder"):
        SkillManager(run_cwd=str(tmp_path / "nope"))


def test_source_analysis_finds_programs_in_all_three_forms(tmp_path: Path) -> None:
    path = tmp_path / "x.py"
    path.write_text(
        "import os, shutil, subprocess\n"
        "from subprocess import run as go\n"
        "try:\n    import lxml.etree\nexcept ImportError:\n    lxml = None\n"
        "def a(args):\n    subprocess.run(['gh', 'pr', 'list'])\n"
        "def b(args):\n    subprocess.check_output(['soffice'] + args)\n"
        "def c(args):\n    cmd = ['pandoc', '-o', 'x']\n    go(cmd)\n"
        "def d():\n    shutil.which('qpdf')\n    os.system('git status')\n"
        "if __name__ == '__main__':\n    a([])\n"
    )
    info = analyze(path)
    assert info.programs == ("gh", "soffice", "pandoc", "qpdf", "git")
    assert info.main_guard and not info.shebang
    lxml = [i for i in info.imports if i.module == "lxml.etree"]
    assert lxml and lxml[0].optional
    assert analyze(path) is info  # cached while the file is unchanged


def test_skill_scripts_are_reclassified_when_files_change(tmp_path: Path) -> None:
    root = write_all(tmp_path / "skills")
    manager = SkillManager([root])
    assert {s.name: s.kind for s in manager.get_skill("office").scripts}["nomain"] == "helper"
    path = root / "office" / "scripts" / "nomain.py"
    path.write_text("def helper():\n    return 1\nif __name__ == '__main__':\n    print(1)\n")
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert {s.name: s.kind for s in manager.get_skill("office").scripts}["nomain"] == "entry"
