"""skills-lock.json in use: verify finds every change, sync re-creates the same digests in an
empty folder (and refuses a source that no longer gives them), update shows what changed and
installs only after approval (declined: nothing changes, the lock included). Real git
repositories, real files; a hostile lock is refused."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from manager_support import RecordingApprover, manager_for, outcomes, posix_only
from sources_support import (
    commit_all,
    git,
    make_collection,
    make_repo,
    skill_md,
    tree_files,
    write_files,
    write_zip,
)

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    LockFileError,
    SkillExistsError,
    SourceError,
)
from skill_magics.core.installed.lock import LOCK_NAME, read_lock, skill_lock_status
from skill_magics.core.run.gating.approval import Decision
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.update import sync_skills, update_skills
from skill_magics.core.sources.verify import verify_skills

pytestmark = posix_only

FILE = {"sha256": "0" * 64, "size": 1}
NEVER = RecordingApprover(error=AssertionError("nobody should be asked"))


@pytest.fixture
def work(isolated_env, monkeypatch):
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return isolated_env


@pytest.fixture
def installed(work):
    """The collection installed into work/into from its repository (pdf, gh-fix-ci)."""
    repo = make_collection(work / "collection")
    into = work / "into"
    install_skills(f"file://{repo}", skills=["pdf", "gh-fix-ci"], into=into, approver=None)
    return repo, into


def test_verify_lists_every_change_one_line_each(installed):
    repo, into = installed
    assert verify_skills(into) == []
    pdf = into / "pdf"
    (pdf / "scripts" / "extract.py").write_text("print('changed')\n")
    (pdf / "reference.md").unlink()
    (pdf / "notes.txt").write_text("added\n")
    (pdf / "LICENSE.txt").chmod(0o755)
    os.symlink("/etc/passwd", pdf / "passwd")
    (pdf / "scripts" / "__pycache__").mkdir()  # a run writes bytecode: not a change
    (pdf / "scripts" / "__pycache__" / "extract.cpython-311.pyc").write_bytes(b"\0")
    shutil.rmtree(into / "gh-fix-ci")
    assert verify_skills(into) == [
        "gh-fix-ci: removed (the skill folder is missing)",
        "pdf: mode LICENSE.txt (executable: yes)",
        "pdf: added notes.txt",
        "pdf: removed reference.md",
        "pdf: changed scripts/extract.py",
        "pdf: added passwd (now a symbolic link)",
    ]
    status = skill_lock_status(pdf)
    assert status is not None and not status.matches and len(status.changes) == 5


def test_sync_into_an_empty_folder_reproduces_the_same_digests(installed, work):
    repo, into = installed
    elsewhere = work / "other-machine" / ".agents" / "skills"
    elsewhere.mkdir(parents=True)
    shutil.copy(into / LOCK_NAME, elsewhere / LOCK_NAME)
    # the repository moved on: sync still gives the locked commit's files
    write_files(repo, {"skills/pdf/reference.md": "# New reference\n"})
    commit_all(repo, "newer")
    approver = RecordingApprover(Decision.YES_ONCE)
    manager = manager_for(work / "none")
    report = sync_skills(elsewhere, manager=manager, approver=approver)
    assert sorted(s.status for s in report.skills) == ["restored", "restored"]
    assert verify_skills(elsewhere) == []
    assert (elsewhere / LOCK_NAME).read_bytes() == (into / LOCK_NAME).read_bytes()
    for name in ("pdf", "gh-fix-ci"):
        assert tree_files(elsewhere / name) == tree_files(into / name)
    assert [r.skill_install.action for r in approver.requests[0].requests] == ["sync", "sync"]
    assert {m.name for m in manager.list_skills()} >= {"pdf", "gh-fix-ci"}
    # in sync already: nothing to do, nobody asked
    report = sync_skills(elsewhere, approver=NEVER)
    assert "nothing to do" in report.message and report.skills == ()


def test_sync_restores_a_missing_skill_and_edits_only_with_force(installed):
    repo, into = installed
    shutil.rmtree(into / "gh-fix-ci")
    (into / "pdf" / "reference.md").write_text("edited\n")
    with pytest.raises(SkillExistsError, match=r"pdf \(changed reference.md\).*--force"):
        sync_skills(into, approver=None)
    assert not (into / "gh-fix-ci").exists()  # refused before anything was written
    report = sync_skills(into, force=True, approver=None)
    assert {s.folder: s.status for s in report.skills} == {
        "gh-fix-ci": "restored",
        "pdf": "restored",
    }
    assert verify_skills(into) == []


def test_sync_refuses_a_source_that_no_longer_gives_the_locked_files(installed, work):
    repo, into = installed
    lock = json.loads((into / LOCK_NAME).read_text())
    lock["skills"]["pdf"]["files"]["reference.md"]["sha256"] = "0" * 64  # not what git gives
    (into / LOCK_NAME).write_text(json.dumps(lock))
    shutil.rmtree(into / "pdf")
    with pytest.raises(LockFileError, match=r"pdf: .* no longer gives the locked files"):
        sync_skills(into, approver=None)
    assert not (into / "pdf").exists() and os.listdir(work / "tmp") == []

    # an archive that changed since it was installed: refused the same way
    archive = write_zip(work / "x.skill", {"x/SKILL.md": skill_md("x")})
    install_skills(archive, into=work / "arch", approver=None)
    write_zip(archive, {"x/SKILL.md": skill_md("x", "Another description.")})
    shutil.rmtree(work / "arch" / "x")
    with pytest.raises(LockFileError, match="x: .* no longer gives the locked files"):
        sync_skills(work / "arch", approver=None)


def test_update_shows_the_changes_declined_changes_nothing_accepted_rewrites_the_lock(
    installed, work
):
    repo, into = installed
    lock_before = (into / LOCK_NAME).read_bytes()
    files_before = tree_files(into / "pdf")
    write_files(
        repo,
        {
            "skills/pdf/scripts/extract.py": "#!/usr/bin/env python3\nprint('pages, faster')\n",
            "skills/pdf/forms.md": "# Forms\n",
        },
    )
    (repo / "skills" / "pdf" / "LICENSE.txt").unlink()
    new_head = commit_all(repo, "pdf 2")

    no = RecordingApprover(Decision.NO)
    manager = manager_for(work / "none")
    with pytest.raises(ApprovalDeclined):
        update_skills(into, manager=manager, approver=no)
    (request,) = no.requests  # gh-fix-ci did not change: only pdf is asked about
    info = request.skill_install
    assert info.action == "update" and info.commit == new_head
    assert info.changes == (
        "removed LICENSE.txt",
        "added forms.md",
        "changed scripts/extract.py",
    )
    assert (
        "-print('pages of', sys.argv[1:])" in info.diff and "+print('pages, faster')" in info.diff
    )
    assert "+++ b/forms.md" in info.diff and "--- a/LICENSE.txt" in info.diff
    assert (into / LOCK_NAME).read_bytes() == lock_before
    assert tree_files(into / "pdf") == files_before
    assert "declined" in outcomes(manager)

    yes = RecordingApprover(Decision.YES_ONCE)
    report = update_skills(into, ["pdf"], manager=manager, approver=yes)
    assert [(s.folder, s.status) for s in report.skills] == [("pdf", "updated")]
    assert tree_files(into / "pdf") == tree_files(repo / "skills" / "pdf")
    assert read_lock(into).skills["pdf"].commit == new_head
    assert verify_skills(into) == []
    # fetched again with nothing new: up to date, nobody asked
    report = update_skills(into, approver=NEVER)
    assert {s.status for s in report.skills} == {"unchanged"} and "up to date" in report.message


def test_update_refuses_edited_skills_and_pinned_refs_stay(installed, work):
    repo, into = installed
    (into / "pdf" / "reference.md").write_text("my notes\n")
    with pytest.raises(SkillExistsError, match="pdf"):
        update_skills(into, ["pdf"], approver=None)
    with pytest.raises(LockFileError, match="No skill 'nope'.*gh-fix-ci, pdf"):
        update_skills(into, ["nope"], approver=None)
    # a skill pinned to a tag stays on the tag
    tagged = make_repo(work / "tagged", {"SKILL.md": skill_md("tagged"), "v": "1\n"})
    git(tagged, "tag", "v1")
    write_files(tagged, {"v": "2\n"})
    commit_all(tagged)
    install_skills(tagged, ref="v1", into=work / "pinned", approver=None)
    report = update_skills(work / "pinned", approver=NEVER)
    assert report.skills[0].status == "unchanged"
    assert (work / "pinned" / "tagged" / "v").read_text() == "1\n"
    # a skill the source no longer has
    git(repo, "rm", "-q", "-r", "skills/.curated/gh-fix-ci")
    commit_all(repo, "moved")
    with pytest.raises(
        SourceError, match="gh-fix-ci: .* has no skill in 'skills/.curated/gh-fix-ci'"
    ):
        update_skills(into, ["gh-fix-ci"], approver=None)


@pytest.mark.parametrize(
    "mutate, why",
    [
        (lambda d: d["skills"].update({"../escape": d["skills"]["pdf"]}), "holds ./."),
        (lambda d: d["skills"].update({".hidden": d["skills"]["pdf"]}), "starts with a dot"),
        (
            lambda d: d["skills"]["pdf"]["files"].update(
                {"/etc/passwd": {"sha256": "0" * 64, "size": 1}}
            ),
            "absolute",
        ),
        (
            lambda d: d["skills"]["pdf"]["files"].update(
                {"a/../../x": {"sha256": "0" * 64, "size": 1}}
            ),
            "component",
        ),
        (lambda d: d["skills"]["pdf"].update({"type": "curl"}), "type"),
        (lambda d: d["skills"]["pdf"].update({"commit": "--upload-pack=x"}), "commit"),
        (lambda d: d.update({"version": 99}), "version"),
    ],
)
def test_a_hostile_lock_is_refused_in_one_line(installed, mutate, why):
    repo, into = installed
    data = json.loads((into / LOCK_NAME).read_text())
    mutate(data)
    (into / LOCK_NAME).write_text(json.dumps(data))
    with pytest.raises(LockFileError, match=why) as exc:
        verify_skills(into)
    assert "\n" not in str(exc.value)
    with pytest.raises(LockFileError):
        sync_skills(into, approver=None)


def test_a_hostile_source_in_a_lock_is_checked_like_a_typed_one(installed, work):
    repo, into = installed
    data = json.loads((into / LOCK_NAME).read_text())
    data["skills"]["pdf"]["source"] = "ext::sh -c touch% /tmp/pwned-by-lock"
    (into / LOCK_NAME).write_text(json.dumps(data))
    shutil.rmtree(into / "pdf")
    with pytest.raises(SourceError, match="transport"):
        sync_skills(into, approver=None)
    assert not Path("/tmp/pwned-by-lock").exists()


def test_no_lock_is_one_line_naming_the_fix(work):
    with pytest.raises(LockFileError, match="No skills-lock.json in .*install skills there first"):
        verify_skills(work / "nowhere")
    (work / "bad").mkdir()
    (work / "bad" / LOCK_NAME).write_text("{not json")
    with pytest.raises(LockFileError, match="is not valid JSON"):
        verify_skills(work / "bad")
