"""May a script run, is it offered (catalog/kinds.py), module scripts run as ``python -m``
from the skill root, and the one-pass source analysis they rest on (catalog/pysource.py,
catalog/toplevel.py).

Real layouts (tests/real_layouts.py), real processes: nothing is mocked. The public skills'
shapes are in the conformance corpus (tests/conformance, test_conformance.py)."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from skill_magics.core.base.errors import HelperScriptError, ModuleScriptError
from skill_magics.core.base.models import ScriptMetadata
from skill_magics.core.base.status import ScriptRole
from skill_magics.core.catalog.pysource import analyze
from skill_magics.core.catalog.toplevel import only_definitions
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.tools import tool_specs
from skill_magics.core.run.executor import ScriptExecutor
from tests.real_layouts import add_skill_venv, write_all

OFFERED, RUNNABLE, LIBRARY = ScriptRole.OFFERED, ScriptRole.RUNNABLE, ScriptRole.LIBRARY
ROLES = {
    "creator": {
        "scripts/__init__.py": (LIBRARY, ""),
        "scripts/package_skill.py": (OFFERED, "scripts.package_skill"),
        "scripts/run_eval.py": (OFFERED, "scripts.run_eval"),
        "scripts/utils.py": (LIBRARY, ""),  # imports and a def: running it does nothing
    },
    "office": {
        "scripts/convert.py": (OFFERED, ""),  # sibling import: runs as a file
        "scripts/nomain.py": (LIBRARY, ""),  # one def, nothing else
        "scripts/office/__init__.py": (LIBRARY, ""),
        "scripts/office/soffice.py": (RUNNABLE, ""),  # a main guard, imported by convert.py
        "scripts/office/validate.py": (OFFERED, ""),  # a main guard, imported by none
        "scripts/office/validators/__init__.py": (LIBRARY, ""),
        "scripts/office/validators/base.py": (RUNNABLE, ""),  # imported, has a main guard
    },
    "pep": {"scripts/table.py": (OFFERED, "")},
}


@pytest.fixture
def manager(tmp_path: Path) -> SkillManager:
    return SkillManager([write_all(tmp_path / "skills")])


def test_roles_and_modules_follow_the_rules(manager: SkillManager) -> None:
    for skill, expected in ROLES.items():
        got = {s.path.as_posix(): (s.role, s.module) for s in manager.get_skill(skill).scripts}
        assert got == expected, skill


def test_everything_a_person_could_run_may_run(tmp_path: Path, make_skill) -> None:
    base = make_skill(
        tmp_path,
        "misc",
        scripts={
            "scripts/bang.py": "#!/usr/bin/env python3\ndef f():\n    return 1\n",
            "scripts/bang_work.py": "#!/usr/bin/env python3\ndef f():\n    return 1\nf()\n",
            "scripts/guarded.py": "def f():\n    return 1\nif __name__ == '__main__':\n    f()\n",
            "scripts/plain.py": "import json, sys\nprint(json.load(sys.stdin))\n",
            "scripts/reads_argv.py": "import sys\nNAME = sys.argv[1]\n",
            "scripts/loop.py": "for i in range(2):\n    pass\n",
            "scripts/run.sh": "echo hi\n",
            "scripts/x.py": "def f():\n    return 2\n",
            "scripts/lib.py": "import re\nPAT = re.compile('x')\ndef f():\n    return 3\n",
            "scripts/__init__.py": "if __name__ == '__main__':\n    print('never')\n",
        },
        body="x",
        executable=False,
    )
    (base / "scripts/x.py").chmod(0o755)
    roles = {s.name: s.role for s in SkillManager([tmp_path]).get_skill("misc").scripts}
    assert roles == {
        # A shebang or the exec bit says "run me": it runs when asked. With nothing but
        # definitions it has no work of its own (a template an app imports): not offered as
        # a tool (issue 44 item 11).
        "bang": RUNNABLE,
        "x": RUNNABLE,
        "bang_work": OFFERED,  # a shebang and a top-level call: work of its own
        "guarded": OFFERED,  # a main guard
        "plain": OFFERED,  # the simplest skill there is
        "reads_argv": OFFERED,
        "loop": OFFERED,
        "run": OFFERED,
        "lib": LIBRARY,
        "__init__": LIBRARY,  # even with a main guard
    }
    manager = SkillManager([tmp_path])
    tools = {s.script for s in tool_specs(manager, ["misc"]) if s.kind == "script"}
    assert tools == {
        f"scripts/{n}" for n in ("bang_work.py", "guarded.py", "plain.py", "reads_argv.py")
    } | {"scripts/loop.py", "scripts/run.sh"}
    done = manager.execute_skill_script("misc", "bang", {}, approver=None)  # asked: it runs
    assert done.exit_code == 0


def test_naming_a_script_in_any_markdown_file_offers_it(tmp_path: Path) -> None:
    root = write_all(tmp_path / "skills")
    # Named only in a markdown file SKILL.md does not link (pdf's forms.md shape).
    (root / "office" / "docs").mkdir()
    (root / "office" / "docs" / "tips.md").write_text("Try `python scripts/office/soffice.py`.\n")
    roles = {s.name: s.role for s in SkillManager([root]).get_skill("office").scripts}
    assert roles["soffice"] == OFFERED
    assert roles["base"] == RUNNABLE  # still imported and named nowhere
    assert roles["nomain"] == LIBRARY


def test_runnable_scripts_other_scripts_import_are_not_tools(manager: SkillManager) -> None:
    scripts = {s.script for s in tool_specs(manager, ["office", "creator"]) if s.kind == "script"}
    assert scripts == {
        "scripts/convert.py",
        "scripts/office/validate.py",
        "scripts/package_skill.py",
        "scripts/run_eval.py",
    }


def test_a_runnable_imported_script_runs(manager: SkillManager) -> None:
    result = manager.execute_skill_script("office", "scripts/office/validators/base.py")
    assert result.success, result.stderr
    assert result.stdout.strip() == "a helper with a main guard"


def test_running_a_module_of_definitions_refuses_naming_the_runnable_scripts(
    manager: SkillManager,
) -> None:
    with pytest.raises(HelperScriptError) as info:
        manager.execute_skill_script("office", "nomain")
    message = str(info.value)
    assert "\n" not in message and "only imports, definitions and constants" in message
    named = message.split("run one of ", 1)[1].split(", ")
    # Offered first, then the runnable ones other scripts import; never the refused ones.
    assert named == [
        "scripts/convert.py",
        "scripts/office/validate.py",
        "scripts/office/soffice.py",
        "scripts/office/validators/base.py",
    ]
    assert manager.audit.records()[-1].outcome == "refused"
    with pytest.raises(HelperScriptError, match="is a package's __init__.py"):
        manager.execute_skill_script("office", "scripts/office/__init__.py")


def test_a_skill_with_nothing_runnable_says_what_to_add(tmp_path: Path, make_skill) -> None:
    make_skill(tmp_path, "lib", scripts={"scripts/util.py": "X = 1\n"}, executable=False)
    with pytest.raises(HelperScriptError, match="no script that runs: give the script"):
        SkillManager([tmp_path]).execute_skill_script("lib", "util")


def test_module_script_runs_with_python_m_from_the_skill_root(manager: SkillManager) -> None:
    skill = manager.get_skill("creator")
    plan = manager.plan("creator", "run_eval", argv=["SKILL.md"], cwd="skill")
    command = plan.prepared.command
    assert command[1:] == ("-m", "scripts.run_eval", "SKILL.md")
    assert plan.request.scripts[0].command == command  # the panel shows the exact command
    assert plan.request.scripts[0].cwd == str(skill.base_dir.resolve())
    out = manager.run_planned(plan).script_result().json()
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
    result = manager.run_planned(plan).script_result()
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
    with pytest.raises(ModuleScriptError) as info:
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
    manager.configure(run_cwd="skill")
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

    def roles() -> dict[str, ScriptRole]:
        return {s.name: s.role for s in manager.get_skill("office").scripts}

    assert roles()["nomain"] == LIBRARY
    path = root / "office" / "scripts" / "nomain.py"
    path.write_text("def helper():\n    return 1\nif __name__ == '__main__':\n    print(1)\n")
    os.utime(path, ns=(1, 1))  # a different mtime even on coarse clocks
    assert roles()["nomain"] == OFFERED
    # A markdown file added two folders down names soffice.py: offered from then on.
    (root / "office" / "references" / "deep").mkdir(parents=True)
    assert roles()["soffice"] == RUNNABLE
    (root / "office" / "references" / "deep" / "x.md").write_text("`scripts/office/soffice.py`\n")
    assert roles()["soffice"] == OFFERED


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("", True),
        ('"""Docstring."""\nimport os\nfrom x import y\n__all__ = ["f"]\n', True),
        ("try:\n    import lxml\nexcept ImportError:\n    lxml = None\n", True),
        ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pandas\n", True),
        ("import logging\nLOG = logging.getLogger(__name__)\nclass A:\n    pass\n", True),
        ("@dataclass\nclass A:\n    x: int = 0\nB: int\nC = A\nC += 1\n", True),
        ("import sys\nif sys.version_info >= (3, 11):\n    import tomllib\n", True),
        ("import json, sys\nprint(json.load(sys.stdin))\n", False),
        ("import sys\nreader = open(sys.argv[1])\n", False),
        ("import sys\nDATA = sys.stdin.read()\n", False),
        ("def main():\n    pass\nmain()\n", False),
        ("def main():\n    return 1\nRESULT = main()\n", False),
        ("for x in []:\n    pass\n", False),
        ("with open('x') as f:\n    pass\n", False),
        ("import asyncio\nasync def go():\n    pass\nasyncio.run(go())\n", False),
        ("try:\n    import x\nexcept ImportError:\n    print('install x')\n", False),
        ("def broken(:\n", False),  # a program with a bug: running it shows the error
    ],
)
def test_only_definitions(source: str, expected: bool) -> None:
    assert only_definitions(source) is expected


def test_source_info_reports_only_definitions_without_a_main_guard(tmp_path: Path) -> None:
    lib = tmp_path / "lib.py"
    lib.write_text("import re\nX = re.compile('x')\n")
    guarded = tmp_path / "cli.py"
    guarded.write_text("def f():\n    pass\nif __name__ == '__main__':\n    f()\n")
    assert analyze(lib).only_definitions and not analyze(guarded).only_definitions


def test_executor_called_directly_runs_a_module_script_as_a_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No planner, no catalog: the executor reads the script's own imports.
    root = write_all(tmp_path / "skills")
    base = root / "creator"
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("from the workspace\n")
    monkeypatch.chdir(work)
    meta = SkillManager([root]).get_skill("creator").metadata
    executor = ScriptExecutor(run_cwd="workspace")
    checks, settings = executor.checks, executor.settings
    prepared = checks.script(settings, "scripts/run_eval.py", None, base, meta, argv=["notes.md"])
    assert prepared.command[1:4] == ("-P", "-m", "scripts.run_eval")
    result = executor.execute("scripts/run_eval.py", None, base, meta, argv=["notes.md"])
    assert result.success, result.stderr
    assert result.json()["spec"] == "scripts.run_eval"
    assert result.json()["first"] == "from the workspace"
    # A sibling-import script still runs as a file; module="" forces a file run.
    office = root / "office"
    convert = checks.script(settings, "scripts/convert.py", None, office, meta)
    assert convert.command[1].endswith("scripts/convert.py")
    as_file = executor.execute("scripts/run_eval.py", None, base, meta, argv=["x"], module="")
    assert not as_file.success and "No module named 'scripts'" in as_file.stderr


def test_script_metadata_defaults_to_offered() -> None:
    meta = ScriptMetadata("x", Path("scripts/x.py"), "python", "python3")
    assert meta.role is OFFERED and meta.runnable and meta.offered


def test_shell_and_javascript_includes_are_imports() -> None:
    from skill_magics.core.catalog.includes import included_files

    files = {
        "scripts/lib.sh",
        "scripts/lib/common.sh",
        "tools/env.sh",
        "scripts/a.js",
        "scripts/lib/b.mjs",
        "scripts/lib/index.cjs",
        "scripts/run.sh",
    }
    shell = (
        'SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"\n'
        'source "$SCRIPT_DIR/lib.sh"\n'
        '. "$(dirname "${BASH_SOURCE[0]}")/lib/common.sh"  # helpers\n'
        "source tools/env.sh\n"
        ". venv/bin/activate\n"
        "source /etc/profile\n"
        "echo . done\n"
    )
    got = included_files("scripts/run.sh", "bash", shell, files.__contains__)
    assert got == {"scripts/lib.sh", "scripts/lib/common.sh", "tools/env.sh"}
    js = (
        "const fs = require('fs');\n"
        "const a = require('./a');\n"
        "import { b } from './lib/b.mjs';\n"
        "const c = await import('./lib');\n"
        "import x from '../outside.js';\n"
    )
    got = included_files("scripts/main.js", "node", js, files.__contains__)
    assert got == {"scripts/a.js", "scripts/lib/b.mjs", "scripts/lib/index.cjs"}
