"""Installs under faults: a full disk mid-update (``RLIMIT_FSIZE`` in a real subprocess, so
every write past the limit fails with EFBIG as on a full disk) leaves files and lock
agreeing, with a one-line error naming what was kept."""

from __future__ import annotations

import subprocess
import sys
import tempfile
import textwrap

import pytest
from sources_support import commit_all, make_collection, tree_files, write_files

from skill_magics.core.installed.lock import LOCK_NAME
from skill_magics.core.sources.install import install_skills
from skill_magics.core.sources.verify import verify_skills

# Runs the update; the approver (called after fetch and staging, just before the swap)
# lowers the file size limit so the new lock cannot be written whole.
UPDATE_UNDER_LIMIT = textwrap.dedent(
    """\
    import resource, signal, sys
    from skill_magics.core.sources.update import update_skills
    into, limit = sys.argv[1], int(sys.argv[2])
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # EFBIG, as a full disk gives ENOSPC
    def approver(request):
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, resource.RLIM_INFINITY))
        return "yes_once"
    try:
        update_skills(into, approver=approver)
    except Exception as exc:
        print(type(exc).__name__ + ": " + str(exc))
        sys.exit(3)
    """
)


@pytest.fixture
def work(isolated_env, monkeypatch):
    tmp = isolated_env / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    return isolated_env


def test_an_update_whose_lock_cannot_be_written_changes_nothing(work):
    repo = make_collection(work / "collection")
    into = work / "into"
    install_skills(f"file://{repo}", skills=["pdf", "gh-fix-ci"], into=into, approver=None)
    lock_before = (into / LOCK_NAME).read_bytes()
    files_before = tree_files(into / "pdf")
    write_files(repo, {"skills/pdf/scripts/extract.py": "print('pages, faster')\n"})
    commit_all(repo, "pdf 2")
    limit = len(lock_before) // 2  # skill files fit, the lock does not
    assert max(len(b) for b in files_before.values()) < limit
    done = subprocess.run(
        [sys.executable, "-c", UPDATE_UNDER_LIMIT, str(into), str(limit)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 3, done.stdout + done.stderr
    line = done.stdout.strip()
    assert line.startswith("SourceError: ") and "\n" not in line
    assert "File too large" in line and f"kept the installed skills and {LOCK_NAME}" in line
    # Files and lock agree: the old files under the old lock, nothing reported changed.
    assert (into / LOCK_NAME).read_bytes() == lock_before
    assert tree_files(into / "pdf") == files_before
    assert verify_skills(into) == []
    assert sorted(p.name for p in into.iterdir() if p.name.startswith(".")) == []
