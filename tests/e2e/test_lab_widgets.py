"""Harness check: JupyterLab renders ipywidgets in this Chromium and a click reaches a cell
that is still running (top-level await), with no skill_magics code involved.

When the approval test fails, this one tells whether the frontend plumbing itself works.
"""

from __future__ import annotations

import nbformat

WAIT_FOR_CLICK = """\
import asyncio
import ipywidgets as widgets
from IPython.display import display

clicked = asyncio.get_running_loop().create_future()
button = widgets.Button(description="Harness click")
button.on_click(lambda _b: clicked.done() or clicked.set_result("clicked"))
display(button)
for _ in range(600):  # at most 60 s, in short slices so Interrupt still works
    if clicked.done():
        break
    await asyncio.sleep(0.1)
value = clicked.result() if clicked.done() else "no click"
print("harness got:", value)
"""


def _notebook() -> dict:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(WAIT_FOR_CLICK),
        nbformat.v4.new_code_cell('print("next cell sees:", value)'),
    ]
    return nbformat.from_dict(nb)


def test_widget_click_reaches_running_cell(lab) -> None:
    name = lab.add_notebook(_notebook(), "harness.ipynb")
    lab.open_notebook(name)
    lab.run_all()
    button = lab.button(0, "Harness click")
    button.wait_for(state="visible", timeout=90_000)
    assert lab.is_running(0), f"cell 0 should still be running, prompt is {lab.prompt(0)!r}"
    lab.screenshot("harness-button")
    button.click()
    lab.wait_cell_done(1, timeout=90)
    assert "harness got: clicked" in lab.output_text(0)
    assert "next cell sees: clicked" in lab.output_text(1)
    lab.screenshot("harness-done")
