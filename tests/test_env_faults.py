"""Environment builds under faults, with a real ``uv`` and a real jupyter_client kernel
killed mid-build: the installer dies with the kernel, the dead build's folder goes at the
next build, and pruning never removes the environment in use or the one before it.

Offline: packages come from a wheel built here (``UV_FIND_LINKS``, ``UV_OFFLINE``); the
build that is killed waits on an index that accepts connections and never answers."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import signal
import socket
import time
import zipfile
from pathlib import Path

import psutil
import pytest
from kernel_fixtures import kernel_factory  # noqa: F401 F811 - the fixture

from skill_magics.core import envdirs
from skill_magics.core.run import envbuild

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

    # An index that accepts the connection and never answers: the installer waits.
    stall = socket.socket()
    stall.bind(("127.0.0.1", 0))
    stall.listen(16)
    (tmp_path / "no-wheels").mkdir()
    env = {
        "UV_INDEX_URL": f"http://127.0.0.1:{stall.getsockname()[1]}/simple",
        "UV_OFFLINE": "false",
        "UV_FIND_LINKS": str(tmp_path / "no-wheels"),
        "UV_HTTP_TIMEOUT": "120",
        "UV_CACHE_DIR": str(tmp_path / "uv-cache-2"),
    }
    kernel = kernel_factory(env=env)
    pid = int(kernel.execute("import os; os.getpid()").text_plain)
    kernel.submit(
        "from pathlib import Path\nfrom skill_magics.core.run import envbuild\n"
        f"envbuild.build_env(Path({str(home)!r}), ['tinypkg-not-there'], installer='uv')\n"
    )
    installer = None
    deadline = time.monotonic() + 60
    while installer is None and time.monotonic() < deadline:
        for child in psutil.Process(pid).children(recursive=True):
            try:
                if "install" in child.cmdline():
                    installer = child
            except psutil.Error:
                pass
        time.sleep(0.1)
    assert installer is not None, "the build never reached its install step"
    os.kill(pid, signal.SIGKILL)
    # Defect 10: the installer dies with the kernel (it would wait 120 s on the index).
    gone, alive = psutil.wait_procs([installer], timeout=10)
    assert not alive, f"the installer outlived the kernel: {installer.cmdline()}"
    dead = _envs(home) - {first.name, second.name}
    assert len(dead) == 1  # the half-built folder the kernel left

    # Defect 9: the next build removes the dead folder and keeps the one in use before it.
    third = envbuild.build_env(home, ["tinypkg"], installer="uv").path
    assert _envs(home) == {second.name, third.name}
    assert envbuild.current_env(home)[0] == third
    assert json.loads((third / envbuild.INFO_FILE).read_text())["previous"] == second.name
    assert envdirs.env_python(second).exists()
    stall.close()


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
