"""Skills in hidden folders (catalog/hidden.py): not searched, but counted and named, in the
manager's warnings and in ``%skills add``."""

from __future__ import annotations

from pathlib import Path

from skill_magics.core.catalog.hidden import hidden_skills
from skill_magics.core.manager import SkillManager


def _openai_like(root: Path, make_skill) -> Path:
    skills = root / "skills"
    for folder, name in ((".curated", "a"), (".curated", "b"), (".system", "c")):
        make_skill(skills / folder, name, body="x")
    make_skill(skills / ".git" / "objects", "not-counted", body="x")
    return skills


def test_hidden_skill_md_files_are_counted(tmp_path: Path, make_skill) -> None:
    skills = _openai_like(tmp_path, make_skill)
    make_skill(skills, "visible", body="x")
    make_skill(skills / "visible" / ".hidden-inside-a-skill", "inner", body="x")
    assert hidden_skills(skills) == {str(skills / ".curated"): 2, str(skills / ".system"): 1}


def test_manager_warnings_carry_it(tmp_path: Path, make_skill) -> None:
    skills = _openai_like(tmp_path, make_skill)
    manager = SkillManager([skills])
    assert manager.list_skills() == []
    (warning,) = manager.warnings
    assert warning.startswith(f"3 SKILL.md files under {skills} lie in hidden folders")
    assert ".curated (2), .system (1)" in warning
    assert f"%skills add {skills / '.curated'}" in warning
    manager.add_dir(skills / ".curated")
    assert [m.name for m in manager.list_skills()] == ["a", "b"]
