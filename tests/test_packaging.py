"""Packaging as a release needs it: `python -m build` -> sdist + wheel -> `twine check` ->
a clean venv where `%load_ext skill_magics` works.

The build runs on a copy of the tracked tree (nothing written into the worktree) without build
isolation, so it needs no network: setuptools comes from the test extra. `python -m build`
makes the wheel *from the sdist*, so a file missing from the sdist fails here too. The clean
venv has no pip and no packages; the wheel goes in with `--no-index --no-deps`, and the
dependencies it declares come from this environment's site-packages through a .pth file (not
this checkout: the test runs from an empty folder), then each declared requirement is checked
against what that venv sees.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

# In the clean venv: every requirement the wheel declares (no extra) is satisfied, the package
# comes from the venv (not this checkout), and %load_ext registers the magics in a real IPython.
CHECK = r"""
import importlib.metadata as md, sys
from packaging.requirements import Requirement
dist = md.distribution("skill-magics")
for line in dist.requires or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    have = md.version(req.name)
    assert req.specifier.contains(have, prereleases=True), f"{req.name} {have} not {req.specifier}"
import skill_magics
assert skill_magics.__file__.startswith(sys.prefix), skill_magics.__file__
from IPython.testing.globalipapp import start_ipython
ip = start_ipython()
ip.run_line_magic("load_ext", "skill_magics")
names = ip.magics_manager.magics
assert {"skills", "skill_context"} <= set(names["line"]), names["line"].keys()
assert "skillrun" in names["cell"], names["cell"].keys()
ip.run_line_magic("skills", "add --examples")
print("OK", skill_magics.__version__)
"""


def _tracked_copy(dest: Path) -> None:
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    for raw in filter(None, files):
        rel = Path(os.fsdecode(raw))
        src = REPO / rel
        if not src.is_file() or src.is_symlink():
            continue
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dest / rel)


@pytest.mark.timeout(240)
def test_build_twine_check_and_load_ext_in_a_clean_venv(tmp_path: Path) -> None:
    if shutil.which("git") is None:
        pytest.fail("git is needed to list the tracked files")
    src, dist, env = tmp_path / "src", tmp_path / "dist", tmp_path / "venv"
    src.mkdir()
    _tracked_copy(src)
    # The Skills side panel's prebuilt frontend is build output (git-ignored): `make
    # labextension` makes it before the tests, and the wheel must carry it.
    built = REPO / "skill_magics" / "labextension"
    if not (built / "package.json").is_file():
        pytest.fail("the Skills side panel is not built: run `make labextension` first")
    shutil.copytree(built, src / "skill_magics" / "labextension")
    build = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(dist), str(src)],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    wheels, sdists = sorted(dist.glob("*.whl")), sorted(dist.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in dist.iterdir())
    # No deprecation left for a future setuptools to turn into an error.
    assert "deprecated" not in build.stderr + build.stdout, build.stderr[-3000:]

    twine = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheels[0]), str(sdists[0])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert twine.returncode == 0 and twine.stdout.count("PASSED") == 2, twine.stdout
    # The side panel: its server extension enabled, its frontend where JupyterLab looks.
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
    data = "skill_magics-0.1.0.data/data/"
    assert data + "etc/jupyter/jupyter_server_config.d/skill_magics.json" in names, names
    labext = data + "share/jupyter/labextensions/skill-magics-labextension/"
    assert labext + "package.json" in names, names
    assert any(n.startswith(labext + "static/remoteEntry.") for n in names), names

    venv.EnvBuilder(with_pip=False).create(env)
    py = env / "bin" / "python"
    uv = Path(sys.executable).parent / "uv"
    install = subprocess.run(
        [str(uv), "pip", "install", "--python", str(py), "--no-index", "--no-deps", str(wheels[0])],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert install.returncode == 0, install.stderr
    site = subprocess.run(
        [str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # Dependencies from this environment, after the venv's own site-packages (the wheel wins).
    (Path(site) / "zz_deps_from_test_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    work = tmp_path / "work"
    work.mkdir()
    clean_env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "SKILL_"))}
    clean_env["IPYTHONDIR"] = str(tmp_path / "ipython")
    run = subprocess.run(
        [str(py), "-c", CHECK],
        cwd=work,
        env=clean_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    # The bundled example skills ship in the wheel, inside the venv.
    assert f"Added {site}/skill_magics/examples/skills: 4 skills" in run.stdout, run.stdout
    assert run.stdout.splitlines()[-1] == "OK 0.1.0", run.stdout
