"""install_skills from real git repositories made in the test (file:// URLs and local paths):
refs (branch, tag, commit, abbreviated commit), subfolders, hidden folders, the gate, the lock,
and what must never happen (filters, hooks, links, other transports, prompts).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from pathlib import Path

import pytest
from manager_support import RecordingApprover, manager_for, outcomes, posix_only
from sources_support import (
    COLLECTION,
    COLLECTION_SKILLS,
    commit_all,
    git,
    make_collection,
    make_repo,
    skill_md,
    tree_files,
    write_files,
)

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    ApprovalStale,
    SkillExistsError,
    SourceError,
)
from skill_magics.core.installed.lock import read_lock
from skill_magics.core.run.gating.approval import Decision
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.spec import parse_source

pytestmark = posix_only


@pytest.fixture
def work(isolated_env, monkeypatch):
    """HOME and cwd in tmp (no user git config), and a private temp folder to check that
    nothing is left behind."""
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return isolated_env


def leftovers(work: Path) -> list[str]:
    return sorted(os.listdir(work / "tmp"))


def test_installs_every_skill_of_a_collection_with_hidden_folders_and_a_lock(work):
    repo = make_collection(work / "collection")
    head = git(repo, "rev-parse", "HEAD")
    manager = manager_for(work / "none")
    approver = RecordingApprover(Decision.YES_ONCE)
    said: list[str] = []

    report = install_skills(
        f"file://{repo}", manager=manager, approver=approver, on_message=said.append
    )

    into = work / "work" / ".agents" / "skills"
    assert report.folder == into and sorted(report.names) == COLLECTION_SKILLS
    assert "installing all of them" in said[0] and "gh-fix-ci" in said[0]  # said before asking
    # Issue 31 item 13: which of them are hidden (.system, ...) is said, before asking too.
    hidden = (
        "Note: 2 skills of these sit in hidden folders (.curated: gh-fix-ci; .system: "
        "skill-installer) and are included; to leave them out, name the ones you want"
    )
    assert any(line.startswith(hidden) for line in said), said
    # one question for all of them, listing each skill's files, scripts and the commit
    assert len(approver.requests) == 1
    parts = {p.skill_name: p.skill_install for p in approver.requests[0].requests}
    assert sorted(parts) == COLLECTION_SKILLS
    pdf = parts["pdf"]
    assert pdf.commit == head and pdf.path == "skills/pdf" and pdf.action == "install"
    assert ("scripts/extract.py", len(COLLECTION["skills/pdf/scripts/extract.py"])) in pdf.files
    assert "scripts/extract.py" in pdf.scripts and "reference.md" not in pdf.scripts
    assert parts["gh-fix-ci"].path == "skills/.curated/gh-fix-ci"
    # the files are the committed bytes, executable bits kept
    assert tree_files(into / "pdf") == tree_files(repo / "skills" / "pdf")
    assert os.access(into / "pdf" / "scripts" / "extract.py", os.X_OK)
    assert not os.access(into / "pdf" / "reference.md", os.X_OK)
    assert tree_files(into / "skill-installer") == tree_files(
        repo / "skills" / ".system" / "skill-installer"
    )
    # the manager searches the folder now
    names = {m.name for m in manager.list_skills()}
    assert {"pdf", "gh-fix-ci", "template-skill"} <= names
    # the lock: readable, sorted, every file's sha256 and size
    text = (into / "skills-lock.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    entry = data["skills"]["pdf"]
    assert entry["source"] == f"file://{repo}" and entry["ref"] is None
    assert entry["commit"] == head and entry["path"] == "skills/pdf" and entry["type"] == "git"
    body = COLLECTION["skills/pdf/scripts/extract.py"].encode()
    assert entry["files"]["scripts/extract.py"] == {
        "sha256": hashlib.sha256(body).hexdigest(),
        "size": len(body),
        "executable": True,
    }
    assert read_lock(into).skills["pdf"].tree == entry["tree"]
    # audited, and nothing left in the temp folder or the install folder
    assert outcomes(manager).count("completed") == len(COLLECTION_SKILLS)
    assert "approved" in outcomes(manager)
    assert leftovers(work) == []
    assert sorted(os.listdir(into)) == sorted([*COLLECTION_SKILLS, "skills-lock.json"])


def test_refs_branch_tag_commit_and_short_commit_from_a_local_path(work):
    repo = make_repo(work / "repo", {"SKILL.md": skill_md("weather"), "VERSION": "1\n"})
    first = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v1", "-m", "release 1")  # an annotated tag: peeled to its commit
    write_files(repo, {"VERSION": "2\n"})
    commit_all(repo, "two")
    git(repo, "checkout", "-q", "-b", "dev")
    write_files(repo, {"VERSION": "dev\n"})
    dev = commit_all(repo, "dev")
    git(repo, "checkout", "-q", "main")

    def version(ref, source=str(repo)) -> tuple[str, str]:
        into = work / f"into-{ref}"
        report = install_skills(source, ref=ref, into=into, approver=None)
        (skill,) = report.skills
        locked = read_lock(into).skills[skill.folder]
        return (into / skill.folder / "VERSION").read_text().strip(), locked.commit or ""

    assert version(None)[0] == "2"  # the default branch
    assert version("v1") == ("1", first)
    assert version("dev") == ("dev", dev)
    assert version(first) == ("1", first)  # a full commit hash, fetched directly
    assert version(first[:10]) == ("1", first)  # abbreviated: found in a full fetch
    assert version("v1", f"file://{repo}")[0] == "1"
    # the folder is named after the repository, whose top folder is the skill
    assert (work / "into-v1" / "repo" / "SKILL.md").is_file()


def test_commit_fetch_falls_back_when_the_server_refuses_it(work):
    """Protocol v0 upload-pack refuses an unadvertised commit: a full fetch finds it."""
    repo = make_repo(work / "repo", {"SKILL.md": skill_md("old-one"), "v": "1\n"})
    first = git(repo, "rev-parse", "HEAD")
    write_files(repo, {"v": "2\n"})
    commit_all(repo)
    (work / "home" / ".gitconfig").write_text("[protocol]\n\tversion = 0\n")
    report = install_skills(f"file://{repo}", ref=first, into=work / "into", approver=None)
    assert (work / "into" / "repo" / "v").read_text() == "1\n"
    assert read_lock(work / "into").skills["repo"].commit == first
    assert report.skills[0].status == "installed"


def test_subfolder_skill_choice_and_unknown_names(work):
    repo = make_collection(work / "collection")
    into = work / "into"
    report = install_skills(repo, subfolder="skills/.curated", into=into, approver=None)
    assert report.names == ["gh-fix-ci"]
    assert read_lock(into).skills["gh-fix-ci"].subfolder == "skills/.curated"
    # by SKILL.md name, by path, by folder name
    report = install_skills(
        repo,
        skills=["template-skill", "skills/docx", "pdf"],
        into=work / "chosen",
        approver=None,
    )
    assert sorted(report.names) == ["docx", "pdf", "template"]
    with pytest.raises(SourceError, match=r"No skill 'pfd'.*docx.*pdf") as exc:
        install_skills(repo, skills=["pfd"], into=work / "none", approver=None)
    assert "\n" not in str(exc.value)
    assert not (work / "none").exists()
    with pytest.raises(SourceError, match="no folder 'skills/nope'"):
        install_skills(repo, subfolder="skills/nope", into=work / "none", approver=None)
    with pytest.raises(SourceError, match="No SKILL.md"):
        install_skills(repo, subfolder="skills/pdf/scripts", into=work / "none", approver=None)


def test_browser_urls_and_scp_urls_parse_without_fetching():
    spec = parse_source("https://github.com/anthropics/skills/tree/main/skills/pdf")
    assert (spec.kind, spec.location, spec.ref, spec.subfolder) == (
        "git",
        "https://github.com/anthropics/skills",
        "main",
        "skills/pdf",
    )
    spec = parse_source("https://github.com/openai/skills/blob/v2/skills/.curated/x/SKILL.md")
    assert (spec.ref, spec.subfolder) == ("v2", "skills/.curated/x")
    spec = parse_source("git@github.com:openai/skills.git", ref="main")
    assert (spec.kind, spec.scheme, spec.default_name) == ("git", "ssh", "skills")


@pytest.mark.parametrize(
    "source, ref, why",
    [
        ("ext::sh -c touch% /tmp/pwned", None, "transport"),
        ("http://example.invalid/repo.git", None, "not encrypted"),
        ("git://example.invalid/repo.git", None, "not encrypted"),
        ("-uhttps://example.invalid/x", None, "dash"),
        ("https://example.invalid/x", "--upload-pack=touch /tmp/pwned", "not a branch"),
        ("https://example.invalid/x", "main:refs/heads/x", "not a branch"),
        ("https://example.invalid/x", "../../x", "not a branch"),
        ("file://relative/path", None, "absolute"),
        ("https://example.invalid/x\u202e", None, "control, bidi or invisible"),
    ],
)
def test_other_transports_options_and_bad_refs_are_refused_before_git_runs(work, source, ref, why):
    manager = manager_for(work / "none")
    with pytest.raises(SourceError, match=why):
        install_skills(source, ref=ref, manager=manager, approver=None)
    assert outcomes(manager) == ["refused"]  # audited
    assert not Path("/tmp/pwned").exists()


def test_an_unreachable_server_fails_fast_in_one_line_without_prompting(work):
    started = time.monotonic()
    with pytest.raises(SourceError, match="Cannot fetch https://127.0.0.1:9/x.git") as exc:
        install_skills("https://127.0.0.1:9/x.git", into=work / "into", approver=None)
    assert time.monotonic() - started < 30
    assert "\n" not in str(exc.value) and "nothing was installed" in str(exc.value)
    assert not (work / "into").exists() and leftovers(work) == []


def test_declined_installs_nothing_and_the_default_approver_is_the_managers(work):
    repo = make_collection(work / "collection")
    approver = RecordingApprover(Decision.NO)
    manager = manager_for(work / "none", approver=approver)  # asked: approver not given
    into = work / "project" / ".agents" / "skills"
    with pytest.raises(ApprovalDeclined, match="declined"):
        install_skills(repo, skills=["pdf"], into=into, manager=manager)
    assert len(approver.requests) == 1
    assert not into.exists() and leftovers(work) == []
    assert "declined" in outcomes(manager) and "completed" not in outcomes(manager)
    # approver=None: the Python caller decided (as in execute_skill_script)
    install_skills(repo, skills=["pdf"], into=into, manager=manager, approver=None)
    assert len(approver.requests) == 1 and (into / "pdf" / "SKILL.md").is_file()


def test_an_existing_skill_with_other_files_needs_force(work):
    repo = make_collection(work / "collection")
    into = work / "into"
    install_skills(repo, skills=["pdf"], into=into, approver=None)
    before = (into / "skills-lock.json").read_bytes()
    # the same files again: nothing to copy, nothing asked
    refuse = RecordingApprover(error=AssertionError("must not be asked"))
    report = install_skills(repo, skills=["pdf"], into=into, approver=refuse)
    assert report.skills[0].status == "unchanged" and refuse.requests == []
    # other files: refused before anyone is asked, naming the difference and the fix
    (into / "pdf" / "reference.md").write_text("my own notes\n")
    (into / "pdf" / "mine.txt").write_text("mine\n")
    with pytest.raises(SkillExistsError, match=r"pdf \(added mine.txt, changed reference.md\)"):
        install_skills(repo, skills=["pdf"], into=into, approver=refuse)
    assert (into / "pdf" / "mine.txt").exists() and refuse.requests == []
    assert (into / "skills-lock.json").read_bytes() == before
    # force: asked, with what it replaces; then the folder is exactly the source's
    approver = RecordingApprover(Decision.YES_ONCE)
    report = install_skills(repo, skills=["pdf"], into=into, force=True, approver=approver)
    assert report.skills[0].status == "replaced"
    assert "replaces the folder already there" in approver.requests[0].skill_install.replaces
    assert tree_files(into / "pdf") == tree_files(repo / "skills" / "pdf")
    assert sorted(os.listdir(into)) == ["pdf", "skills-lock.json"]  # no staging left


def test_files_changed_after_the_question_was_asked_are_not_installed(work):
    repo = make_collection(work / "collection")
    into = work / "into"

    def tamper_then_yes(request):
        staged = Path(request.skill_install.staged)
        (staged / "scripts" / "extract.py").write_text("print('not what was shown')\n")
        return Decision.YES_ONCE

    with pytest.raises(ApprovalStale, match="changed after the approval was asked"):
        install_skills(repo, skills=["pdf"], into=into, approver=tamper_then_yes)
    assert not into.exists() and leftovers(work) == []


def test_links_and_submodules_are_refused_dotfiles_and_executables_are_not(work):
    files = {
        "skills/linked/SKILL.md": skill_md("linked"),
        "skills/plain/SKILL.md": skill_md("plain"),
        "skills/plain/.env.example": "TOKEN=\n",
        "skills/plain/.config/settings.json": "{}\n",
        "skills/plain/scripts/run.sh": "#!/bin/sh\necho ok\n",
        "skills/plain/data/naïve café.txt": "unicode names are fine\n",
        "skills/vendored/SKILL.md": skill_md("vendored"),
    }
    repo = make_repo(work / "repo", files, executable=("skills/plain/scripts/run.sh",))
    os.symlink("/etc/passwd", repo / "skills" / "linked" / "passwd")
    commit_all(repo, "link")
    head = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{head},skills/vendored/lib")
    git(repo, "commit", "-q", "-m", "submodule")

    with pytest.raises(SourceError, match="linked/passwd is a symbolic link") as exc:
        install_skills(repo, into=work / "into", approver=None)
    assert "nothing was installed" in str(exc.value) and not (work / "into").exists()
    with pytest.raises(SourceError, match="vendored/lib is a git submodule"):
        install_skills(repo, skills=["vendored"], into=work / "into", approver=None)
    report = install_skills(repo, skills=["plain"], into=work / "into", approver=None)
    assert tree_files(work / "into" / "plain") == tree_files(repo / "skills" / "plain")
    assert os.access(work / "into" / "plain" / "scripts" / "run.sh", os.X_OK)
    assert report.skills[0].files == 5


def test_no_filter_smudge_lfs_or_hook_runs(work):
    """A filter driver, LFS and hooks configured for the user never run on the fetched files:
    the installed bytes are the committed blobs."""
    marker = work / "ran.marker"
    hooks = work / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "reference-transaction", "post-merge", "pre-auto-gc"):
        (hooks / hook).write_text(f"#!/bin/sh\necho {hook} >> {marker}\n")
        (hooks / hook).chmod(0o755)
    (work / "home" / ".gitconfig").write_text(
        '[filter "evil"]\n'
        f"\tsmudge = sh -c 'echo smudge >> {marker}; cat'\n"
        "\trequired = true\n"
        '[filter "lfs"]\n'
        f"\tsmudge = sh -c 'echo lfs >> {marker}; cat'\n"
        f"\tprocess = sh -c 'echo lfs-process >> {marker}'\n"
        "[core]\n"
        f"\thooksPath = {hooks}\n"
    )
    pointer = "version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 12\n"
    repo = make_repo(
        work / "repo",
        {
            "SKILL.md": skill_md("filtered"),
            ".gitattributes": "*.txt filter=evil\n*.bin filter=lfs diff=lfs merge=lfs -text\n",
            "notes.txt": "$Id$ raw text\n",
            "model.bin": pointer,
        },
    )
    install_skills(f"file://{repo}", into=work / "into", approver=None)
    assert (work / "into" / "repo" / "notes.txt").read_text() == "$Id$ raw text\n"
    assert (work / "into" / "repo" / "model.bin").read_text() == pointer
    assert not marker.exists()


def test_hostile_folder_names_and_clashes(work):
    files = {
        "skills/good/SKILL.md": skill_md("good"),
        "skills/.hidden/SKILL.md": skill_md("hidden"),  # its own folder is hidden
        "skills/bidi\u202eevil/SKILL.md": skill_md("bidi"),
    }
    repo = make_repo(work / "repo", files)
    said: list[str] = []
    report = install_skills(repo, into=work / "into", approver=None, on_message=said.append)
    assert report.names == ["good"]
    assert any(".hidden" in s and "starts with a dot" in s for s in said)
    assert any("⟨U+202E⟩" in s for s in said) and not any("\u202e" in s for s in said)
    with pytest.raises(SourceError, match="starts with a dot"):
        install_skills(repo, skills=["skills/.hidden"], into=work / "x", approver=None)

    clash = make_repo(
        work / "clash",
        {
            "skills/.curated/fmt/SKILL.md": skill_md("fmt"),
            "skills/.experimental/fmt/SKILL.md": skill_md("fmt2"),
        },
    )
    with pytest.raises(SourceError, match="Two skills would install as 'fmt'"):
        install_skills(clash, into=work / "y", approver=None)
    report = install_skills(
        clash, skills=["skills/.experimental/fmt"], into=work / "y", approver=None
    )
    assert read_lock(work / "y").skills["fmt"].path == "skills/.experimental/fmt"


def test_more_files_than_the_limit_are_refused_before_anything_is_written(work):
    files = {"big/SKILL.md": skill_md("big")}
    files.update({f"big/data/{i:05d}.txt": "" for i in range(10_001)})
    repo = make_repo(work / "repo", files)
    with pytest.raises(SourceError, match=r"10,002 files.*limits of 100 MB and 10,000 files"):
        install_skills(repo, into=work / "into", approver=None)
    assert not (work / "into").exists() and leftovers(work) == []


def test_a_plain_folder_leaves_environments_out_and_refuses_links(work):
    src = work / "mine"
    write_files(
        src,
        {
            "csv-peek/SKILL.md": skill_md("csv-peek"),
            "csv-peek/scripts/peek.py": "print('peek')\n",
            "csv-peek/.venv/lib/site.py": "x = 1\n",
            "csv-peek/node_modules/a/index.js": "1\n",
            "csv-peek/scripts/__pycache__/peek.cpython-311.pyc": b"\0",
        },
    )
    said: list[str] = []
    report = install_skills(src, into=work / "into", approver=None, on_message=said.append)
    assert report.names == ["csv-peek"]
    assert sorted(tree_files(work / "into" / "csv-peek")) == ["SKILL.md", "scripts/peek.py"]
    assert any("left out installed environments" in s for s in said)
    assert not any("hidden folders" in s for s in said)  # none hidden: nothing said
    locked = read_lock(work / "into").skills["csv-peek"]
    assert (locked.kind, locked.commit, locked.source) == ("folder", None, str(src))
    os.symlink(work / "home", src / "csv-peek" / "home-link")
    with pytest.raises(SourceError, match="home-link is a symbolic link"):
        install_skills(src, into=work / "other", approver=None)


def _https_server_asking_for_a_password(work: Path):
    """A local HTTPS server (self-signed) answering every request with 401 Basic auth."""
    import http.server
    import shutil
    import ssl
    import subprocess
    import threading

    if shutil.which("openssl") is None:
        pytest.skip("openssl is needed to make the test server's certificate")
    key, cert = work / "key.pem", work / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key),
         "-out", str(cert), "-days", "1", "-subj", "/CN=127.0.0.1"],
        check=True,
        capture_output=True,
    )  # fmt: skip

    class AskForPassword(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="private skills"')
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), AskForPassword)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_a_private_repository_is_never_prompted_for_and_no_credential_helper_runs(work):
    server = _https_server_asking_for_a_password(work)
    marker = work / "helper.marker"
    (work / "home" / ".gitconfig").write_text(
        "[http]\n\tsslVerify = false\n"
        "[credential]\n"
        f'\thelper = "!f() {{ echo ran >> {marker}; echo username=u; echo password=p; }}; f"\n'
    )
    url = f"https://127.0.0.1:{server.server_address[1]}/team/skills.git"
    try:
        started = time.monotonic()
        with pytest.raises(SourceError, match="it needs credentials, and none are asked for"):
            install_skills(url, into=work / "into", approver=None)
        assert time.monotonic() - started < 30
    finally:
        server.shutdown()
    assert not marker.exists()  # the user's credential helper was not asked
    assert not (work / "into").exists() and leftovers(work) == []


def test_a_bare_repository_path_works_and_missing_git_is_one_line(work, monkeypatch):
    repo = make_collection(work / "collection")
    git(work, "clone", "-q", "--bare", str(repo), str(work / "bare.git"))
    report = install_skills(work / "bare.git", skills=["pdf"], into=work / "into", approver=None)
    assert report.names == ["pdf"]
    monkeypatch.setenv("PATH", str(work / "empty"))
    with pytest.raises(SourceError, match="git is not installed .* or give a .skill/.zip file"):
        install_skills(work / "bare.git", into=work / "other", approver=None)
