"""`make demo` (the README's first command): scripts/demo.sh really serves the quickstart.

Runs the script as make does, on a free port, in its own session: it must print a URL with a
token, JupyterLab must serve notebooks/01_quickstart.ipynb at that URL with the example skills
configured for its kernels, and TERM (what Ctrl-C turns into) must leave nothing running.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest
from process_support import assert_group_gone

REPO = Path(__file__).resolve().parents[1]
URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/lab/tree/(\S+)\?token=([0-9a-f]+)")

pytest.importorskip("jupyterlab", reason="make demo needs JupyterLab: pip install -e '.[e2e]'")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _read_until(proc: subprocess.Popen, pattern: re.Pattern[str], timeout: float) -> str:
    seen = ""
    deadline = time.monotonic() + timeout
    fd = proc.stdout.fileno()
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            chunk = os.read(fd, 65536).decode(errors="replace")
            if not chunk:
                break
            seen += chunk
            if pattern.search(seen):
                return seen
        elif proc.poll() is not None:
            break
    raise AssertionError(f"demo.sh printed no URL in {timeout} s; it printed:\n{seen[-3000:]}")


def test_make_demo_serves_the_quickstart_and_stops_cleanly(tmp_path: Path) -> None:
    port = _free_port()
    env = dict(os.environ)
    env.update(
        PORT=str(port),
        PYTHON=sys.executable,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
    )
    env.pop("SKILL_MAGICS_PATH", None)
    proc = subprocess.Popen(
        ["bash", str(REPO / "scripts" / "demo.sh")],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out = _read_until(proc, URL_RE, timeout=180)
        got_port, notebook, token = URL_RE.search(out).groups()
        assert int(got_port) == port and notebook == "notebooks/01_quickstart.ipynb"

        api = f"http://127.0.0.1:{port}/api/contents/{notebook}?content=0&token={token}"
        with urllib.request.urlopen(api, timeout=30) as resp:
            assert resp.status == 200 and json.load(resp)["type"] == "notebook"
        page = f"http://127.0.0.1:{port}/lab/tree/{notebook}?token={token}"
        with urllib.request.urlopen(page, timeout=30) as resp:
            assert resp.status == 200

        # Kernels the server starts inherit SKILL_MAGICS_PATH: the examples are configured.
        servers = psutil.Process(proc.pid).children(recursive=True)
        configured = {p.environ().get("SKILL_MAGICS_PATH", "") for p in servers}
        examples = str(REPO / "skill_magics" / "examples" / "skills")
        assert any(path.split(os.pathsep)[0] == examples for path in configured), configured
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # what the script's Ctrl-C trap handles
        try:
            proc.wait(timeout=60)
        finally:
            assert_group_gone(proc.pid, within=30)
            proc.stdout.close()
