"""A run's environment and command line as the operating system takes them: the minimal
environment a child gets (``BASE_ENV``, ``LC_*``, what ``env_passthrough`` names, the skill's
variables; planning/checks.py decides it), and the refusal of a command line the kernel would
reject (E2BIG) before anything is spawned."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from fnmatch import fnmatchcase
from pathlib import Path

from skill_magics.core.base.errors import (
    ArgumentSizeError,
)
from skill_magics.core.base.models import SkillMetadata
from skill_magics.core.base.version import VERSION as _VERSION
from skill_magics.core.run.planning import workdir
from skill_magics.core.run.planning.settings import (
    RunSettings,
)

# Variables a script may reasonably need to behave like it does in a terminal; nothing that
# usually carries credentials. Anything else needs env_passthrough or inherit_env.
_POSIX_ENV = ("PATH", "HOME", "LANG", "LANGUAGE", "TMPDIR", "TERM", "USER", "LOGNAME", "TZ")
_WINDOWS_ENV = (
    "PATH",
    "PATHEXT",
    "SYSTEMROOT",
    "SYSTEMDRIVE",
    "WINDIR",
    "COMSPEC",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "USERNAME",
    "HOMEDRIVE",
    "HOMEPATH",
    "APPDATA",
    "LOCALAPPDATA",
    "PROGRAMDATA",
    "PROGRAMFILES",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    "LANG",
    "TZ",
)
_WINDOWS = sys.platform == "win32"
BASE_ENV: tuple[str, ...] = _WINDOWS_ENV if _WINDOWS else _POSIX_ENV
_BASE_ENV_SET = frozenset(BASE_ENV)
_BASE_ENV_BYTES = frozenset(os.fsencode(name) for name in BASE_ENV)


# The last environment _base_env read (bytes snapshot) and what it kept: comparing two
# snapshots (C level, values compared by identity first) costs less than decoding again.
_LAST_BASE_ENV: list[tuple[dict[bytes, bytes], dict[str, str]] | None] = [None]


def _base_env() -> dict[str, str]:
    """The inherited part of the minimal environment: BASE_ENV names and LC_* from os.environ.

    On POSIX this reads os.environ's underlying bytes mapping and decodes only the few entries
    kept: decoding every name of a large environment cost more than the rest of prepare()
    (~13 us warm, ~30 us right after a spawn, for 35 variables). Elsewhere, or should CPython
    ever change that private mapping, it walks the names of os.environ itself.
    """
    data = getattr(os.environ, "_data", None)
    if not _WINDOWS and isinstance(data, dict):
        last = _LAST_BASE_ENV[0]
        # One C-level comparison (bytes values: no Python code runs, so no other thread
        # edits os.environ meanwhile): unchanged since the last run, nothing to decode.
        if last is not None and last[0] == data:
            return dict(last[1])
        snapshot = dict(data)  # one C-level copy: another thread may be editing os.environ
        enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
        env = {
            key.decode(enc, errors): value.decode(enc, errors)  # what os.fsdecode does
            for key, value in snapshot.items()
            if key in _BASE_ENV_BYTES or key[:3] == b"LC_"
        }
        _LAST_BASE_ENV[0] = (snapshot, env)  # one store: a reader sees a pair or the other
        return dict(env)
    source = os.environ
    env = {}
    for key in list(source):
        upper = key.upper() if _WINDOWS else key
        if upper in _BASE_ENV_SET or upper.startswith("LC_"):
            env[key] = source[key]
    return env


def child_env(
    settings: RunSettings, metadata: SkillMetadata, base_dir: str | os.PathLike[str]
) -> dict[str, str]:
    """The child's environment, read from os.environ now (it may change between runs)."""
    source = os.environ
    if settings.inherit_env:
        env = dict(source)
    else:
        env = _base_env()
        names = None
        for pattern in settings.env_passthrough:
            if any(ch in pattern for ch in "*?["):
                names = list(source) if names is None else names
                env.update((k, source[k]) for k in names if fnmatchcase(k, pattern))
            elif pattern in source:
                env[pattern] = source[pattern]
    env.update(
        SKILL_NAME=metadata.name,
        SKILL_BASE_DIR=os.fspath(base_dir),
        SKILL_WORKSPACE=workdir.workspace(),  # the caller's folder, whatever the cwd
        SKILL_VERSION=metadata.version or "",
        SKILLKIT_VERSION=_VERSION,
        SKILL_MAGICS_VERSION=_VERSION,
        # Our runs write no bytecode, so a .pyc that appears in the skill's __pycache__/
        # after an approved run is that run's doing, and lapses the approval (discovery).
        # Not PYTHONPYCACHEPREFIX: it also moves the stdlib's and site-packages' bytecode,
        # so every import would compile from source (import pandas: 0.48 s -> 2.06 s).
        PYTHONDONTWRITEBYTECODE="1",
    )
    return env


