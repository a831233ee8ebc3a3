"""Run Python code inside a skill's own virtual environment (seed 004, ``%%skillpy``).

``<skill>/venv`` or ``<skill>/.venv`` (POSIX or Windows layout) provides the interpreter; the
code runs as ``<venv python> -c CODE`` with the skill folder as cwd, through the same
executor as scripts (process group, timeout kill, capped capture, minimal env, audit) and
after approval (the request carries the code so the person sees exactly what runs).

Result: the seed-004 dict ``{skill_name, stdout, stderr, returncode, timed_out}`` plus
``error`` when something went wrong; errors before running are ``{"error": ...}`` (with
``skill_name`` when the name was valid) and, for approval, ``outcome``.
On timeout ``returncode`` is -1 as in the seed (the executor itself reports 124).

Example:
    >>> run_python_in_skill(manager, "calculator", "print(2 + 2)")["stdout"]
    '4\\n'
"""

from __future__ import annotations

import hashlib
from dataclasses import replace
from pathlib import Path
from typing import Any

from .approval import Approver
from .errors import ApprovalDeclined, ApprovalUnavailable, SkillMagicsError, SkillNotFoundError
from .interpreters import skill_venv_python
from .models import ScriptExecutionResult

LABEL = "<python -c>"  # what the audit log and approval show instead of a script path


def invalid_name_error(skill_name: str) -> str | None:
    """The seed's error text for names that could walk out of the skills folder, else None."""
    if "/" in skill_name or "\\" in skill_name or ".." in skill_name:
        return (
            f"Invalid skill name: '{skill_name}'. Skill names must not contain '/', '\\', or '..'"
        )
    return None


def venv_python(skill_base_dir: Path) -> Path | None:
    """The skill's venv interpreter, or None (see ``interpreters.skill_venv_python``)."""
    return skill_venv_python(skill_base_dir)


def prepare_python(
    manager: Any,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
) -> tuple[Any, dict[str, Any] | None]:
    """Validate, ask for approval and build the run: ``(prepared, None)`` or ``(None, error dict)``.

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

    chosen = manager.approver if approver is None else approver
    if chosen is not None:
        request = manager.approval_request(skill_name, [], None, code=code)
        # "Yes in session" for code approves this exact code again, never other code or the
        # skill's scripts: key the session approval to the code as well.
        digest = hashlib.sha256(
            f"{request.content_hash}\0python-c\0{code}".encode("utf-8", "surrogatepass")
        ).hexdigest()
        request = replace(request, content_hash=digest)
        try:
            manager.approvals.ask(chosen, request)
        except (ApprovalDeclined, ApprovalUnavailable) as exc:
            from .context import audit_outcome

            outcome = "declined" if isinstance(exc, ApprovalDeclined) else "approval_unavailable"
            audit_outcome(manager, skill_name, [LABEL], _code_preview(code), outcome, str(exc))
            return None, {"skill_name": skill_name, "error": str(exc), "outcome": outcome}
    executor = manager.executor
    command = [str(python), "-c", code]
    try:
        if hasattr(executor, "prepare_command"):
            prepared = executor.prepare_command(
                command,
                skill_base_dir=base,
                skill_metadata=skill.metadata,
                label=LABEL,
                timeout=timeout,
                arguments_preview=_code_preview(code),
            )
        else:
            prepared = _prepare_fallback(executor, command, base, skill.metadata, timeout, code)
    except (SkillMagicsError, ValueError) as exc:
        return None, {"skill_name": skill_name, "error": str(exc)}
    return prepared, None


def _prepare_fallback(
    executor: Any, command: list[str], base: Path, metadata: Any, timeout: float | None, code: str
) -> Any:
    """Build a PreparedRun for ``python -c`` until ScriptExecutor.prepare_command exists.

    Runs through executor.run unchanged (process group, timeout kill, capped capture, env,
    audit). run() re-checks ``script`` before spawning: SKILL.md stands in for it (a regular
    file inside the skill), since ``-c`` code has no file of its own.
    """
    import os

    from . import executor as executor_module
    from .interpreters import InterpreterSpec
    from .paths import resolve_script

    limit = executor.timeout if timeout is None else float(timeout)
    low, high = executor_module.MIN_TIMEOUT, executor_module.MAX_TIMEOUT
    if not low <= limit <= high:
        raise ValueError(f"timeout {timeout!r} s is out of range: use {low} to {high} seconds")
    anchor = resolve_script(Path(metadata.path).name, base)
    return executor_module.PreparedRun(
        skill_name=metadata.name,
        script_rel=Path(LABEL),
        script=anchor,
        interpreter=InterpreterSpec("python", "python3", (command[0],)),
        command=tuple(command),
        payload=None,
        env=executor._env(metadata, Path(os.path.abspath(base))),
        cwd=Path(os.path.abspath(base)),
        timeout=limit,
        arguments_preview=_code_preview(code),
    )


def run_python_in_skill(
    manager: Any,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
) -> dict[str, Any]:
    """Run ``code`` with the skill's venv Python; the seed-004 result dict (never raises for
    skill-level problems; KeyboardInterrupt still kills the process and propagates)."""
    prepared, error = prepare_python(manager, skill_name, code, timeout=timeout, approver=approver)
    if error is not None:
        return error
    return result_dict(skill_name, manager.executor.run(prepared), timeout, manager)


async def run_python_in_skill_async(
    manager: Any,
    skill_name: str,
    code: str,
    *,
    timeout: float | None = None,
    approver: Approver | None = None,
) -> dict[str, Any]:
    """Awaitable form: approval in a worker thread, the process awaited in slices."""
    import asyncio

    prepared, error = await asyncio.to_thread(
        prepare_python, manager, skill_name, code, timeout=timeout, approver=approver
    )
    if error is not None:
        return error
    result = await manager.executor.run_async(prepared)
    return result_dict(skill_name, result, timeout, manager)


def result_dict(
    skill_name: str, result: ScriptExecutionResult, timeout: float | None, manager: Any = None
) -> dict[str, Any]:
    """Seed-004 shape from an executor result."""
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


def _code_preview(code: str) -> str:
    return "python -c " + " ".join(code.split())[:200]


__all__ = [
    "LABEL",
    "invalid_name_error",
    "venv_python",
    "prepare_python",
    "run_python_in_skill",
    "run_python_in_skill_async",
    "result_dict",
]
