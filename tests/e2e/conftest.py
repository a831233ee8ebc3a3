"""Real JupyterLab + real headless Chromium for the browser tests (marked ``e2e``).

One JupyterLab server per test session (start-up costs 10-40 s on a busy 2-core box), in a
temporary root with isolated Jupyter/IPython settings; per test, a Chromium driven by
Playwright's sync API with a fresh user-data-dir. Each test copies its notebook into the root,
opens it in a tab of its own JupyterLab workspace, and its kernel is shut down afterwards.
Everything started here is stopped in teardown, failures included.

Browser lookup: ``SKILL_MAGICS_CHROMIUM`` (a path), else /usr/bin/chromium, chromium,
chromium-browser, google-chrome on PATH. No browser -> the tests skip with a loud reason,
unless ``SKILL_MAGICS_E2E_REQUIRED=1`` (CI sets it once it installed chromium): then they fail.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SERVER_START_TIMEOUT = float(os.environ.get("SKILL_MAGICS_E2E_SERVER_TIMEOUT", "120"))
# Kernelspec of the kernel under test (kernel_fixtures.kernel_python(): the matrix venv's
# Python under scripts/kernel-matrix.sh, else this interpreter), registered in every
# JupyterLab started here. Notebooks naming it run on that kernel, whatever ipykernel the
# server's own venv has.
KERNEL_UNDER_TEST = "skill-magics-under-test"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Everything under tests/e2e is a browser test, whether or not the module says so.
    for item in items:
        if "tests/e2e/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.e2e)


def _skip_or_fail(reason: str) -> None:
    loud = f"E2E BROWSER TEST NOT RUN: {reason}"
    print(f"\n{'!' * 78}\n{loud}\n{'!' * 78}", file=sys.stderr)
    if os.environ.get("SKILL_MAGICS_E2E_REQUIRED") == "1":
        pytest.fail(f"{loud} (SKILL_MAGICS_E2E_REQUIRED=1, so this is a failure)")
    pytest.skip(loud)


def find_chromium() -> str | None:
    """Path of a Chromium/Chrome binary, or None."""
    env = os.environ.get("SKILL_MAGICS_CHROMIUM")
    if env:
        return env if os.access(env, os.X_OK) else None
    for candidate in ("/usr/bin/chromium", "chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(candidate)
        if found:
            return found
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --------------------------------------------------------------------------------------
# JupyterLab server
# --------------------------------------------------------------------------------------
@dataclass
class LabServer:
    """A running JupyterLab: base URL, token, its root dir and the process."""

    url: str  # http://127.0.0.1:PORT/
    token: str
    root: Path
    proc: subprocess.Popen
    log_path: Path

    def api(self, method: str, path: str, body: Any = None, timeout: float = 30) -> Any:
        """Call the Jupyter REST API (token auth); returns parsed JSON or None."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path.lstrip("/"),
            data=data,
            method=method,
            headers={"Authorization": f"token {self.token}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            raw = resp.read()
        return json.loads(raw) if raw else None

    def lab_url(self, notebook: str, workspace: str | None = None) -> str:
        """URL opening ``notebook``; a fresh ``workspace`` name restores no earlier tabs."""
        prefix = f"lab/workspaces/{workspace}/" if workspace else "lab/"
        return f"{self.url}{prefix}tree/{notebook}?token={self.token}"

    def shutdown_kernels(self) -> None:
        """Shut every kernel down through the API (what closing a notebook + shutdown does)."""
        try:
            for session in self.api("GET", "api/sessions") or []:
                self.api("DELETE", f"api/sessions/{session['id']}")
            for kernel in self.api("GET", "api/kernels") or []:
                self.api("DELETE", f"api/kernels/{kernel['id']}")
        except (urllib.error.URLError, OSError):
            pass

    def log_tail(self, lines: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def _lab_env(base: Path) -> dict[str, str]:
    env = dict(os.environ)
    for name in ("config", "data", "runtime", "ipython", "settings", "workspaces"):
        (base / name).mkdir(parents=True, exist_ok=True)
    # Isolate from the developer's Jupyter and IPython settings. Kernelspecs and lab
    # extensions (ipywidgets) still come from sys.prefix/share/jupyter, which stays on the path.
    env["JUPYTER_CONFIG_DIR"] = str(base / "config")
    env["JUPYTER_DATA_DIR"] = str(base / "data")
    env["JUPYTER_RUNTIME_DIR"] = str(base / "runtime")
    env["JUPYTER_PLATFORM_DIRS"] = "1"
    env["IPYTHONDIR"] = str(base / "ipython")
    # The kernel (a child of the server) must import the package even when not installed.
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    # A headless pre-approval would hide the very buttons these tests click.
    env.pop("SKILL_MAGICS_AUTO_APPROVE", None)
    # No announcements/news toasts covering the notebook.
    settings = base / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True, exist_ok=True)
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False})
    )
    # The Skills side panel, as the wheel installs it: the server extension's config, and the
    # prebuilt frontend (`make labextension` builds it into skill_magics/labextension).
    server_conf = base / "config" / "jupyter_server_config.d"
    server_conf.mkdir(parents=True, exist_ok=True)
    shipped = REPO_ROOT / "jupyter-config" / "jupyter_server_config.d" / "skill_magics.json"
    shutil.copyfile(shipped, server_conf / shipped.name)
    if (REPO_ROOT / "skill_magics" / "labextension" / "package.json").is_file():
        labext = base / "data" / "labextensions" / "skill-magics-labextension"
        labext.parent.mkdir(parents=True, exist_ok=True)
        if not labext.is_symlink():
            labext.symlink_to(REPO_ROOT / "skill_magics" / "labextension")
    # Start the notebook's kernel without the "Select Kernel" dialog (it raced with the
    # kernelspec fetch and appeared in some runs), and keep every cell in the DOM so cells
    # can be found by index however long the outputs get.
    tracker = base / "settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True, exist_ok=True)
    (tracker / "tracker.jupyterlab-settings").write_text(
        json.dumps({"autoStartDefaultKernel": True, "windowingMode": "none"})
    )
    return env


