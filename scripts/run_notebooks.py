"""Execute the example notebooks headless, like CI does, and optionally save them with outputs.

    .venv/bin/python scripts/run_notebooks.py            # run all, report, change nothing
    .venv/bin/python scripts/run_notebooks.py --save     # run all and save outputs in place
    .venv/bin/python scripts/run_notebooks.py notebooks/01_quickstart.ipynb --save

Headless means nobody can click: nbclient sends ``allow_stdin=False``, so the notebooks run
with ``SKILL_MAGICS_AUTO_APPROVE=*`` (the documented, audited pre-approval). The saved copy is
made readable anywhere (GitHub, nbviewer, nbconvert): live-widget outputs are dropped in
favour of the HTML/text fallbacks each result carries, and no widget state is stored, so a
reader never sees "Error displaying widget" or a bare repr. Execution happens in a temporary
working directory with isolated IPython settings, so nothing is written into the repo except
the saved notebooks themselves.

The kernel is the ``python3`` of this interpreter, or the Python named by
SKILL_MAGICS_TEST_KERNEL_PYTHON (as for the kernel tests: scripts/kernel-matrix.sh runs the
notebooks in a kernel from its "colab" venv that way).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted((REPO_ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
EXPECTED_ERROR_TAG = "raises-exception"  # nbclient and JupyterLab's Run All go on past these
KERNEL_PYTHON_ENV = "SKILL_MAGICS_TEST_KERNEL_PYTHON"


def _machine_paths() -> list[tuple[re.Pattern[str], str]]:
    """Paths of the machine that ran the notebook, longest first, and what a reader sees."""
    tmp = re.escape(tempfile.gettempdir().rstrip("/"))
    pairs = [
        # the repo: paths become repo-relative; a sibling such as <repo>-tmp is not the repo
        (re.escape(str(REPO_ROOT)) + r"(?:/|(?![^\s\"'<>]))", ""),
        (re.escape(sys.base_prefix) + "/", "<python>/"),
        (re.escape(sys.prefix) + "/", "<venv>/"),
        (tmp + r"/[^\s\"'<>/]+", "<tmp>"),  # the run's temp dirs (workdir, scratch)
        (re.escape(str(Path.home())) + "/", "~/"),
    ]
    return [(re.compile(pattern), text) for pattern, text in pairs]


def _unmachine(value: object, subs: list[tuple[re.Pattern[str], str]]) -> object:
    if isinstance(value, str):
        for pattern, text in subs:
            value = pattern.sub(text, value)
        return value
    if isinstance(value, list):
        return [_unmachine(v, subs) for v in value]
    if isinstance(value, dict):
        return {k: _unmachine(v, subs) for k, v in value.items()}
    return value


def kernel_env(tmp: Path) -> dict[str, str]:
    """Environment for the notebook kernel: pre-approved, isolated, repo importable."""
    env = dict(os.environ)
    env["SKILL_MAGICS_AUTO_APPROVE"] = "*"
    env["IPYTHONDIR"] = str(tmp / "ipython")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO_ROOT), env.get("PYTHONPATH")) if p)
    env.pop("SKILL_MAGICS_PATH", None)  # the notebooks add the bundled examples themselves
    env["SKILL_MAGICS_ENV_DIR"] = str(tmp / "envs")  # managed envs (%skills env) stay in tmp
    env["SKILL_MAGICS_MCP_CACHE"] = str(tmp / "mcp-cache")  # MCP skills' copies (08) too
    return env


def model_server(nb: nbformat.NotebookNode) -> Any:
    """The scripted local model server a notebook asks for in its metadata
    (``"skill_magics": {"model_server": "demo"}``: tests/model_server.py's rule-based
    ``demo_script``, a test fixture, not a model), or a null context."""
    if nb.metadata.get("skill_magics", {}).get("model_server") != "demo":
        return contextlib.nullcontext(None)
    tests = str(REPO_ROOT / "tests")
    if tests not in sys.path:
        sys.path.insert(0, tests)
    from model_server import ScriptedServer, demo_script

    return ScriptedServer(demo_script)


def server_env(server: Any) -> dict[str, str]:
    """Point the notebook's anthropic client at the scripted server (no real key is used)."""
    return {
        "ANTHROPIC_BASE_URL": server.url,
        "ANTHROPIC_API_KEY": "scripted-local-server-not-a-key",
        "SKILL_LAB_MODEL": "scripted-demo",
    }


def execute(path: Path, *, timeout: int = 180, keyless: bool = False) -> nbformat.NotebookNode:
    """Run a notebook top to bottom in a fresh kernel; raises CellExecutionError on an error.

    ``keyless``: as a reader without an API key runs it (no model server, no ANTHROPIC_* or
    OPENAI_* variables)."""
    nb = nbformat.read(path, as_version=4)
    server_cm = contextlib.nullcontext(None) if keyless else model_server(nb)
    with (
        tempfile.TemporaryDirectory(prefix="skill-magics-nb-") as tmp_name,
        server_cm as server,
    ):
        tmp = Path(tmp_name)
        workdir = tmp / "work"
        workdir.mkdir()
        km = _kernel_manager(tmp)
        client = NotebookClient(
            nb,
            km=km,
            timeout=timeout,
            kernel_name="python3",
            resources={"metadata": {"path": str(workdir)}},
            allow_errors=False,
            record_timing=False,
        )
        env = kernel_env(tmp)
        if keyless:
            for name in [n for n in env if n.startswith(("ANTHROPIC_", "OPENAI_"))]:
                del env[name]
        if server is not None:
            env.update(server_env(server))
        try:
            client.execute(env=env)
        finally:
            # nbclient shuts down only a kernel it made itself: this one (and what its cells
            # started: a Dask cluster, an MCP server) would live on until the caller exits.
            if km.has_kernel:
                km.shutdown_kernel(now=False)
    return nb


