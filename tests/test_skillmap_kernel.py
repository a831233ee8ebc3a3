"""``%%skillrun --map`` in a real ipykernel (jupyter_client), clicked like JupyterLab clicks:
the approval panel's "Yes once" once for the whole batch, then the progress bar's Stop; the
cell's value carries the live widget view and the static HTML/text fallbacks."""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_fixtures import kernel_ipykernel_version, start_kernel
from process_support import pid_alive, start_times, wait_for_text

pytestmark = pytest.mark.kernel

HANG = 'sleep 300 &\necho "$$ $!" > "$1"\nwait\n'
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@pytest.mark.skipif(
    kernel_ipykernel_version() < (7, 4), reason="clicks during a cell need the await path"
)
def test_one_click_approves_the_batch_and_stop_ends_it(tmp_path: Path, make_skill) -> None:
    skills = tmp_path / "skills"
    make_skill(skills, "hang", scripts={"scripts/hang.sh": HANG})
    pid_files = [tmp_path / f"{i}.pids" for i in range(8)]
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute(f"rows = [{{'path': p}} for p in {[str(p) for p in pid_files]!r}]")
        assert r.ok, r.error_text
        msg_id = k.submit(
            "%%skillrun hang.hang --map rows --workers 2 -o res -- {path}\n", allow_stdin=True
        )
        k.click(k.wait_for_button("Yes once", timeout=60))  # ONE approval for 8 items
        running = [int(x) for p in pid_files[:2] for x in wait_for_text(p).split()]
        starts = start_times(running)  # while they surely run: pid reuse shows
        k.click(k.wait_for_button("Stop", timeout=60))
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        # The cell's value: the static HTML and text (no widget view: issue 44).
        value = [m for m in r.outputs if m["msg_type"] == "execute_result"]
        assert value, r.outputs
        data = value[0]["content"]["data"]
        assert WIDGET_VIEW not in data and "failures (8" in data["text/html"]
        assert "hang.hang: 8 items, 2 interrupted, 6 cancelled" in data["text/plain"]
        r = k.execute("print(res.counts(), len(res.failed()))")
        assert r.stdout.strip() == "{'interrupted': 2, 'cancelled': 6} 8"
        r = k.execute(
            "from skill_magics.notebook.extension import get_magics\n"
            "print([r.outcome for r in get_magics(get_ipython()).manager.audit.records()"
            " if r.outcome == 'approved'])"
        )
        assert r.stdout.strip() == "['approved']"
    pids = [int(x) for p in pid_files if p.exists() for x in p.read_text().split()]
    assert len(pids) == 4 and not [p for p in pids if pid_alive(p, starts.get(p))]
