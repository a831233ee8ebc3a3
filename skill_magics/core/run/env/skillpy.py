"""Run Python code inside a skill's own virtual environment (``%%skillpy``).

``<skill>/venv`` or ``<skill>/.venv`` (POSIX or Windows layout) provides the interpreter; the
code runs as ``<venv python> -c CODE`` with the skill folder as cwd: planned
(``Planner.plan_code``: the checks of any command) and run through the one call site
(``manager.run_planned``): approval first (the request carries the code so the person sees
exactly what runs), then the same executor as scripts (process group, timeout kill, capped
capture, minimal env, audit). A person's own call: ``approver=None`` runs it unasked
(docs/architecture.md, *Who approves*).

Result: the skillpy dict ``{skill_name, stdout, stderr, returncode, timed_out}`` plus
``error`` when something went wrong; errors before running are ``{"error": ...}`` (with
``skill_name`` when the name was valid) and, for approval, ``outcome``.
On timeout ``returncode`` is 124 (``TIMEOUT_EXIT_CODE``, as for every run).

Example (not run as a doctest: it runs code in the skill's environment)::

    run_python_in_skill(manager, "calculator", "print(2 + 2)")["stdout"]
    # -> '4\\n'
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any, Protocol

from skill_magics.core.base.audit import CODE_LABEL
from skill_magics.core.base.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.core.base.interpreters import skill_venv_python
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.catalog.discovery import is_qualified
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg
from skill_magics.core.run.pipeline import RunOutcome
from skill_magics.core.run.planning.plan import PlannedRun
from skill_magics.core.run.planning.settings import DEFAULT_TIMEOUT

LABEL = CODE_LABEL  # what the audit log and approval show instead of a script path


class SkillManager(Protocol):
    """What this module asks of a ``core.manager.SkillManager`` (which sits above the run
    machinery: a Protocol keeps this module on its folder's floor)."""

    @property
    def settings(self) -> Any: ...
    def get_skill(self, name: str) -> Any: ...
    def plan_code(
        self, skill: Any, python: Path, code: str, *, timeout: float | None = None
    ) -> Any: ...
    def run_planned(self, plan: Any, approver: Any = ...) -> Any: ...
    async def run_planned_async(
        self, plan: Any, approver: Any = ..., *, cancel: threading.Event | None = None
    ) -> Any: ...


def invalid_name_error(skill_name: str) -> str | None:
    """The error for names that could walk out of the skills folder, else None."""
    if "/" in skill_name or "\\" in skill_name or ".." in skill_name:
        return (
            f"Invalid skill name: '{skill_name}'. Skill names must not contain '/', '\\', or '..'"
        )
    return None


def _mcp_name(manager: SkillManager, skill_name: str) -> bool:
    """``LABEL/NAME`` of a server added to ``manager`` (else the name check refuses it)."""
    from skill_magics.core.mcp.servers import servers_of

    return (
        is_qualified(skill_name) and servers_of(manager).get(skill_name.split("/")[0]) is not None
    )


def venv_python(skill_base_dir: Path) -> Path | None:
    """The skill's venv interpreter, or None (see ``interpreters.skill_venv_python``)."""
    return skill_venv_python(skill_base_dir)


def plan_python(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
) -> tuple[PlannedRun | None, dict[str, Any] | None]:
    """Step 1 for ``code``: ``(plan, None)``, or ``(None, error dict)`` when it cannot run."""
    if _mcp_name(manager, skill_name):
        # An MCP server's skill never brings an environment (core/mcp/runs.py refuses one
        # that ships venv/ or .venv/), so there is no venv to run code in: said before
        # anything of it is fetched.
        return None, {
            "skill_name": skill_name,
            "error": f"'{skill_name}' is an MCP server's skill: code runs only in a skill's "
            "own venv, and a skill from a server never brings one; run its scripts instead "
            f"(%%skillrun {skill_name}.SCRIPT, or manager.execute_skill_script)",
        }
    problem = invalid_name_error(skill_name)
    if problem:
        return None, {"error": problem}
    try:
        skill = manager.get_skill(skill_name)
    except SkillNotFoundError as exc:
        return None, {"error": f"Skill '{skill_name}' not found in skills folder. {exc}"}
    base = Path(skill.base_dir)
    python = venv_python(base)
    if python is None:
        if any((base / d).is_dir() for d in ("venv", ".venv")):
            message = (
                f"Python interpreter not found in venv for skill '{skill_name}': "
                f"recreate it with `python -m venv {base / 'venv'}`"
            )
        else:
            message = f"Skill '{skill_name}' does not have a venv. Cannot execute script."
        return None, {"error": message}
    if not isinstance(code, str):
        return None, {"error": f"Code must be a str, got {type(code).__name__}"}
    try:
        plan = manager.plan_code(skill, python, code, timeout=timeout)
    except (SkillMagicsError, ValueError) as exc:
        return None, {"skill_name": skill_name, "error": str(exc)}
    return plan, None


def run_python_in_skill(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
) -> dict[str, Any]:
    """Run ``code`` with the skill's venv Python; the skillpy result dict (never raises for
    skill-level problems; KeyboardInterrupt still kills the process and propagates).
    ``approver`` defaults to ``manager.approver``; None: nobody is asked (you decided)."""
    plan, error = plan_python(manager, skill_name, code, timeout=timeout)
    if plan is None:
        return error or {}
    return outcome_dict(skill_name, manager.run_planned(plan, approver), timeout, manager)


async def run_python_in_skill_async(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Awaitable form: planning and approval in worker threads, the process awaited.

    Cancelling the awaiting task (a kernel interrupt) sets ``cancel``: the process group is
    killed and the cancellation re-raised. An approver that watches the same ``cancel``
    stops waiting for a click too. Setting ``cancel`` yourself stops the run and returns it.
    """
    if cancel is None:
        cancel = threading.Event()
    plan, error = await await_in_thread(
        lambda: plan_python(manager, skill_name, code, timeout=timeout), cancel
    )
    if plan is None:
        return error or {}
    outcome = await manager.run_planned_async(plan, approver, cancel=cancel)
    return outcome_dict(skill_name, outcome, timeout, manager)


def outcome_dict(
    skill_name: str, outcome: RunOutcome, timeout: float | None, manager: SkillManager
) -> dict[str, Any]:
    """The skillpy result dict from the call site's outcome (a refusal at launch raises,
    as a refusal of the checks would in any other run)."""
    if not outcome.allowed:
        status = str(outcome.status)
        return {"skill_name": skill_name, "error": outcome.message, "outcome": status}
    return result_dict(skill_name, outcome.script_result(), timeout, manager)


def result_dict(
    skill_name: str,
    result: ScriptExecutionResult,
    timeout: float | None,
    manager: SkillManager | None = None,
) -> dict[str, Any]:
    """The skillpy result dict from an executor result."""
    out: dict[str, Any] = {
        "skill_name": skill_name,
        "stdout": result.stdout,
        "stderr": result.stderr,
        "returncode": result.exit_code,  # TIMEOUT_EXIT_CODE (124) on timeout
        "timed_out": bool(result.timed_out),
    }
    if result.timed_out:
        setting = manager.settings.timeout if manager is not None else DEFAULT_TIMEOUT
        limit = timeout if timeout is not None else setting
        out["error"] = f"Script execution exceeded timeout of {_seconds(limit)} seconds"
    elif result.signal:
        out["error"] = f"Python was killed by {result.signal}"
    return out


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


__all__ = [
    "LABEL",
    "invalid_name_error",
    "venv_python",
    "plan_python",
    "outcome_dict",
    "run_python_in_skill",
    "run_python_in_skill_async",
    "result_dict",
]
