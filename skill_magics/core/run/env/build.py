"""Build a skill's managed environment: a venv outside the skill that sees the kernel's
packages and gets only what is missing (docs/architecture.md, *Real skills*).

The installer is ``uv`` when it is on PATH or installed as the ``uv`` Python package
(``pip install uv``; the ``[env]`` extra), else the standard library's ``venv`` plus pip. Steps::

    uv venv --python <kernel python> <envs>/<skill>/env-<key>-<id>
    (a .pth file listing the kernel's site-packages folders, so pandas is not reinstalled)
    uv pip install --python <env python> pkg1 pkg2

Each step runs like a script run (its own process group, timeout, capped output streamed to
``on_output``); a failure or an interrupt removes the half-built folder and raises ONE
:class:`EnvironmentBuildError` (one line) that ends with the installer's last lines. Only a finished
build is published, by swapping the ``current`` symlink atomically (``os.replace``), so a
run never sees a half-built environment.

Example (not run as a doctest: it builds a virtual environment with pip)::

    built = build_env(skill_env_home(base), ["tabulate"], on_output=print_chunk)
    built.python
    # -> PosixPath('/home/me/.cache/skill-magics/envs/x-3f2a/env-9c1d.../bin/python')
"""

from __future__ import annotations

import json
import os
import shutil
import site
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from skill_magics.core.base import envdirs, safefs
from skill_magics.core.base.errors import EnvironmentBuildError
from skill_magics.core.base.visible import visible
from skill_magics.core.catalog.requirements import requirement_problem
from skill_magics.core.run.launching.process import SpawnError, run_process

INFO_FILE = "skill-magics-env.json"
PTH_FILE = "_skill_magics_kernel.pth"
STEP_TIMEOUT = 600.0  # one installer step; a large wheel on a slow link fits
MAX_OUTPUT = 4 << 20
TAIL_LINES = 6  # errors are one line (core/base/errors.py): the installer's last lines

UV = "uv"
PIP = "pip"


@dataclass(frozen=True)
class BuiltEnv:
    """A finished environment: its folder, interpreter, what was installed and how."""

    path: Path
    python: Path
    packages: tuple[str, ...]
    installer: str
    duration_s: float = 0.0
    commands: tuple[tuple[str, ...], ...] = field(default=(), repr=False)


def find_uv() -> str | None:
    """The uv executable: on PATH, else from the ``uv`` Python package; None without one."""
    found = shutil.which("uv")
    if found:
        return found
    try:
        import uv  # type: ignore[import-not-found,unused-ignore]

        path = uv.find_uv_bin()
    except (ImportError, FileNotFoundError, AttributeError):
        return None
    return path if path and os.path.isfile(path) else None


def choose_installer(installer: str | None = None) -> tuple[str, str | None]:
    """("uv", path) when uv is available (or asked for), else ("pip", None)."""
    if installer not in (None, UV, PIP):
        raise EnvironmentBuildError(f"Unknown installer {installer!r}: use 'uv' or 'pip'")
    if installer == PIP:
        return PIP, None
    uv = find_uv()
    if uv is None and installer == UV:
        raise EnvironmentBuildError("uv was asked for but is not installed: pip install uv")
    return (UV, uv) if uv is not None else (PIP, None)


def install_commands(
    env_dir: Path, packages: Sequence[str], installer: str, uv: str | None
) -> list[tuple[str, ...]]:
    """The commands a build runs, in order (the approval panel shows the install one)."""
    python = str(envdirs.env_python(env_dir))
    if installer == UV and uv is not None:
        return [
            (uv, "venv", "--quiet", "--python", sys.executable, str(env_dir)),
            (uv, "pip", "install", "--python", python, *packages),
        ]
    if _kernel_has_pip():
        # The kernel's pip installs into the new venv (pip >= 22.3 --python): no ensurepip.
        return [
            (sys.executable, "-m", "venv", "--without-pip", str(env_dir)),
            (sys.executable, "-m", "pip", "--python", python, "install", *packages),
        ]
    return [
        (sys.executable, "-m", "venv", str(env_dir)),
        (python, "-m", "pip", "install", *packages),
    ]


def _kernel_has_pip() -> bool:
    try:
        from importlib.metadata import version

        major, minor = (int(x) for x in version("pip").split(".")[:2])
    except Exception:  # noqa: BLE001 - no pip, or an odd version string
        return False
    return (major, minor) >= (22, 3)


