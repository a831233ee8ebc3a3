"""Kernel facts the wait strategies build on (docs/architecture.md, *Waiting for a click*),
checked against the kernel under test.

scripts/kernel-matrix.sh runs ``pytest -m kernel`` once per supported ipykernel version with
SKILL_MAGICS_TEST_KERNEL_PYTHON pointing at that version's venv (and
SKILL_MAGICS_EXPECT_IPYKERNEL naming the version, so a mis-built venv cannot pass quietly).
These tests use plain ipywidgets, no skill_magics code: if one fails after an ipykernel
release, the approval strategy in notebook/waiting.py needs revisiting, not the magics.

The script itself is checked here too: it installs the runtime dependencies pyproject.toml
names, and it requires the browser test (tests/e2e/test_matrix_kernels_browser.py) when
chromium is there, as make does.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from kernel_fixtures import kernel_ipykernel_version, kernel_python, start_kernel

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "kernel-matrix.sh"

# A cell that shows a button and waits for its click with a top-level await (ipykernel >= 7.4).
AWAIT_CLICK = """\
import asyncio, ipywidgets as widgets
from IPython.display import display
clicked = asyncio.get_running_loop().create_future()
button = widgets.Button(description="Matrix click")
button.on_click(lambda _b: clicked.done() or clicked.set_result(True))
display(button)
for _ in range(300):
    if clicked.done():
        break
    await asyncio.sleep(0.1)
print("await path:", clicked.done())
"""

# The same wait by pumping the kernel's shell queue (what works on ipykernel 6.x). There
# do_one_iteration() is a coroutine and the kernel's loop is busy running this very cell, so
# each iteration runs to completion on a short-lived loop in a helper thread. Dispatching the
# click re-parents the kernel to the comm_msg: restore this cell's parent, or its output and
# final idle status would be attributed to the click.
PUMP_CLICK = """\
import asyncio, threading, time, ipywidgets as widgets
from IPython.display import display
kernel = get_ipython().kernel
parent = kernel.get_parent("shell")
ident = kernel._parent_ident["shell"]
state = {"clicked": False}
button = widgets.Button(description="Matrix click")
button.on_click(lambda _b: state.update(clicked=True))
display(button)

def one_iteration():
    result = kernel.do_one_iteration()
    if asyncio.iscoroutine(result):
        worker = threading.Thread(target=asyncio.run, args=(result,))
        worker.start()
        worker.join(5)
    kernel.set_parent(ident, parent, "shell")

deadline = time.monotonic() + 30
while not state["clicked"] and time.monotonic() < deadline:
    one_iteration()
    time.sleep(0.05)
