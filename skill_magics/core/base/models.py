"""Plain value objects shared by every layer (no I/O here)."""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_magics.core.base.deprecation import deprecation_message
from skill_magics.core.base.status import RunStatus, ScriptRole

TIMEOUT_EXIT_CODE = 124  # a run stopped at its time limit (what coreutils `timeout` returns)


@dataclass
class SkillMetadata:
    """What SKILL.md's frontmatter says about a skill (progressive disclosure level 1)."""

    name: str
    description: str
    path: Path  # absolute path of SKILL.md
    version: str | None = None
    license: str | None = None
    compatibility: str | None = None
    allowed_tools: list[str] | None = None  # None: no restriction declared
    metadata: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.path.parent


@dataclass(frozen=True)
class ScriptMetadata:
    """A script found inside a skill.

    Example: ScriptMetadata("extract", Path("scripts/extract.py"), "python", "python3", "Pull text")
    """

    name: str  # file stem
    path: Path  # relative to the skill base dir
    script_type: str  # python, bash, node, ruby, perl, typescript, sh
    interpreter: str  # command name, e.g. "python3", "bash", "node"
    description: str = ""
    # May it run, and is it offered (tool, completion, %skills show's main table)? Decided
    # by catalog/kinds.py (docs/architecture.md, *Real skills*).
    role: ScriptRole = ScriptRole.OFFERED
    # Dotted module name when it runs as ``python -m <module>`` from the skill root ("": as a
    # file), e.g. "scripts.run_eval" for a script doing ``from scripts.utils import ...``.
    module: str = ""

    @property
    def runnable(self) -> bool:
        """May it run? Everything but ``__init__.py`` and modules that only define things."""
        return self.role.runnable

    @property
    def offered(self) -> bool:
        """Offered to a model and in completion: runnable, and named in a markdown file of
        the skill or imported by no other script."""
        return self.role.offered


@dataclass
class ScriptExecutionResult:
    """One run of a script: ``exit_code`` is ``-signum`` on a signal, TIMEOUT_EXIT_CODE (124)
    on timeout."""

    stdout: str
    stderr: str
    exit_code: int
    execution_time_ms: float
    script_path: Path  # relative to the skill base dir
    signal: str | None = None
    signal_number: int | None = None
    timed_out: bool = False  # killed at its timeout (seconds are RunSettings.timeout)
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    stdout_bytes: int = 0  # total bytes the script wrote, kept or not
    stderr_bytes: int = 0
    # How the run was isolated: {"mode", "network", "writable"[, "note"]}; None: no sandbox.
    sandbox: dict[str, Any] | None = None
    # How the process started: "warm" (forked from a server that had imported the script's
    # packages, run/launching/warm/) or "cold"; ``start_note`` says why a run that could have been
    # warm was not ("warm server starting", a reason a guarantee could not be kept warm).
    start: str = "cold"
    start_note: str = ""

    @property
    def timeout(self) -> bool:
        """Deprecated: the old name of ``timed_out`` (``timeout`` is seconds everywhere else)."""
        message = deprecation_message(
            "ScriptExecutionResult.timeout", "ScriptExecutionResult.timed_out"
        )
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.timed_out

    @property
    def success(self) -> bool:
        return self.exit_code == 0

    @property
    def signaled(self) -> bool:
        return self.signal is not None

    @property
    def status(self) -> RunStatus:
        """How the run ended: timeout, signaled, completed (exit 0) or failed.

        A timeout kill may also carry a signal; the timeout is the explanation.
        """
        if self.timed_out:
            return RunStatus.TIMEOUT
        if self.signal is not None:
            return RunStatus.SIGNALED
        return RunStatus.COMPLETED if self.exit_code == 0 else RunStatus.FAILED

    def json(self) -> Any:
        """Parse stdout as JSON (raises ``json.JSONDecodeError`` with the position)."""
        return json.loads(self.stdout)


__all__ = ["SkillMetadata", "ScriptMetadata", "ScriptExecutionResult", "TIMEOUT_EXIT_CODE"]
