"""The approval click in real JupyterLab + headless Chromium, on the kernel under test.

How a click reaches a cell that waits for it depends on ipykernel (docs/architecture.md,
*Waiting for a click*): a top-level await on >= 7.4, the comm relay on a blocking 7.x wait,
pumping on 6.x; it must not depend on whether JupyterLab sends comms on subshells, so the
test runs with them on and off. The other browser tests run the server venv's own kernel
only; this one runs a notebook whose kernelspec (conftest's kernel_under_test) points at
kernel_fixtures.kernel_python(). It is marked ``kernel``, so scripts/kernel-matrix.sh runs it
once per matrix venv (JupyterLab itself always comes from the main venv), and ``make test``'s
main pytest run covers the main venv's kernel (7.4, the await path). ``make test`` passes the
matrix 7.3.0 and 6.29.5 only, so no version runs it twice there. Its "colab" entry leaves this
test out: JupyterLab 4's widget manager (jupyterlab_widgets 3) renders ipywidgets 8 models
only, and that venv pins ipywidgets 7.7 as Colab does (its clicks are tested over
jupyter_client: tests/test_compat_kernel.py, tests/test_kernel_magics.py).

One notebook, Run > Run All Cells:

    cell 0  prints the kernel's ipykernel version (proves Lab started the kernel under test)
    cell 1  %load_ext, the example skills, approval_timeout 60 s (a lost click fails in 1 min)
    cell 2  %%skillrun unit-converter.convert -> "Yes once" while [*] -> click -> completed
    cell 3  the next cell sees the returned value
    cell 4  ctx = %skill_context csv-profiler --args ... -> "Yes once" while [*] -> click
    cell 5  the next cell sees status="completed" in ctx

On ipykernel 6.x cell 4 is held back by cell 2's pumping wait and replayed after it, through
the kernel's own dispatcher, so its click reaches it too (waiting._replay_after_cell).
"""

from __future__ import annotations

import os
import re

import nbformat
import pytest
from kernel_fixtures import kernel_ipykernel_version, kernel_python

pytestmark = pytest.mark.kernel  # scripts/kernel-matrix.sh selects -m kernel

SETUP = "%load_ext skill_magics\n%skills add --examples\n%config SkillMagics.approval_timeout = 60"
SKILLRUN = "%%skillrun unit-converter.convert -o r -- --value 3 --from km --to mi\n"
CONTEXT = """ctx = %skill_context csv-profiler --args '{"path": "data/sample.csv"}'"""


# JupyterLab 4.4+ sends widget comms on kernel subshells when the kernel supports them, per
# its "Kernel Comms over subshells" setting (@jupyterlab/apputils-extension:kernels-settings,
# commsOverSubshells, default "perCommTarget"). "disabled" makes it speak like VS Code: every
# comm_msg on the main shell, no subshell ever created. On ipykernel >= 7.4 that run also
# turns autoawait off, so the magics block and the click must come through the comm relay.
SETTINGS = "lab/api/settings/@jupyterlab/apputils-extension:kernels-settings"
SUBSHELLS = {"subshells": "perCommTarget", "no-subshells": "disabled"}
COUNT_SUBSHELLS = (
    "_t = getattr(get_ipython().kernel, 'shell_channel_thread', None)\n"
    "print('SUBSHELLS', len(_t.manager.list_subshell()) if _t else 'none')"
)


def _notebook(kernelspec: str, blocking: bool = False) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {
        "name": kernelspec,
        "display_name": "Kernel under test",
        "language": "python",
    }
    nb.cells = [
        nbformat.v4.new_code_cell(
            "import ipykernel, sys\nprint('KERNEL', ipykernel.__version__, sys.executable)"
        ),
        nbformat.v4.new_code_cell(SETUP + ("\n%autoawait off" if blocking else "")),
        nbformat.v4.new_code_cell(SKILLRUN),
        nbformat.v4.new_code_cell("print('SKILLRUN', r.status, r.stdout.strip())"),
        nbformat.v4.new_code_cell(CONTEXT),
        nbformat.v4.new_code_cell(
            "import re\nprint('CONTEXT', *re.findall(r'status=\"[a-z_]+\"', ctx))"
        ),
        nbformat.v4.new_code_cell(COUNT_SUBSHELLS),
    ]
    return nb


def _click_yes_once_while_running(lab, index: int) -> None:
    """The button appears while the cell still runs ([*]); click it."""
    button = lab.button(index, "Yes once")
    button.wait_for(state="visible", timeout=90_000)
    assert lab.is_running(index), (
        f"cell {index} should still be waiting for the click, prompt is {lab.prompt(index)!r}"
    )
    lab.screenshot(f"cell{index}-waiting")
    button.click()


@pytest.fixture(params=sorted(SUBSHELLS))
def comms(request, lab_server):
    """JupyterLab's commsOverSubshells for this run (read by the page when it loads)."""
    raw = f'{{"commsOverSubshells": "{SUBSHELLS[request.param]}"}}'
    lab_server.api("PUT", SETTINGS, {"raw": raw})
    try:
        yield request.param
    finally:
        lab_server.api("PUT", SETTINGS, {"raw": "{}"})


def test_approval_click_on_kernel_under_test(lab, kernel_under_test: str, comms: str) -> None:
    kernel_version = kernel_ipykernel_version()
    version = ".".join(map(str, kernel_version))
    expected = os.environ.get("SKILL_MAGICS_EXPECT_IPYKERNEL")
    if expected:  # under kernel-matrix.sh: a mis-built venv must not pass quietly
        assert version == expected, f"matrix venv runs ipykernel {version}, not {expected}"

    blocking = comms == "no-subshells" and kernel_version >= (7, 4)
    name = lab.add_notebook(_notebook(kernel_under_test, blocking), f"matrix-{comms}.ipynb")
    lab.open_notebook(name)
    lab.run_all()

    lab.wait_cell_done(0, timeout=90)
    kernel_line = lab.output_text(0)
    assert f"KERNEL {version} {kernel_python()}" in kernel_line, (
        f"JupyterLab did not start the kernel under test: {kernel_line!r}"
    )

    # -- %%skillrun: click while the cell waits; the result completes; the next cell sees it --
    _click_yes_once_while_running(lab, 2)
    lab.wait_cell_done(2, timeout=90)
    result = lab.wait_output(2, "completed")
    assert "completed" in result, f"ipykernel {version}: %%skillrun result view: {result!r}"
    lab.wait_cell_done(3, timeout=60)
    seen = lab.output_text(3)
    assert re.search(r"SKILLRUN completed .*1\.864", seen), (
        f"ipykernel {version}: the next cell should see the completed run: {seen!r}"
    )

    # -- %skill_context: same click, the envelope reports the script completed -------------
    _click_yes_once_while_running(lab, 4)
    lab.wait_cell_done(5, timeout=90)
    seen = lab.output_text(5)
    assert 'CONTEXT status="completed"' in seen, (
        f"ipykernel {version}: %skill_context after the click: {seen!r}"
    )
    lab.wait_cell_done(6, timeout=60)
    subshells = lab.output_text(6)
    if kernel_version >= (7,) and comms == "no-subshells":
        assert "SUBSHELLS 0" in subshells, f"JupyterLab must have opened none: {subshells!r}"
    lab.screenshot("done")
