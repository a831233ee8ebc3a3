"""Where a skill's managed environment lives, and which Python runs a skill's scripts.

Managed environments (docs/architecture.md, *Real skills*) live outside the skill folder, in
a user cache folder: ``$SKILL_MAGICS_ENV_DIR``, else ``$XDG_CACHE_HOME/skill-magics/envs``,
else ``~/.cache/skill-magics/envs`` (``%LOCALAPPDATA%`` on Windows). Layout::

    envs/<skill folder>-<hash of the skill's real path>/     (never the skill's name)
        env-<hash of the requirements and the kernel's Python>/   one built environment
        current -> env-...                                       the one runs use

``current`` is a symlink swapped atomically when a build finishes, so a run sees either the
old environment or the new one, never a half-built one.

The Python for a skill's ``.py`` scripts, in order: the skill's own ``venv/`` or ``.venv/``,
then its managed environment, then the kernel's interpreter (:func:`choose_python`).

Example:
    >>> choose_python(Path("skills/csv-profiler"))  # no venv/, no managed env built
    ('...', 'kernel')
"""

from __future__ import annotations

import hashlib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

from skill_magics.core.base.interpreters import skill_venv_python

ENV_DIR_VAR = "SKILL_MAGICS_ENV_DIR"
CURRENT = "current"
_WINDOWS = sys.platform == "win32"
PYTHON_REL = ("Scripts", "python.exe") if _WINDOWS else ("bin", "python")

SKILL_VENV = "skill venv"
MANAGED_ENV = "managed env"
KERNEL = "kernel"

_KEYS: dict[str, str] = {}  # abspath of a skill -> its folder name under envs_root()


def envs_root() -> Path:
    """The folder that holds every managed environment (created on first build)."""
    override = os.environ.get(ENV_DIR_VAR)
    if override:
        return Path(override).expanduser()
    if _WINDOWS:
        base = os.environ.get("LOCALAPPDATA") or os.path.expanduser("~/AppData/Local")
        return Path(base) / "skill-magics" / "envs"
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "skill-magics" / "envs"


def skill_key(skill_base_dir: str | os.PathLike[str]) -> str:
    """``<folder>-<16 hex of the real path>``: one folder per skill location.

    ``<folder>`` is only a label: the skill folder's last component with everything but
    letters, digits, ``-``, ``_`` and ``.`` replaced, cut at 40 characters. The key always
    ends in ``-<hex>``, so it is one folder name (never ``.`` or ``..``). The skill's *name*,
    which its author chose, plays no part (docs/architecture.md, *Real skills*)."""
    absolute = os.path.abspath(skill_base_dir)
    hit = _KEYS.get(absolute)
    if hit is None:
        real = os.path.realpath(absolute)
        digest = hashlib.sha256(real.encode("utf-8", "surrogateescape")).hexdigest()[:16]
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in os.path.basename(real))
        hit = _KEYS[absolute] = f"{name[:40]}-{digest}"
    return hit


def skill_env_home(skill_base_dir: str | os.PathLike[str]) -> Path:
    """The folder holding the managed environments of one skill."""
    return envs_root() / skill_key(skill_base_dir)


def requirements_key(specs: Iterable[str], python: str = sys.executable) -> str:
    """Hash of what an environment was built for: its package specs and the base Python."""
    text = "\0".join(sorted(set(specs))) + "\0" + os.path.realpath(python)
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


def env_python(env_dir: str | os.PathLike[str]) -> Path:
    """The interpreter inside an environment folder (it may not exist)."""
    return Path(env_dir, *PYTHON_REL)


_ROOTS: dict[tuple[str | None, ...], str] = {}
_VENV_DIRS = ("venv", ".venv")


def _root_str() -> str:
    # Called on every run: cached per the variables it depends on (~1 us instead of ~10 us).
    get = os.environ.get
    key = (get(ENV_DIR_VAR), get("XDG_CACHE_HOME"), get("HOME"), get("LOCALAPPDATA"))
    hit = _ROOTS.get(key)
    if hit is None:
        hit = _ROOTS[key] = os.fspath(envs_root())
    return hit


def managed_python(skill_base_dir: str | os.PathLike[str]) -> str | None:
    """The skill's managed environment's Python, or None when it has none (one stat)."""
    candidate = os.path.join(_root_str(), skill_key(skill_base_dir), CURRENT, *PYTHON_REL)
    return candidate if os.path.isfile(candidate) else None


