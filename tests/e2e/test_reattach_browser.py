"""A page reloaded while a cell waits shows the panel in that cell again (issue 44, Deliver 4).

JupyterLab shows a request's outputs only in the page that sent it, so the reloaded page's
cell used to stay empty and only the Skills tab could decide. The labextension re-attaches
the cell to its request (labextension/src/reattach.ts): the live panel reappears in its own
cell, "Yes once" there runs the blocked cell, and the decision and the result follow in the
cell, saved as static HTML (never as a widget view that a reopened notebook cannot draw).
A question is drawn only in the notebook whose kernel asks it and whose cell asked it.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest
from conftest import LabPage
from test_sidepanel_browser import SETUP, SKILL, _plain
from test_sidepanel_notebook7 import notebook7  # noqa: F401 - the Notebook 7 server fixture

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
NOT_DRAWN = ("Error displaying widget", "model not found")


def _kernel_of(lab: Any, name: str) -> str:
    return next(
        s["kernel"]["id"]
        for s in lab.server.api("GET", "api/sessions")
        if s["notebook"]["path"] == name
    )


def _sessions(lab: Any, name: str) -> list[dict]:
    return [s for s in lab.server.api("GET", "api/sessions") if s["notebook"]["path"] == name]


def _use_kernel(lab: Any, kernel: str) -> str:
    """Kernel > Change Kernel to a running one, for the visible notebook; its kernel's id."""
    return lab.page.evaluate(
        """async (id) => {
            const app = window.jupyterapp;  // --LabApp.expose_app_in_browser
            const node = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
            for (const widget of app.shell.widgets('main')) {
                if (widget.node === node && widget.sessionContext) {
                    await widget.sessionContext.ready;
                    await widget.sessionContext.changeKernel({ id });
                    return widget.sessionContext.session.kernel.id;
                }
            }
            return '';
        }""",
        kernel,
    )


def _wait_question(lab: Any, kernel: str, timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        waiting = lab.server.api("GET", f"skill-magics/kernels/{kernel}/state")["waiting"]
        if waiting:
            return waiting[0]
        assert time.monotonic() < deadline, "the cell never asked"
        time.sleep(0.3)


def _wait_path(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path.name} never appeared: the cell did not run"
        time.sleep(0.3)


def _reloaded(lab: Any) -> None:
    lab.page.reload()
    lab.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)


def _open_elsewhere(lab: Any, name: str) -> None:
    """Open ``name`` in this page (a workspace of its own), without waiting for an idle
    kernel (a kernel whose cell waits stays busy)."""
    lab.page.goto(lab.server.lab_url(name, f"w{time.monotonic_ns()}"), timeout=120_000)
    lab.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)


@pytest.mark.parametrize(
    "setup",
    [SETUP, SETUP.replace("\n%autoawait off", "")],
    ids=["blocking", "awaiting"],  # the cell blocks its kernel (the relay), or awaits
)
def test_a_reloaded_page_shows_the_waiting_panel_in_its_cell_and_it_decides(
    lab: Any, tmp_path: Path, setup: str
) -> None:
    marker = tmp_path / "after-reload"
    name = lab.add_notebook(
        _plain([setup, f"%%skillrun {SKILL}\n" + json.dumps({"path": str(marker)})]),
        f"reattach-{len(setup)}.ipynb",
    )
    lab.open_notebook(name)
    lab.run_all()
    lab.wait_cell_done(0, timeout=120)
    kernel = _kernel_of(lab, name)
    _wait_question(lab, kernel)
    lab.button(1, "Yes once").wait_for(state="visible", timeout=120_000)

    _reloaded(lab)
    yes = lab.button(1, "Yes once")
    yes.wait_for(state="visible", timeout=120_000)  # in its own cell, not only in the tab
    assert "touch_marker.py" in lab.output_text(1)
    assert lab.is_running(1), "the cell shows it still runs"
    assert not marker.exists(), "nothing ran before the answer"
    lab.screenshot("reattached-panel")
    yes.click()
    _wait_path(marker)
    text = lab.wait_output(1, "Decision: Yes once", timeout=60)
    assert "Decision: Yes once (button 'Yes once'" in text, text
    lab.wait_cell_done(1, timeout=120)
    text = lab.wait_output(1, "completed", timeout=60)
    assert "completed" in text, f"the run's result shows in the cell: {text!r}"
    assert not any(bad in text for bad in NOT_DRAWN), text
    deadline = time.monotonic() + 60
    while lab.server.api("GET", f"api/kernels/{kernel}")["execution_state"] != "idle":
        assert time.monotonic() < deadline, "the kernel stayed busy after the answer"
        time.sleep(0.3)

    # Saved, the decided panel and the result are static HTML and text (issue 44, Deliver 3).
    path = lab.server.root / name
    lab.page.evaluate("() => window.jupyterapp.commands.execute('docmanager:save')")
    deadline = time.monotonic() + 60
    while "Decision: Yes once" not in path.read_text():
        assert time.monotonic() < deadline, "the notebook was not saved with the decision"
        time.sleep(0.3)
    outputs = nbformat.reads(path.read_text(), as_version=4).cells[1].outputs
    assert outputs and all(WIDGET_MIME not in o.get("data", {}) for o in outputs), outputs
    assert any("text/html" in o.get("data", {}) for o in outputs), outputs