def _kernel_manager(tmp: Path) -> Any:
    """A kernel manager for the notebook's ``python3`` (SKILL_MAGICS_TEST_KERNEL_PYTHON's, a
    private kernelspec, when set), over Unix sockets: TCP ports picked free, closed, then
    bound by the kernel can be taken in between by a test stage running beside this one."""
    from jupyter_client import KernelManager
    from jupyter_client.kernelspec import KernelSpecManager

    ipc = {"transport": "ipc", "ip": str(tmp / "ipc")}
    python = os.environ.get(KERNEL_PYTHON_ENV)
    if not python:
        return KernelManager(kernel_name="python3", **ipc)

    spec_dir = tmp / "kernels" / "python3"
    spec_dir.mkdir(parents=True)
    spec = {
        "argv": [os.path.abspath(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python 3 ({python})",
        "language": "python",
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    specs = KernelSpecManager(kernel_dirs=[str(tmp / "kernels")])
    return KernelManager(kernel_name="python3", kernel_spec_manager=specs, **ipc)


def readable(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """A copy fit for saving: widget views and widget state removed, fallbacks kept, and this
    machine's paths (repo, interpreters, temp dirs, home) replaced by stable placeholders, so
    a reader sees ``skill_magics/examples/skills/...``, not the author's disk."""
    nb = copy.deepcopy(nb)
    subs = _machine_paths()
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        cell.metadata.pop("execution", None)
        kept = []
        for out in cell.get("outputs", []):
            data = out.get("data")
            if data is not None:
                data.pop(WIDGET_VIEW, None)
                data.pop(WIDGET_STATE, None)
                if not data:  # a bare widget with no fallback: nothing readable to keep
                    continue
            previous = kept[-1] if kept else None
            if (
                out.get("output_type") == "stream"
                and previous is not None
                and previous.get("output_type") == "stream"
                and previous.get("name") == out.get("name")
            ):
                # One print() can reach the kernel's stream in several flushes on a busy
                # machine: join them, as a frontend shows them, so the saved text is stable.
                previous["text"] = "".join(previous.get("text", "")) + "".join(out.get("text", ""))
                continue
            kept.append(copy.deepcopy(out))
        cell.outputs = [nbformat.from_dict(_unmachine(out, subs)) for out in kept]
    return nb


def problems(nb: nbformat.NotebookNode) -> list[str]:
    """What would make a saved notebook unreadable or stale; [] when it is fine."""
    found = []
    if "widgets" in nb.metadata:
        found.append("metadata.widgets present (widget state)")
    for i, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or not cell.source.strip():
            continue
        if cell.get("execution_count") is None:
            found.append(f"cell {i} was not executed")
        expected = EXPECTED_ERROR_TAG in cell.metadata.get("tags", [])
        # IPython prints a UsageError on stderr (one line), not as an error output
        errors = [
            o
            for o in cell.get("outputs", [])
            if o.get("output_type") == "error"
            or (o.get("name") == "stderr" and "UsageError: " in "".join(o.get("text", "")))
        ]
        if expected and not errors:
            found.append(f"cell {i} is tagged {EXPECTED_ERROR_TAG} but raised nothing")
        for out in cell.get("outputs", []):
            if out.get("output_type") == "error" and not expected:
                found.append(f"cell {i} has an error output: {out.get('ename')}")
            leaked = _leaked_path(out)
            if leaked:
                found.append(f"cell {i} shows a path of this machine: {leaked}")
            data = out.get("data", {})
            if WIDGET_VIEW in data:
                found.append(f"cell {i} keeps a widget view")
            if data and "text/plain" not in data and "text/html" not in data:
                found.append(f"cell {i} has an output without text/plain or text/html")
    return found


def _leaked_path(out: object) -> str:
    """A machine-specific path left in an output ('' when none)."""
    text = str(out)
    for root in (str(REPO_ROOT), sys.prefix, sys.base_prefix, str(Path.home())):
        if root and root != "/" and root in text:
            return root
    match = re.search(re.escape(tempfile.gettempdir().rstrip("/")) + r"/[\w.-]+", text)
    return match.group(0) if match else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Execute the example notebooks headless.")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: notebooks/)")
    parser.add_argument("--save", action="store_true", help="save outputs into the notebooks")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths or NOTEBOOKS:
        start = time.monotonic()
        try:
            nb = readable(execute(path))
        except Exception as exc:  # report every notebook, then fail
            print(f"FAILED {path}: {type(exc).__name__}: {str(exc).strip()[-2000:]}")
            status = 1
            continue
        issues = problems(nb)
        took = time.monotonic() - start
        if issues:
            print(f"FAILED {path} ({took:.1f} s): " + "; ".join(issues))
            status = 1
            continue
        if args.save:
            nbformat.write(nb, path)
        print(f"ok     {path} ({took:.1f} s){' saved' if args.save else ''}")
    return status


if __name__ == "__main__":
    sys.exit(main())
