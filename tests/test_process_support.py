"""The test helpers that decide whether a process survived (tests/process_support.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from process_support import pid_alive, start_time, start_times

linux_only = pytest.mark.skipif(not os.path.exists("/proc/self/stat"), reason="needs /proc")


@linux_only
def test_a_start_time_tells_a_reused_pid_from_the_process_asked_about() -> None:
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        starts = start_times([proc.pid])
        assert starts[proc.pid] == start_time(proc.pid) is not None
        assert pid_alive(proc.pid) and pid_alive(proc.pid, starts[proc.pid])
        # The same pid with another start time is another process: the one asked about died.
        assert not pid_alive(proc.pid, starts[proc.pid] - 1)
    finally:
        proc.communicate(b"")
    assert start_time(proc.pid) is None
    assert not pid_alive(proc.pid) and not pid_alive(proc.pid, starts[proc.pid])


@linux_only
def test_start_times_are_read_past_a_command_name_with_spaces_and_parentheses(tmp_path) -> None:
    odd = tmp_path / "a) (b c"
    odd.symlink_to(sys.executable)
    proc = subprocess.Popen(
        [os.fspath(odd), "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        with open("/proc/self/stat", "rb") as fh:
            mine = int(fh.read().rsplit(b")", 1)[1].split()[19])
        assert b"(a) (b c)" in Path(f"/proc/{proc.pid}/stat").read_bytes()
        start = start_time(proc.pid)
        assert start is not None and start >= mine  # started after this process
        assert pid_alive(proc.pid, start)
    finally:
        proc.communicate(b"")
