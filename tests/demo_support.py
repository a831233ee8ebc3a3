"""A venv like the one `make demo` gives: the package's dependencies and the [demo] extra as
uv.lock pins them, nothing of the test tooling, and this checkout importable through a .pth
(what `uv sync` does with an editable install). Built with scripts/locked-install.sh from uv's
cache (about 2 s), so the example notebooks run in what a newcomer has, not in the test venv
that holds every extra (issue 44: notebook 08 needed the MCP SDK, which only [mcp] had).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent


def build_demo_venv(where: Path, *, compile_all: bool = True) -> Path:
    """Create the demo venv at ``where``; return its python. ``compile_all=False``: no
    bytecode at install (14 s of CPU for 9,000 files): for a venv whose metadata is read, or
    whose few imports write their own (skill scripts never do: they need it compiled)."""
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", "--without-pip", str(where)], check=True, timeout=120)
    python = where / "bin" / "python"
    env = dict(os.environ)
    uv = Path(sys.executable).parent / "uv"
    if uv.exists():
        env.setdefault("UV", str(uv))
    env["UV_COMPILE_BYTECODE"] = "1" if compile_all else "0"
    done = subprocess.run(
        ["bash", str(REPO_ROOT / "scripts" / "locked-install.sh"), str(python)]
        + ["--no-project", "--extra", "demo"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"could not build the demo venv:\n{done.stdout}{done.stderr}"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(site) / "skill_magics_checkout.pth").write_text(f"{REPO_ROOT}\n")
    return python


def demo_distributions(python: Path) -> set[str]:
    """Names (lower case) of the distributions installed in the venv of ``python``."""
    code = (
        "import importlib.metadata as m\n"
        "print('\\n'.join(d.metadata['Name'] for d in m.distributions()))"
    )
    out = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {line.strip().lower().replace("_", "-") for line in out.stdout.splitlines() if line}
