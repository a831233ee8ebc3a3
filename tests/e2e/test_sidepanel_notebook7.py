"""The Skills side panel in Notebook 7 (package ``notebook``), in a real headless Chromium.

Notebook 7 shows the same prebuilt extension as JupyterLab in its left panel (View > Left
Sidebar > Show Skills). A cell blocks its kernel on an approval (``%autoawait off``); "Yes
once" in the panel runs it and the cell's own panel says it was decided in the side panel.
"""

from __future__ import annotations

import json
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from conftest import (
    KERNEL_UNDER_TEST,
    REPO_ROOT,
    SERVER_START_TIMEOUT,
    LabPage,
    LabServer,
    _lab_env,
    free_port,
    register_kernelspec,
    stop_lab,
)
from test_sidepanel_browser import SETUP, SKILL, Side, _wait_text


@pytest.fixture(scope="module")
def notebook7(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """A Notebook 7 server (``python -m notebook``) with the side panel, as the wheel has it."""
    try:
        import notebook  # noqa: F401
    except ImportError:
        pytest.fail("Notebook 7 is missing: pip install -e '.[e2e]' (the lock has notebook)")
    if not (REPO_ROOT / "skill_magics" / "labextension" / "package.json").is_file():
        pytest.fail("the Skills side panel is not built: run `make labextension` first")
    from kernel_fixtures import kernel_python

    base = tmp_path_factory.mktemp("notebook7")
    root = base / "root"
    root.mkdir()
    register_kernelspec(base, KERNEL_UNDER_TEST, kernel_python())
    env = _lab_env(base)
    port, token = free_port(), secrets.token_hex(16)
    log_path = base / f"notebook7-{port}.log"
    cmd = [
        sys.executable,
        "-m",
        "notebook",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--JupyterNotebookApp.user_settings_dir={base / 'settings'}",
        f"--JupyterNotebookApp.workspaces_dir={base / 'workspaces'}",
        "--JupyterNotebookApp.expose_app_in_browser=True",
    ]
    if sys.platform != "win32" and __import__("os").geteuid() == 0:
        cmd.append("--allow-root")
    log = open(log_path, "wb")  # noqa: SIM115 - closed in stop_lab
    proc = subprocess.Popen(
        cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    proc._skill_magics_log = log  # type: ignore[attr-defined]
    server = LabServer(f"http://127.0.0.1:{port}/", token, root, proc, log_path)
    try:
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while True:
            try:
                server.api("GET", "api/status", timeout=5)
                break
            except (urllib.error.URLError, OSError, ValueError):
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Notebook 7 did not start:\n{server.log_tail()}") from None
                time.sleep(0.3)
        yield server
    finally:
        stop_lab(server)


def test_side_panel_in_notebook7(notebook7: LabServer, browser_context, tmp_path: Path) -> None:
    markers = Path(tempfile.mkdtemp(prefix="nb7-"))
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    lab = LabPage(page, notebook7, tmp_path)
    try:
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
        nb.cells = [
            nbformat.v4.new_code_cell(SETUP),
            nbformat.v4.new_code_cell(
                f"%%skillrun {SKILL}\n" + json.dumps({"path": str(markers / "nb7")})
            ),
        ]
        name = lab.add_notebook(nb, "nb7.ipynb")
        page.goto(f"{notebook7.url}notebooks/{name}?token={notebook7.token}")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=120_000)
        lab.wait_kernel_idle(timeout=120)

        # View > Left Sidebar > Show Skills, as a person finds it in Notebook 7.
        page.locator(".lm-MenuBar-item", has_text="View").click()
        page.locator(".lm-Menu-itemLabel", has_text="Left Sidebar").hover()
        page.locator(".lm-Menu-itemLabel", has_text="Show Skills").click()
        side = Side(lab)
        side.root.wait_for(state="visible", timeout=30_000)

        lab.run_all()
        lab.wait_cell_done(0, timeout=120)
        side.root.get_by_role("button", name="Refresh the skills").click()
        _wait_text(side.section("Skills"), "csv-profiler")
        question = side.waiting().first
        question.wait_for(state="visible", timeout=120_000)
        assert lab.is_running(1) and not (markers / "nb7").exists()
        lab.screenshot("notebook7-side-panel")
        side.answer("Yes once")
        lab.wait_cell_done(1, timeout=120)
        assert (markers / "nb7").exists()
        assert "decided in the side panel" in lab.wait_output(1, "decided in the side panel")
    finally:
        page.close()
        notebook7.shutdown_kernels()
        shutil.rmtree(markers, ignore_errors=True)
