"""What a run that passed every check is, handed from the plan to the launch: a
:class:`PreparedRun` (the exact command, environment, cwd, stdin and limits).

planning/checks.py makes it (the only maker); the launchers, the executor and the gate read it.
It lives with the launch stage, which defines what a launch needs, so the stages import
downwards (docs/architecture.md, *The executor contract*).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_magics.core.base import paths
from skill_magics.core.base.audit import arguments_preview
from skill_magics.core.base.interpreters import InterpreterSpec
from skill_magics.core.run.defaults import DEFAULT_MAX_OUTPUT_SIZE, DEFAULT_WARM_IDLE
from skill_magics.core.run.launching import warm_modes
from skill_magics.core.run.launching.sandbox import RunSandbox


@dataclass(frozen=True)
class PreparedRun:
    """A run that passed every check and is ready to spawn (nothing has started yet).

    ``command`` is the full argv; ``payload`` the JSON bytes for stdin (None: stdin is empty).
    """

    skill_name: str
    script_rel: Path  # relative to the skill base dir
    script: paths.ResolvedScript | None = field(repr=False)  # None: a command, no script file
    interpreter: InterpreterSpec
    command: tuple[str, ...]
    payload: bytes | None = field(repr=False)
    env: Mapping[str, str] = field(repr=False)
    cwd: Path  # where it starts (realpath): the skill, the workspace or a folder
    timeout: float
    # What the audit shows as the arguments of a command (RunChecks.command); None for a
    # script: worked out from payload and argv whenever a record is made, so a secret
    # provided after the checks (in the approval panel) is masked before the cut too.
    label_preview: str | None
    argv: tuple[str, ...] = ()
    # How the run is isolated (None: no sandbox); bwrap wraps ``command`` at spawn time.
    sandbox_profile: RunSandbox | None = None  # settings.sandbox is the mode's name
    secrets: tuple[str, ...] = ()  # secret names the skill declares (values added at spawn)
    max_output_size: int = DEFAULT_MAX_OUTPUT_SIZE  # bytes of each stream kept
    # How the executor may start it (core/run/launching/warm/): "auto", "on" or "off" (always cold),
    # and how long its warm server may stay idle. Nothing else about the run depends on it.
    warm_start: str = warm_modes.OFF  # the same values as RunSettings.warm_start
    warm_idle: float = DEFAULT_WARM_IDLE

    @classmethod
    def of_fields(cls, values: dict[str, Any]) -> PreparedRun:
        """A PreparedRun from a dict holding every field (RunChecks, for every run): one
        store, where a frozen dataclass's __init__ sets each field with a call of its own.
        ``values`` becomes the instance's; tests check it names every field."""
        run = object.__new__(cls)
        object.__setattr__(run, "__dict__", values)
        return run

    @property
    def program(self) -> str:
        """The executable that will run (the resolved interpreter)."""
        return self.command[0]

    @property
    def arguments_preview(self) -> str:
        """The audit's text for what the run was given (secrets masked, then cut)."""
        if self.label_preview is not None:
            return self.label_preview
        return arguments_preview(None, self.argv, encoded=self.payload)


__all__ = ["PreparedRun"]
