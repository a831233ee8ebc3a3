"""Google Colab's pinned stack (scripts/colab-pins.txt) against the package, without a kernel.

The pins must satisfy every runtime requirement (else ``%pip install`` on Colab would move
them: issue 23); the updater rewrites versions from a new pip-freeze.txt and names what it
cannot; the matrix script plans the "colab" entry on the Python the pins name. The real
install and the kernel tests are ``scripts/kernel-matrix.sh colab``.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[1]
PINS = REPO / "scripts" / "colab-pins.txt"
NAMED = {  # issue 23: what Colab's runtime pins
    "ipython": "7.34.0",
    "ipykernel": "6.17.1",
    "ipywidgets": "7.7.1",
    "jupyter-client": "7.4.9",
    "traitlets": "5.7.1",
    "psutil": "5.9.5",
    "pyyaml": "6.0.3",
}


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pins() -> dict[str, str]:
    pins = {}
    for line in PINS.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[_canonical(name)] = version
    return pins


def _updater():
    spec = importlib.util.spec_from_file_location(
        "update_colab_pins", REPO / "scripts" / "update_colab_pins.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _requirements(extra: str | None = None) -> list[Requirement]:
    import tomllib

    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    deps = project["dependencies"] if extra is None else project["optional-dependencies"][extra]
    return [Requirement(d) for d in deps]


def test_pins_hold_the_stack_colab_pins() -> None:
    pins = _pins()
    for name, version in NAMED.items():
        assert pins.get(name) == version, f"{PINS.name} pins {name}=={pins.get(name)}"
    text = PINS.read_text()
    assert re.search(r"^# python: 3\.13$", text, re.M), "the matrix reads the Python from here"
    assert re.search(r"^# absent: jedi$", text, re.M)
    assert "googlecolab/backend-info" in text and "update_colab_pins.py" in text


def test_every_runtime_requirement_accepts_the_pins() -> None:
    """What pip checks when skill-magics is installed beside them with ``-c``: a range that
    excludes a pin would make it move (or fail)."""
    pins = _pins()
    checked = 0
    for req in _requirements():
        pinned = pins.get(_canonical(req.name))
        assert pinned is not None, f"{req.name} is a dependency but not in {PINS.name}"
        assert req.specifier.contains(pinned, prereleases=True), f"{req} excludes Colab's {pinned}"
        checked += 1
    assert checked >= 6
    # The test extra's jupyter_client accepts Colab's too (issue 23).
    client = next(r for r in _requirements("test") if _canonical(r.name) == "jupyter-client")
    assert client.specifier.contains(pins["jupyter-client"])


def test_updater_rewrites_versions_and_names_what_it_cannot(tmp_path: Path) -> None:
    updater = _updater()
    pins = (
        "# header\n# python: 3.13\nipython==7.34.0\nJupyter_Client==7.4.9  # note\n"
        "distributed==2026.7.1\ngoogle-colab==1.0\n"
    )
    freeze = (
        "# Do not modify\nIPython==8.20.0\njupyter-client==7.4.9\n"
        "google-colab @ file:///colabtools/dist/google_colab-1.0.0.tar.gz\n"
    )
    text, notes = updater.update(pins, freeze)
    assert text.splitlines() == [
        "# header",
        "# python: 3.13",
        "ipython==8.20.0",
        "Jupyter_Client==7.4.9  # note",
        "distributed==2026.7.1",
        "google-colab==1.0",
    ]
    assert notes == [
        "ipython: 7.34.0 -> 8.20.0",
        "kept distributed==2026.7.1: not in the freeze",
        "kept google-colab==1.0: not from PyPI there",
    ]
    # The command line: writes the file, one line per change; a bad freeze is one line, exit 2.
    pins_file, freeze_file = tmp_path / "pins.txt", tmp_path / "freeze.txt"
    pins_file.write_text(pins)
    freeze_file.write_text(freeze)
    script = str(REPO / "scripts" / "update_colab_pins.py")
    run = subprocess.run(
        [sys.executable, script, str(freeze_file), "--pins", str(pins_file)],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert "ipython==8.20.0" in pins_file.read_text()
    assert "1 versions changed" in run.stdout
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing\n")
    bad = subprocess.run(
        [sys.executable, script, str(empty), "--pins", str(pins_file)],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and "has no name==version line" in bad.stderr
    assert "ipython==8.20.0" in pins_file.read_text()  # untouched


def test_the_pins_file_is_current_with_itself() -> None:
    """Updating from a freeze made of the pins changes nothing (the updater keeps comments,
    order and spelling)."""
    updater = _updater()
    text, notes = updater.update(PINS.read_text(), PINS.read_text())
    assert text == PINS.read_text() and not [n for n in notes if "->" in n]


def test_matrix_plans_colab_on_the_pinned_python(tmp_path: Path) -> None:
    """``kernel-matrix.sh --plan colab``: the Python the pins name (or COLAB_PYTHON), and a
    one-line reason when there is none."""
    script = REPO / "scripts" / "kernel-matrix.sh"
    env = dict(os.environ)
    env.pop("KERNEL_MATRIX_VERSIONS", None)
    env.pop("COLAB_PYTHON", None)
    run = subprocess.run(
        ["bash", str(script), "--plan", "colab"], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    (line,) = [x for x in run.stdout.splitlines() if "plan: colab" in x]
    assert re.search(r"plan: colab \(colab-pins\.txt\) with 3\.13 \(/", line) or (
        "NO Python 3.13 found (set COLAB_PYTHON)" in line
    ), line
    pins = tmp_path / "pins.txt"
    pins.write_text("# python: 3.99\nipython==7.34.0\n")
    missing = subprocess.run(
        ["bash", str(script), "--plan", "colab"],
        cwd=REPO,
        env={**env, "COLAB_PINS": str(pins)},
        capture_output=True,
        text=True,
    )
    assert "plan: colab: NO Python 3.99 found (set COLAB_PYTHON)" in missing.stdout