def register_kernelspec(base: Path, name: str, python: str) -> Path:
    """A kernelspec ``name`` running ``python -m ipykernel_launcher``, in the data dir that
    start_lab(base, ...) gives the server (JUPYTER_DATA_DIR/kernels); returns its directory."""
    spec_dir = base / "data" / "kernels" / name
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Kernel under test ({python})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return spec_dir


def start_lab(base: Path, root: Path) -> LabServer:
    """Start JupyterLab on a free loopback port with a random token; wait for /api/status."""
    env = _lab_env(base)
    last_error = ""
    for _attempt in range(3):  # a free port can be taken between probing and binding
        port, token = free_port(), secrets.token_hex(16)
        log_path = base / f"jupyterlab-{port}.log"
        cmd = [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--ServerApp.open_browser=False",
            "--ServerApp.ip=127.0.0.1",
            f"--ServerApp.port={port}",
            "--ServerApp.port_retries=0",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={root}",
            f"--LabApp.user_settings_dir={base / 'settings'}",
            f"--LabApp.workspaces_dir={base / 'workspaces'}",
            "--LabApp.news_url=None",
            "--LabApp.extension_manager=readonly",  # no PyPI look-ups from the server
            "--LabApp.check_for_updates_class=jupyterlab.handlers.announcements.NeverCheckForUpdate",
            # window.jupyterapp: kernel_status() reads the session, and tests can fall back
            # to app commands when a menu moved between Lab versions.
            "--LabApp.expose_app_in_browser=True",
        ]
        if hasattr(os, "geteuid") and os.geteuid() == 0:  # CI containers run as root
            cmd.append("--allow-root")
        log = open(log_path, "wb")  # noqa: SIM115 - closed in stop_lab
        proc = subprocess.Popen(
            cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        proc._skill_magics_log = log  # type: ignore[attr-defined]
        server = LabServer(f"http://127.0.0.1:{port}/", token, root, proc, log_path)
        deadline = time.monotonic() + SERVER_START_TIMEOUT
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                server.api("GET", "api/status", timeout=5)
                return server
            except (urllib.error.URLError, OSError, ValueError):
                time.sleep(0.3)
        exited = proc.poll()
        last_error = server.log_tail()
        stop_lab(server)
        if exited is not None:
            last_error = f"(exited with code {exited})\n{last_error}"
        if "already in use" not in last_error:
            break
    raise RuntimeError(
        f"JupyterLab did not answer /api/status within {SERVER_START_TIMEOUT:.0f} s; "
        f"see its log below:\n"
        f"{last_error}"
    )


def _kill_tree(pid: int) -> None:
    """SIGKILL a process and every descendant (kernels run in their own sessions)."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is a test dependency
        return
    try:
        parent = psutil.Process(pid)
        procs = parent.children(recursive=True) + [parent]
    except psutil.NoSuchProcess:
        return
    for p in procs:
        try:
            p.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)


def stop_lab(server: LabServer) -> None:
    """Stop kernels and server gracefully, then kill whatever is left (descendants included)."""
    proc = server.proc
    descendants: list[int] = []
    try:
        import psutil

        descendants = [c.pid for c in psutil.Process(proc.pid).children(recursive=True)]
    except Exception:
        pass
    if proc.poll() is None:
        server.shutdown_kernels()
        try:
            server.api("POST", "api/shutdown", timeout=10)
        except (urllib.error.URLError, OSError):
            pass
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=10)
            except (subprocess.TimeoutExpired, ProcessLookupError):
                pass
    _kill_tree(proc.pid)
    for pid in descendants:  # orphaned kernels / skill scripts re-parented to init
        _kill_tree(pid)
    if proc.poll() is None:
        proc.kill()
        proc.wait(timeout=10)
    proc._skill_magics_log.close()  # type: ignore[attr-defined]


@pytest.fixture(scope="session")
def chromium_path() -> str:
    path = find_chromium()
    if path is None:
        _skip_or_fail(
            "no Chromium found (looked at $SKILL_MAGICS_CHROMIUM, /usr/bin/chromium, chromium, "
            "chromium-browser, google-chrome): install it with "
            "`apt-get update && apt-get install -y chromium`"
        )
    return path  # type: ignore[return-value]


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    """One JupyterLab for the whole session, rooted in a temp dir."""
    from kernel_fixtures import kernel_python

    base = tmp_path_factory.mktemp("jupyterlab")
    root = base / "root"
    root.mkdir()
    register_kernelspec(base, KERNEL_UNDER_TEST, kernel_python())
    server = start_lab(base, root)
    try:
        yield server
    finally:
        stop_lab(server)


@pytest.fixture(scope="session")
def kernel_under_test(lab_server: LabServer) -> str:
    """Kernelspec name for notebooks that must run on kernel_fixtures.kernel_python()."""
    return KERNEL_UNDER_TEST


@dataclass
class OwnLab:
    """A JupyterLab of one test's own, which it may stop and start again on the same root
    (what the next day, or a server restart, looks like to a saved notebook)."""

    base: Path
    root: Path
    server: LabServer

    def restart(self) -> LabServer:
        """Stop the server and its kernels; start a new one on the same root and settings."""
        stop_lab(self.server)
        self.server = start_lab(self.base, self.root)
        return self.server

    def page(self, context: Any, shots_dir: Path) -> LabPage:
        """A new browser tab on the current server."""
        page = context.new_page()
        page.set_default_timeout(60_000)
        return LabPage(page, self.server, shots_dir)


@pytest.fixture
def own_lab(chromium_path: str, tmp_path: Path) -> Iterator[OwnLab]:
    """A JupyterLab for this test alone (it is restarted); stopped afterwards, whatever runs."""
    base = tmp_path / "own-lab"
    root = base / "root"
    root.mkdir(parents=True)
    lab = OwnLab(base, root, start_lab(base, root))
    try:
        yield lab
    finally:
        stop_lab(lab.server)


# --------------------------------------------------------------------------------------
# Browser
# --------------------------------------------------------------------------------------
@pytest.fixture
def browser_context(chromium_path: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A headless Chromium (Debian's binary, never a downloaded one) with a fresh profile.

    Per test on purpose: while Playwright's sync API is active its event loop counts as
    *running* on the main thread, so any later test calling asyncio.run() would fail. Starting
    Chromium costs ~1 s; JupyterLab (the slow part) stays shared.
    """
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _skip_or_fail("the Python package playwright is missing: pip install -e '.[e2e]'")
    profile = tmp_path_factory.mktemp("chromium-profile")
    pw = sync_playwright().start()
    context = None
    try:
        context = pw.chromium.launch_persistent_context(
            user_data_dir=str(profile),
            executable_path=chromium_path,
            headless=True,
            args=CHROMIUM_FLAGS,
            viewport={"width": 1280, "height": 900},
            timeout=90_000,
        )
        yield context
    finally:
        if context is not None:
            try:
                context.close()
            except Exception:
                pass
        pw.stop()


@pytest.fixture
def lab(
    chromium_path: str, lab_server: LabServer, browser_context: Any, tmp_path: Path
) -> Iterator[LabPage]:
    """A fresh browser tab on the shared JupyterLab; kernels shut down after the test.

    chromium_path comes first so a missing browser skips before JupyterLab is started.
    """
    page = browser_context.new_page()
    page.set_default_timeout(60_000)
    helper = LabPage(page, lab_server, tmp_path)
    try:
        yield helper
    finally:
        try:
            helper.screenshot("final")
        except Exception:
            pass
        try:
            page.close()
        except Exception:
            pass
        lab_server.shutdown_kernels()


# --------------------------------------------------------------------------------------
# Page helpers: what a person does in JupyterLab, in DOM terms (JupyterLab 4.x).
# --------------------------------------------------------------------------------------
class LabPage:
    """Open a notebook, run all, find cells/buttons/outputs, take screenshots."""

    def __init__(self, page: Any, server: LabServer, shots_dir: Path) -> None:
        self.page = page
        self.server = server
        self.shots_dir = shots_dir
        self.shots: list[Path] = []

    def add_notebook(self, src: Path | dict, name: str | None = None) -> str:
        """Copy a notebook (path or nbformat dict) into the server root; returns its name."""
        if isinstance(src, Path):
            name = name or src.name
            shutil.copyfile(src, self.server.root / name)
        else:
            assert name, "name is required when passing a notebook dict"
            (self.server.root / name).write_text(json.dumps(src))
        return name

    def open_notebook(self, name: str, *, timeout: float = 120) -> None:
        """Open the notebook and wait until its kernel is idle (ready to run)."""
        # A workspace of its own: otherwise JupyterLab reopens the previous test's notebooks
        # (and starts their kernels) beside this one, and menus act on the wrong tab.
        workspace = f"t{secrets.token_hex(4)}"
        self.page.goto(self.server.lab_url(name, workspace), timeout=timeout * 1000)
        self.page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for(timeout=timeout * 1000)
        self.wait_kernel_idle(timeout=timeout)

    def accept_kernel_dialog(self) -> bool:
        """If JupyterLab asks "Select Kernel", accept its default (Python 3); True if it did."""
        dialog = self.page.locator(".jp-Dialog", has_text="Select Kernel")
        if dialog.count() and dialog.first.is_visible():
            dialog.first.locator("button.jp-mod-accept").click()
            return True
        return False

    def kernel_status(self) -> str:
        """'idle' | 'busy' | 'initializing' | ... of the visible notebook's kernel, as its
        session context reports it (what the status bar shows); '' before the app is up.

        Not read from the toolbar's execution indicator: that item shows a placeholder 'idle'
        before the notebook has a kernel, and once the kernel name appears beside it (the
        kernelspec's display name holds the whole interpreter path) JupyterLab's responsive
        toolbar may move both into its "..." popup, outside the panel. With a long enough
        checkout path the 6.29.5 matrix test then saw '' until it timed out, unless two polls
        had happened to catch the placeholder first.
        """
        return self.page.evaluate(
            """() => {
                const app = window.jupyterapp;  // --LabApp.expose_app_in_browser
                const node = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
                if (!app || !node) return '';
                for (const widget of app.shell.widgets('main')) {
                    if (widget.node === node && widget.sessionContext) {
                        return widget.sessionContext.kernelDisplayStatus || '';
                    }
                }
                return '';
            }"""
        )

    def wait_kernel_idle(self, *, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        stable = 0
        while time.monotonic() < deadline:
            self.accept_kernel_dialog()
            # Idle twice in a row: a queued cell can flip it back to busy right away.
            stable = stable + 1 if self.kernel_status() == "idle" else 0
            if stable >= 2:
                return
            time.sleep(0.25)
        raise AssertionError(
            f"Kernel not idle after {timeout:.0f} s (status {self.kernel_status()!r}); "
            f"server log:\n{self.server.log_tail()}"
        )

    def run_all(self, *, timeout: float = 60) -> None:
        """Run > Run All Cells, through the menu bar as a person would; wait until cell 0 runs.

        The menu acts on the *current* notebook: right after load the file browser may hold
        focus and the item is disabled, so click into the notebook first and retry.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self.accept_kernel_dialog()
            self.cell(0).locator(".jp-InputPrompt").click()
            self.page.locator(".lm-MenuBar-item", has_text=re.compile(r"^\s*Run\s*$")).click()
            item = self.page.locator(
                ".lm-Menu-content .lm-Menu-item",
                has=self.page.locator(
                    ".lm-Menu-itemLabel", has_text=re.compile(r"^\s*Run All Cells\s*$")
                ),
            )
            item.wait_for(state="visible")
            if "lm-mod-disabled" in (item.get_attribute("class") or ""):
                self.page.keyboard.press("Escape")
                time.sleep(0.5)
                continue
            item.click()
            for _ in range(25):
                self.accept_kernel_dialog()
                if re.search(r"\[(\*|\d+)\]", self.prompt(0)):
                    return
                time.sleep(0.2)
        self.screenshot("run-all-did-not-start")
        raise AssertionError(
            f"Run All did not start cell 0 within {timeout:.0f} s (prompt {self.prompt(0)!r}, "
            f"kernel {self.kernel_status()!r})"
        )

    def cells(self) -> Any:
        return self.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")

    def cell(self, index: int) -> Any:
        return self.cells().nth(index)

    def prompt(self, index: int) -> str:
        """The input prompt text of a code cell: '[*]:' while queued/running, '[3]:' when done."""
        return self.cell(index).locator(".jp-InputPrompt").inner_text().strip()

    def is_running(self, index: int) -> bool:
        return "*" in self.prompt(index)

    def wait_cell_done(self, index: int, *, timeout: float = 120) -> str:
        """Wait until a cell has an execution count; returns its prompt."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.prompt(index)
            if re.search(r"\[\d+\]", text):
                return text
            time.sleep(0.2)
        raise AssertionError(f"Cell {index} still not finished after {timeout:.0f} s")

    def output_text(self, index: int) -> str:
        return self.cell(index).locator(".jp-OutputArea").inner_text()

    def wait_output(self, index: int, needle: str, *, timeout: float = 30) -> str:
        """Cell ``index``'s output once it shows ``needle`` (or the last text after
        ``timeout``): a widget's new state can reach the page after the cell's prompt did."""
        deadline = time.monotonic() + timeout
        text = self.output_text(index)
        while needle not in text and time.monotonic() < deadline:
            time.sleep(0.2)
            text = self.output_text(index)
        return text

    def button(self, index: int, label: str) -> Any:
        """The ipywidgets Button labelled ``label`` in cell ``index``'s output."""
        return self.cell(index).locator(
            ".jp-OutputArea button.jupyter-button",
            has_text=re.compile(f"^\\s*{re.escape(label)}\\s*$"),
        )

    def screenshot(self, name: str, *, locator: Any = None) -> Path:
        path = self.shots_dir / f"{len(self.shots):02d}-{name}.png"
        (locator or self.page).screenshot(path=str(path))
        self.shots.append(path)
        return path
