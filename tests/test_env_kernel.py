"""``%skills env`` in a real Jupyter kernel: the install's approval panel is clicked (the
comm_msg a browser sends) while the cell awaits (ipykernel >= 7.4), relays (7.x) or pumps (6.x, as
on Colab), then the environment is built (real PyPI)."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_fixtures import start_kernel

from tests.real_layouts import write_pep

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]

MANAGER = (
    "from skill_magics.notebook.extension import get_magics\n"
    "m = get_magics(get_ipython()).manager\n"
)


@pytest.mark.parametrize("label", ["Yes once", "No"])
def test_env_install_waits_for_the_click(tmp_path: Path, label: str) -> None:
    skills = tmp_path / "skills"
    write_pep(skills)
    env = {"SKILL_MAGICS_PATH": str(skills), "SKILL_MAGICS_ENV_DIR": str(tmp_path / "envs")}
    with start_kernel(env=env, cwd=tmp_path) as k:
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        msg_id = k.submit("%skills env pep", allow_stdin=True)
        button = k.wait_for_button(label, timeout=60)
        assert not k._idle_seen(msg_id), "the cell must be waiting for the click"
        k.click(button)
        r = k.collect(msg_id, timeout=200)
        check = k.execute(
            MANAGER + "print(m.requirements('pep').python_source)\n"
            "print([(x.script, x.outcome) for x in m.audit.records()])",
            allow_stdin=False,
        )
        if label == "No":
            assert not r.ok and r.reply["ename"] == "UsageError"
            assert "ApprovalDeclined" in r.error_text
            assert check.stdout.splitlines() == ["kernel", "[('<install>', 'declined')]"]
            assert not list((tmp_path / "envs").rglob("bin"))
        else:
            assert r.ok, r.error_text
            assert "Built the environment of 'pep'" in r.stdout
            assert check.stdout.splitlines() == [
                "managed env",
                "[('<install>', 'approved'), ('<install>', 'completed')]",
            ]
