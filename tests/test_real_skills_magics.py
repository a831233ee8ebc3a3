"""The notebook side of real skills: %skills show (offered, runnable and modules apart,
requirements), %skills add (no skill / hidden folders), %%skillrun on an imported script, on
a module of definitions and --cwd, %skills env refusing cleanly."""

from __future__ import annotations

from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from skill_magics.notebook.completion import candidates
from tests.real_layouts import MISSING_PROGRAM, write_all


@pytest.fixture
def shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("SKILL_MAGICS_PATH", raising=False)
    monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", "*")
    monkeypatch.chdir(tmp_path)
    skills = write_all(tmp_path / "skills")
    ip = InteractiveShell.instance()
    ip.config.pop("SkillMagics", None)
    ip.run_line_magic("load_ext", "skill_magics")
    ip.run_cell(f"%config SkillMagics.skill_dirs = [{str(skills)!r}]")
    ip.skills_root = skills
    yield ip
    ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)
    ip.user_ns.pop("res", None)


def test_show_lists_offered_runnable_and_modules_apart_and_what_is_missing(shell) -> None:
    text = shell.run_line_magic("skills", "show office").text
    scripts, rest = text.split("--- also runnable (other scripts import them", 1)
    assert "convert.py" in scripts and "validate.py" in scripts
    assert "validators/base.py" not in scripts and "nomain.py" not in scripts
    runnable, rest = rest.split("--- modules (imported by the scripts; running them does", 1)
    assert "validators/base.py" in runnable and "soffice.py" in runnable
    assert "nomain.py" not in runnable
    modules, requirements = rest.split("--- requirements ---", 1)
    assert "nomain.py" in modules and "office/__init__.py" in modules
    assert "skill-magics-test-absent-pkg" in requirements and MISSING_PROGRAM in requirements
    assert "MISSING" in requirements and "%skills env office" in requirements


def test_the_skills_table_counts_runnable_and_modules_apart(shell) -> None:
    text = shell.run_line_magic("skills", "").text
    office = next(line for line in text.splitlines() if line.startswith("office"))
    assert "2 (+2 runnable, +3 modules)" in office


def test_completion_offers_the_offered_scripts_only(shell) -> None:
    from skill_magics.notebook.extension import get_magics

    names = set(candidates(get_magics(shell).manager))
    assert "office.convert" in names and "creator.run_eval" in names
    assert "creator.package_skill" in names and "office.validate" in names
    assert not names & {"office.nomain", "office.base", "office.soffice", "creator.utils"}


def test_skillrun_runs_a_runnable_script_other_scripts_import(shell) -> None:
    shell.run_cell("%%skillrun office.scripts/office/validators/base.py -o res\n")
    res = shell.user_ns["res"]
    assert res.status == "completed", res.stderr
    assert res.stdout.strip() == "a helper with a main guard"


def test_skillrun_on_a_module_of_definitions_refuses_in_one_line(shell, capsys) -> None:
    result = shell.run_cell("%%skillrun office.nomain\n")
    assert result.error_in_exec is not None or result.error_before_exec is not None
    err = capsys.readouterr()
    line = [ln for ln in (err.out + err.err).splitlines() if "HelperScriptError" in ln]
    assert len(line) == 1 and "scripts/convert.py" in line[0]
    assert "only imports, definitions and constants" in line[0]


def test_skillrun_cwd_option_and_default_workspace(shell, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("next to the notebook\n")
    shell.run_cell("%%skillrun creator.run_eval -o res -- notes.md\n")
    res = shell.user_ns["res"]
    assert res.status == "completed", res.stderr
    assert res.json()["first"] == "next to the notebook"
    shell.run_cell("%%skillrun creator.run_eval --cwd skill -o res -- SKILL.md\n")
    assert shell.user_ns["res"].json()["first"] == "---"


def test_add_a_folder_without_skills_says_so(shell, tmp_path: Path, make_skill, capsys) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    shell.run_line_magic("skills", f"add {empty}")
    assert "No skill found in" in capsys.readouterr().out
    hidden = tmp_path / "openai" / "skills"
    make_skill(hidden / ".curated", "x1", body="x")
    make_skill(hidden / ".curated", "x2", body="x")
    shell.run_line_magic("skills", f"add {hidden}")
    out = capsys.readouterr().out
    assert "No skill found in" in out and "2 SKILL.md files" in out
    assert f"%skills add {hidden / '.curated'}" in out
    shell.run_line_magic("skills", f"add {hidden / '.curated'}")
    out = capsys.readouterr().out
    assert "2 skills from it (x1, x2)" in out


def test_env_with_nothing_to_install_says_so(shell, capsys) -> None:
    shell.run_line_magic("skills", "env creator")
    assert "nothing to install" in capsys.readouterr().out


@pytest.mark.timeout(240)
def test_env_builds_streams_and_then_the_script_runs(
    shell, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd
) -> None:
    # Pre-approved (SKILL_MAGICS_AUTO_APPROVE=*, audited) as a headless notebook would be.
    monkeypatch.setenv("SKILL_MAGICS_ENV_DIR", str(tmp_path / "envs"))
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    shell.run_line_magic("skills", "env pep")
    out = capfd.readouterr()
    assert "Built the environment of 'pep'" in out.out and "tabulate" in out.out
    assert out.err or out.out.count("\n") > 1  # the installer's own output came through
    shell.run_cell("%%skillrun pep.table -o res -- data.csv\n")
    res = shell.user_ns["res"]
    assert res.status == "completed", res.stderr
    assert res.stdout.split() == ["a", "b", "---", "---", "1", "2"]
