"""The three views of a SkillRunResult: text/plain, static text/html, live ipywidgets."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import ipywidgets
import pytest
from test_render_support import parse_html

from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.notebook.render import TAB_TITLES, result_html, result_text
from skill_magics.notebook.render.widgets import ResultView, widgets_supported
from skill_magics.notebook.result import WAITING_MESSAGE, WIDGET_MIME, SkillRunResult

EVIL = "<script>alert('x')</script> & \"quotes\""


def execution(
    stdout: str = "", stderr: str = "", exit_code: int = 0, **kw
) -> ScriptExecutionResult:
    kw.setdefault("execution_time_ms", 42.0)
    kw.setdefault("script_path", Path("scripts/run.py"))
    kw.setdefault("stdout_bytes", len(stdout.encode()))
    kw.setdefault("stderr_bytes", len(stderr.encode()))
    return ScriptExecutionResult(stdout, stderr, exit_code, **kw)


def make(status: str) -> SkillRunResult:
    """One realistic result per status, each carrying hostile text somewhere."""
    script = "scripts/run.py"
    if status == "completed":
        return SkillRunResult.from_execution("demo", script, execution(f"ok {EVIL}\n"))
    if status == "failed":
        return SkillRunResult.from_execution("demo", script, execution("", f"boom {EVIL}\n", 1))
    if status == "timeout":
        run = execution("partial\n", "Timeout after 1 s\n", 124, timed_out=True)
        return SkillRunResult.from_execution("demo", script, run)
    if status == "signaled":
        run = execution("", "Signal: SIGSEGV\n", -11, signal="SIGSEGV", signal_number=11)
        return SkillRunResult.from_execution("demo", script, run)
    if status == "interrupted":
        run = execution("", "stopped\n", -15, signal="SIGTERM", signal_number=15)
        return SkillRunResult("demo", script, "interrupted", run, "Stopped by you.")
    if status == "running":
        res = SkillRunResult("demo", script, "running")
        res.append_output("stdout", f"step 1 {EVIL}\n")
        return res
    if status == "pending":
        return SkillRunResult.pending("demo", script, arguments={"q": EVIL})
    messages = {
        "declined": "You chose No: nothing ran.",
        "approval_unavailable": "Nobody can approve in a headless run: nothing ran.",
        "refused": f"Path escapes the skill directory: {EVIL}",
    }
    return SkillRunResult("demo", script, status, message=messages[status])


ALL = [
    "completed",
    "failed",
    "timeout",
    "signaled",
    "interrupted",
    "running",
    "pending",
    "declined",
    "approval_unavailable",
    "refused",
]
NOTHING_RAN = {"pending", "declined", "approval_unavailable", "refused"}


@pytest.mark.parametrize("status", ALL)
def test_text_view_for_each_status(status: str) -> None:
    res = make(status)
    text = result_text(res)
    first = text.splitlines()[0]
    assert first.startswith("demo.run · ")
    assert first.endswith("scripts/run.py")
    assert "\x1b" not in text
    if status != "running":  # a running view's elapsed time moves between calls
        assert text == res.text() == res._repr_mimebundle_()["text/plain"]
    if status in NOTHING_RAN:
        assert "--- stdout ---" not in text
        assert res.message or WAITING_MESSAGE in text
        assert (res.message or WAITING_MESSAGE) in text
    else:
        assert "--- stdout ---" in text
    expected_header = {
        "completed": "completed · exit 0",
        "failed": "failed · exit 1",
        "timeout": "timeout · exit 124",
        "signaled": "signaled · exit -11",
        "interrupted": "interrupted · exit -15",
        "running": "running",
        "pending": "pending approval",
        "declined": "declined",
        "approval_unavailable": "approval unavailable",
        "refused": "refused",
    }[status]
    assert f"demo.run · {expected_header}" in first


@pytest.mark.parametrize("status", ALL)
def test_html_view_for_each_status(status: str) -> None:
    res = make(status)
    markup = result_html(res)
    if status != "running":
        assert markup == res.html() == res._repr_mimebundle_()["text/html"]
    parsed = parse_html(markup)  # balanced, no <script> element, no ESC byte
    assert parsed.text.count("demo.run") == 1
    if status in NOTHING_RAN:
        assert "details" not in parsed.tags
        assert (res.message or WAITING_MESSAGE) in parsed.text
    else:
        summaries = [s for s in TAB_TITLES if f"<summary>{s}</summary>" in markup]
        assert summaries == list(TAB_TITLES)
    if (
        EVIL
        in res.stdout + res.stderr + res.message + str(res.arguments) + res.live_text("stdout")[0]
    ):
        assert EVIL in parsed.text, "hostile text shown literally after unescaping"
        assert "<script>" not in markup


def test_pending_view_says_what_to_do() -> None:
    res = make("pending")
    assert WAITING_MESSAGE == (
        "Waiting for approval — click a button above; the result will appear here"
    )
    assert WAITING_MESSAGE in res.text()
    assert "stdin {" in res.text()  # the arguments are in the header


def test_signal_and_timeout_explained() -> None:
    signaled = make("signaled")
    assert "signal: SIGSEGV (11)" in signaled.text()
    assert "killed by signal SIGSEGV" in signaled.html()
    timeout = make("timeout")
    assert "timed out: yes" in timeout.html()
    assert "timed out: the script was killed" in timeout.html()


def test_long_output_is_truncated_in_views_but_kept_on_the_object() -> None:
    big = "x" * 250_000 + "END"
    res = SkillRunResult.from_execution(
        "demo", "scripts/run.py", execution(big, "e" * 5000), max_display_chars=1000
    )
    note = "showing first 1,000 of 250,003 characters; full text in result.stdout"
    assert note in res.text()
    assert note in res.html()
    assert "showing first 1,000 of 5,000 characters; full text in result.stderr" in res.html()
    assert len(res.html()) < 10_000 and len(res.text()) < 5_000
    assert res.stdout == big
    view = ResultView(res)
    assert all(len(p.value) < 5_000 for p in view.panes)
    assert note in view.panes[0].value
    assert note in view.panes[4].value  # the timing tab lists the truncation too


def test_capture_cap_reported() -> None:
    run = execution("a" * 100, stdout_truncated=True, stdout_bytes=20 * 2**20)
    res = SkillRunResult.from_execution("demo", "scripts/run.py", run)
    assert "the script wrote 20,971,520 bytes to stdout" in res.text()
    assert "capture capped at max_output_size" in res.html()


def test_ansi_colours_rendered_in_html_and_stripped_in_text() -> None:
    out = "\x1b[1;31mERROR\x1b[0m plain \x1b[38;5;27mblue\x1b[0m\n\x1b[2Kdone 10%\rdone 100%\n"
    res = SkillRunResult.from_execution("demo", "scripts/run.py", execution(out))
    text = res.text()
    assert "ERROR plain blue\ndone 100%" in text
    markup = res.html()
    parse_html(markup)
    assert '<span style="color:#e75c58;font-weight:bold">ERROR</span>' in markup
    assert '<span style="color:#005fff">blue</span>' in markup
    assert "10%" not in markup


def test_empty_output_placeholders() -> None:
    res = SkillRunResult.from_execution("demo", "scripts/run.py", execution())
    assert "(no output)" in res.text()
    assert "--- stderr ---" not in res.text(), "empty stderr is not listed in the terminal"
    assert "<em>(no output)</em>" in res.html()


# -- live widget view ------------------------------------------------------------------


def test_widget_view_has_the_five_tabs() -> None:
    res = make("completed")
    widget = res.widget()
    assert isinstance(widget, ipywidgets.VBox)
    view = res._views[0]
    assert isinstance(view.tab, ipywidgets.Tab)
    assert tuple(view.tab.titles) == ("stdout", "stderr", "exit code", "signal", "timing")
    assert "&lt;script&gt;" in view.panes[0].value and "<script>" not in view.panes[0].value
    assert "<pre" in view.panes[0].value
    assert view.panes[2].value.endswith("0 (success)</pre>")
    assert view.tab.layout.display is None
    assert view.message.layout.display == "none"
    assert view.stop_button.layout.display == "none"
    assert res.widget() is widget, "one view per result"


def test_widget_opens_on_stderr_when_only_stderr_has_text() -> None:
    res = make("failed")
    res.widget()
    assert res._views[0].tab.selected_index == 1


@pytest.mark.parametrize("status", sorted(NOTHING_RAN))
def test_widget_shows_a_message_instead_of_empty_tabs(status: str) -> None:
    res = make(status)
    res.widget()
    view = res._views[0]
    assert view.tab.layout.display == "none"
    assert view.message.layout.display is None
    assert (res.message or WAITING_MESSAGE).split(":")[0] in parse_html(view.message.value).text


def test_pending_view_is_filled_in_by_set_result_from_another_thread() -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    res.widget()
    view = res._views[0]
    assert "pending approval" in view.header.value
    assert WAITING_MESSAGE in view.message.value
    woke = threading.Event()
    waiter = threading.Thread(target=lambda: res.wait(30) and woke.set())
    waiter.start()

    def approve_and_run() -> None:
        res.set_status("running")
        res.append_output("stdout", "hello ")
        res.set_result(execution("hello world\n", "", 0))

    worker = threading.Thread(target=approve_and_run)
    worker.start()
    worker.join(10)
    waiter.join(10)
    assert woke.is_set()
    assert "completed" in view.header.value and "exit 0" in view.header.value
    assert view.message.layout.display == "none"
    assert view.tab.layout.display is None
    assert "hello world" in view.panes[0].value


def test_running_view_streams_output_and_elapsed_time() -> None:
    res = SkillRunResult("demo", "scripts/run.py", "running")
    res.widget()
    view = res._views[0]
    assert view.panes[2].value.endswith("(still running)</pre>")
    res.append_output("stdout", "first line\n")
    res.append_output("stderr", "\x1b[33mwarn\x1b[0m\n")
    res.tick()  # the throttle may have held the second chunk back; tick flushes it
    assert "first line" in view.panes[0].value
    assert "warn" in view.panes[1].value and "\x1b" not in view.panes[1].value
    time.sleep(0.05)
    res.tick()
    assert "elapsed:" in view.panes[4].value and "(running)" in view.panes[4].value
    assert "running" in view.header.value
    assert re.search(r"\d (ms|s|min \d+\.\d s) · ", view.header.value), "elapsed time in header"


def test_stop_button_only_with_on_stop_while_running() -> None:
    res = SkillRunResult("demo", "scripts/run.py", "running")
    res.widget()
    view = res._views[0]
    assert view.stop_button.layout.display == "none", "no on_stop: no button"
    cancel = threading.Event()
    res.on_stop = cancel.set
    assert view.stop_button.layout.display is None
    view.stop_button.click()  # the real ipywidgets click path
    assert cancel.is_set()
    assert view.stop_button.disabled and view.stop_button.description == "Stopping…"
    view.stop_button.click()  # a second click does nothing
    res.set_result(execution("", "Terminated\n", -15, signal="SIGTERM", signal_number=15))
    assert view.stop_button.layout.display == "none"
    assert res.status == "signaled"


def test_ticker_thread_updates_elapsed_time_and_stops() -> None:
    res = SkillRunResult("demo", "scripts/run.py", "running")
    res.widget()
    view = res._views[0]
    first = view.header.value
    deadline = time.monotonic() + 10
    while view.header.value == first and time.monotonic() < deadline:
        time.sleep(0.05)
    assert view.header.value != first, "elapsed time did not move without output"
    res.set_result(execution("done\n"))
    res._ticker.join(5)
    assert not res._ticker.is_alive()


# -- mime bundle -----------------------------------------------------------------------


def test_no_widget_outside_a_kernel() -> None:
    assert widgets_supported() is False
    bundle = make("completed")._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}


def test_bundle_embeds_the_widget_with_fallbacks_while_it_can_change() -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    res.use_widget = True
    bundle = res._repr_mimebundle_()
    assert set(bundle) == {WIDGET_MIME, "text/plain", "text/html"}
    assert bundle[WIDGET_MIME]["model_id"] == res.widget().model_id
    assert bundle[WIDGET_MIME]["version_major"] == 2
    res.set_status("running")
    assert WIDGET_MIME in res._repr_mimebundle_()


@pytest.mark.parametrize("status", ["completed", "failed", "declined"])
def test_a_final_result_is_static_html_and_text_only(status: str) -> None:
    """Issue 44: a saved widget view shows "model not found" once its kernel is gone; a
    final result's output is its static form, header and every tab's section included."""
    res = SkillRunResult.pending("demo", "scripts/run.py")
    res.use_widget = True
    res.widget()  # a live view existed while it waited
    if status == "declined":
        res.set_status("declined", "declined by button 'No'")
    else:
        res.set_result(
            execution(
                "ok\n" if status == "completed" else "", "boom\n", 1 if status == "failed" else 0
            )
        )
    bundle = res._repr_mimebundle_()
    assert set(bundle) == {"text/plain", "text/html"}
    assert bundle["text/plain"].startswith(f"demo.run · {status}")
    if status != "declined":
        for title in ("stdout", "stderr", "exit code", "timing"):
            assert f"<summary>{title}</summary>" in bundle["text/html"]


def test_bundle_honours_include_and_exclude() -> None:
    res = make("completed")
    res.use_widget = True
    assert set(res._repr_mimebundle_(include={"text/plain"})) == {"text/plain"}
    assert not res._views, "no widget built when it is not wanted"
    assert set(res._repr_mimebundle_(exclude={"text/html", WIDGET_MIME})) == {"text/plain"}
