"""What a warm server imports for a run, and the skill's own modules a fork could not
reproduce: the packages worth preloading (:func:`script_imports`, :func:`preload_names`),
and why a run starts cold when a skill's module has the name of one the server holds (a cold
run would import the skill's: :func:`shadowed`, :func:`ships_held`)."""

from __future__ import annotations

import importlib.machinery
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from skill_magics.core.base import envdirs

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun
    from skill_magics.core.run.launching.warm.eligible import Target
    from skill_magics.core.run.launching.warm.server import WarmServer
    from skill_magics.core.run.launching.warm.skillcode import SkillCode


def folders_stamp(python: str) -> tuple[int, ...]:
    """The mtimes of ``python``'s import folders (an install changes one of them)."""
    out = []
    for folder in envdirs.import_path(python):
        try:
            out.append(os.stat(folder).st_mtime_ns)
        except OSError:
            out.append(0)
    return tuple(out)


# -- a skill's modules that the server already holds -----------------------------------------

_LOCAL: dict[str, tuple[int, frozenset[str], tuple[tuple[str, int], ...]]] = {}
_PACKAGE_INITS = tuple(f"__init__{suffix}" for suffix in importlib.machinery.all_suffixes())


def _local_modules(folder: str) -> frozenset[str]:
    """Top-level names a folder on sys.path provides (modules, sourceless ``.pyc`` modules,
    extension modules and regular packages). Remembered while the folder and its other
    subfolders keep their mtimes (an ``__init__.py`` added to one changes only its own)."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return frozenset()
    hit = _LOCAL.get(folder)
    if hit is not None and hit[0] == mtime and all(_mtime(d) == m for d, m in hit[2]):
        return hit[1]
    names = set()
    plain: list[tuple[str, int]] = []  # subfolders that are no package (yet)
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                name = entry.name
                if name.endswith(".py"):
                    names.add(name[:-3])
                elif name.endswith(".pyc"):  # imported without a source, as python does
                    names.add(name[:-4])
                elif name.endswith(".so") or name.endswith(".pyd"):
                    names.add(name.split(".", 1)[0])
                elif entry.is_dir():
                    if any(os.path.exists(os.path.join(entry.path, i)) for i in _PACKAGE_INITS):
                        names.add(name)
                    else:
                        plain.append((entry.path, _mtime(entry.path)))
    except OSError:
        pass
    found = frozenset(names)
    if len(_LOCAL) > 1024:
        _LOCAL.clear()
    _LOCAL[folder] = (mtime, found, tuple(plain))
    return found


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


_STARTUP_HOOKS = frozenset({"sitecustomize", "usercustomize"})  # what site imports at start


def shadowed(
    prepared: PreparedRun, target: Target, server: WarmServer, env: Mapping[str, str]
) -> str:
    """Why a cold run would import one of the skill's own modules where the server already
    holds a module of that name ('' when none): from any folder the cold run's sys.path puts
    before the server's own (the script's folder, or the cwd for ``-m``; PYTHONPATH). A
    ``sitecustomize``/``usercustomize`` on PYTHONPATH counts too: a cold start runs it
    before the script (site imports it), the server never does."""
    assert prepared.script is not None
    held = server.report.modules
    if "-S" not in target.flags:
        hooks = _STARTUP_HOOKS
    else:
        hooks = frozenset()
    server_path = {os.path.realpath(p) for p in server.path}
    for folder, at_startup in _path_front(prepared, target, env):
        if os.path.realpath(folder) in server_path:
            continue  # the server imported from there too: the same modules
        clash = sorted(_local_modules(folder) & (held | hooks if at_startup else held))
        if clash:
            return (
                f"the skill's own module {clash[0]!r} has the name of a module the warm server "
                "holds (a cold run imports the skill's)"
            )
    return ""


def ships_held(code: SkillCode, server: WarmServer) -> str:
    """Why the run starts cold when the skill ships, anywhere in its folder, a module of a
    name the server holds (a preloaded package pulled it in): a script may put that folder
    first on sys.path, and a cold run would then import the skill's own."""
    clash = sorted(code.shipped & server.report.modules)
    if not clash:
        return ""
    return (
        f"the skill ships a module named {clash[0]!r}, which the warm server holds (a cold "
        "run may import the skill's)"
    )


def _path_front(
    prepared: PreparedRun, target: Target, env: Mapping[str, str]
) -> list[tuple[str, bool]]:
    """The folders a cold ``python [flags] script`` puts in front of its installation's
    sys.path, each with whether it is there at startup (when site runs): the script's
    folder (the cwd for ``-m``; added after startup) unless safe-path, then PYTHONPATH
    (relative entries from the run's cwd) unless -E/-I."""
    flags = set(target.flags)
    isolated = "-I" in flags
    ignore_env = isolated or "-E" in flags
    safe = isolated or "-P" in flags or (not ignore_env and bool(env.get("PYTHONSAFEPATH")))
    cwd = os.fspath(prepared.cwd)
    out = []
    if not safe:
        if target.is_module:
            out.append((cwd, False))
        else:
            out.append((os.path.dirname(os.path.realpath(target.target)), False))
    if not ignore_env:
        for entry in env.get("PYTHONPATH", "").split(os.pathsep):
            if entry:
                out.append((os.path.normpath(os.path.join(cwd, entry)), True))
    return out


# -- preloading ----------------------------------------------------------------------------


def script_imports(prepared: PreparedRun) -> Sequence[str]:
    """The third-party packages the run's script imports, installed for its Python (from
    the requirements analysis of that script alone)."""
    from skill_magics.core.base.models import ScriptMetadata
    from skill_magics.core.catalog.requirements import skill_requirements

    if prepared.script is None:
        return ()
    rel = prepared.script_rel
    meta = ScriptMetadata(rel.stem, rel, "python", "python3")
    reqs = skill_requirements(
        prepared.skill_name, prepared.script.real_base, [meta], python=prepared.program
    )
    return preload_names(reqs, rel.as_posix())


def preload_names(reqs: Any, script: str) -> tuple[str, ...]:
    """Import names of the installed packages ``script`` needs (``Requirements``)."""
    out: list[str] = []
    for pkg in reqs.packages:
        if pkg.installed and script in pkg.scripts:
            out.extend(pkg.imports)
    return tuple(dict.fromkeys(out))


__all__ = ["folders_stamp", "preload_names", "script_imports", "shadowed", "ships_held"]
