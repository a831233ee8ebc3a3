"""Environment builds under faults, with a real ``uv`` and a real jupyter_client kernel
killed mid-build: the installer dies with the kernel, the dead build's folder goes at the
next build, and pruning never removes the environment in use or the one before it.

Offline: packages come from a wheel built here (``UV_FIND_LINKS``, ``UV_OFFLINE``); the
build that is killed waits in the build backend of an sdist (the installer's own child)."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import signal
import sys
import tarfile
import time
import zipfile
from pathlib import Path

import psutil
import pytest
from kernel_fixtures import kernel_factory  # noqa: F401 F811 - the fixture

from skill_magics.core.base import envdirs
from skill_magics.core.run.env import build as envbuild

pytestmark = pytest.mark.timeout(240)


def make_wheel(folder: Path, name: str = "tinypkg", version: str = "1.0") -> Path:
    """A minimal pure-Python wheel with a correct RECORD."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": b"VALUE = 42\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{info}/RECORD,,")
    files[f"{info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as zf:
        for path, data in files.items():
            zf.writestr(path, data)
    return wheel


@pytest.fixture
def offline(tmp_path, monkeypatch):
    if envbuild.find_uv() is None:
        pytest.fail("uv is needed (pip install 'skill-magics[env]')")
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    monkeypatch.setenv("UV_FIND_LINKS", str(wheels))
    monkeypatch.setenv("UV_OFFLINE", "1")
    monkeypatch.setenv("UV_CACHE_DIR", str(tmp_path / "uv-cache"))
    return wheels


def make_slow_sdist(folder: Path, pid_file: Path) -> Path:
    """An sdist of ``slowpkg`` with an in-tree build backend that writes its pid to
    ``pid_file`` and sleeps 300 s: the installer's own child, stalled."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {
        "pyproject.toml": b'[build-system]\nrequires = []\nbuild-backend = "backend"\n'
        b'backend-path = ["."]\n[project]\nname = "slowpkg"\nversion = "1.0"\n',
        "PKG-INFO": b"Metadata-Version: 2.1\nName: slowpkg\nVersion: 1.0\n",
        "backend.py": f"import os, time\nfrom pathlib import Path\n"
        f"Path({str(pid_file)!r}).write_text(str(os.getpid()))\ntime.sleep(300)\n".encode(),
    }
    sdist = folder / "slowpkg-1.0.tar.gz"
    with tarfile.open(sdist, "w:gz") as tf:
        for name, data in files.items():
            info = tarfile.TarInfo(f"slowpkg-1.0/{name}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return sdist


def _running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (a dead child nobody reaped yet is gone for this purpose)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _envs(home: Path) -> set[str]:
    return {p.name for p in home.iterdir() if p.name.startswith("env-")}


def test_a_kernel_killed_mid_build_takes_its_installer_and_costs_no_environment(
    tmp_path,
    offline,
    kernel_factory,  # noqa: F811 - the fixture imported above
):
    home = tmp_path / "envs" / "skill-x"
    first = envbuild.build_env(home, ["tinypkg"], installer="uv").path
    second = envbuild.build_env(home, ["tinypkg"], installer="uv").path  # in use now
    assert envbuild.current_env(home)[0] == second

    # An sdist whose build backend (the installer's child) waits: the build stalls there.
    backend_pid = tmp_path / "backend.pid"
    make_slow_sdist(tmp_path / "sdists", backend_pid)
    env = {
        "UV_FIND_LINKS": str(tmp_path / "sdists"),
        "UV_OFFLINE": "1",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache-2"),
    }
    kernel = kernel_factory(env=env)
    pid = int(kernel.execute("import os; os.getpid()").text_plain)
    kernel.submit(
        "from pathlib import Path\nfrom skill_magics.core.run.env import build as envbuild\n"
        f"envbuild.build_env(Path({str(home)!r}), ['slowpkg'], installer='uv')\n"
    )
    deadline = time.monotonic() + 60
    while not backend_pid.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert backend_pid.exists(), "the build never reached its build backend"
    time.sleep(0.2)  # the pid is written whole
    backend = psutil.Process(int(backend_pid.read_text()))
    tree = [p for p in psutil.Process(pid).children(recursive=True) if p.pid != backend.pid]
    installer = next(p for p in tree if "install" in p.cmdline())
    os.kill(pid, signal.SIGKILL)
    # Defect 10: the installer dies with the kernel (it would wait 300 s on its backend),
    # and so does every process it started (the build backend, its child).
    gone, alive = psutil.wait_procs([installer, backend, *tree], timeout=10)
    alive = [p for p in alive if _running(p)]
    assert not alive, f"outlived the kernel: {[p.cmdline() for p in alive]}"
    dead = _envs(home) - {first.name, second.name}
    assert len(dead) == 1  # the half-built folder the kernel left

    # Defect 9: the next build removes the dead folder and keeps the one in use before it.
    third = envbuild.build_env(home, ["tinypkg"], installer="uv").path
    assert _envs(home) == {second.name, third.name}
    assert envbuild.current_env(home)[0] == third
    assert json.loads((third / envbuild.INFO_FILE).read_text())["previous"] == second.name
    assert envdirs.env_python(second).exists()


def test_a_build_in_progress_is_never_swept(tmp_path, offline):
    """What the sweep must NOT remove: a folder whose build still holds its lock."""
    home = tmp_path / "envs" / "skill-y"
    home.mkdir(parents=True)
    live = home / "env-live-00000000"
    fd = envbuild._claim(home, live)
    live.mkdir()
    try:
        envbuild.build_env(home, ["tinypkg"], installer="uv")
        assert live.is_dir()
    finally:
        envbuild._release(home, live, fd)


def test_a_descendant_that_left_the_group_dies_with_its_killed_parent(tmp_path):
    """The guard's tree, not the group: a grandchild in a session of its own (``setsid``)
    still dies when the process that ran the command is SIGKILLed."""
    pid_file = tmp_path / "daemon.pid"
    script = (
        "from skill_magics.core.run.launching.process import run_process\n"
        "run_process(['sh', '-c', 'setsid sleep 300 & echo $! > " + str(pid_file) + "; wait'],"
        " cwd='.', env=None, payload=None, timeout=300, max_output_size=1000,"
        " die_with_parent=True)\n"
    )
    parent = psutil.Popen([sys.executable, "-c", script], cwd=tmp_path)
    deadline = time.monotonic() + 30
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline, "the command never started its daemon"
        time.sleep(0.05)
    daemon = psutil.Process(int(pid_file.read_text()))
    # `$!` is known before the child has run setsid(2): wait until it left the session.
    while os.getsid(daemon.pid) != daemon.pid:
        assert time.monotonic() < deadline, "the daemon never left the session"
        time.sleep(0.05)
    parent.kill()
    parent.wait(10)
    _gone, alive = psutil.wait_procs([daemon], timeout=10)
    alive = [p for p in alive if _running(p)]
    if alive:
        daemon.kill()  # the test's own leftover
    assert not alive, "a setsid grandchild outlived the killed parent"
