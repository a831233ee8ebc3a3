"""The run settings' defaults, in one place and importing nothing: ``RunSettings``
(settings.py) takes its field defaults from here and so do the ``SkillMagics`` traits of the
same names (notebook/magics/skills.py), so the two cannot drift and ``%load_ext`` stays light
(tests/test_ipython_config.py ties them together)."""

from __future__ import annotations

from typing import TypedDict

DEFAULT_TIMEOUT = 30.0  # seconds
DEFAULT_MAX_OUTPUT_SIZE = 10 * 2**20  # bytes kept per stream; the rest is counted
DEFAULT_WARM_IDLE = 600.0  # seconds
DEFAULT_RUN_CWD = "workspace"  # workdir.WORKSPACE


class Defaults(TypedDict):
    """name -> default, for every RunSettings field (None: resolved when a RunSettings is
    made: allowed_interpreters the built-in list, sandbox and warm_start their environment
    variable)."""

    timeout: float
    max_output_size: int
    allowed_interpreters: tuple[str, ...] | None
    inherit_env: bool
    env_passthrough: tuple[str, ...]
    run_cwd: str
    sandbox: str | None
    sandbox_network: tuple[str, ...]
    sandbox_deny_read: tuple[str, ...]
    sandbox_read: tuple[str, ...]
    warm_start: str | None
    warm_idle_timeout: float


DEFAULTS: Defaults = {
    "timeout": DEFAULT_TIMEOUT,
    "max_output_size": DEFAULT_MAX_OUTPUT_SIZE,
    "allowed_interpreters": None,
    "inherit_env": False,
    "env_passthrough": (),
    "run_cwd": DEFAULT_RUN_CWD,
    "sandbox": None,
    "sandbox_network": (),
    "sandbox_deny_read": (),
    "sandbox_read": (),
    "warm_start": None,
    "warm_idle_timeout": DEFAULT_WARM_IDLE,
}

__all__ = [
    "DEFAULTS",
    "Defaults",
    "DEFAULT_MAX_OUTPUT_SIZE",
    "DEFAULT_RUN_CWD",
    "DEFAULT_TIMEOUT",
    "DEFAULT_WARM_IDLE",
]
