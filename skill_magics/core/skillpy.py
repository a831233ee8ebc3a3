"""Run Python code inside a skill's own virtual environment (``%%skillpy``).

``<skill>/venv`` or ``<skill>/.venv`` (POSIX or Windows layout) provides the interpreter; the
code runs as ``<venv python> -c CODE`` with the skill folder as cwd, through the same
executor as scripts (process group, timeout kill, capped capture, minimal env, audit) and
after approval (the request carries the code so the person sees exactly what runs).

Result: the skillpy dict ``{skill_name, stdout, stderr, returncode, timed_out}`` plus
``error`` when something went wrong; errors before running are ``{"error": ...}`` (with
``skill_name`` when the name was valid) and, for approval, ``outcome``.
On timeout ``returncode`` is -1 (the executor itself reports 124).

Example:
    >>> run_python_in_skill(manager, "calculator", "print(2 + 2)")["stdout"]
    '4\\n'
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from skill_magics.core.audit import CODE_LABEL
from skill_magics.core.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.core.interpreters import skill_venv_python
from skill_magics.core.manager import SkillManager
from skill_magics.core.models import ScriptExecutionResult
from skill_magics.core.run.approval import Approver
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.executor import PreparedRun

LABEL = CODE_LABEL  # what the audit log and approval show instead of a script path


def invalid_name_error(skill_name: str) -> str | None:
    """The error for names that could walk out of the skills folder, else None."""
    if "/" in skill_name or "\\" in skill_name or ".." in skill_name:
        return (
            f"Invalid skill name: '{skill_name}'. Skill names must not contain '/', '\\', or '..'"
        )
    return None


def venv_python(skill_base_dir: Path) -> Path | None:
    """The skill's venv interpreter, or None (see ``interpreters.skill_venv_python``)."""
    return skill_venv_python(skill_base_dir)


def prepare_python(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
) -> tuple[PreparedRun | None, dict[str, Any] | None]:
    """Plan and gate a run of ``code``: ``(prepared, None)`` or ``(None, error dict)``.

    ``approver=None`` uses ``manager.approver`` (None there too: nobody is asked).
    """
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
        plan = manager.planner.plan_code(skill, python, code, timeout=timeout)
    except (SkillMagicsError, ValueError) as exc:
        return None, {"skill_name": skill_name, "error": str(exc)}
    chosen = manager.approver if approver is None else approver
    verdict = manager.gate.decide(plan.request, chosen)
    if not verdict.allowed:
        outcome = str(verdict.status)
        return None, {"skill_name": skill_name, "error": verdict.message, "outcome": outcome}
    return plan.prepared, None


def run_python_in_skill(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
) -> dict[str, Any]:
    """Run ``code`` with the skill's venv Python; the skillpy result dict (never raises for
    skill-level problems; KeyboardInterrupt still kills the process and propagates)."""
    prepared, error = prepare_python(manager, skill_name, code, timeout=timeout, approver=approver)
    if prepared is None:
        return error or {}
    return result_dict(skill_name, manager.executor.run(prepared), timeout, manager)


async def run_python_in_skill_async(
    manager: SkillManager,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Awaitable form: approval in a worker thread, the process awaited in slices.

    Cancelling the awaiting task (a kernel interrupt) sets ``cancel``: the process group is
    killed and the cancellation re-raised. An approver that watches the same ``cancel``
    stops waiting for a click too. Setting ``cancel`` yourself stops the run and returns it.
    """
    if cancel is None:
        cancel = threading.Event()
    prepared, error = await await_in_thread(
        lambda: prepare_python(manager, skill_name, code, timeout=timeout, approver=approver),
        cancel,
    )
    if prepared is None:
        return error or {}
    result = await manager.executor.run_async(prepared, cancel=cancel)
    return result_dict(skill_name, result, timeout, manager)


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
        "returncode": -1 if result.timeout else result.exit_code,
        "timed_out": bool(result.timeout),
    }
    if result.timeout:
        limit = timeout if timeout is not None else getattr(manager, "timeout", 30)
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
    "prepare_python",
    "run_python_in_skill",
    "run_python_in_skill_async",
    "result_dict",
]
