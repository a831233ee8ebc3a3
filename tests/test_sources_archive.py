"""install_skills from real .skill and .zip files: the shapes people publish (skill-creator's
.skill, GitHub's "Download ZIP"), and hostile archives that must be refused whole, before
anything is written (``..`` members, absolute paths, links, devices, a zip bomb, too many files,
a member lying about its size)."""

from __future__ import annotations

import os
import stat
import struct
import tempfile
import zipfile
from pathlib import Path

import pytest
from manager_support import manager_for, outcomes, posix_only
from sources_support import (
    COLLECTION_SKILLS,
    github_zip,
    make_collection,
    package_skill,
    skill_md,
    tree_files,
    write_files,
    write_zip,
    zip_info,
)

from skill_magics.core.base.errors import SourceError, UnsafeArchiveError
from skill_magics.core.installed.lock import read_lock
from skill_magics.core.sources.install import install_skills

pytestmark = posix_only


@pytest.fixture
def work(isolated_env, monkeypatch):
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return isolated_env


def test_a_dot_skill_file_as_skill_creator_packages_it(work):
    skill = work / "src" / "csv-tools"
    write_files(
        skill,
        {
            "SKILL.md": skill_md("csv-tools", body="Run `python scripts/stats.py`."),
            "scripts/stats.py": "#!/usr/bin/env python3\nprint('stats')\n",
            "references/columns.md": "# Columns\n",
            ".env.example": "KEY=\n",
        },
        executable=("scripts/stats.py",),
    )
    archive = package_skill(skill, work / "csv-tools.skill")
    with zipfile.ZipFile(archive) as zf:
        assert not any(n.endswith("/") for n in zf.namelist())  # files only, as it writes them
    report = install_skills(archive, into=work / "into", approver=None)
    assert report.names == ["csv-tools"]
    assert tree_files(work / "into" / "csv-tools") == tree_files(skill)
    assert os.access(work / "into" / "csv-tools" / "scripts" / "stats.py", os.X_OK)
    locked = read_lock(work / "into").skills["csv-tools"]
    assert (locked.kind, locked.source, locked.path, locked.commit) == (
        "archive",
        str(archive),
        "csv-tools",
        None,
    )


def test_a_github_download_zip_with_several_skills_and_hidden_folders(work):
    repo = make_collection(work / "collection")
    archive = github_zip(repo, work / "skills-main.zip", "skills-main")
    report = install_skills(archive, into=work / "into", approver=None)
    assert sorted(report.names) == COLLECTION_SKILLS
    assert tree_files(work / "into" / "gh-fix-ci") == tree_files(
        repo / "skills" / ".curated" / "gh-fix-ci"
    )
    assert read_lock(work / "into").skills["pdf"].path == "skills-main/skills/pdf"
    assert os.access(work / "into" / "pdf" / "scripts" / "extract.py", os.X_OK)


def test_a_skill_at_the_top_of_the_archive_is_named_after_the_file_and_litter_is_skipped(work):
    archive = write_zip(
        work / "weather.zip",
        {
            "SKILL.md": skill_md("weather"),
            "scripts/": b"",
            "scripts/get weather.py": "print('sunny')\n",
            "données/été.csv": "a\n1\n",
            "__MACOSX/._SKILL.md": b"\0\5\26\7",
            "__MACOSX/scripts/._x": b"\0",
        },
    )
    report = install_skills(archive, into=work / "into", approver=None)
    assert report.names == ["weather"]
    assert sorted(tree_files(work / "into" / "weather")) == [
        "SKILL.md",
        "données/été.csv",
        "scripts/get weather.py",
    ]


HOSTILE = [
    ({"../evil/SKILL.md": "x"}, {}, "climbs out with '..'"),
    ({"skill/SKILL.md": "x", "skill/../../../etc/x": "x"}, {}, "climbs out with '..'"),
    ({"/etc/cron.d/evil": "x"}, {}, "has an absolute path"),
    ({"C:/Windows/evil": "x"}, {}, "has an absolute path"),
    ({"skill\\..\\..\\evil": "x"}, {}, "climbs out with '..'"),
    ({"skill/SKILL.md": "x", "skill\\evil.txt": "x"}, {}, "uses backslashes"),
    ({"skill/SKILL.md": "x", "skill/.git/config": "x"}, {}, "has a .git component"),
    ({"skill/SKILL.md": "x", "skill/\x1b[2Kname": "x"}, {}, "holds control, bidi or invisible"),
    # The rule MCP servers' file names are held to as well (issue 39: one shared rule).
    ({"skill/SKILL.md": "x", "skill/scripts\u2215run.py": "x"}, {}, r"holds U\+2215"),
    ({"skill/SKILL.md": "x", "skill/" + "x" * 300: "x"}, {}, "longer than 255 bytes"),
    (
        {"skill/SKILL.md": "x", "skill/passwd": "/etc/passwd"},
        {"skill/passwd": stat.S_IFLNK | 0o777},
        "is a symbolic link",
    ),
    (
        {"skill/SKILL.md": "x", "skill/tty": ""},
        {"skill/tty": stat.S_IFCHR | 0o666},
        "is a character device",
    ),
    ({"skill/SKILL.md": "x", "skill/pipe": ""}, {"skill/pipe": stat.S_IFIFO | 0o644}, "a FIFO"),
    (
        {"skill/SKILL.md": "x", "skill/data": "file", "skill/data/inner": "x"},
        {},
        "is both a file and a folder",
    ),
]


