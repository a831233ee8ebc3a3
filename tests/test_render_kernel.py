"""The result views inside a real Jupyter kernel (jupyter_client, no mocks) and terminal IPython.

In a kernel the bundle carries the live widget plus the HTML/text fallbacks (what a saved
notebook shows without widget state); ``show()`` keeps those fallbacks current through
update_display_data; the Stop button works over a real comm.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator

import pytest
from kernel_fixtures import KernelSession, start_kernel, tab_titles
from test_render_support import parse_html

pytestmark = pytest.mark.kernel

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

SETUP = textwrap.dedent(
    """
    from pathlib import Path
    from skill_magics.core.base.models import ScriptExecutionResult
    from skill_magics.notebook.result import SkillRunResult

    def execution(stdout="", stderr="", exit_code=0, **kw):
        return ScriptExecutionResult(stdout, stderr, exit_code, 5.0, Path("scripts/run.py"), **kw)
    """
)


@pytest.fixture(scope="module")
def kernel() -> Iterator[KernelSession]:
    with start_kernel() as session:
        reply = session.execute(SETUP)
        assert reply.ok, reply.error_text
        yield session


def test_a_final_cell_value_is_static_html_and_text(kernel: KernelSession) -> None:
    """Issue 44: no widget view in a finished result's output (after a kernel restart the
    frontend would show "model not found" instead of the saved HTML)."""
    cell = kernel.execute(
        "SkillRunResult.from_execution('demo', 'scripts/run.py', execution('<b>hi</b>\\n'))"
    )
    assert cell.ok, cell.error_text
    (bundle,) = cell.bundles
    assert set(bundle) == {"text/html", "text/plain"}
    assert bundle["text/plain"].startswith("demo.run · completed · exit 0")
    assert "&lt;b&gt;hi&lt;/b&gt;" in bundle["text/html"]
    parse_html(bundle["text/html"])


def test_a_live_view_has_the_tabs(kernel: KernelSession) -> None:
    cell = kernel.execute("SkillRunResult.pending('demo', 'scripts/run.py')")
    assert cell.ok, cell.error_text
    (bundle,) = cell.bundles
    assert set(bundle) == {WIDGET_MIME, "text/html", "text/plain"}
    kernel.drain(0.5)
    model_id = bundle[WIDGET_MIME]["model_id"]
    assert kernel.widgets[model_id]["_model_name"] == "VBoxModel"
    tabs = [s for s in kernel.widgets.values() if s.get("_model_name") == "TabModel"]
    assert any(tab_titles(t) == ["stdout", "stderr", "exit code", "signal", "timing"]
               for t in tabs)  # fmt: skip


def test_show_then_set_result_updates_the_saved_fallbacks(kernel: KernelSession) -> None:
    first = kernel.execute(
        "pending = SkillRunResult.pending('demo', 'scripts/run.py')\npending.show()"
    )
    assert first.ok, first.error_text
    (shown,) = [m for m in first.outputs if m["msg_type"] == "display_data"]
    display_id = shown["content"]["transient"]["display_id"]
    assert "Waiting for approval" in shown["content"]["data"]["text/html"]

    later = kernel.execute("pending.set_result(execution('done\\n'))")
    assert later.ok, later.error_text
    updates = [m for m in later.outputs if m["msg_type"] == "update_display_data"]
    assert updates, "set_result did not update the displayed output"
    last = updates[-1]["content"]
    assert last["transient"]["display_id"] == display_id
    assert "completed" in last["data"]["text/html"] and "done" in last["data"]["text/html"]
    assert last["data"]["text/plain"].startswith("demo.run · completed")
    assert WIDGET_MIME in shown["content"]["data"] and WIDGET_MIME not in last["data"]


def test_stop_button_click_reaches_on_stop(kernel: KernelSession) -> None:
    cell = kernel.execute(
        "import threading\n"
        "stop = threading.Event()\n"
        "live = SkillRunResult('demo', 'scripts/run.py', 'running')\n"
        "live.on_stop = stop.set\n"
        "live"
    )
    assert cell.ok, cell.error_text
    kernel.wait_for_button("Stop", timeout=30)
    kernel.drain(0.3)
    # Every result view has a (hidden) Stop button; this cell's view opened last.
    button = [
        cid
        for cid, s in kernel.widgets.items()
        if s.get("_model_name") == "ButtonModel" and s.get("description") == "Stop"
    ][-1]
    kernel.click(button)
    check = kernel.execute("print(stop.wait(10), live.stop_requested)")
    assert check.stdout.strip() == "True True"
    kernel.drain(0.5)
    assert kernel.widgets[button]["description"] == "Stopping…"
    assert kernel.widgets[button]["disabled"] is True
    done = kernel.execute("live.set_result(execution('', 'Terminated', -15, signal='SIGTERM'))")
    assert done.ok, done.error_text


def test_terminal_ipython_gets_text_and_html_but_no_widget() -> None:
    code = textwrap.dedent(
        """
        from IPython.core.interactiveshell import InteractiveShell
        import sys
        shell = InteractiveShell.instance()
        shell.run_cell(%r)
        res = shell.user_ns["res"]
        data, _ = shell.display_formatter.format(res)
        print(sorted(data))
        print("ipywidgets" in sys.modules)
        """
    ) % (SETUP + "\nres = SkillRunResult.from_execution('d', 's.py', execution('x'))\n")
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    ).stdout.split("\n")
    assert out[0] == "['text/html', 'text/plain']"
    assert out[1] == "False", "a terminal never imports ipywidgets for a result"
