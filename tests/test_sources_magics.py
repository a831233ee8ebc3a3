"""%skills install | verify | sync | update in a real IPython shell, approved by clicking the
real ipywidgets buttons; the panels say what is installed from where, and a run's panel and
%skills show say whether an installed skill still matches its lock."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from IPython.core.interactiveshell import InteractiveShell
from magics_support import click_when_shown
from manager_support import posix_only
from sources_support import commit_all, git, make_collection, tree_files, write_files

from skill_magics.core.installed.lock import read_lock
from skill_magics.notebook.approval.panel import summary_html, summary_text
from skill_magics.notebook.extension import get_magics
from skill_magics.notebook.magics import rewrite

pytestmark = posix_only


@pytest.fixture
def shell(isolated_env, monkeypatch):
    """The shell with the extension loaded, cwd a fresh project (HOME isolated)."""
    monkeypatch.delenv("SKILL_MAGICS_AUTO_APPROVE", raising=False)
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    ip = InteractiveShell.instance()
    ip.config.pop("SkillMagics", None)
    ip.run_line_magic("load_ext", "skill_magics")
    ip.run_cell("%config SkillMagics.approval_ui = 'widgets'")
    ip.work = isolated_env
    ip.repo = make_collection(isolated_env / "collection")
    yield ip
    ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)


def run(ip, cell: str, label: str | None = None):
    clicker = click_when_shown(ip, label) if label else None
    result = ip.run_cell(cell)
    if clicker is not None:
        clicker.join(20)
    return result


def test_install_asks_with_the_files_and_commit_then_installs(shell, capsys):
    into = shell.work / "work" / ".agents" / "skills"
    head = git(shell.repo, "rev-parse", "HEAD")
    result = run(
        shell, f"%skills install file://{shell.repo} --skill pdf --skill gh-fix-ci", "Yes once"
    )
    assert result.error_in_exec is None, result.error_in_exec
    out = capsys.readouterr().out
    assert f"Installed 2 skills from file://{shell.repo} (commit {head[:12]})" in out
    assert f"lock: {into / 'skills-lock.json'}" in out
    panel = get_magics(shell).panels[-1]
    text, page = summary_text(panel.request), summary_html(panel.request)
    assert "Install 2 skills 'pdf', 'gh-fix-ci'?" in text and "nothing runs now" in text
    assert f"commit: {head}" in text and "scripts/extract.py" in text and "[script]" in text
    assert head in page and "folder in source" in page and "skills/.curated/gh-fix-ci" in page
    assert panel.buttons["yes_once"].tooltip == "Install these files"
    assert tree_files(into / "pdf") == tree_files(shell.repo / "skills" / "pdf")
    # the new skills are there for the other magics at once
    assert "gh-fix-ci" in repr(shell.run_cell("%skills").result)


def test_no_installs_nothing(shell):
    result = run(shell, f"%skills install {shell.repo} --skill pdf", "No")
    assert "ApprovalDeclined" in str(result.error_in_exec)
    assert not (shell.work / "work" / ".agents").exists()


def test_verify_show_and_the_run_panel_tell_whether_files_match_the_lock(shell, capsys):
    run(shell, f"%skills install {shell.repo} --skill pdf", "Yes once")
    capsys.readouterr()
    shell.run_cell("%skills verify")
    assert "All 1 skill in" in capsys.readouterr().out
    detail = repr(shell.run_cell("%skills show pdf").result)
    assert f"installed from  {shell.repo} (skills/pdf), commit" in detail
    assert "files match" in detail
    skill = shell.work / "work" / ".agents" / "skills" / "pdf"
    (skill / "scripts" / "extract.py").write_text("print('edited after the install')\n")
    shell.run_cell("%skills verify")
    out = capsys.readouterr().out
    assert "1 difference from the lock:\n  pdf: changed scripts/extract.py" in out
    detail = repr(shell.run_cell("%skills show pdf").result)
    assert "1 CHANGED since the install: changed scripts/extract.py" in detail
    # a run's approval panel says it too, before anyone clicks
    run(shell, "%%skillrun pdf.extract -- doc.pdf", "No")
    text = summary_text(get_magics(shell).panels[-1].request)
    assert "Installed from:" in text and "1 CHANGED since the install" in text


def test_update_and_sync_through_the_magics(shell, capsys):
    into = shell.work / "work" / ".agents" / "skills"
    run(shell, f"%skills install {shell.repo} --skill pdf", "Yes once")
    write_files(shell.repo, {"skills/pdf/reference.md": "# Reference, second edition\n"})
    new_head = commit_all(shell.repo, "two")
    capsys.readouterr()
    result = run(shell, "%skills update pdf", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    assert "Updated 1 skill in" in capsys.readouterr().out
    request = get_magics(shell).panels[-1].request
    text = summary_text(request, full=True)
    assert "Update skill 'pdf'?" in text and "changes: changed reference.md" in text
    assert "| +# Reference, second edition" in text
    assert read_lock(into).skills["pdf"].commit == new_head
    shutil.rmtree(into / "pdf")
    result = run(shell, "%skills sync", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    assert "Re-created 1 skill" in capsys.readouterr().out
    assert tree_files(into / "pdf") == tree_files(shell.repo / "skills" / "pdf")


def test_bad_lines_are_one_line_usage_errors(shell):
    for line, expected in [
        ("%skills install", "usage: %skills install SOURCE"),
        ("%skills install x --bogus", "Unexpected '--bogus': usage: %skills install"),
        ("%skills install ext::sh", "SourceError: The source 'ext::sh' uses the 'ext' transport"),
        ("%skills verify /nowhere", "LockFileError: No skills-lock.json in /nowhere"),
        ("%skills update --into /nowhere", "LockFileError"),
    ]:
        result = shell.run_cell(line)
        message = str(result.error_in_exec)
        assert expected in message and "\n" not in message, (line, message)


def test_install_update_and_sync_lines_are_awaited_on_new_kernels():
    for sub in ("install", "update", "sync"):
        (line,) = rewrite.rewrite([f"%skills {sub} x --force\n"])
        assert line == f"await get_ipython().{rewrite.HOOK_ATTR}('skills {sub}', 'x --force')\n"
    assert rewrite.rewrite(["%skills verify\n"]) == ["%skills verify\n"]  # asks nobody
