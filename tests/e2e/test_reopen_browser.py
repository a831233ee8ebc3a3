"""A saved notebook reopened the next day shows what happened (issue 44, Deliver 3).

Run in JupyterLab, clicked in Chromium, saved by JupyterLab; then the server is stopped (its
kernel with it) and a new server opens the same file in a fresh page: every decided approval
panel and every finished result must show its decision, header and output from the saved
HTML, not "Error displaying widget: model not found" (a saved widget view whose model died
with the kernel, which JupyterLab prefers to the HTML beside it).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import nbformat

SKILL = "demo-behaviours.touch_marker"
NOT_DRAWN = ("Error displaying widget", "model not found", "Loading widget")


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
        nbformat.v4.new_code_cell(run("r1", "yes")),
        nbformat.v4.new_code_cell(run("r2", "no")),
        nbformat.v4.new_code_cell('print("STATUSES", r1.status, r2.status)'),
    ]
    return nb


def _save(lab: Any, path: Path, needle: str, timeout: float = 60) -> None:
    """File > Save (the app's command), then wait until the file on disk holds ``needle``."""
    lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and needle in path.read_text():
            return
        time.sleep(0.3)
    raise AssertionError(f"{path.name} was not saved with {needle!r}")


def test_a_saved_notebook_reopens_with_every_decision_and_result(
    own_lab: Any, browser_context: Any, tmp_path: Path
) -> None:
    markers = tmp_path / "m"
    markers.mkdir()
    lab = own_lab.page(browser_context, tmp_path)
    name = lab.add_notebook(_notebook(markers), "reopen.ipynb")
    lab.open_notebook(name)
    lab.run_all()
    lab.button(1, "Yes once").wait_for(state="visible", timeout=120_000)
    lab.button(1, "Yes once").click()
    lab.button(2, "No").wait_for(state="visible", timeout=120_000)
    lab.button(2, "No").click()
    lab.wait_cell_done(3, timeout=120)
    assert "STATUSES completed declined" in lab.wait_output(3, "STATUSES")
    # Live, the outputs are already the static forms (one output per panel and result).
    assert "Decision: Yes once" in lab.wait_output(1, "Decision: Yes once")
    _save(lab, own_lab.root / name, "Decision: No")
    lab.page.close()

    # The next day: the server (and so the kernel) is gone; a new one opens the same file.
    own_lab.restart()
    lab = own_lab.page(browser_context, tmp_path)
    lab.open_notebook(name)
    yes, no = lab.output_text(1), lab.output_text(2)
    lab.screenshot("reopened")
    page = lab.page.locator(".jp-NotebookPanel").inner_text()
    assert not [n for n in NOT_DRAWN if n in page], page[:3000]
    # cell 1: the panel (what was asked, and the decision) and the result (header, output)
    assert "Approve running this skill script?" in yes and "touch_marker.py" in yes
    assert re.search(r"Decision: Yes once \(button 'Yes once', \d\d:\d\d:\d\d\)", yes), yes
    assert f"{SKILL} · completed · exit 0" in yes.replace("\n", " ") or (
        "completed" in yes and "exit 0" in yes
    ), yes
    assert str(markers / "yes") in yes, "the stdout section is shown open"
    for title in ("stderr", "exit code", "timing"):
        assert title in yes, f"the {title} section is missing: {yes}"
    # cell 2: the refusal, and nothing ran
    assert "Decision: No (button 'No'" in no and "declined" in no, no
    assert not (markers / "no").exists()
    lab.page.close()


def test_a_page_reloaded_while_a_panel_waits_finds_the_kernel_not_unknown(
    lab: Any, tmp_path: Path
) -> None:
    """Deliver 4 (issue 44): reloading the page while a panel waits used to leave the page
    without a kernel_info reply ("Unknown", new cells stuck at [*]). The reloaded page must
    get its kernel_info answered (its status is known, not "unknown"); a click from the first
    page still decides the waiting cell."""
    markers = tmp_path / "m"
    markers.mkdir()
    name = lab.add_notebook(_notebook(markers), "reload.ipynb")
    lab.open_notebook(name)
    lab.run_all()
    lab.button(1, "Yes once").wait_for(state="visible", timeout=120_000)
    first = lab.page
    second = lab.page.context.new_page()  # the same notebook, reloaded in another tab
    second.goto(first.url)
    lab.page = second
    deadline = time.monotonic() + 30
    status = ""
    while time.monotonic() < deadline:
        try:
            status = lab.kernel_status()
        except Exception:  # noqa: BLE001 - the page is still navigating (token redirect)
            status = "loading"
        if status in ("busy", "idle"):
            break
        time.sleep(0.25)
    # Connected: its kernel_info was answered. (Which of the two it shows depends on the
    # last status message of any shell: the widget manager's subshell says idle.)
    assert status in ("busy", "idle"), f"the reloaded page reads the kernel as {status!r}"
    lab.page = first
    lab.button(1, "Yes once").click()
    lab.page = second
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (markers / "yes").exists():
        time.sleep(0.25)
    assert (markers / "yes").exists(), "the click decided the waiting cell"
    second.close()
