"""scripts/python-matrix.sh: which Pythons it finds, which it skips and why, and that a Python
that fails makes the run fail (docs/setup.md).

Real processes on real files: the interpreters it searches are the running Python (linked
under other names) and small stand-ins for ones this machine may not have (a Python 3.9, a
3.99, one that does not run, one without venv support: names no real Python has). Running
the suite in each venv is what `make python-matrix` does; here a stand-in whose venv cannot
be made shows the failure path without running it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "python-matrix.sh"
HERE = f"{sys.version_info[0]}.{sys.version_info[1]}"


def _new_file(path: Path, text: str) -> None:
    """Never through a link: python3.X may be the running interpreter linked here."""
    with open(path, "x") as fh:
        fh.write(text)
    path.chmod(0o755)


def _stand_in(path: Path, version: str, *, venv_support: bool = True) -> None:
    """An interpreter that answers the script's probes as Python ``version`` would."""
    _new_file(
        path,
        "#!/bin/sh\n"
        'case "$*" in\n'
        f"  *ensurepip*) exit {0 if venv_support else 1} ;;\n"
        '  "-m venv"*) echo "no venv here" >&2; exit 1 ;;\n'
        f'  *platform*) echo "{version} {path}" ;;\n'
        "  *) exit 3 ;;\n"
        "esac\n",
    )


def _search_dir(tmp_path: Path) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    os.symlink(sys.executable, bin_dir / f"python{HERE}")  # the same interpreter again
    _stand_in(bin_dir / "python3.9", "3.9.18")
    _stand_in(bin_dir / "python3.97", "3.97.0", venv_support=False)
    _stand_in(bin_dir / "python3.99", "3.99.1")
    _new_file(bin_dir / "python3.98", "#!/bin/sh\nexit 127\n")  # like a pyenv shim
    return bin_dir


def _run(tmp_path: Path, *args: str, main: str = sys.executable) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PYTHON_MATRIX_SEARCH=str(tmp_path / "bin"),
        PYTHON_MATRIX_MAIN=main,
        PYTHON_MATRIX_VENVS=str(tmp_path / "venvs"),
    )
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_lists_what_it_found_and_what_it_skipped_and_why(tmp_path: Path) -> None:
    bin_dir = _search_dir(tmp_path)
    run = _run(tmp_path, "--list")
    assert run.returncode == 0, run.stdout + run.stderr
    found = [line for line in run.stdout.splitlines() if " found " in line]
    assert found == [
        f"python-matrix: found Python {HERE} ({os.path.realpath(sys.executable)})",
        f"python-matrix: found Python 3.99 ({bin_dir / 'python3.99'})",
    ]
    out = run.stdout
    assert f"skipped {bin_dir / 'python3.9'}: Python 3.9.18 unsupported (3.11+)" in out
    assert f"skipped {bin_dir / 'python3.98'}: does not run" in out
    assert f"skipped {bin_dir / 'python3.97'}: Python 3.97.0 lacks venv support" in out
    assert not (tmp_path / "venvs").exists(), "--list installs nothing"


def test_other_picks_the_newest_python_besides_the_main_one(tmp_path: Path) -> None:
    bin_dir = _search_dir(tmp_path)
    run = _run(tmp_path, "--other", "--list")
    assert run.returncode == 0, run.stdout + run.stderr
    assert [line for line in run.stdout.splitlines() if " found " in line] == [
        f"python-matrix: found Python 3.99 ({bin_dir / 'python3.99'})"
    ]
    assert f"Python {HERE} is .venv's (the main run tests it)" in run.stdout


def test_other_says_so_when_there_is_no_other_python(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    _stand_in(bin_dir / "python3.10", "3.10.13")
    run = _run(tmp_path, "--other")
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"no supported Python other than .venv's {HERE} found" in run.stdout
    assert "Python 3.10.13 unsupported" in run.stdout


def test_nothing_supported_found_fails(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stand_in(bin_dir / "python3.10", "3.10.13")
    run = _run(tmp_path)
    assert run.returncode == 2
    assert "no supported Python (3.11+) found: nothing tested" in run.stderr


def test_a_python_that_fails_fails_the_run(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _stand_in(bin_dir / "python3.99", "3.99.1")
    run = _run(tmp_path, str(bin_dir / "python3.99"))
    assert run.returncode == 1, run.stdout + run.stderr
    assert "python-matrix summary:" in run.stdout
    assert f"Python 3.99 ({bin_dir / 'python3.99'}): venv or pip install FAILED" in run.stdout
