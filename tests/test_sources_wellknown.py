"""install_skills from a site's well-known index, served by a real HTTP server in a thread:
skill-md, zip and tar.gz entries installed and pinned by URL and digest; verify, sync and
update for them; a wrong digest and hostile archives refused whole, in one line naming the
fix, nothing written; what must not be refused (the good entries of the same index)."""

from __future__ import annotations

import io
import json
import shutil
import tempfile
import threading
import zipfile

import pytest
from manager_support import posix_only
from sources_support import skill_md, tree_files
from wellknown_support import Site, digest, entry, serve, tar_gz, zip_bytes

from skill_magics.core.base.errors import RunInterrupted, SourceError, UnsafeArchiveError
from skill_magics.core.installed.lock import computed_hash, read_lock
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.update import sync_skills, update_skills
from skill_magics.core.sources.verify import verify_skills

pytestmark = posix_only

NOTES_MD = skill_md("notes", "Take notes.").encode()
PDF_FILES = {
    "SKILL.md": skill_md("pdf", "Read PDFs.").encode(),
    "scripts/extract.py": b"print('extract')\n",
}
CSV_FILES = {
    "SKILL.md": skill_md("csv", "Read CSVs.").encode(),
    "scripts/stats.py": b"print('stats')\n",
}


@pytest.fixture
def work(isolated_env, monkeypatch):
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return isolated_env


@pytest.fixture
def site():
    with serve(Site()) as s:
        yield s


def publish_good(site: Site) -> list[dict]:
    pdf = zip_bytes({f"pdf/{k}": v for k, v in PDF_FILES.items()})
    csv = tar_gz(CSV_FILES, modes={"scripts/stats.py": 0o755})
    return [
        entry("notes", "skill-md", site.publish("/skills/notes/SKILL.md", NOTES_MD), NOTES_MD),
        # a relative url, resolved against the index's
        entry("pdf", "archive", "../../a/pdf.zip", pdf) | {"url": "../../a/pdf.zip"},
        entry("csv", "archive", site.publish("/a/csv.tar.gz", csv), csv),
    ]


def test_skill_md_zip_and_tar_gz_entries_install_pinned_by_url_and_digest(work, site):
    entries = publish_good(site)
    site.publish("/a/pdf.zip", zip_bytes({f"pdf/{k}": v for k, v in PDF_FILES.items()}))
    site.index(entries)
    into = work / "into"
    messages: list[str] = []
    report = install_skills(site.base, into=into, approver=None, on_message=messages.append)
    assert sorted(report.names) == ["csv", "notes", "pdf"]
    assert "Found 3 skills" in messages[0]
    assert tree_files(into / "notes") == {"SKILL.md": NOTES_MD}
    assert tree_files(into / "pdf") == PDF_FILES
    assert tree_files(into / "csv") == CSV_FILES
    assert (into / "csv" / "scripts" / "stats.py").stat().st_mode & 0o111
    lock = read_lock(into)
    index_url = site.base + "/.well-known/agent-skills/index.json"
    for name, e in zip(["notes", "pdf", "csv"], entries, strict=True):
        locked = lock.skills[name]
        assert (locked.kind, locked.source, locked.path) == ("well-known", index_url, name)
        assert locked.digest == e["digest"]
        assert locked.computed_hash == computed_hash(into / name)
    assert lock.skills["pdf"].url == site.base + "/a/pdf.zip"
    raw = json.loads((into / "skills-lock.json").read_text())
    assert raw["skills"]["notes"]["digest"] == entries[0]["digest"]
    assert verify_skills(into) == []

    # verify sees an edit; sync re-downloads the pinned artifact and must get its digest
    (into / "pdf" / "scripts" / "extract.py").write_text("print('edited')\n")
    assert verify_skills(into) == ["pdf: changed scripts/extract.py"]
    index_hits = site.hits[index_url.removeprefix(site.base)]
    sync_skills(into, force=True, approver=None)
    assert tree_files(into / "pdf") == PDF_FILES
    assert site.hits[index_url.removeprefix(site.base)] == index_hits  # sync: the lock's URLs


def test_update_reads_the_index_again_and_sync_refuses_a_changed_artifact(work, site):
    v1 = tar_gz(CSV_FILES)
    site.index([entry("csv", "archive", site.publish("/a/csv.tar.gz", v1), v1)])
    into = work / "into"
    install_skills(site.base + "/.well-known/agent-skills/", into=into, approver=None)
    v2_files = dict(CSV_FILES, **{"scripts/stats.py": b"print('stats v2')\n"})
    v2 = tar_gz(v2_files)
    # the site replaces the artifact in place: sync (pinned digest) must refuse it
    site.publish("/a/csv.tar.gz", v2)
    shutil.rmtree(into / "csv")
    with pytest.raises(SourceError, match=r"csv: .*has digest .*the index says") as err:
        sync_skills(into, approver=None)
    assert "\n" not in str(err.value)
    assert not (into / "csv").exists()
    # ... and update reads the new index (with the new digest), shows the change
    site.index([entry("csv", "archive", site.base + "/a/csv.tar.gz", v2)])
    report = update_skills(into, force=True, approver=None)
    assert tree_files(into / "csv") == v2_files
    assert "changed scripts/stats.py" in report.skills[0].changes
    assert read_lock(into).skills["csv"].digest == digest(v2)


