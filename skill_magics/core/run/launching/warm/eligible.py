"""Can a run start warm at all, decided from the run alone (docs/architecture.md, *Warm
start*): a Python script on Linux, run with flags and an environment a fork reproduces, by a
Python that is not the skill's own when sandboxed; :func:`describe` says it for the approval.
What a server must hold for a run: imports.py; the rest of the choice: launch.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from skill_magics.core.base import paths
from skill_magics.core.run.launching.warm_modes import OFF, ON

if TYPE_CHECKING:
    from skill_magics.core.run.launching.prepared import PreparedRun


# Flags a warm server can start with exactly as the cold run would (others: cold).
_PLAIN_FLAGS = frozenset({"-u", "-O", "-OO", "-B", "-E", "-s", "-I", "-P", "-b", "-bb", "-q", "-S"})
_X_OPTIONS = ("utf8", "warn_default_encoding", "int_max_str_digits", "no_debug_ranges", "dev")
# Variables that make a Python print, trace or stop from its very start: a fork would not.
_STARTUP_VARS = (
    "PYTHONVERBOSE",
    "PYTHONPROFILEIMPORTTIME",
    "PYTHONTRACEMALLOC",
    "PYTHONINSPECT",
    "PYTHONDUMPREFS",
    "PYTHONMALLOCSTATS",
    "PYTHONSHOWREFCOUNT",
)


@dataclass(frozen=True)
class Target:
    """What the command runs: a file or a module, with the interpreter's flags."""

    python: str
    flags: tuple[str, ...]
    target: str  # the script's path, or the module's name
    is_module: bool  # run as ``python -m target``


def describe(prepared: PreparedRun) -> str:
    """How ``prepared`` would start, for the approval panel ('' when it is not a Python
    script: those always start cold). Decided from the run alone: the server may not be
    running yet."""
    if prepared.script is None or prepared.interpreter.script_type != "python":
        return ""
    if prepared.warm_start == OFF:
        return "cold (warm start off for this run: --cold, warm=False or warm_start=off)"
    target = parse_target(prepared)
    why = target if isinstance(target, str) else env_problem(prepared.env)
    profile = prepared.sandbox_profile
    if not why and profile is not None and profile.active and skills_own_python(prepared):
        why = OWN_PYTHON_SANDBOXED
    if why:
        return f"cold: {why}"
    if prepared.warm_start == ON:
        return "warm: forked from a server that imported its packages"
    return "warm when its server is ready (warm_start=auto), else cold"


OWN_PYTHON_SANDBOXED = (
    "the skill's own Python starts sandboxed runs cold (a warm sandbox's first step would "
    "run it holding capabilities)"
)


def skills_own_python(prepared: PreparedRun) -> bool:
    """Is the run's Python the skill's own (its venv: the program, its folder and the
    pyvenv.cfg that picks the standard library are the skill's files, or wherever its
    ``venv`` symlink leads)? Starting it runs the skill's code, which a sandboxed warm
    server's first step must never do: it holds CAP_SYS_ADMIN where no mount is locked yet
    (zygote.stage1)."""
    if prepared.script is None:
        return False
    base = prepared.script.real_base
    program = prepared.program
    return any(
        paths.inside(path, base)
        for path in (
            os.path.abspath(program),  # chosen from the skill's folder: the skill's choice
            os.path.realpath(os.path.dirname(program)),
            os.path.realpath(program),
        )
    )


def quick_cold(prepared: PreparedRun) -> str:
    """Why ``prepared`` starts cold whatever a server could do ('' when that depends on the
    rest of :meth:`WarmLauncher.ticket`): asked first, for every run."""
    if not _LINUX:
        return f"warm start needs Linux (this is {sys.platform})"
    if prepared.script is None or prepared.interpreter.script_type != "python":
        return "warm start is for Python scripts"
    return ""


_LINUX = sys.platform.startswith("linux")


def parse_target(prepared: PreparedRun) -> Target | str:
    """The run's interpreter, flags and target, or why it cannot be warm."""
    why = quick_cold(prepared)
    if why:
        return why
    command, argv = prepared.command, prepared.argv
    head = command[: len(command) - len(argv)] if argv else command
    module = len(head) >= 3 and head[-2] == "-m"
    flags = head[1:-2] if module else head[1:-1]
    bad = _bad_flags(flags)
    if bad:
        return f"interpreter flag {bad} is not reproduced by a warm start"
    return Target(head[0], tuple(flags), head[-1], module)


def _bad_flags(flags: Sequence[str]) -> str:
    words = list(flags)
    while words:
        flag = words.pop(0)
        if flag in _PLAIN_FLAGS:
            continue
        if flag in ("-W", "-X") and words:
            value = words.pop(0)
        elif flag.startswith(("-W", "-X")) and len(flag) > 2:
            value = flag[2:]
        else:
            return flag
        if flag.startswith("-X") and value.split("=", 1)[0] not in _X_OPTIONS:
            return f"-X {value}"
    return ""


def env_problem(env: Mapping[str, str]) -> str:
    for name in _STARTUP_VARS:
        if env.get(name):
            return f"{name} is set: a warm start would not show what it prints at startup"
    return ""


__all__ = [
    "OWN_PYTHON_SANDBOXED",
    "Target",
    "describe",
    "env_problem",
    "parse_target",
    "quick_cold",
    "skills_own_python",
]
