"""Run settings: one value holding everything a run is configured with.

:class:`RunSettings` is a frozen dataclass: the time limit, the output cap, the allowed
interpreters, the environment (``inherit_env``, ``env_passthrough``), where runs start
(``run_cwd``), the sandbox (``sandbox``, ``sandbox_network``, ``sandbox_deny_read``,
``sandbox_read``) and how Python scripts start (``warm_start``, ``warm_idle_timeout``:
core/run/launching/warm/).
Its field names are the ``SkillMagics`` traits and the ``SkillManager`` keywords of the same
meaning. Every value is checked (and lists parsed with ``namelist.name_list``, paths with
``namelist.path_list``) when a
``RunSettings`` is made, so a bad value fails where it is set, in one line naming the fix.

Nothing keeps a copy: the manager holds the current value and the planner reads it for each
run (``SkillManager.settings``; ``configure`` replaces it), so a change counts from the next
run on and nothing is rebuilt. Batch workers get the same value as it is (it pickles).
A new setting is one more field here.

Example:
    >>> settings = RunSettings(timeout=60, env_passthrough="OPENAI_API_KEY, HF_TOKEN")
    >>> settings.env_passthrough
    ('OPENAI_API_KEY', 'HF_TOKEN')
    >>> settings.updated(timeout=0)
    Traceback (most recent call last):
    ValueError: timeout 0 s is out of range: use 1 to 600 seconds
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, fields
from typing import Any

from skill_magics.core.base import interpreters
from skill_magics.core.base.namelist import name_list, path_list
from skill_magics.core.run.defaults import (
    DEFAULT_MAX_OUTPUT_SIZE,
    DEFAULT_RUN_CWD,
    DEFAULT_TIMEOUT,
    DEFAULT_WARM_IDLE,
)
from skill_magics.core.run.launching import warm_modes
from skill_magics.core.run.launching.sandbox import check_mode, default_mode
from skill_magics.core.run.planning import workdir

MIN_WARM_IDLE = 1
MAX_WARM_IDLE = 24 * 3600

MIN_TIMEOUT = 1
MAX_TIMEOUT = 600


def check_timeout(timeout: Any) -> float:
    """``timeout`` as seconds (float); ValueError naming the range when it is not 1-600."""
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise ValueError(f"timeout must be a number of seconds, got {timeout!r}: use e.g. 60")
    if not MIN_TIMEOUT <= timeout <= MAX_TIMEOUT:
        raise ValueError(
            f"timeout {timeout!r} s is out of range: use {MIN_TIMEOUT} to {MAX_TIMEOUT} seconds"
        )
    return float(timeout)


def check_warm_idle(value: Any) -> float:
    """``value`` as seconds a warm server may stay idle; ValueError naming the range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"warm_idle_timeout must be a number of seconds, got {value!r}")
    if not MIN_WARM_IDLE <= value <= MAX_WARM_IDLE:
        raise ValueError(
            f"warm_idle_timeout {value!r} s is out of range: use {MIN_WARM_IDLE} to "
            f"{MAX_WARM_IDLE} seconds"
        )
    return float(value)


