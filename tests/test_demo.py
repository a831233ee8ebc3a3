"""`make demo` (the README's first command): scripts/demo.sh really serves the quickstart.

Runs the script as make does, on a free port, in its own session: it must print a URL with a
token, JupyterLab must serve a working copy of notebooks/01_quickstart.ipynb at that URL with
the example skills configured for its kernels, saving through JupyterLab (what its autosave
does) must never touch the tracked notebooks, and TERM (what Ctrl-C turns into) must leave
nothing running. The copy policy (fresh copy, refresh, keep an edited copy) is checked with
``demo.sh --prepare``, without a server.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
import pytest
from process_support import assert_group_gone

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "scripts" / "demo.sh"
TRACKED = REPO / "notebooks" / "01_quickstart.ipynb"
URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/lab/tree/(\S+)\?token=([0-9a-f]+)")


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


@dataclass
class Demo:
    proc: subprocess.Popen
    out: str
    port: int
    notebook: str
    token: str
    demo_dir: Path

    def api(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}/api/contents/{path}?token={self.token}"


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    """scripts/demo.sh running as `make demo` runs it; stopped with TERM afterwards, and no
    process of its session may survive that."""
    pytest.importorskip("jupyterlab", reason="make demo needs JupyterLab: pip install -e '.[e2e]'")
    tmp_path = tmp_path_factory.mktemp("demo")
    port = _free_port()
    env = dict(os.environ)
    env.update(
        PORT=str(port),
        PYTHON=sys.executable,
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        # Not the developer's .demo/: the test saves into the served copy.
        DEMO_DIR=str(tmp_path / "demo-root"),
    )
    env.pop("SKILL_MAGICS_PATH", None)
    env.pop("DEMO_FRESH", None)
    proc = subprocess.Popen(
        ["bash", str(DEMO)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out = _read_until(proc, URL_RE, timeout=180)
        got_port, notebook, token = URL_RE.search(out).groups()
        yield Demo(proc, out, int(got_port), notebook, token, Path(env["DEMO_DIR"]))
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)  # what the script's Ctrl-C trap handles
        try:
            proc.wait(timeout=60)
        finally:
            assert_group_gone(proc.pid, within=30)
            proc.stdout.close()


def test_make_demo_serves_the_quickstart_and_stops_cleanly(demo: Demo) -> None:
    assert demo.notebook == "notebooks/01_quickstart.ipynb"
    # Something is said before the server's slow start, not only the URL at the end.
    starting = demo.out.find(f"demo: starting JupyterLab on http://127.0.0.1:{demo.port}")
    assert 0 <= starting < demo.out.find("/lab/tree/"), demo.out[:2000]

    with urllib.request.urlopen(demo.api(demo.notebook) + "&content=0", timeout=30) as resp:
        assert resp.status == 200 and json.load(resp)["type"] == "notebook"
    page = f"http://127.0.0.1:{demo.port}/lab/tree/{demo.notebook}?token={demo.token}"
    with urllib.request.urlopen(page, timeout=30) as resp:
        assert resp.status == 200

    # Kernels the server starts inherit SKILL_MAGICS_PATH: the examples are configured.
    configured = {
        _quietly(p.environ, {}).get("SKILL_MAGICS_PATH", "")
        for p in psutil.Process(demo.proc.pid).children(recursive=True)
    }
    examples = str(REPO / "skill_magics" / "examples" / "skills")
    assert any(path.split(os.pathsep)[0] == examples for path in configured), configured
    # (the fixture's teardown stops the script with TERM and checks nothing survives)


def _quietly(read, default):
    """``read()`` of a child process, or ``default`` when that child has just exited (a
    short-lived helper the server started: gone, or a zombie, between listing and reading)."""
    try:
        return read()
    except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
        return default


def test_make_demo_frontend_notebook_serves_notebook_7(tmp_path: Path) -> None:
    """Issue 44 item 6: Notebook 7 is in the README's frontend table; the [demo] extra holds
    it and `make demo FRONTEND=notebook` serves the quickstart with it (in a venv made as
    `make demo` makes one: tests/demo_support.py)."""
    from demo_support import build_demo_venv

    python = build_demo_venv(tmp_path / "venv", compile_all=False)
    port = _free_port()
    env = dict(os.environ, PORT=str(port), PYTHON=str(python), FRONTEND="notebook")
    env.update(
        JUPYTER_CONFIG_DIR=str(tmp_path / "config"),
        JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"),
        IPYTHONDIR=str(tmp_path / "ipython"),
        DEMO_DIR=str(tmp_path / "demo-root"),
    )
    proc = subprocess.Popen(
        ["bash", str(DEMO)],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        url_re = re.compile(r"http://127\.0\.0\.1:(\d+)/notebooks/(\S+)\?token=([0-9a-f]+)")
        out = _read_until(proc, url_re, timeout=180)
        assert "demo: starting Notebook 7 on" in out
        got_port, notebook, token = url_re.search(out).groups()
        assert notebook == "notebooks/01_quickstart.ipynb"
        page = f"http://127.0.0.1:{got_port}/notebooks/{notebook}?token={token}"
        with urllib.request.urlopen(page, timeout=30) as resp:
            assert resp.status == 200 and "notebook" in resp.read().decode().lower()
        running = {
            arg
            for p in psutil.Process(proc.pid).children(recursive=True)
            for arg in _quietly(p.cmdline, [])
        }
        assert "notebook" in running and "jupyterlab" not in running
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        finally:
            assert_group_gone(proc.pid, within=30)
            proc.stdout.close()


def test_served_notebook_is_a_copy_not_the_tracked_file(demo: Demo) -> None:
    """Save through the server, as JupyterLab's autosave does: the tracked notebook stays
    byte for byte as committed; the copy the URL names (printed with its path) changes."""
    copy = demo.demo_dir / demo.notebook
    assert copy.is_file() and not copy.samefile(TRACKED)
    assert str(copy) in demo.out, "demo.sh names the file it serves"
    server_root = [
        arg.split("=", 1)[1]
        for p in psutil.Process(demo.proc.pid).children(recursive=True)
        for arg in _quietly(p.cmdline, [])
        if arg.startswith("--ServerApp.root_dir=")
    ]
    assert server_root and all(Path(r).resolve() == demo.demo_dir.resolve() for r in server_root)

    tracked_before = TRACKED.read_bytes()
    with urllib.request.urlopen(demo.api(demo.notebook), timeout=30) as resp:
        model = json.load(resp)
    model["content"]["cells"].append(
        {"cell_type": "markdown", "metadata": {}, "source": "saved by test_demo"}
    )
    body = json.dumps({"type": "notebook", "format": "json", "content": model["content"]})
    request = urllib.request.Request(
        demo.api(demo.notebook),
        data=body.encode(),
        method="PUT",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status == 200
    assert "saved by test_demo" in copy.read_text()
    assert TRACKED.read_bytes() == tracked_before, "the tracked notebook must never be saved"


def _prepare(demo_dir: Path, **env: str) -> str:
    full = {k: v for k, v in os.environ.items() if k != "DEMO_FRESH"}
    full.update(DEMO_DIR=str(demo_dir), **env)
    proc = subprocess.run(
        ["bash", str(DEMO), "--prepare"],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_copies_are_refreshed_but_an_edited_copy_is_kept(tmp_path: Path) -> None:
    demo_dir = tmp_path / "demo"
    copy = demo_dir / "notebooks" / TRACKED.name
    out = _prepare(demo_dir)
    assert f"copied notebooks/{TRACKED.name}" in out
    assert copy.read_bytes() == TRACKED.read_bytes()
    assert _prepare(demo_dir) == "", "unedited, up-to-date copies: nothing to do or say"

    # An unedited copy of an older version is refreshed (as after a `git pull`).
    pristine = demo_dir / ".pristine" / TRACKED.name
    copy.write_text("{}")
    pristine.write_text("{}")
    assert f"refreshed {copy}" in _prepare(demo_dir)
    assert copy.read_bytes() == TRACKED.read_bytes()

    # A copy the user changed is kept, and the script says so and how to start afresh.
    copy.write_text('{"edited": true}')
    out = _prepare(demo_dir)
    assert f"kept your edited {copy}" in out and "DEMO_FRESH=1" in out
    assert copy.read_text() == '{"edited": true}'

    # DEMO_FRESH=1 replaces it, keeping the user's version in backup/.
    out = _prepare(demo_dir, DEMO_FRESH="1")
    assert "moved your edited copy" in out
    assert copy.read_bytes() == TRACKED.read_bytes()
    (kept,) = (demo_dir / "backup").glob(f"*/{TRACKED.name}")
    assert kept.read_text() == '{"edited": true}'


@pytest.mark.skipif(
    not shutil.which("git") or not (REPO / ".git").exists(), reason="needs a git checkout"
)
def test_default_demo_dir_is_git_ignored() -> None:
    """The default DEMO_DIR (.demo/) is ignored: `make demo` leaves `git status` clean."""
    for path in (".demo/notebooks/01_quickstart.ipynb", ".demo/.pristine/x.ipynb"):
        check = subprocess.run(["git", "check-ignore", "-q", path], cwd=REPO)
        assert check.returncode == 0, f"{path} is not git-ignored"


def test_images_the_notebooks_show_resolve_in_the_copy(tmp_path: Path) -> None:
    """The quickstart shows ../docs/images/approval.png: the same relative path must work
    from the served copy, or the demo shows a broken image."""
    import re

    demo_dir = tmp_path / "demo"
    _prepare(demo_dir)
    for copy in (demo_dir / "notebooks").glob("*.ipynb"):
        for target in re.findall(r"\]\((\.\./docs/[^)\s]+)\)", copy.read_text()):
            assert (copy.parent / target).is_file(), f"{copy.name}: {target} missing in the copy"


def test_the_demo_venv_holds_the_demo_extra_and_no_test_tooling(tmp_path: Path) -> None:
    """`make demo` installs the [demo] extra only (issue 27: not the test tooling). The example
    notebooks run top to bottom in a venv made the same way (tests/test_notebooks.py,
    test_notebook_runs_headless, through tests/demo_support.py): a need no import statement
    shows, such as 08's MCP SDK behind `%skills add mcp`, fails there (issue 44). Here: that
    venv is what the extra says, and no more than the package's dependencies and it."""
    import tomllib

    from demo_support import build_demo_venv, demo_distributions
    from packaging.requirements import Requirement

    with open(REPO / "pyproject.toml", "rb") as fh:
        project = tomllib.load(fh)["project"]
    wanted = {Requirement(r).name.lower() for r in project["optional-dependencies"]["demo"]}
    have = demo_distributions(build_demo_venv(tmp_path / "venv", compile_all=False))
    assert wanted <= have, f"the demo venv lacks {sorted(wanted - have)}"
    assert {"jupyterlab", "mcp", "anthropic", "pandas"} <= wanted
    assert not {"pytest", "playwright", "hypothesis", "fastmcp"} & have
