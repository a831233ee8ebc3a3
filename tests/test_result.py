"""SkillRunResult as a value: status mapping, accessors, json(), pending handle, waiting."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from IPython.core.displaypub import DisplayPublisher
from IPython.core.interactiveshell import InteractiveShell

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.notebook.result import (
    FINAL_STATUSES,
    STATUSES,
    ResultJSONError,
    SkillRunResult,
    status_for,
)


def execution(
    stdout: str = "", stderr: str = "", exit_code: int = 0, **kw
) -> ScriptExecutionResult:
    kw.setdefault("execution_time_ms", 12.5)
    kw.setdefault("script_path", Path("scripts/run.py"))
    return ScriptExecutionResult(stdout, stderr, exit_code, **kw)


@pytest.mark.parametrize(
    ("kwargs", "status"),
    [
        ({"exit_code": 0}, "completed"),
        ({"exit_code": 2}, "failed"),
        ({"exit_code": 124, "timed_out": True}, "timeout"),
        # A timeout kill may also carry the signal: the timeout is the explanation.
        (
            {"exit_code": -15, "timed_out": True, "signal": "SIGTERM", "signal_number": 15},
            "timeout",
        ),
        ({"exit_code": -11, "signal": "SIGSEGV", "signal_number": 11}, "signaled"),
    ],
)
def test_from_execution_derives_status(kwargs: dict, status: str) -> None:
    res = SkillRunResult.from_execution("demo", "scripts/run.py", execution(**kwargs))
    assert res.status == status
    assert status_for(res.result) == status
    assert res.success is (status == "completed")
    assert res.done


def test_from_execution_takes_script_path_when_none_given() -> None:
    res = SkillRunResult.from_execution("demo", None, execution(script_path=Path("scripts/x.sh")))
    assert res.script == "scripts/x.sh"


def test_accessors_of_a_finished_run() -> None:
    res = SkillRunResult.from_execution(
        "demo", Path("scripts/run.py"), execution("out\n", "err\n", 3), arguments={"a": 1}
    )
    assert (res.stdout, res.stderr, res.exit_code) == ("out\n", "err\n", 3)
    assert res.script == "scripts/run.py"
    assert res.elapsed_ms == 12.5
    assert repr(res) == "<SkillRunResult demo.run failed exit_code=3>"


@pytest.mark.parametrize("status", sorted(set(STATUSES) - {"completed", "failed"}))
def test_nothing_ran_gives_empty_values(status: str) -> None:
    res = SkillRunResult("demo", "scripts/run.py", status, message="why")
    assert (res.stdout, res.stderr, res.exit_code) == ("", "", None)
    assert res.success is False
    assert res.done is (status in FINAL_STATUSES)


def test_unknown_status_is_a_one_line_error() -> None:
    with pytest.raises(ValueError, match="unknown status 'ok': use one of completed"):
        SkillRunResult("demo", "scripts/run.py", "ok")


def test_json_parses_stdout() -> None:
    res = SkillRunResult.from_execution("demo", "s.py", execution('{"rows": [1, 2]}\n'))
    assert res.json() == {"rows": [1, 2]}


def test_json_error_names_position_and_the_fix() -> None:
    res = SkillRunResult.from_execution("demo", "s.py", execution("hello"))
    with pytest.raises(ResultJSONError) as info:
        res.json()
    assert str(info.value) == "stdout is not JSON (line 1 column 1): use .stdout for the raw text"
    assert isinstance(info.value, ValueError) and isinstance(info.value, SkillMagicsError)
    assert info.value.__cause__ is None and info.value.__suppress_context__

    res = SkillRunResult.from_execution("demo", "s.py", execution('{"a": 1,\n  oops}'))
    with pytest.raises(ResultJSONError, match=r"line 2 column 3"):
        res.json()


def test_json_when_stdout_is_empty_or_nothing_ran() -> None:
    empty = SkillRunResult.from_execution("demo", "s.py", execution("  \n"))
    with pytest.raises(ResultJSONError, match="stdout is empty, not JSON"):
        empty.json()
    declined = SkillRunResult("demo", "s.py", "declined")
    with pytest.raises(ResultJSONError, match=r"nothing ran \(status declined\)"):
        declined.json()
    pending = SkillRunResult.pending("demo", "s.py")
    with pytest.raises(ResultJSONError, match=r"then `await res.wait_async\(\)` in a new cell"):
        pending.json()


def test_pending_set_result_wakes_a_waiting_thread() -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    assert res.status == "pending" and not res.done
    assert res.wait(timeout=0.01) is False
    woke = threading.Event()

    def waiter() -> None:
        if res.wait(timeout=30):
            woke.set()

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(0.05)
    assert not woke.is_set()
    res.set_status("running")
    time.sleep(0.05)
    assert not woke.is_set(), "running is not final: waiters keep waiting"
    res.set_result(execution('{"ok": true}'))
    thread.join(timeout=10)
    assert woke.is_set()
    assert res.status == "completed" and res.json() == {"ok": True}
    assert res.message == ""


def test_pending_set_status_declined_wakes_waiters_with_message() -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    threading.Timer(0.05, res.set_status, ("declined", "You chose No: nothing ran.")).start()
    assert res.wait(timeout=10)
    assert res.status == "declined" and res.message == "You chose No: nothing ran."
    assert res.exit_code is None


def test_wait_async_returns_when_result_arrives() -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")

    async def main() -> tuple[bool, bool]:
        loop = asyncio.get_running_loop()
        assert await res.wait_async(timeout=0.05, poll=0.01) is False
        loop.call_later(0.05, res.set_result, execution("done"))
        return True, await res.wait_async(timeout=10, poll=0.01)

    assert asyncio.run(main()) == (True, True)
    assert res.stdout == "done"


def test_set_result_can_override_status() -> None:
    res = SkillRunResult.pending("demo", "s.py")
    res.set_result(execution("", "stopped", -15, signal="SIGTERM"), status="interrupted")
    assert res.status == "interrupted" and res.done


def test_live_output_keeps_a_bounded_tail() -> None:
    res = SkillRunResult("demo", "s.py", "running", max_display_chars=100)
    for i in range(1000):
        res.append_output("stdout", f"line {i}\n")
    res.append_output("stderr", "warn\n")
    text, note = res.live_text("stdout")
    assert len(text) <= 100
    assert text.startswith("line ") and text.endswith("line 999\n")
    assert note.startswith("showing last ") and "while running" in note
    assert res.live_text("stderr") == ("warn\n", "")
    assert sum(len(c) for c in res._live["stdout"]) <= 200  # memory stays bounded
    assert res.stdout == "", "stdout is the finished run's text, not the live tail"
    with pytest.raises(ValueError, match="unknown stream 'both'"):
        res.append_output("both", "x")


def test_elapsed_time_moves_while_running() -> None:
    res = SkillRunResult.pending("demo", "s.py")
    assert res.elapsed_ms is None
    res.set_status("running")
    time.sleep(0.02)
    assert res.elapsed_ms is not None and res.elapsed_ms > 0


def test_stop_calls_on_stop_once_and_only_while_running() -> None:
    calls: list[int] = []
    res = SkillRunResult.pending("demo", "s.py")
    res.on_stop = lambda: calls.append(1)
    assert res.stop() is False, "not running yet"
    res.set_status("running")
    assert res.stop() is True
    assert res.stop() is False, "a second click does nothing"
    assert calls == [1] and res.stop_requested


def test_importing_result_does_not_import_ipywidgets() -> None:
    code = (
        "import sys, skill_magics.notebook.result as r, skill_magics.notebook.render\n"
        "x = r.SkillRunResult('a', 'b.py', 'declined')\n"
        "x._repr_mimebundle_(); x.text(); x.html()\n"
        "assert 'ipywidgets' not in sys.modules, 'ipywidgets imported eagerly'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


# -- displays with an id (show / refresh) -------------------------------------------------


class _Publisher(DisplayPublisher):
    """Records displays like a frontend (updates optionally slow), and can run
    ``during_display`` while the first display is published: a click that lands between
    display() and show() keeping the handle."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delay = 0.0
        self.during_display: Callable[[], None] | None = None
        self.records: list[tuple[bool, str]] = []  # (update, text/plain)

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False, **kw):
        if update:
            time.sleep(self.delay)
        self.records.append((update, data.get("text/plain", "")))
        if not update and self.during_display is not None:
            self.during_display()