@pytest.mark.parametrize("members, modes, why", HOSTILE)
def test_hostile_members_refuse_the_whole_archive_and_write_nothing(work, members, modes, why):
    archive = write_zip(work / "hostile.zip", members, modes=modes)
    manager = manager_for(work / "none")
    into = work / "into"
    with pytest.raises(UnsafeArchiveError, match=why) as exc:
        install_skills(archive, into=into, manager=manager, approver=None)
    message = str(exc.value)
    assert "\n" not in message and "nothing was written" in message and "hostile.zip" in message
    assert not into.exists() and os.listdir(work / "tmp") == []
    assert not (work / "evil").exists() and not (work.parent / "evil").exists()
    assert outcomes(manager) == ["refused"]


def test_duplicate_and_encrypted_members_are_refused(work):
    archive = work / "dup.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zip_info("skill/SKILL.md"), "one")
        with pytest.warns(UserWarning, match="Duplicate name"):
            zf.writestr(zip_info("skill/SKILL.md"), "two")
    with pytest.raises(UnsafeArchiveError, match="is listed twice"):
        install_skills(archive, into=work / "into", approver=None)
    archive = write_zip(work / "enc.zip", {"skill/SKILL.md": skill_md("skill")})
    _patch(archive, "skill/SKILL.md", {b"PK\x03\x04": (6, 1), b"PK\x01\x02": (8, 1)}, "<H")
    with pytest.raises(UnsafeArchiveError, match="is encrypted"):
        install_skills(archive, into=work / "into", approver=None)
    assert not (work / "into").exists()


def test_a_zip_bomb_is_refused_by_its_expansion_ratio(work):
    archive = work / "bomb.skill"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zip_info("bomb/SKILL.md"), skill_md("bomb"))
        zf.writestr(zip_info("bomb/data.bin"), bytes(50_000_000))  # ~50 KB compressed
    assert archive.stat().st_size < 200_000
    with pytest.raises(UnsafeArchiveError, match=r"expands 50,000,000 bytes .* a zip bomb"):
        install_skills(archive, into=work / "into", approver=None)
    assert not (work / "into").exists() and os.listdir(work / "tmp") == []


def test_the_uncompressed_total_and_the_file_count_are_limited(work):
    archive = work / "big.zip"
    with zipfile.ZipFile(archive, "w") as zf:  # each member under the ratio check's floor
        zf.writestr(zip_info("big/SKILL.md"), skill_md("big"))
        for i in range(101):
            zf.writestr(zip_info(f"big/part{i:03d}.bin"), bytes(1_000_000))
    with pytest.raises(UnsafeArchiveError, match="more than the limits of 100 MB and 10,000 files"):
        install_skills(archive, into=work / "into", approver=None)
    archive = work / "many.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zip_info("many/SKILL.md"), skill_md("many"))
        for i in range(10_000):
            zf.writestr(zip_info(f"many/f{i:05d}"), b"")
    with pytest.raises(UnsafeArchiveError, match=r"10,001 files"):
        install_skills(archive, into=work / "into", approver=None)
    assert not (work / "into").exists() and os.listdir(work / "tmp") == []


def _patch(archive: Path, member: str, fields: dict[bytes, tuple[int, int]], fmt: str) -> None:
    """Overwrite a field of ``member``'s local (PK\\3\\4) and central (PK\\1\\2) headers:
    ``fields`` maps the header signature to (offset, value)."""
    data = bytearray(archive.read_bytes())
    name = member.encode()
    width = struct.calcsize(fmt)
    for signature, (offset, value) in fields.items():
        start = 0
        while (start := data.find(signature, start)) != -1:
            name_at = start + (30 if signature == b"PK\x03\x04" else 46)
            if data[name_at : name_at + len(name)] == name:
                data[start + offset : start + offset + width] = struct.pack(fmt, value)
            start += 4
    archive.write_bytes(bytes(data))


def _patch_sizes(archive: Path, member: str, size: int) -> None:
    """Make ``member`` declare ``size`` uncompressed bytes."""
    _patch(archive, member, {b"PK\x03\x04": (22, size), b"PK\x01\x02": (24, size)}, "<I")


def test_a_member_that_lies_about_its_size_is_refused(work):
    archive = work / "liar.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr(zip_info("liar/SKILL.md"), skill_md("liar"))
        zf.writestr(zip_info("liar/data.txt"), "x" * 5000)
    _patch_sizes(archive, "liar/data.txt", 10)
    with pytest.raises(UnsafeArchiveError, match=r"liar/data.txt.*cannot be read|grew beyond"):
        install_skills(archive, into=work / "into", approver=None)
    assert not (work / "into").exists() and os.listdir(work / "tmp") == []


def test_not_a_zip_is_one_line(work):
    fake = work / "notes.zip"
    fake.write_text("not a zip")
    with pytest.raises(SourceError, match="is not a .skill or .zip archive"):
        install_skills(fake, into=work / "into", approver=None)
    with pytest.raises(SourceError, match="An archive has no refs"):
        install_skills(write_zip(work / "a.zip", {"a/SKILL.md": "x"}), ref="main", approver=None)