def choose_python(skill_base_dir: str | os.PathLike[str]) -> tuple[str, str]:
    """(interpreter path, where it comes from): skill venv, managed env, else the kernel's.

    Runs on every script run, so it costs a few stats: one per venv folder name, one for the
    managed env (docs/architecture.md, *Real skills*; bench/bench_requirements.py).
    """
    base = os.fspath(skill_base_dir)
    for name in _VENV_DIRS:
        if os.path.isdir(os.path.join(base, name)):
            venv = skill_venv_python(Path(base))
            if venv is not None:
                return str(venv), SKILL_VENV
            break
    managed = managed_python(base)
    if managed is not None:
        return managed, MANAGED_ENV
    return sys.executable, KERNEL


def environment_id(skill_base_dir: str | os.PathLike[str]) -> str:
    """Which managed environment runs the skill's Python scripts now: the folder ``current``
    points at (``env-<key>-<id>``, new for every build), or "" when none does (the skill's
    own venv, which its fingerprint covers, or the kernel). A "Yes in session" holds for one
    environment only (docs/architecture.md, *Real skills*)."""
    base = os.fspath(skill_base_dir)
    if choose_python(base)[1] != MANAGED_ENV:
        return ""
    try:
        return os.readlink(os.path.join(_root_str(), skill_key(base), CURRENT))
    except OSError:
        return ""


def env_site_packages(env_dir: str | os.PathLike[str]) -> list[str]:
    """The ``site-packages`` folders of a venv (POSIX ``lib/pythonX.Y/``, Windows ``Lib/``)."""
    root = os.fspath(env_dir)
    found = []
    for lib in ("lib", "Lib", "lib64"):
        lib_dir = os.path.join(root, lib)
        try:
            names = sorted(os.listdir(lib_dir))
        except OSError:
            continue
        if "site-packages" in names:
            found.append(os.path.join(lib_dir, "site-packages"))
        for name in names:
            if name.startswith("python"):
                site = os.path.join(lib_dir, name, "site-packages")
                if os.path.isdir(site):
                    found.append(site)
    return list(dict.fromkeys(os.path.realpath(p) for p in found))


def python_version(python: str) -> tuple[int, int] | None:
    """(major, minor) of an interpreter without running it: the kernel's, or a venv's
    ``pyvenv.cfg``; None when unknown."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return sys.version_info[:2]
    cfg = Path(python).parent.parent / "pyvenv.cfg"
    try:
        text = cfg.read_text("utf-8", "replace")
    except OSError:
        return None
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() in ("version", "version_info"):
            parts = value.strip().split(".")
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                return int(parts[0]), int(parts[1])
    return None


_PATHS: dict[tuple[str, int], list[str]] = {}


def import_path(python: str) -> list[str]:
    """Where ``python`` finds third-party packages, without running it.

    The kernel: its own ``sys.path``. A venv (the skill's, or a managed one): its
    ``site-packages``, the folders its ``.pth`` files add (a managed env lists the kernel's
    there), and the base Python's when ``include-system-site-packages = true``.
    """
    if os.path.realpath(python) == os.path.realpath(sys.executable) and python == sys.executable:
        return [p for p in sys.path if p and p != os.getcwd()]
    env = Path(os.path.realpath(Path(python).parent.parent))  # `current` resolved, not python
    cfg = env / "pyvenv.cfg"
    try:
        key = (str(env), cfg.stat().st_mtime_ns)
    except OSError:
        return []
    hit = _PATHS.get(key)
    if hit is not None:
        return hit
    sites = env_site_packages(env)
    found = list(sites)
    for site in sites:
        try:
            pth_files = sorted(n for n in os.listdir(site) if n.endswith(".pth"))
        except OSError:
            continue
        for name in pth_files:
            try:
                lines = Path(site, name).read_text("utf-8", "replace").splitlines()
            except OSError:
                continue
            for line in lines:
                line = line.strip()
                if line and not line.startswith(("#", "import ", "import\t")):
                    folder = os.path.join(site, line)
                    if os.path.isdir(folder):
                        found.append(os.path.realpath(folder))
    settings = _cfg(cfg)
    if settings.get("include-system-site-packages", "").lower() == "true" and settings.get("home"):
        found += env_site_packages(Path(settings["home"]).parent)
    result = list(dict.fromkeys(found))
    _PATHS[key] = result
    return result


def _cfg(path: Path) -> dict[str, str]:
    try:
        text = path.read_text("utf-8", "replace")
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            out[key.strip()] = value.strip()
    return out


__all__ = [
    "ENV_DIR_VAR",
    "CURRENT",
    "SKILL_VENV",
    "MANAGED_ENV",
    "KERNEL",
    "envs_root",
    "skill_key",
    "skill_env_home",
    "requirements_key",
    "env_python",
    "managed_python",
    "choose_python",
    "environment_id",
    "env_site_packages",
    "python_version",
    "import_path",
]