print("pump path:", state["clicked"])
"""


# ipykernel 7.0-7.3: the click arrives on a subshell thread, so a plain threading.Event wait
# in the running cell sees it.
THREAD_CLICK = """\
import threading, ipywidgets as widgets
from IPython.display import display
clicked = threading.Event()
button = widgets.Button(description="Matrix click")
button.on_click(lambda _b: clicked.set())
display(button)
print("thread path:", clicked.wait(30))
"""


@pytest.mark.kernel
def test_kernel_is_the_expected_ipykernel() -> None:
    """The matrix really runs the version it claims (not the pytest venv's by accident)."""
    expected = os.environ.get("SKILL_MAGICS_EXPECT_IPYKERNEL")
    version = kernel_ipykernel_version()
    if expected:
        assert ".".join(map(str, version)) == expected, (
            f"kernel python {kernel_python()} has ipykernel {version}, matrix expected {expected}"
        )
    with start_kernel() as k:
        r = k.execute("import ipykernel, sys; print(ipykernel.__version__, sys.executable)")
        assert r.ok, r.error_text
        reported, executable = r.stdout.split()
        assert reported.startswith(".".join(map(str, version[:2])))
        assert os.path.realpath(executable) == os.path.realpath(kernel_python()) or (
            os.path.samefile(executable, kernel_python())
        )


@pytest.mark.kernel
def test_skill_magics_loads_in_kernel() -> None:
    """The package imports and %load_ext works in the matrix kernel's environment."""
    with start_kernel() as k:
        r = k.execute("%load_ext skill_magics\nimport skill_magics; print(skill_magics.__file__)")
        assert r.ok, r.error_text
        assert "skill_magics" in r.stdout


@pytest.mark.kernel
def test_click_reaches_a_waiting_cell() -> None:
    """A button click sent while the cell waits is delivered, by the path this kernel supports.

    ipykernel >= 7.4: a top-level await. 7.0-7.3: a threading.Event wait, the click sent on a
    subshell as JupyterLab >= 4.4 does. 6.x: pumping do_one_iteration().
    """
    version = kernel_ipykernel_version()
    subshell = False
    if version >= (7, 4):
        code, expect = AWAIT_CLICK, "await path: True"
    elif version < (7,):
        code, expect = PUMP_CLICK, "pump path: True"
    else:
        code, expect, subshell = THREAD_CLICK, "thread path: True", True
    with start_kernel() as k:
        if subshell:
            k.comms_subshell()  # JupyterLab creates it when the widget manager starts
        msg_id = k.submit(code, allow_stdin=True)
        button = k.wait_for_button("Matrix click", timeout=60)
        k.click_until_handled(button, msg_id, subshell=subshell)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert expect in r.stdout, r.stdout + r.stderr


# -- scripts/kernel-matrix.sh ----------------------------------------------------------------


def _script(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full.pop("KERNEL_MATRIX_VERSIONS", None)
    full.update(env or {})
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=REPO,
        env=full,
        capture_output=True,
        text=True,
        timeout=180,
    )


def test_runtime_dependencies_come_from_the_lock() -> None:
    """The matrix venvs get uv.lock's pins of the runtime dependencies and the [lab] and
    [mcp] extras (the kernel's own version replaced), not the test tooling, and not whatever
    the index serves today."""
    import tomllib

    run = _script("--print-deps")
    assert run.returncode == 0, run.stderr
    deps = [d.split(" ;")[0] for d in run.stdout.splitlines()]
    with open(REPO / "uv.lock", "rb") as fh:
        locked = {p["name"]: p.get("version") for p in tomllib.load(fh)["package"]}
    assert f"ipython=={locked['ipython']}" in deps and f"pyyaml=={locked['pyyaml']}" in deps
    assert f"anthropic=={locked['anthropic']}" in deps
    assert f"mcp=={locked['mcp']}" in deps  # 08_mcp_skills.ipynb serves skills from the kernel
    assert not [d for d in deps if d.startswith("ipykernel")], "each venv pins its own"
    assert not [d for d in deps if d.split("==")[0] in ("pytest", "hypothesis", "jupyterlab")]
    assert all("==" in d for d in deps), deps


def test_matrix_requires_the_browser_test_when_chromium_is_there(tmp_path: Path) -> None:
    """`make test` does not pass SKILL_MAGICS_E2E_REQUIRED to the script: it applies make's
    rule itself (chromium on PATH -> the browser test may not skip), and keeps an explicit
    value."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "chromium").write_text("#!/bin/sh\nexit 0\n")
    (fake / "chromium").chmod(0o755)
    path = f"{fake}{os.pathsep}{os.environ['PATH']}"
    unset = dict(os.environ, PATH=path)
    unset.pop("SKILL_MAGICS_E2E_REQUIRED", None)
    unset.pop("KERNEL_MATRIX_VERSIONS", None)
    run = subprocess.run(
        ["bash", str(SCRIPT), "--plan", "7.4.0"],
        cwd=REPO,
        env=unset,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    assert "SKILL_MAGICS_E2E_REQUIRED=1" in run.stdout
    kept = _script("--plan", "7.4.0", env={"PATH": path, "SKILL_MAGICS_E2E_REQUIRED": "0"})
    assert kept.returncode == 0, kept.stderr
    assert "SKILL_MAGICS_E2E_REQUIRED=0" in kept.stdout