@pytest.fixture
def publisher():
    shell = InteractiveShell.instance()
    original = shell.display_pub
    shell.display_pub = _Publisher(shell=shell)
    SkillRunResult.use_widget = False  # text/html only: no kernel, no comms here
    yield shell.display_pub
    SkillRunResult.use_widget = None
    shell.display_pub = original


def test_wait_returns_only_after_the_display_shows_the_final_state(publisher) -> None:
    publisher.delay = 0.3  # a slow frontend round trip
    res = SkillRunResult.pending("demo", "scripts/run.py")
    res.show()
    threading.Thread(target=res.set_result, args=(execution("done"),)).start()
    assert res.wait(timeout=10)
    updates = [text for update, text in publisher.records if update]
    assert updates and "completed" in updates[-1], "wait() returned before the update was sent"


def test_state_change_during_show_reaches_the_display(publisher) -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    publisher.during_display = lambda: res.set_status("declined", "No: nothing ran")
    res.show()
    first, last = publisher.records[0], publisher.records[-1]
    assert first[0] is False and "pending approval" in first[1]
    assert last[0] is True and "declined" in last[1], "the display still shows the old state"


def test_refresh_republishes_the_current_state(publisher) -> None:
    res = SkillRunResult.pending("demo", "scripts/run.py")
    res.show()
    before = len(publisher.records)
    res.refresh()
    assert len(publisher.records) == before + 1 and publisher.records[-1][0] is True
