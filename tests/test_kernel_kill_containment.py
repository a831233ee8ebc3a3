"""A SIGKILLed kernel takes its runs with it (issue 39, finding 8): cold unsandboxed runs,
a single one and a 2-item batch, each with a daemon in a session of its own, all die within
a generous deadline; before, all of their processes lived on under init.

One real kernel (jupyter_client), killed with SIGKILL: no atexit, no Python code runs.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import psutil
import pytest
from kernel_fixtures import start_kernel

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="pidfd and the run watcher: Linux"
)

HOLD = """
import os, sys, time
if os.fork() == 0:
    os.setsid()  # a daemon: out of the run's group and session
    time.sleep(120)
    os._exit(0)
open(os.path.join({marks!r}, str(os.getpid())), "w").close()
time.sleep(120)
"""

CELL = """
import os, threading
from skill_magics.core.manager import SkillManager
manager = SkillManager([{skills!r}], run_cwd="skill", warm_start="off")
one = lambda: manager.execute_skill_script("hold", "hold", approver=None, timeout=300)
two = lambda: manager.map("hold", "hold", [{{}}, {{}}], approver=None, timeout=300)
for job in (one, two):
    threading.Thread(target=job, daemon=True).start()
os.getpid()
"""


def _tagged(tag: str) -> list[psutil.Process]:
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] != psutil.STATUS_ZOMBIE and any(
                tag in arg for arg in proc.info["cmdline"] or ()
            ):
                out.append(proc)
        except psutil.Error:
            continue
    return out


def test_a_sigkilled_kernel_takes_its_cold_runs_and_their_daemons_along(
    tmp_path: Path, make_skill
) -> None:
    skills, marks = tmp_path / "skills", tmp_path / "marks"
    marks.mkdir()
    make_skill(skills, "hold", scripts={"scripts/hold.py": HOLD.format(marks=str(marks))})
    tag = str(skills)
    try:
        with start_kernel() as kernel:
            res = kernel.execute(CELL.format(skills=str(skills)))
            assert res.ok, res.error_text
            pid = int(res.text_plain)
            deadline = time.monotonic() + 60
            while len(os.listdir(marks)) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(os.listdir(marks)) == 3, "the runs did not start"
            assert len(_tagged(tag)) >= 6, "each run and item has its main process and daemon"
            os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 15
            while (left := _tagged(tag)) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert left == [], f"still running after the kernel died: {[p.pid for p in left]}"
    finally:
        for proc in _tagged(tag):
            try:
                proc.kill()
            except psutil.Error:
                pass