# Linux refuses any single argv/env string longer than MAX_ARG_STRLEN (32 pages), and the
# whole argv + env beyond ARG_MAX (minus what the loader needs): execve fails with E2BIG.
_MAX_ARG_STRLEN = 32 * 4096 if sys.platform.startswith("linux") else None
_ARG_MARGIN = 16 * 1024


_ARG_MAX: list[int] = []  # looked up once (sysconf costs a system call per run otherwise)


def _arg_max() -> int:
    if _ARG_MAX:
        return _ARG_MAX[0]
    try:
        value = os.sysconf("SC_ARG_MAX")
    except (AttributeError, ValueError, OSError):
        value = -1
    if value <= 0:
        value = 32_767 if _WINDOWS else 256 * 1024  # Windows' command line; POSIX floor
    _ARG_MAX.append(value)
    return value


_FAST_LIMIT: list[int] = []  # what the fast path's bound must fit (both limits at once)


def _fast_limit() -> int:
    limit = _arg_max() - _ARG_MARGIN
    if _MAX_ARG_STRLEN is not None:
        limit = min(limit, _MAX_ARG_STRLEN)
    _FAST_LIMIT.append(limit)
    return limit


def check_exec_size(command: Sequence[str], env: Mapping[str, str], rel: Path) -> None:
    """Refuse, before spawning, a command line the kernel would reject (E2BIG)."""
    # Fast path (every ordinary run): UTF-8 needs at most 4 bytes per character, so when
    # even that bound fits both limits, nothing needs encoding (~1 us instead of ~8 us).
    chars = sum(map(len, command)) + sum(map(len, env)) + sum(map(len, env.values()))
    bound = 4 * chars + 16 * (len(command) + len(env))
    if bound <= (_FAST_LIMIT[0] if _FAST_LIMIT else _fast_limit()):
        return
    pointer = 8  # each string costs a pointer in argv[]/envp[] too
    total = 0
    longest = 0
    for item in command:
        size = len(os.fsencode(item)) + 1
        longest = max(longest, size)
        total += size + pointer
    for key, value in env.items():
        size = len(os.fsencode(key)) + len(os.fsencode(value)) + 2
        longest = max(longest, size)
        total += size + pointer
    limit = _arg_max() - _ARG_MARGIN
    if total > limit or (_MAX_ARG_STRLEN is not None and longest > _MAX_ARG_STRLEN):
        what = (
            f"one argument is {longest:,} bytes (limit {_MAX_ARG_STRLEN:,})"
            if _MAX_ARG_STRLEN is not None and longest > _MAX_ARG_STRLEN
            else f"argv and environment total {total:,} bytes (limit about {limit:,})"
        )
        raise ArgumentSizeError(
            f"Command line for {rel} is too large for the operating system: {what}: pass "
            "big data as JSON arguments on stdin (arguments=...) instead of argv"
        )


__all__ = ["BASE_ENV", "check_exec_size", "child_env"]
