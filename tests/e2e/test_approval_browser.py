"""The approval flow in a real JupyterLab, clicked in a real headless Chromium.

One notebook, Run > Run All Cells, then a person's clicks while the cells are still running:

    cell 1  %%skillrun touch_marker  -> buttons; click "Yes once" while the cell runs
            -> the cell finishes, its stdout tab shows the script's output
    cell 2  uses the returned value (r1.json()) -> printed
    cell 3  %%skillrun touch_marker  -> click "No" -> declined, the marker file never appears
    cell 4  prints r2.status
    cell 5  %%skillrun touch_marker  -> click "Yes in session" -> runs
    cell 6  %%skillrun touch_marker  -> no buttons at all (session approval), runs
    cell 7  prints the statuses

The marker files prove what ran: touch_marker.py writes the file it is given, so a declined
run must leave no file behind. Screenshots go to the test's tmp dir (the README's pictures are
made by scripts/screenshots.py).
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

SKILL = "demo-behaviours.touch_marker"
BUTTONS = ("Yes once", "Yes in session", "No")


def _notebook(markers: Path) -> nbformat.NotebookNode:
    def run(var: str, marker: str) -> str:
        return f"%%skillrun {SKILL} -o {var}\n" + json.dumps({"path": str(markers / marker)})

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell("%load_ext skill_magics\n%skills add --examples"),
        nbformat.v4.new_code_cell(run("r1", "once")),
        nbformat.v4.new_code_cell('print("NEXT CELL SAW", r1.json()["marker"])'),
        nbformat.v4.new_code_cell(run("r2", "declined")),
        nbformat.v4.new_code_cell('print("DECLINED STATUS", r2.status)'),
        nbformat.v4.new_code_cell(run("r3", "session")),
        nbformat.v4.new_code_cell(run("r4", "again")),
        nbformat.v4.new_code_cell('print("SESSION STATUSES", r3.status, r4.status)'),
    ]
    return nb


def _wait_buttons(lab, index: int) -> None:
    for label in BUTTONS:
        lab.button(index, label).wait_for(state="visible", timeout=120_000)


def _click_while_running(lab, index: int, label: str) -> None:
    """Click an approval button and prove the cell was still running at that moment."""
    _wait_buttons(lab, index)
    assert lab.is_running(index), (
        f"cell {index} should still be waiting for the click, prompt is {lab.prompt(index)!r}"
    )
    lab.button(index, label).click()


def _stdout_tab_text(lab, index: int) -> str:
    """The text of the finished result's 'stdout' section (static HTML: issue 44)."""
    result = lab.cell(index).locator(".skill-magics-result").last
    result.wait_for(state="visible", timeout=60_000)
    stdout = result.locator(
        "details", has=lab.page.locator("summary", has_text=re.compile(r"^\s*stdout\s*$"))
    )
    return stdout.locator("pre").first.inner_text()


@pytest.fixture
def markers() -> Iterator[Path]:
    # Short path on purpose: it appears in the approval panel.
    path = Path(tempfile.mkdtemp(prefix="markers-"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_approval_buttons_in_jupyterlab(lab, markers: Path) -> None:
    name = lab.add_notebook(_notebook(markers), "approval.ipynb")
    lab.open_notebook(name)
    lab.run_all()

    # -- Yes once, clicked while cell 1 is running ------------------------------------------
    _wait_buttons(lab, 1)
    panel = lab.cell(1).locator(".skill-magics-approval-panel")
    lab.screenshot("approval-panel", locator=lab.cell(1))
    lab.screenshot("approval-page")
    assert "touch_marker.py" in panel.inner_text(), "the panel names the script to approve"
    assert not (markers / "once").exists(), "nothing may run before the click"
    _click_while_running(lab, 1, "Yes once")
    lab.wait_cell_done(1, timeout=120)
    stdout = _stdout_tab_text(lab, 1)
    assert str(markers / "once") in stdout, f"stdout tab shows the script output: {stdout!r}"
    assert (markers / "once").exists()
    lab.wait_cell_done(2, timeout=60)
    assert f"NEXT CELL SAW {markers / 'once'}" in lab.output_text(2)
    lab.screenshot("yes-once-page")
    lab.screenshot("yes-once-result", locator=lab.cell(1))

    # -- No: declined, nothing ran -----------------------------------------------------------
    _click_while_running(lab, 3, "No")
    lab.wait_cell_done(4, timeout=120)
    assert "DECLINED STATUS declined" in lab.output_text(4)
    assert "declined" in lab.output_text(3).lower()
    assert not (markers / "declined").exists(), "No must mean the script never ran"
    lab.screenshot("declined")

    # -- Yes in session, then the same skill again without buttons ---------------------------
    _click_while_running(lab, 5, "Yes in session")
    lab.wait_cell_done(7, timeout=120)
    assert "SESSION STATUSES completed completed" in lab.output_text(7)
    assert (markers / "session").exists() and (markers / "again").exists()
    again = lab.cell(6).locator(".jp-OutputArea button.jupyter-button")
    labels = [t.strip() for t in again.all_inner_texts()]
    assert not set(labels) & set(BUTTONS), f"session approval must not ask again: {labels}"
    lab.screenshot("session")


@pytest.fixture(autouse=True)
def _slow_box_note(request):
    # On a loaded 2-core CI box the whole flow takes ~30-60 s; record it for the report.
    start = time.monotonic()
    yield
    request.node.user_properties.append(("duration_s", round(time.monotonic() - start, 1)))
