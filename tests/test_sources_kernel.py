"""``%skills install`` in a real Jupyter kernel: the approval panel is clicked (the comm_msg a
browser sends) while the cell awaits the install (magics/rewrite.py), then the skill is there;
No leaves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel
from sources_support import make_collection

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]


@pytest.mark.skipif(
    kernel_ipykernel_version() < (7, 4),
    reason="the line-magic await path needs ipykernel >= 7.4",
)
@pytest.mark.parametrize("label", ["Yes once", "No"])
def test_install_waits_for_the_click(tmp_path: Path, label: str) -> None:
    repo = make_collection(tmp_path / "collection")
    project = tmp_path / "project"
    project.mkdir()
    with start_kernel(cwd=project) as k:
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        msg_id = k.submit(f"%skills install file://{repo} --skill pdf", allow_stdin=True)
        button = k.wait_for_button(label, timeout=60)
        assert not k._idle_seen(msg_id), "the cell must be waiting for the click"
        k.click(button)
        r = k.collect(msg_id, timeout=120)
        installed = project / ".agents" / "skills" / "pdf" / "SKILL.md"
        if label == "No":
            assert not r.ok and "ApprovalDeclined" in r.error_text
            assert not (project / ".agents").exists()
        else:
            assert r.ok, r.error_text
            assert "Installed 1 skill" in r.stdout and installed.is_file()
            shown = k.execute("%skills show pdf", allow_stdin=False)
            assert "files match" in shown.text_plain
