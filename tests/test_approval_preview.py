"""What the approval shows and hashes of a skill's scripts, when a script can write into its
skill: a link is followed only while it stays inside the skill, and a FIFO planted under a
script's name is refused, never waited on (the kernel must not block, nor show or hash a
file outside the skill on a script's behalf)."""

from __future__ import annotations

import os
import threading

import pytest
from manager_support import request_of

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import scripts_content_hash

posix_only = pytest.mark.skipif(os.name != "posix", reason="symlinks and FIFOs")
pytestmark = [posix_only, pytest.mark.timeout(60)]


def _request_within(manager, skill, meta, seconds: float = 10.0):
    """The planner's request, built in a thread: a blocked open fails the test instead of
    hanging it (the FIFO is then opened for writing, to let the thread go)."""
    out: dict = {}
    thread = threading.Thread(
        target=lambda: out.setdefault("request", request_of(manager, skill, [meta])), daemon=True
    )
    thread.start()
    thread.join(seconds)
    return out.get("request"), thread


def test_a_fifo_under_a_scripts_name_is_refused_not_waited_on(make_skill, tmp_path):
    make_skill(tmp_path, "fifo", scripts={"scripts/go.py": "print('go')\n"})
    manager = SkillManager([tmp_path])
    meta = manager.get_skill("fifo").find_script("go")
    script = tmp_path / "fifo" / "scripts" / "go.py"
    script.unlink()
    os.mkfifo(script)  # what a script that can write its skill leaves behind
    request, thread = _request_within(manager, "fifo", meta)
    if request is None:  # unblock the reader, then fail
        fd = os.open(script, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        thread.join(5)
        pytest.fail("building the approval blocked on a FIFO")
    (item,) = request.scripts
    assert item.preview.startswith("<cannot read") and (item.lines, item.size) == (0, 0)
    assert scripts_content_hash(tmp_path / "fifo", ["scripts/go.py"])  # returns at once


def test_a_link_out_of_the_skill_is_neither_shown_nor_hashed(make_skill, tmp_path):
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE-KEY-MATERIAL\n")
    skills = tmp_path / "skills"
    make_skill(skills, "leaky", scripts={"scripts/go.py": "print('go')\n"})
    manager = SkillManager([skills])
    meta = manager.get_skill("leaky").find_script("go")
    script = skills / "leaky" / "scripts" / "go.py"
    script.unlink()
    script.symlink_to(secret)
    (item,) = request_of(manager, "leaky", [meta]).scripts
    assert "PRIVATE-KEY" not in item.preview
    assert item.preview == "<not shown: it resolves outside the skill>"
    # The hash does not depend on what the link points to outside the skill.
    before = scripts_content_hash(skills / "leaky", ["scripts/go.py"])
    secret.write_text("OTHER\n")
    assert scripts_content_hash(skills / "leaky", ["scripts/go.py"]) == before


def test_links_inside_the_skill_and_a_linked_skill_folder_are_shown(make_skill, tmp_path):
    """What the rule must NOT refuse: a script that links another file of its own skill, and
    a skill folder that is itself a link (a checkout linked into the skills folder)."""
    real = tmp_path / "checkout"
    source = "print('shared')\n" * 3
    make_skill(
        real,
        "linked",
        scripts={"scripts/go.py": "print('go')\n"},
        files={"lib/shared.py": source},
    )
    (real / "linked" / "scripts" / "go.py").unlink()
    (real / "linked" / "scripts" / "go.py").symlink_to("../lib/shared.py")
    skills = tmp_path / "skills"
    skills.mkdir()
    (skills / "linked").symlink_to(real / "linked", target_is_directory=True)
    manager = SkillManager([skills])
    meta = manager.get_skill("linked").find_script("go")
    (item,) = request_of(manager, "linked", [meta]).scripts
    assert item.preview == source and (item.lines, item.size) == (3, len(source))
    base = skills / "linked"
    before = scripts_content_hash(base, ["scripts/go.py"])
    (real / "linked" / "lib" / "shared.py").write_text("print('edited')\n")
    assert scripts_content_hash(base, ["scripts/go.py"]) != before  # the link's target counts