def check_max_output_size(value: Any) -> int:
    """``value`` as a byte count >= 0; ValueError naming the fix otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"max_output_size {value!r} is invalid: use a number of bytes >= 0")
    return value


@dataclass(frozen=True)
class RunSettings:
    """How runs are configured (see the module docstring). Checked when made; frozen.
    The defaults are defaults.py's (the SkillMagics traits read the same)."""

    timeout: float = DEFAULT_TIMEOUT  # seconds before the process group is killed (1-600)
    max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE  # bytes of stdout and of stderr kept
    allowed_interpreters: tuple[str, ...] | None = None  # None: python3, bash, sh, node
    inherit_env: bool = False  # the whole environment instead of the minimal one
    env_passthrough: tuple[str, ...] = ()  # names (or globs) added to the minimal one
    run_cwd: str = DEFAULT_RUN_CWD  # "workspace", "skill" or a folder
    sandbox: str | None = None  # off, read-only, workspace-write, auto (None: the env var)
    sandbox_network: tuple[str, ...] = ()  # skills with network in sandboxed runs ("*": all)
    sandbox_deny_read: tuple[str, ...] = ()  # more paths sandboxed runs may not read
    sandbox_read: tuple[str, ...] = ()  # folders every sandboxed run is given read-only
    warm_start: str | None = None  # auto, on, off (None: $SKILL_MAGICS_WARM_START, else auto)
    warm_idle_timeout: float = DEFAULT_WARM_IDLE  # seconds before an idle warm server stops
    # Derived: the canonical names of allowed_interpreters (what the checks compare).
    allowed: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        set_ = object.__setattr__  # frozen: normalise once, here
        for name, check in _CHECKS.items():
            set_(self, name, check(getattr(self, name)))
        set_(self, "allowed", _canonical(self.allowed_interpreters))

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The settings' names (the ``SkillMagics`` traits that set them)."""
        return tuple(f.name for f in fields(cls) if f.init)

    def updated(self, **changes: Any) -> RunSettings:
        """A copy with ``changes`` (checked); unknown names raise TypeError naming them."""
        unknown = sorted(set(changes) - set(self.names()))
        if unknown:
            raise TypeError(
                f"Unknown run setting(s) {', '.join(unknown)}: use {', '.join(self.names())}"
            )
        if not changes:
            return self
        # Only the changed fields are checked again (a run's overrides: for_run, every run).
        copied = copy.copy(self)
        set_ = object.__setattr__
        for name, value in changes.items():
            set_(copied, name, _CHECKS[name](value))
        if "allowed_interpreters" in changes:
            set_(copied, "allowed", _canonical(copied.allowed_interpreters))
        return copied

    def for_run(self, overrides: RunOverrides | None = None, **keywords: Any) -> RunSettings:
        """The settings of one run: its :class:`RunOverrides` (or the same as keywords:
        ``timeout``, ``sandbox``, ``cwd``, ``warm``; None keeps the setting) applied with
        :meth:`updated` (checked). No override: this same value."""
        changes = (overrides or RunOverrides(**keywords)).changes()
        return self.updated(**changes) if changes else self

    def allows_network(self, skill: str) -> bool:
        """Does ``sandbox_network`` give ``skill`` the network in sandboxed runs?"""
        return skill in self.sandbox_network or "*" in self.sandbox_network

    @property
    def allow_typescript(self) -> bool:
        """``.ts`` files count as scripts only when tsx may run them."""
        return "tsx" in self.allowed


@dataclass(frozen=True)
class RunOverrides:
    """What one call changes of the run settings (the ``timeout``, ``sandbox``, ``cwd``,
    ``warm`` keywords of ``plan``, ``execute_skill_script``, ``plan_map``, ``map`` and
    ``ScriptExecutor.execute``); None keeps the setting. ``cwd`` sets ``run_cwd``;
    ``warm`` True/False sets ``warm_start`` "on"/"off"."""

    timeout: float | None = None
    sandbox: str | None = None
    cwd: workdir.CwdArg | None = None
    warm: bool | None = None

    def changes(self) -> dict[str, Any]:
        """The RunSettings fields it changes (``RunSettings.updated``'s keywords)."""
        changes: dict[str, Any] = {}
        if self.timeout is not None:
            changes["timeout"] = self.timeout
        if self.sandbox is not None:
            changes["sandbox"] = self.sandbox
        if self.cwd is not None:
            changes["run_cwd"] = self.cwd
        if self.warm is not None:
            changes["warm_start"] = warm_modes.ON if self.warm else warm_modes.OFF
        return changes


def _run_cwd(value: Any) -> str:
    cwd = workdir.check_cwd(value)
    return workdir.SKILL if cwd is None else os.fspath(cwd)


def _canonical(chosen: tuple[str, ...] | None) -> frozenset[str]:
    names = interpreters.DEFAULT_ALLOWED if chosen is None else chosen
    return frozenset(interpreters.canonical(n) for n in names)


# Each field's check: the value as kept (normalised), or a one-line error naming the fix.
_CHECKS: dict[str, Callable[[Any], Any]] = {
    "timeout": check_timeout,
    "max_output_size": check_max_output_size,
    "allowed_interpreters": lambda v: None if v is None else name_list(v),
    "inherit_env": bool,
    "env_passthrough": name_list,
    "run_cwd": _run_cwd,
    "sandbox": lambda v: default_mode() if v is None else check_mode(v),
    "sandbox_network": name_list,
    "sandbox_deny_read": path_list,  # a string is one path (it may hold spaces)
    "sandbox_read": path_list,
    "warm_start": lambda v: warm_modes.default_mode() if v is None else warm_modes.check_mode(v),
    "warm_idle_timeout": check_warm_idle,
}


def settings_of(values: Iterable[tuple[str, Any]]) -> RunSettings:
    """RunSettings from (name, value) pairs that may hold other names (they are skipped)."""
    wanted = set(RunSettings.names())
    return RunSettings(**{name: value for name, value in values if name in wanted})


__all__ = [
    "MIN_TIMEOUT",
    "MAX_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "RunOverrides",
    "RunSettings",
    "check_timeout",
    "check_max_output_size",
    "check_warm_idle",
    "DEFAULT_WARM_IDLE",
    "settings_of",
]
