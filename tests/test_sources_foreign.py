"""Other tools' locks as sources (core/sources/foreign_locks.py): locks written by the real
``skills`` CLI from npm over local folders (project v1 and global v3), its ``computedHash``
computed the same way here (over tricky names), ``sync_from`` installing exactly what a lock
names and refusing a skill whose files changed since; gh skill provenance with git's tree
SHA checked against real git."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from manager_support import posix_only
from npm_support import require_cli, skills_add, skills_restore
from sources_support import commit_all, git, skill_md, tree_files, write_files
from wellknown_support import Site, serve, tar_gz
from wellknown_support import entry as index_entry

from skill_magics.core.base.errors import LockFileError, SourceError
from skill_magics.core.installed.lock import computed_hash, read_lock
from skill_magics.core.sources.foreign_locks import (
    TREE_SHA,
    ForeignSkill,
    _verifier,
    git_tree_sha,
    read_foreign,
    sync_from,
)
from skill_magics.core.sources.install import install_skills

pytestmark = posix_only

# Names whose order differs between byte order and JavaScript's localeCompare.
TRICKY = {
    "SKILL.md": "",
    "scripts/Run_me.py": "print('run')\n",
    "Readme.md": "# read\n",
    "a-b": "dash\n",
    "a.b/c": "dot folder\n",
    "A/b": "upper folder\n",
    "a_b": "underscore\n",
    "ab10": "ten\n",
    "ab2": "two\n",
    "Zeta.txt": "z\n",
    " é.txt": "accent\n",
    "node_modules/x/i.js": "skipped by both\n",
}


@pytest.fixture
def cli():
    return require_cli()


@pytest.fixture
def work(isolated_env, monkeypatch):
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    for d in ("proj", "src", "clihome"):
        (isolated_env / d).mkdir()
    return isolated_env


def make_source(src: Path) -> None:
    for name in ("alpha", "beta", "gamma"):
        files = dict(TRICKY) if name == "alpha" else {"scripts/run.py": f"print('{name}')\n"}
        files["SKILL.md"] = skill_md(name, f"The {name} skill.")
        write_files(src / "skills" / name, files, executable=("scripts/run.py",))


def test_computed_hash_is_the_one_the_real_skills_cli_writes(work, cli):
    make_source(work / "src")
    lock = skills_add(cli, work / "proj", work / "clihome", "../src")
    assert lock["version"] == 1 and sorted(lock["skills"]) == ["alpha", "beta", "gamma"]
    for name, entry in lock["skills"].items():
        assert entry["sourceType"] == "local"
        assert computed_hash(work / "src" / "skills" / name) == entry["computedHash"], name


def test_sync_from_a_cli_lock_installs_exactly_what_it_names_and_verifies_it(work, cli):
    make_source(work / "src")
    skills_add(cli, work / "proj", work / "clihome", "../src", "--skill", "alpha", "beta")
    into = work / "into"
    reports = sync_from(work / "proj" / "skills-lock.json", into=into, approver=None)
    assert sorted(n for r in reports for n in r.names) == ["alpha", "beta"]  # not gamma
    assert not (into / "gamma").exists()
    expected = {k: v for k, v in TRICKY.items() if not k.startswith("node_modules")}
    expected["SKILL.md"] = skill_md("alpha", "The alpha skill.")
    assert tree_files(into / "alpha") == {k: v.encode() for k, v in expected.items()}
    ours = read_lock(into)
    cli_lock = read_foreign(work / "proj" / "skills-lock.json")[1]
    for skill in cli_lock:  # our lock carries the hash the other tool reads
        assert ours.skills[skill.name].computed_hash == skill.expected


def test_a_source_changed_since_the_cli_locked_it_is_refused_in_one_line(work, cli):
    make_source(work / "src")
    skills_add(cli, work / "proj", work / "clihome", "../src", "--skill", "beta")
    (work / "src" / "skills" / "beta" / "scripts" / "run.py").write_text("print('evil')\n")
    into = work / "into"
    with pytest.raises(LockFileError) as err:
        sync_from(work / "proj" / "skills-lock.json", into=into, approver=None)
    message = str(err.value)
    assert message.startswith("beta: the source gives computedHash")
    assert "skills-lock.json v1 says" in message and "%skills install" in message
    assert "\n" not in message
    assert not into.exists() or not any(p.name == "beta" for p in into.iterdir())


def test_the_global_v3_lock_is_read_and_verified_too(work, cli):
    make_source(work / "src")
    lock = skills_add(
        cli, work / "proj", work / "clihome", str(work / "src"), "-g", "--skill", "gamma"
    )
    assert lock["version"] == 3
    path = work / "clihome" / ".agents" / ".skill-lock.json"
    what, skills = read_foreign(path)
    assert what == ".skill-lock.json v3" and [s.name for s in skills] == ["gamma"]
    reports = sync_from(path, into=work / "into", approver=None)
    assert reports[0].names == ["gamma"]


def test_a_lock_without_a_hash_or_from_node_modules_is_refused_naming_the_fix(work):
    lock = work / "skills-lock.json"

    def write(entry: dict) -> None:
        lock.write_text(json.dumps({"version": 1, "skills": {"x": entry}}))

    write({"source": "o/r", "sourceType": "github"})
    with pytest.raises(LockFileError, match="no computedHash to verify.*%skills install"):
        read_foreign(lock)
    write({"source": "p", "sourceType": "node_modules", "computedHash": "a" * 64})
    with pytest.raises(LockFileError, match="install the package with npm"):
        read_foreign(lock)
    hostile = {"source": "o/r", "sourceType": "github", "computedHash": "a" * 64}
    write(hostile | {"skillPath": "../../etc/SKILL.md"})
    with pytest.raises(SourceError, match="refused"):
        read_foreign(lock)
    write(hostile | {"sourceType": "git", "sourceUrl": "ext::sh -c evil"})
    with pytest.raises(SourceError, match="transport"):
        sync_from(lock, into=work / "into", approver=None)
    write(hostile | {"ref": "--upload-pack=evil"})
    with pytest.raises(SourceError, match="not a branch, tag or commit"):
        read_foreign(lock)
    # our own lock is named, not misread
    for own in ({"type": "git", "files": {}}, {"type": "git", "files": {}, "sourceType": "git"}):
        lock.write_text(json.dumps({"version": 1, "skills": {"x": own}}))
        with pytest.raises(LockFileError, match="skill-magics' own lock: use %skills sync"):
            read_foreign(lock)


def test_git_tree_sha_is_gits_own(work):
    repo = work / "repo"
    files = dict(TRICKY)
    files.pop("node_modules/x/i.js")
    files["SKILL.md"] = skill_md("alpha", "A.")
    write_files(repo / "skills" / "alpha", files, executable=("scripts/Run_me.py",))
    write_files(repo / "skills" / "alpha", {"a/b/c.txt": "deep\n", "a.txt": "flat\n"})
    git(repo, "init", "-q")
    commit_all(repo, "init")
    real = git(repo, "rev-parse", "HEAD:skills/alpha").strip()
    assert git_tree_sha(repo / "skills" / "alpha") == real


def gh_skill_md(name: str, tree: str, ref: str = "v1") -> str:
    return (
        f"---\nname: {name}\ndescription: x\nmetadata:\n  github-repo: octo/skills\n"
        f"  github-path: skills/{name}\n  github-ref: main\n  github-pinned: {ref}\n"
        f"  github-tree-sha: {tree}\n---\nbody\n"
    )


def test_gh_skill_metadata_is_read_and_its_tree_sha_verified_on_a_real_git_source(work):
    installed = work / "ghskills" / "pdf"
    tree = "ab" * 20
    write_files(installed, {"SKILL.md": gh_skill_md("pdf", tree)})
    what, (skill,) = read_foreign(work / "ghskills")
    assert what == "gh skill metadata"
    assert (skill.source, skill.ref, skill.want, skill.scheme, skill.expected) == (
        "https://github.com/octo/skills",
        "v1",
        "skills/pdf",
        TREE_SHA,
        tree,
    )
    # the same check on a source this machine can reach: a real git repository
    repo = work / "repo"
    write_files(repo / "skills" / "pdf", {"SKILL.md": skill_md("pdf", "P."), "x.py": "1\n"})
    git(repo, "init", "-q")
    commit_all(repo, "init")
    real = git(repo, "rev-parse", "HEAD:skills/pdf").strip()
    good = ForeignSkill("pdf", str(repo), None, "skills/pdf", TREE_SHA, real, "gh skill metadata")
    report = install_skills(
        repo, into=work / "into", skills=["skills/pdf"], approver=None, verify=_verifier([good])
    )
    assert report.names == ["pdf"]
    bad = ForeignSkill("pdf", str(repo), None, "skills/pdf", TREE_SHA, tree, "gh skill metadata")
    with pytest.raises(LockFileError, match="gh skill metadata says abababababab"):
        install_skills(
            repo, into=work / "other", skills=["skills/pdf"], approver=None, verify=_verifier([bad])
        )
    assert not (work / "other" / "pdf").exists()


def test_the_real_skills_cli_restores_from_the_lock_we_write(work, cli):
    make_source(work / "src")
    ours = work / "proj" / ".agents" / "skills"
    install_skills(work / "src", into=ours, skills=["alpha", "beta"], approver=None)
    written = json.loads((ours / "skills-lock.json").read_text())
    assert written["skills"]["alpha"]["sourceType"] == "local"
    assert written["skills"]["alpha"]["skillPath"] == "skills/alpha/SKILL.md"
    elsewhere = work / "restore"
    elsewhere.mkdir()
    shutil.copy(ours / "skills-lock.json", elsewhere / "skills-lock.json")
    out = skills_restore(cli, elsewhere, work / "clihome")
    assert "Restored" in out
    for name in ("alpha", "beta"):
        restored = elsewhere / ".agents" / "skills" / name
        got = {k: v for k, v in tree_files(restored).items() if not k.startswith("node_modules/")}
        assert got == tree_files(ours / name)  # the CLI copies node_modules; we leave it out
        assert computed_hash(restored) == written["skills"][name]["computedHash"]


def test_well_known_both_ways_with_the_real_cli(work, cli):
    """The CLI installs from our local site and locks it; sync_from verifies its
    computedHash. Our lock of the same site is restored by the CLI."""
    notes = skill_md("notes", "Take notes.").encode()
    csv = tar_gz({"SKILL.md": skill_md("csv", "Read CSVs.").encode(), "run.py": b"print(1)\n"})
    with serve(Site()) as site:
        site.index(
            [
                index_entry("notes", "skill-md", site.publish("/notes.md", notes), notes),
                index_entry("csv", "archive", site.publish("/csv.tar.gz", csv), csv),
            ]
        )
        lock = skills_add(cli, work / "proj", work / "clihome", site.base)
        assert {e["sourceType"] for e in lock["skills"].values()} == {"well-known"}
        reports = sync_from(work / "proj" / "skills-lock.json", into=work / "into", approver=None)
        assert sorted(reports[0].names) == ["csv", "notes"]
        ours = read_lock(work / "into")
        for name, cli_entry in lock["skills"].items():
            assert ours.skills[name].computed_hash == cli_entry["computedHash"]
        restore = work / "restore"
        restore.mkdir()
        shutil.copy(work / "into" / "skills-lock.json", restore / "skills-lock.json")
        skills_restore(cli, restore, work / "clihome")
        for name in ("csv", "notes"):
            assert tree_files(restore / ".agents" / "skills" / name) == tree_files(
                work / "into" / name
            )


def test_github_and_git_entries_map_to_sources_checked_as_typed(work):
    lock = work / "skills-lock.json"
    lock.write_text(
        json.dumps(
            {
                "version": 1,
                "skills": {
                    "pdf": {
                        "source": "anthropics/skills",
                        "sourceType": "github",
                        "ref": "main",
                        "skillPath": "skills/pdf/SKILL.md",
                        "computedHash": "b" * 64,
                    },
                    "root": {
                        "source": "https://git.example.com/team/tools.git",
                        "sourceUrl": "https://git.example.com/team/tools.git",
                        "sourceType": "git",
                        "skillPath": "SKILL.md",
                        "computedHash": "c" * 64,
                    },
                },
            }
        )
    )
    what, skills = read_foreign(lock)
    assert what == "skills-lock.json v1"
    assert [(s.source, s.ref, s.want, s.scheme, s.expected) for s in skills] == [
        ("https://github.com/anthropics/skills", "main", "skills/pdf", "computedHash", "b" * 64),
        ("https://git.example.com/team/tools.git", None, "", "computedHash", "c" * 64),
    ]
    global_lock = work / ".skill-lock.json"
    global_lock.write_text(
        json.dumps(
            {
                "version": 3,
                "skills": {
                    "pdf": {
                        "source": "anthropics/skills",
                        "sourceType": "github",
                        "sourceUrl": "https://github.com/anthropics/skills.git",
                        "skillPath": "skills/pdf/SKILL.md",
                        "skillFolderHash": "d" * 40,
                    }
                },
            }
        )
    )
    (skill,) = read_foreign(global_lock)[1]
    assert (skill.source, skill.want, skill.scheme) == (
        "https://github.com/anthropics/skills",
        "skills/pdf",
        TREE_SHA,
    )
