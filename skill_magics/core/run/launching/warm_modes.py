"""The warm_start setting's values (kept apart so that reading settings loads nothing else)."""

from __future__ import annotations

from skill_magics.core.base.envsetting import from_env

AUTO, ON, OFF = "auto", "on", "off"
MODES = (AUTO, ON, OFF)
ENV_VAR = "SKILL_MAGICS_WARM_START"  # the default warm_start when none is configured


def check_mode(value: object) -> str:
    """The canonical warm_start ("auto", "on", "off"; True/False read as on/off)."""
    if value is True:
        return ON
    if value is False:
        return OFF
    if isinstance(value, str) and value.strip().lower() in MODES:
        return value.strip().lower()
    raise ValueError(
        f"Unknown warm_start {value!r}: use one of {', '.join(MODES)} (e.g. warm_start='auto')"
    )


def default_mode() -> str:
    """``$SKILL_MAGICS_WARM_START`` when set (checked), else ``auto``."""
    return from_env(ENV_VAR, AUTO, check_mode)


def choose(setting: str, per_run: bool | None) -> str:
    """This run's mode: ``per_run`` True/False (``--warm``/``--cold``) or the setting."""
    if per_run is None:
        return setting
    return ON if per_run else OFF


def in_batch(mode: str) -> str:
    """A batch item's mode: under "auto" it waits for its warm server (a batch is many runs:
    each one starts warm, the first one included)."""
    return ON if mode == AUTO else mode


__all__ = [
    "AUTO",
    "ENV_VAR",
    "MODES",
    "OFF",
    "ON",
    "check_mode",
    "choose",
    "default_mode",
    "in_batch",
]
