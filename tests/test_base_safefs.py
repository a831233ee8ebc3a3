"""The shared folder helpers of core/base/safefs.py: removing a file or folder whole (moved
aside first, a link never followed) and the private per-user root (the MCP skill cache's and
the trust record's)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from manager_support import posix_only

from skill_magics.core.base.safefs import NotPrivate, open_private_root, remove_aside

pytestmark = posix_only


def test_remove_aside_removes_a_folder_whole_and_never_follows_a_link(tmp_path: Path) -> None:
    (tmp_path / "copy" / "sub").mkdir(parents=True)
    (tmp_path / "copy" / "sub" / "f").write_text("x")
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep").write_text("mine")
    (tmp_path / "planted").symlink_to(victim)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        assert remove_aside(fd, "copy") and remove_aside(fd, "planted")
        assert not remove_aside(fd, "gone")  # nothing there: nothing to say
        assert remove_aside(fd, "victim", ".gone-me.1")  # the name asked for is used
    finally:
        os.close(fd)
    assert os.listdir(tmp_path) == []


def test_a_private_root_is_made_0700_and_one_others_may_use_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "a" / "root"
    with pytest.raises(FileNotFoundError):
        open_private_root(root, create=False)
    os.close(open_private_root(root, create=True))
    assert root.stat().st_mode & 0o777 == 0o700
    root.chmod(0o750)  # others may read: refused by the strict check, NOT by the write check
    with pytest.raises(NotPrivate, match=r"is not ours alone \(owner uid \d+, mode 750\)"):
        open_private_root(root, create=False)
    os.close(open_private_root(root, create=False, others=0o022))
    root.chmod(0o770)
    with pytest.raises(NotPrivate):
        open_private_root(root, create=False, others=0o022)
    (tmp_path / "link").symlink_to(root)
    with pytest.raises(OSError):  # a link is never the root
        open_private_root(tmp_path / "link", create=True)
