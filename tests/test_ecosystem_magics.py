"""The ecosystem's formats through the magics, in a real IPython shell with the real
ipywidgets buttons clicked: ``%skills install http://127.0.0.1:PORT`` from a well-known index
served by a real HTTP server (then verify, update, sync), ``%skills sync --from PATH`` over a
lock the real ``skills`` CLI wrote, and each refusal one line naming the fix."""

from __future__ import annotations

import shutil
import tempfile

import pytest
from IPython.core.interactiveshell import InteractiveShell
from magics_support import click_when_shown
from manager_support import posix_only
from npm_support import require_cli, skills_add
from sources_support import skill_md, tree_files, write_files
from wellknown_support import Site, entry, serve, tar_gz

from skill_magics.core.installed.lock import read_lock
from skill_magics.notebook.approval.panel import summary_text
from skill_magics.notebook.extension import get_magics

pytestmark = posix_only

CSV = {"SKILL.md": skill_md("csv", "Read CSVs.").encode(), "scripts/stats.py": b"print(1)\n"}


@pytest.fixture
def shell(isolated_env, monkeypatch):
    monkeypatch.delenv("SKILL_MAGICS_AUTO_APPROVE", raising=False)
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    ip = InteractiveShell.instance()
    ip.config.pop("SkillMagics", None)
    ip.run_line_magic("load_ext", "skill_magics")
    ip.run_cell("%config SkillMagics.approval_ui = 'widgets'")
    ip.work = isolated_env
    yield ip
    ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)


@pytest.fixture
def site():
    with serve(Site()) as s:
        yield s


def run(ip, cell: str, label: str | None = None):
    clicker = click_when_shown(ip, label) if label else None
    result = ip.run_cell(cell)
    if clicker is not None:
        clicker.join(20)
    return result


def test_install_from_a_well_known_index_then_verify_update_and_sync(shell, site, capsys):
    v1 = tar_gz(CSV)
    notes = skill_md("notes", "Take notes.").encode()
    site.index(
        [
            entry("csv", "archive", site.publish("/a/csv.tar.gz", v1), v1),
            entry("notes", "skill-md", site.publish("/notes.md", notes), notes),
            entry("evil", "skill-md", site.publish("/evil.md", notes), notes, wrong=True),
        ]
    )
    into = shell.work / "work" / ".agents" / "skills"
    # the person sees what the site offers (only the index is fetched), then chooses
    result = shell.run_cell(f"%skills install {site.base} --list")
    assert result.error_in_exec is None, result.error_in_exec
    listing = capsys.readouterr().out
    assert "3 skill(s) in" in listing and "  csv    archive   The csv skill" in listing
    assert "evil" in listing and f"%skills install {site.base} --skill NAME" in listing
    assert "/a/csv.tar.gz" not in site.hits and not into.exists()
    result = run(shell, f"%skills install {site.base} --skill csv --skill notes", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    out = capsys.readouterr().out
    index = f"{site.base}/.well-known/agent-skills/index.json"
    assert f"Installed 2 skills from {index}" in out
    text = summary_text(get_magics(shell).panels[-1].request)
    assert "scripts/stats.py" in text and index in text
    assert tree_files(into / "csv") == CSV
    assert read_lock(into).skills["csv"].url == site.base + "/a/csv.tar.gz"
    shell.run_cell("%skills verify")
    assert "All 2 skills in" in capsys.readouterr().out
    # a new version on the site: update asks with the change
    v2 = tar_gz(dict(CSV, **{"scripts/stats.py": b"print(2)\n"}))
    site.publish("/a/csv2.tar.gz", v2)
    site.index([entry("csv", "archive", site.base + "/a/csv2.tar.gz", v2)])
    result = run(shell, "%skills update csv", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    assert "changes: changed scripts/stats.py" in summary_text(
        get_magics(shell).panels[-1].request, full=True
    )
    shutil.rmtree(into / "csv")
    result = run(shell, "%skills sync", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    assert (into / "csv" / "scripts" / "stats.py").read_bytes() == b"print(2)\n"


def test_install_and_update_read_a_skill_list_like_every_magic(shell, site, capsys):
    """--skill csv,notes was one skill 'csv,notes' (not in the index); now two, as
    --skill csv --skill notes, and %skills update csv,notes updates both."""
    v1, notes = tar_gz(CSV), skill_md("notes", "Take notes.").encode()
    site.index(
        [
            entry("csv", "archive", site.publish("/a/csv.tar.gz", v1), v1),
            entry("notes", "skill-md", site.publish("/notes.md", notes), notes),
        ]
    )
    into = shell.work / "work" / ".agents" / "skills"
    result = run(shell, f"%skills install {site.base} --skill csv,notes", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    assert "Installed 2 skills from" in capsys.readouterr().out
    assert sorted(read_lock(into).skills) == ["csv", "notes"]
    result = run(shell, "%skills update csv,notes")
    assert result.error_in_exec is None, result.error_in_exec
    out = capsys.readouterr().out
    assert "csv" in out and "notes" in out and "csv,notes" not in out, out


def test_refusals_are_one_line_naming_the_fix(shell, site):
    notes = skill_md("notes", "Take notes.").encode()
    hostile = tar_gz({"SKILL.md": notes, "../../escape.sh": b"x"})
    site.index(
        [
            entry("evil", "skill-md", site.publish("/evil.md", notes), notes, wrong=True),
            entry("tar", "archive", site.publish("/t.tar.gz", hostile), hostile),
        ]
    )
    for line, expected in [
        (f"%skills install {site.base} --skill evil", "leave this skill out"),
        (f"%skills install {site.base} --skill tar", "climbs out with '..'"),
        (f"%skills install {site.base} --skill nope", "No skill 'nope' in"),
        ("%skills install http://example.com", "use https://"),
        ("%skills sync --from /nowhere/skills-lock.json", "does not exist: give a skills-lock"),
    ]:
        result = shell.run_cell(line)
        message = str(result.error_in_exec)
        assert expected in message and "\n" not in message, (line, message)
    assert not (shell.work / "work" / ".agents" / "skills" / "evil").exists()


def test_sync_from_a_lock_the_real_skills_cli_wrote(shell, capsys):
    cli = require_cli()
    src, proj, home = (shell.work / d for d in ("src", "proj", "clihome"))
    for d in (proj, home):
        d.mkdir()
    for name in ("alpha", "beta"):
        write_files(src / name, {"SKILL.md": skill_md(name, "x"), "run.py": "print(1)\n"})
    skills_add(cli, proj, home, "../src", "--skill", "beta")
    result = run(shell, f"%skills sync --from {proj / 'skills-lock.json'}", "Yes once")
    assert result.error_in_exec is None, result.error_in_exec
    out = capsys.readouterr().out
    assert "Read skills-lock.json v1: 1 skill(s) from 1 source(s)" in out
    into = shell.work / "work" / ".agents" / "skills"
    assert sorted(p.name for p in into.iterdir() if not p.name.startswith(".")) == [
        "beta",
        "skills-lock.json",
    ]
    assert "beta" in repr(shell.run_cell("%skills").result)
