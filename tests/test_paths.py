"""core/base/paths.py: the only place that decides "inside the skill". Real files, real symlinks.

The checks on their own, then through the manager and the executor: escapes, symlinks, NUL
bytes and setuid files are refused before anything is spawned and audited once; a hard link is
the file inside the skill.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from manager_support import manager_for, posix_only, refusals

from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import (
    PathSecurityError,
    ScriptNotFoundError,
    ScriptPermissionError,
    SkillMagicsError,
)
from skill_magics.core.base.paths import recheck, resolve_script
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.planning.checks import RunChecks
from skill_magics.core.run.planning.settings import RunSettings


@pytest.fixture
def skill(tmp_path: Path) -> Path:
    base = tmp_path / "skill"
    (base / "scripts" / "utils").mkdir(parents=True)
    (base / "scripts" / "run.sh").write_text("echo hi\n")
    (base / "scripts" / "utils" / "parser.py").write_text("print(1)\n")
    (base / "scripts" / "my script [1].py").write_text("print(2)\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.sh").write_text("echo evil\n")
    return base


def test_relative_and_nested_and_special_characters(skill: Path) -> None:
    for rel in ("scripts/run.sh", "scripts/utils/parser.py", "scripts/my script [1].py"):
        got = resolve_script(rel, skill)
        assert got.relative == Path(rel)
        assert got.real == Path(os.path.realpath(skill / rel))


def test_absolute_path_inside_the_skill_is_accepted(skill: Path) -> None:
    got = resolve_script(skill / "scripts" / "run.sh", skill)
    assert got.relative == Path("scripts/run.sh")


def test_dotdot_that_stays_inside_is_accepted(skill: Path) -> None:
    got = resolve_script("scripts/utils/../run.sh", skill)
    assert got.relative == Path("scripts/run.sh")


@pytest.mark.parametrize(
    "path",
    ["../../etc/passwd", "/etc/passwd", "scripts/../../x", "..", "../outside/evil.sh"],
)
def test_escapes_are_refused(skill: Path, path: str) -> None:
    with pytest.raises(PathSecurityError, match="escapes the skill directory"):
        resolve_script(path, skill)


def test_escape_is_refused_even_when_the_target_does_not_exist(skill: Path) -> None:
    # Security before existence: the answer must not reveal whether outside files exist.
    with pytest.raises(PathSecurityError):
        resolve_script("../nope/nothing.sh", skill)


def test_symlinked_file_pointing_outside_is_refused(skill: Path) -> None:
    (skill / "scripts" / "link.sh").symlink_to(skill.parent / "outside" / "evil.sh")
    with pytest.raises(PathSecurityError, match="symlink"):
        resolve_script("scripts/link.sh", skill)


def test_symlinked_directory_pointing_outside_is_refused(skill: Path) -> None:
    (skill / "tools").symlink_to(skill.parent / "outside", target_is_directory=True)
    with pytest.raises(PathSecurityError, match="symlink"):
        resolve_script("tools/evil.sh", skill)


def test_symlink_inside_the_skill_keeps_its_name_and_runs_the_target(skill: Path) -> None:
    (skill / "run").symlink_to(skill / "scripts" / "run.sh")
    got = resolve_script("run", skill)
    assert got.relative == Path("run")
    assert got.real == Path(os.path.realpath(skill / "scripts" / "run.sh"))


def test_skill_dir_reached_through_a_symlink(skill: Path, tmp_path: Path) -> None:
    linked = tmp_path / "linked-skill"
    linked.symlink_to(skill, target_is_directory=True)
    assert resolve_script("scripts/run.sh", linked).relative == Path("scripts/run.sh")
    # Absolute paths may name the skill by its real or its linked location.
    assert resolve_script(skill / "scripts/run.sh", linked).relative == Path("scripts/run.sh")
    assert resolve_script(linked / "scripts/run.sh", linked).relative == Path("scripts/run.sh")


def test_missing_script(skill: Path) -> None:
    with pytest.raises(ScriptNotFoundError, match="scripts/nope.py not found"):
        resolve_script("scripts/nope.py", skill)


def test_missing_skill_dir(tmp_path: Path) -> None:
    with pytest.raises(ScriptNotFoundError, match="does not exist"):
        resolve_script("x.sh", tmp_path / "no-such-skill")


def test_directory_and_fifo_are_not_scripts(skill: Path) -> None:
    with pytest.raises(ScriptPermissionError, match="directory"):
        resolve_script("scripts/utils", skill)
    with pytest.raises(ScriptPermissionError, match="directory itself"):
        resolve_script(".", skill)
    os.mkfifo(skill / "scripts" / "pipe.sh")
    with pytest.raises(ScriptPermissionError, match="not a regular file"):
        resolve_script("scripts/pipe.sh", skill)


@pytest.mark.parametrize(("bit", "word"), [(stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")])
def test_setuid_and_setgid_are_refused(skill: Path, bit: int, word: str) -> None:
    target = skill / "scripts" / "run.sh"
    target.chmod(0o755 | bit)
    if not target.stat().st_mode & bit:
        pytest.skip(f"file system dropped the {word} bit")
    with pytest.raises(ScriptPermissionError, match=f"{word}.*chmod ug-s"):
        resolve_script("scripts/run.sh", skill)


def test_nul_byte_and_empty_path_are_refused(skill: Path) -> None:
    for bad in ("", "scripts/run.sh\0.py"):
        with pytest.raises(PathSecurityError):
            resolve_script(bad, skill)


def test_recheck_catches_a_swap_after_the_check(skill: Path) -> None:
    target = skill / "scripts" / "run.sh"
    checked = resolve_script("scripts/run.sh", skill)
    recheck(checked)  # unchanged: fine

    target.unlink()
    target.symlink_to(skill.parent / "outside" / "evil.sh")
    with pytest.raises(PathSecurityError):
        recheck(checked)

    target.unlink()
    target.write_text("echo replaced\n")  # another file at the same path
    with pytest.raises(PathSecurityError, match="replaced or changed"):
        recheck(checked)

    checked = resolve_script("scripts/run.sh", skill)
    with open(target, "a") as fh:  # edited in place: same inode, new content
        fh.write("echo more\n")
    with pytest.raises(PathSecurityError, match="replaced or changed"):
        recheck(checked)

    checked = resolve_script("scripts/run.sh", skill)
    target.chmod(0o4755)
    if target.stat().st_mode & stat.S_ISUID:
        with pytest.raises(ScriptPermissionError):
            recheck(checked)

    target.unlink()
    with pytest.raises(ScriptNotFoundError, match="removed"):
        recheck(checked)


def test_messages_are_one_line_and_name_a_fix(skill: Path) -> None:
    (skill / "scripts" / "link.sh").symlink_to(skill.parent / "outside" / "evil.sh")
    for bad in ("../../etc/passwd", "scripts/link.sh", "scripts/nope.py", "scripts/utils"):
        with pytest.raises(Exception) as info:
            resolve_script(bad, skill)
        message = str(info.value)
        assert "\n" not in message
        assert ": " in message  # "what happened: what to do"


def test_error_text_is_one_line_whatever_the_path_holds(tmp_path: Path) -> None:
    """A name from a caller or a skill cannot break (or forge) the error line."""
    (tmp_path / "scripts").mkdir()
    for bad, error in (
        ("../x\nINJECTED: all clear.py", PathSecurityError),
        ("scripts/no\x1b[2Khere\u202e.py", ScriptNotFoundError),
    ):
        with pytest.raises(error) as caught:
            resolve_script(bad, tmp_path)
        text = str(caught.value)
        assert "\n" not in text and "\x1b" not in text and "\u202e" not in text
        assert "\\n" in text or "\\x1b" in text


# -- through the manager and the executor: refused before any spawn, audited once -------------


@posix_only
@pytest.mark.parametrize(
    "script",
    [
        "../../outside.sh",
        "scripts/../../outside.sh",
        "scripts/../../../outside.sh",
        "scripts\\..\\..\\outside.sh",
        "./scripts/./../../outside.sh",
    ],
)
def test_lexical_escape_refused_before_spawn_and_audited_once(make_skill, tmp_path, script):
    marker = tmp_path / "ran"
    (tmp_path / "outside.sh").write_text(f"touch {marker}\n")
    make_skill(tmp_path / "skills", "esc", scripts={"scripts/ok.sh": "echo ok\n"})
    manager = manager_for(tmp_path / "skills")
    with pytest.raises(PathSecurityError):
        manager.execute_skill_script("esc", script)
    assert not marker.exists()
    assert len(refusals(manager)) == 1


@posix_only
def test_absolute_and_symlink_escapes_refused_by_the_checks(make_skill, tmp_path):
    marker = tmp_path / "ran"
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "evil.sh").write_text(f"touch {marker}\n")
    skill = make_skill(tmp_path / "skills", "esc", scripts={"scripts/ok.sh": "echo ok\n"})
    os.symlink(outside / "evil.sh", skill / "scripts" / "link.sh")
    os.symlink(outside, skill / "scripts" / "linkdir")
    meta = manager_for(tmp_path / "skills").get_skill("esc").metadata
    audit = AuditLog()
    checks, settings = RunChecks(audit), RunSettings(run_cwd="skill")
    for path in (
        str(outside / "evil.sh"),
        "/etc/passwd",
        "scripts/link.sh",
        "scripts/linkdir/evil.sh",
        str(skill / "scripts" / "link.sh"),
    ):
        with pytest.raises(PathSecurityError):
            checks.script(settings, path, {}, skill, meta)
    assert not marker.exists()
    assert len(refusals(audit)) == 5


@posix_only
def test_hard_link_to_a_file_outside_is_accepted_as_inside(make_skill, tmp_path):
    # NOTE (accepted): a hard link *is* the file inside the skill (same inode); realpath cannot
    # tell. Its content is what the approval preview shows, and setuid files are still refused.
    outside = tmp_path / "outside.sh"
    outside.write_text("echo via hardlink\n")
    skill = make_skill(tmp_path / "skills", "hl", scripts={"scripts/ok.sh": "echo ok\n"})
    os.link(outside, skill / "scripts" / "hard.sh")
    result = manager_for(tmp_path / "skills").execute_skill_script("hl", "hard")
    assert result.stdout == "via hardlink\n"


@posix_only
def test_nul_in_script_name_is_a_refusal_audited_once(make_skill, tmp_path):
    make_skill(tmp_path, "nul", scripts={"scripts/a.sh": "echo hi\n"})
    manager = manager_for(tmp_path)
    with pytest.raises(SkillMagicsError):
        manager.execute_skill_script("nul", "scripts/a.sh\0../../x")
    assert len(refusals(manager)) == 1


@posix_only
def test_nul_in_a_script_name_is_a_path_security_refusal(make_skill, tmp_path):
    make_skill(tmp_path, "nul", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path])
    for name in ("a\0", "scripts/a.sh\0x"):
        with pytest.raises(PathSecurityError, match="NUL"):
            manager.execute_skill_script("nul", name)
    assert [r.outcome for r in manager.audit.records()] == ["refused", "refused"]


@posix_only
def test_setuid_script_refused(make_skill, tmp_path):
    skill = make_skill(tmp_path, "suid", scripts={"scripts/a.sh": "echo hi\n"})
    path = skill / "scripts" / "a.sh"
    path.chmod(0o4755)
    if not path.stat().st_mode & 0o4000:
        pytest.skip("file system drops the setuid bit")
    manager = manager_for(tmp_path)
    with pytest.raises(SkillMagicsError):
        manager.execute_skill_script("suid", "a")
    assert len(refusals(manager)) == 1