def test_a_question_is_drawn_only_in_the_notebook_and_cell_that_asked_it(
    lab: Any, tmp_path: Path
) -> None:
    """Never drawn: a copy of the notebook (the same cell ids) on a kernel of its own, and
    another notebook on the very kernel that asks (its cell ids are not the asking cell's).
    The notebook that asked, opened again, shows it (so the two above were not just slow)."""
    marker = tmp_path / "only-here"
    nb = _plain([SETUP, f"%%skillrun {SKILL}\n" + json.dumps({"path": str(marker)})])
    name = lab.add_notebook(nb, "asks.ipynb")
    copy = lab.add_notebook(nb, "copy.ipynb")  # the same cells, the same ids
    other = lab.add_notebook(_plain(["1 + 1", "2 + 2"]), "other.ipynb")
    lab.open_notebook(name)
    lab.run_all()
    lab.wait_cell_done(0, timeout=120)
    kernel = _kernel_of(lab, name)
    question = _wait_question(lab, kernel)
    assert question["cell"]["cell_id"] == nb.cells[1].id

    # The copy, on its own kernel with skill_magics loaded: nothing waits there.
    _open_elsewhere(lab, copy)
    lab.wait_kernel_idle(timeout=120)
    lab.cell(0).locator(".jp-InputPrompt").click()
    lab.page.keyboard.press("Shift+Enter")
    lab.wait_cell_done(0, timeout=120)
    assert kernel not in {s["kernel"]["id"] for s in _sessions(lab, copy)}
    time.sleep(8)  # a few of the extension's looks
    assert lab.button(1, "Yes once").count() == 0, "another kernel's question was drawn"

    # Another notebook on the asking kernel: none of its cells asked.
    _open_elsewhere(lab, other)
    lab.wait_kernel_idle(timeout=120)
    assert _use_kernel(lab, kernel) == kernel
    time.sleep(8)
    page = lab.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)").inner_text()
    assert "touch_marker" not in page and "Yes once" not in page, page

    # The notebook that asked, on its kernel: the cell that asked shows it, and it decides.
    _open_elsewhere(lab, name)
    assert _use_kernel(lab, kernel) == kernel
    no = lab.button(1, "No")
    no.wait_for(state="visible", timeout=120_000)
    no.click()
    assert "Decision: No" in lab.wait_output(1, "Decision: No", timeout=60)
    lab.wait_cell_done(1, timeout=120)
    assert not marker.exists()


def test_notebook7_shows_the_waiting_panel_in_its_cell_after_a_reload(
    notebook7: Any,  # noqa: F811 - the fixture imported above
    browser_context: Any,
    tmp_path: Path,
) -> None:
    marker = tmp_path / "nb7-after-reload"
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    lab = LabPage(page, notebook7, tmp_path)
    try:
        name = lab.add_notebook(
            _plain([SETUP, f"%%skillrun {SKILL}\n" + json.dumps({"path": str(marker)})]),
            "nb7-reattach.ipynb",
        )
        page.goto(f"{notebook7.url}notebooks/{name}?token={notebook7.token}")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)
        lab.wait_kernel_idle(timeout=120)
        lab.run_all()
        lab.wait_cell_done(0, timeout=120)
        lab.button(1, "Yes once").wait_for(state="visible", timeout=120_000)

        _reloaded(lab)
        yes = lab.button(1, "Yes once")
        yes.wait_for(state="visible", timeout=120_000)
        assert not marker.exists(), "nothing ran before the answer"
        lab.screenshot("notebook7-reattached-panel")
        yes.click()
        _wait_path(marker)
        assert "Decision: Yes once" in lab.wait_output(1, "Decision: Yes once", timeout=60)
        lab.wait_cell_done(1, timeout=120)
        assert "completed" in lab.wait_output(1, "completed", timeout=60)
    finally:
        page.close()
        notebook7.shutdown_kernels()