def kernel_site_folders() -> list[str]:
    """The kernel's site-packages folders, in its own order (the managed env's .pth)."""
    folders = list(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        folders.append(site.getusersitepackages())
    folders += [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
    return [p for p in dict.fromkeys(os.path.realpath(f) for f in folders) if os.path.isdir(p)]


def new_env_dir(home: Path, packages: Sequence[str]) -> Path:
    """A fresh folder name for a build (never one a run may be using)."""
    return home / f"env-{envdirs.requirements_key(packages)}-{uuid.uuid4().hex[:8]}"


def current_env(home: Path) -> tuple[Path, dict] | None:
    """(folder, its info) of the environment runs use now, or None."""
    link = home / envdirs.CURRENT
    try:
        target = home / os.readlink(link)
        info = json.loads((target / INFO_FILE).read_text("utf-8"))
    except (OSError, ValueError):
        return None
    return target, info if isinstance(info, dict) else {}


def build_env(
    home: Path,
    packages: Sequence[str],
    *,
    skill: str = "",
    installer: str | None = None,
    on_output: Callable[[str, str], object] | None = None,
    cancel: threading.Event | None = None,
    timeout: float = STEP_TIMEOUT,
    env_dir: Path | None = None,
) -> BuiltEnv:
    """Build an environment with ``packages`` under ``home`` and make it ``current``.

    Raises EnvironmentBuildError (nothing half-built left, ``current`` untouched) when a
    step fails, times out or is cancelled; KeyboardInterrupt cleans up and propagates.
    """
    started = time.monotonic()
    for spec in packages:  # in depth: envsetup refuses these before anyone is asked
        why = requirement_problem(spec)
        if why is not None:
            raise EnvironmentBuildError(
                f"Not building the environment{_for(skill)}: {visible(spec[:120])!r} {why}; "
                "pass package names such as 'pypdf>=4'"
            )
    tool, uv = choose_installer(installer)
    key = envdirs.requirements_key(packages)
    home.mkdir(parents=True, exist_ok=True)
    if env_dir is None:
        env_dir = new_env_dir(home, packages)
    if env_dir.exists():
        raise EnvironmentBuildError(f"{env_dir} exists already: build into a new folder")
    commands = install_commands(env_dir, packages, tool, uv)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    done = False
    building = _claim(home, env_dir)  # held while this build lives: never swept
    try:
        _sweep_dead(home)

        for i, command in enumerate(commands):
            _run_step(command, home, environ, timeout, on_output, cancel, skill)
            if i == 0:
                _write_pth(env_dir)
        info = {
            "packages": list(packages),
            "key": key,
            "installer": tool,
            "kernel_python": sys.executable,
            "built": time.time(),
        }
        previous = current_env(home)
        if previous is not None:  # kept by pruning: a run may still be using it
            info["previous"] = previous[0].name
        safefs.write_file(env_dir, INFO_FILE, json.dumps(info, indent=1))
        _publish(home, env_dir)
        done = True
    finally:
        if not done:
            shutil.rmtree(env_dir, ignore_errors=True)
        _release(home, env_dir, building)
    _prune(home, env_dir)
    return BuiltEnv(
        path=env_dir,
        python=envdirs.env_python(env_dir),
        packages=tuple(packages),
        installer=tool,
        duration_s=time.monotonic() - started,
        commands=tuple(commands),
    )


def _run_step(
    command: tuple[str, ...],
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    on_output: Callable[[str, str], object] | None,
    cancel: threading.Event | None,
    skill: str,
) -> None:
    tail: list[str] = []

    def collect(stream: str, text: str) -> None:
        tail.append(text)
        if len(tail) > 200:
            del tail[:100]
        if on_output is not None:
            on_output(stream, text)

    try:
        out = run_process(
            command,
            cwd=cwd,
            env=env,
            payload=None,
            timeout=timeout,
            max_output_size=MAX_OUTPUT,
            on_output=collect,
            cancel=cancel,
            die_with_parent=True,  # a killed kernel takes its installer with it
        )
    except SpawnError as exc:
        raise EnvironmentBuildError(
            f"Building the environment{_for(skill)} failed: could not start {command[0]} "
            f"({exc.strerror or exc}); install uv or check the kernel's Python"
        ) from None
    except ValueError as exc:  # e.g. "embedded null byte": the command cannot be passed
        raise EnvironmentBuildError(
            f"Building the environment{_for(skill)} failed: its command cannot be run ({exc}); "
            "pass package names such as 'pypdf>=4'"
        ) from None
    if out.returncode == 0 and not out.timed_out and not out.cancelled:
        return
    why = (
        f"timed out after {timeout:g} s"
        if out.timed_out
        else "was stopped"
        if out.cancelled
        else f"exited with {out.returncode}"
    )
    last = "".join(tail).strip().splitlines()[-TAIL_LINES:]
    step = " ".join(os.path.basename(c) if i == 0 else c for i, c in enumerate(command[:4]))
    raise EnvironmentBuildError(
        f"Building the environment{_for(skill)} failed: '{step} ...' {why}; nothing was "
        "kept (fix the package names or the network and run it again). Installer's last "
        "lines: " + " | ".join(line.strip() for line in last if line.strip())
    )


def _for(skill: str) -> str:
    return f" for skill {skill!r}" if skill else ""


def _write_pth(env_dir: Path) -> None:
    """Let the env see the kernel's packages, after its own (a .pth adds folders last)."""
    sites = envdirs.env_site_packages(env_dir)
    if not sites:
        raise EnvironmentBuildError(
            f"The new environment {env_dir} has no site-packages folder: the installer made "
            "an unexpected layout"
        )
    lines = "".join(folder + "\n" for folder in kernel_site_folders())
    safefs.write_file(sites[0], PTH_FILE, lines)


def _publish(home: Path, env_dir: Path) -> None:
    """Point ``current`` at ``env_dir`` in one atomic rename."""
    tmp = home / f".current-{uuid.uuid4().hex[:8]}"
    os.symlink(env_dir.name, tmp)
    try:
        os.replace(tmp, home / envdirs.CURRENT)
    except OSError:
        tmp.unlink(missing_ok=True)
        raise


BUILDING = ".building-"  # this + <env folder name>: the lock a live build holds


def _claim(home: Path, env_dir: Path) -> int:
    """Lock ``.building-<env>`` for this build's lifetime (flock: the kernel releases it when
    the process dies, so a build killed with its kernel is known dead by the next one)."""
    import fcntl

    fd = os.open(home / (BUILDING + env_dir.name), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd


def _release(home: Path, env_dir: Path, fd: int) -> None:
    try:
        os.unlink(home / (BUILDING + env_dir.name))
    except OSError:
        pass
    os.close(fd)


def _is_dead(home: Path, env: Path) -> bool:
    """Is ``env`` a build that will never finish (no info file, no live build holding it)?"""
    import fcntl

    if (env / INFO_FILE).is_file():
        return False
    try:
        fd = os.open(home / (BUILDING + env.name), os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return True  # a build claims its lock before it makes its folder
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return False  # a live build
    finally:
        os.close(fd)
    return True


def _sweep_dead(home: Path) -> None:
    """Remove the folders of builds that died with their kernel."""
    try:
        envs = [p for p in home.iterdir() if p.name.startswith("env-") and p.is_dir()]
    except OSError:
        return
    for env in envs:
        if not env.is_symlink() and _is_dead(home, env):
            shutil.rmtree(env, ignore_errors=True)
            try:
                os.unlink(home / (BUILDING + env.name))
            except OSError:
                pass


def _prune(home: Path, keep: Path) -> None:
    """Remove finished environments runs no longer use: never the current one (``keep``,
    what ``current`` names) nor the one before it (a run may still be using it), never a
    build in progress; dead builds go too."""
    now = current_env(home)
    wanted = {keep.name}
    if now is not None:
        wanted.add(now[0].name)
        wanted.add(str(now[1].get("previous", "")))
    try:
        envs = [p for p in home.iterdir() if p.name.startswith("env-") and p.is_dir()]
    except OSError:
        return
    for old in envs:
        if old.name in wanted or old.is_symlink():
            continue
        if (old / INFO_FILE).is_file() or _is_dead(home, old):
            shutil.rmtree(old, ignore_errors=True)


__all__ = [
    "BuiltEnv",
    "UV",
    "PIP",
    "find_uv",
    "choose_installer",
    "install_commands",
    "kernel_site_folders",
    "current_env",
    "new_env_dir",
    "build_env",
]