def test_a_wrong_digest_refuses_the_install_but_not_the_other_entries(work, site):
    entries = publish_good(site)
    site.publish("/a/pdf.zip", zip_bytes({f"pdf/{k}": v for k, v in PDF_FILES.items()}))
    bad = b"---\nname: evil\ndescription: x\n---\n"
    entries.append(entry("evil", "skill-md", site.publish("/evil.md", bad), bad, wrong=True))
    site.index(entries)
    into = work / "into"
    with pytest.raises(SourceError) as err:
        install_skills(site.base, into=into, approver=None)
    message = str(err.value)
    assert message.startswith("evil: ") and "the index says" in message
    assert "--skill NAME" in message and "\n" not in message
    assert not into.exists() or not any(into.iterdir())
    # the good entries of the same index are not refused
    evil_hits = site.hits["/evil.md"]
    report = install_skills(site.base, into=into, skills=["pdf", "notes"], approver=None)
    assert sorted(report.names) == ["notes", "pdf"]
    assert site.hits["/evil.md"] == evil_hits  # what was not chosen is not downloaded


def zip_link() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("SKILL.md", NOTES_MD)
        info = zipfile.ZipInfo("evil")
        info.external_attr = 0o120777 << 16  # a symbolic link
        zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


HOSTILE = {
    "dotdot": (lambda: tar_gz({"SKILL.md": NOTES_MD, "../escape.py": b"x"}), "climbs out"),
    "absolute": (lambda: tar_gz({"SKILL.md": NOTES_MD, "/etc/evil": b"x"}), "absolute path"),
    "symlink": (lambda: tar_gz({"SKILL.md": NOTES_MD, "x": ("symlink", "/etc/passwd")}), "link"),
    "hardlink": (lambda: tar_gz({"SKILL.md": NOTES_MD, "x": ("hardlink", "/etc/passwd")}), "link"),
    "device": (lambda: tar_gz({"SKILL.md": NOTES_MD, "tty": ("device", "")}), "device"),
    "bomb": (lambda: tar_gz({"SKILL.md": NOTES_MD, "zeros": bytes(101_000_000)}), "limits"),
    "git-dir": (lambda: tar_gz({"SKILL.md": NOTES_MD, ".git/config": b"x"}), ".git"),
    "zip-dotdot": (lambda: zip_bytes({"SKILL.md": NOTES_MD, "../x.py": b"x"}), "climbs out"),
    "zip-link": (lambda: zip_link(), "symbolic link"),
    "not-archive": (lambda: b"\x00\x01 plain bytes", "neither zip nor tar.gz"),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_hostile_archives_are_refused_in_one_line_and_nothing_is_written(work, site, kind):
    make, words = HOSTILE[kind]
    data = make()
    site.index([entry("notes", "archive", site.publish("/a/notes.bin", data), data)])
    into = work / "into"
    with pytest.raises((UnsafeArchiveError, SourceError)) as err:
        install_skills(site.base, into=into, approver=None)
    assert words in str(err.value) and "\n" not in str(err.value)
    assert "Ask the site to" in str(err.value)  # the fix is named
    assert not into.exists() or not any(into.iterdir())
    assert not list((work / "tmp").iterdir())  # downloads and staging removed


def test_an_index_that_is_not_one_and_plain_http_are_refused_naming_the_fix(work, site):
    site.publish("/.well-known/agent-skills/index.json", json.dumps({"skills": []}).encode())
    with pytest.raises(SourceError, match="not a discovery 0.2 index"):
        install_skills(site.base, into=work / "into", approver=None)
    with pytest.raises(SourceError, match="use https://"):
        install_skills("http://example.com", into=work / "into", approver=None)
    with pytest.raises(SourceError, match="HTTP 404"):
        install_skills(site.base + "/nowhere/.well-known/agent-skills/", into=work / "i")
    url_elsewhere = {"name": "x", "type": "skill-md", "url": "http://example.com/x.md"}
    site.index([url_elsewhere | {"digest": digest(b"x"), "description": "x"}])
    with pytest.raises(SourceError, match="not an https URL"):
        install_skills(site.base, into=work / "into", approver=None)


def test_redirects_are_followed_only_to_urls_the_index_could_name(work, site):
    data = tar_gz(CSV_FILES)
    site.publish("/real/csv.tar.gz", data)
    site.redirects["/a/csv.tar.gz"] = site.base + "/real/csv.tar.gz"  # same machine: followed
    site.index([entry("csv", "archive", site.base + "/a/csv.tar.gz", data)])
    report = install_skills(site.base, into=work / "into", approver=None)
    assert report.names == ["csv"] and site.hits["/real/csv.tar.gz"] == 1
    site.redirects["/a/csv.tar.gz"] = "http://example.com/csv.tar.gz"  # plain http elsewhere
    with pytest.raises(SourceError, match="which is not https") as err:
        install_skills(site.base, into=work / "other", approver=None)
    assert "\n" not in str(err.value) and not str(err.value).startswith("Cannot fetch")
    assert not (work / "other").exists() or not any((work / "other").iterdir())


def test_an_interrupt_stops_the_download_and_leaves_nothing(work, site):
    data = tar_gz(CSV_FILES)
    site.index([entry("csv", "archive", site.publish("/a/csv.tar.gz", data), data)])
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(RunInterrupted, match="interrupted; nothing was installed"):
        install_skills(site.base, into=work / "into", approver=None, cancel=cancel)
    assert not list((work / "tmp").iterdir())


def test_index_names_that_could_be_paths_are_refused(work, site):
    for name in ("../evil", "a/b", ".git"):
        site.index([entry(name, "skill-md", site.publish("/x.md", NOTES_MD), NOTES_MD)])
        with pytest.raises(SourceError, match="cannot be a folder name"):
            install_skills(site.base, into=work / "into", approver=None)
    assert not (work / "into").exists()
