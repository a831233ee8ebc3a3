"""A skill's managed environment as a plan: what to install (step 1) and the install itself
(step 3), with the gate between them at the one call site (docs/architecture.md, *Real
skills*).

An install runs code from the package index, so it is one more plan through the gate:
:func:`plan_install` gives an :class:`InstallPlan` whose request carries ``InstallInfo`` (the
exact packages, the target folder, the install command) and no scripts, or an
:class:`EnvReport` when there is nothing to install. The call site (pipeline.py) asks the gate
and, when allowed, calls :func:`install`; "No" installs nothing; the decision and the install
are audited (under the script label ``<install>``); the installer's output streams to
``on_output``.

Example (not run as a doctest: it installs packages)::

    plan = plan_install(skill, reqs, audit)
    report = manager.run_planned(plan, approver=None).env
    report.status, report.packages
    # -> ('built', ('tabulate>=0.9',))
"""

from __future__ import annotations

import functools
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base import envdirs, fingerprint
from skill_magics.core.base.audit import AuditLog
from skill_magics.core.base.errors import EnvironmentBuildError, SkillMagicsError, SkillNameError
from skill_magics.core.base.interpreters import skill_venv_python
from skill_magics.core.base.paths import check_skill_name
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.catalog.requirements import Requirements
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.mcp.skill import McpSkill
from skill_magics.core.policy import PolicyError
from skill_magics.core.policy import runs as policy_runs
from skill_magics.core.run.env import build as envbuild
from skill_magics.core.run.gating.approval import (
    INSTALL_LABEL,
    ApprovalRequest,
    InstallInfo,
    install_approval_hash,
)
from skill_magics.core.run.planning.runplan import Decided, LaunchContext, Plan, RunOutcome
from skill_magics.core.trace import hooks as traced

BUILT = "built"
UP_TO_DATE = "up to date"
NOTHING = "nothing to install"
SKILL_VENV = "skill venv"


@dataclass(frozen=True)
class EnvReport:
    """What ``prepare_env`` did: ``status`` is built, up to date, nothing to install, or
    skill venv (the skill's own venv runs its scripts, so nothing is built)."""

    skill: str
    status: str
    python: str  # the interpreter the skill's Python scripts now run with
    path: Path | None = None  # the managed environment's folder
    packages: tuple[str, ...] = ()  # what it installed (or holds, when up to date)
    installer: str = ""
    duration_s: float = 0.0
    message: str = ""

    def __str__(self) -> str:
        return self.message


@dataclass(frozen=True)
class InstallPlan(Plan[EnvReport]):
    """Step 1 of an install: the packages the kernel lacks, the fresh folder they go into,
    the installer, and the request the gate decides on (nothing is installed yet). Its
    outcome's value: the :class:`EnvReport`."""

    skill: Skill
    requirements: Requirements
    packages: tuple[str, ...]
    home: Path  # the skill's managed-environment folder (envdirs.skill_env_home)
    env_dir: Path  # the new env-<key>-<id> folder the build fills
    installer: str
    request: ApprovalRequest

    def requests(self) -> tuple[ApprovalRequest, ...]:
        return (self.request,)

    def launch(self, context: LaunchContext, decided: Decided) -> RunOutcome[EnvReport]:
        report = install(
            self, context.executor.audit, on_output=context.on_output, cancel=context.cancel
        )
        # Other packages run the skill's code now: its "Yes in session" ends.
        context.gate.environment_rebuilt(self.skill.name, str(report.path))
        return RunOutcome(decided.verdict, report)


def install_request(
    skill: Skill, packages: tuple[str, ...], env_dir: Path, command: tuple[str, ...]
) -> ApprovalRequest:
    """The request a person sees before an install: packages, target, command; for an MCP
    server's skill its origin and digest set too, as a run's (the gate binds to it)."""
    entries = fingerprint.skill_entries(skill.base_dir)
    return ApprovalRequest(
        skill_name=skill.name,
        scripts=(),
        content_hash=install_approval_hash(fingerprint.fingerprint_of(entries), packages),
        request_id=uuid.uuid4().hex,
        install=InstallInfo(packages=packages, target=str(env_dir), command=command),
        entries=entries,
        environment=envdirs.environment_id(skill.base_dir),
        mcp=skill.origin if isinstance(skill, McpSkill) else None,
    )


def plan_install(
    skill: Skill,
    requirements: Requirements,
    audit: AuditLog,
    *,
    rebuild: bool = False,
    installer: str | None = None,
) -> InstallPlan | EnvReport:
    """What an install of what ``requirements`` lacks would do, or the report when nothing
    needs installing (the skill's own venv, nothing missing, already up to date).

    ``requirements`` must be checked against the kernel's Python (the env sees its packages,
    so only what the kernel lacks is installed). Refused before anyone is asked (audited in
    ``audit``): a skill whose name is not one folder name (SkillNameError), one a team
    policy refuses (PolicyError: its source, signer or a block; checked again right before
    the build), a requirement that names no distribution (EnvironmentBuildError).
    """
    name = skill.name
    try:  # a skill whose name is not one folder name gets nothing (core/base/paths.py)
        check_skill_name(name, Path(skill.base_dir).name)
        # nor one the team policy refuses: its requirements' code would run (docs/trust.md)
        policy_runs.check_skill(skill.base_dir, name)
    except (SkillNameError, PolicyError) as exc:
        audit.refused(name, INSTALL_LABEL, "", exc)
        raise
    own = skill_venv_python(skill.base_dir)
    if own is not None:
        return EnvReport(
            name,
            SKILL_VENV,
            str(own),
            message=f"Skill {name!r} has its own venv ({own.parent.parent}), which runs its "
            "scripts before any managed environment: install what it lacks there",
        )
    if requirements.refused:
        # Before anyone is asked: a line that names no distribution would make the
        # installer build something else (a folder, a URL) under that name.
        first = requirements.refused[0]
        more = len(requirements.refused) - 1
        error = EnvironmentBuildError(
            f"Nothing was installed for skill {name!r}: {first}"
            + (f" ({more} more line{'s' if more != 1 else ''} refused)" if more else "")
        )
        audit.refused(
            name, INSTALL_LABEL, " ".join(r.text[:80] for r in requirements.refused), error
        )
        raise error
    packages = tuple(p.spec for p in requirements.missing_packages)
    home = envdirs.skill_env_home(skill.base_dir)
    current = envbuild.current_env(home)
    if not packages:
        python = envdirs.choose_python(skill.base_dir)[0]
        return EnvReport(
            name,
            NOTHING,
            python,
            current[0] if current else None,
            message=f"Skill {name!r} needs no package the kernel lacks: nothing to install"
            + _programs_note(requirements),
        )
    if current is not None and not rebuild and tuple(current[1].get("packages", ())) == packages:
        return EnvReport(
            name,
            UP_TO_DATE,
            str(envdirs.env_python(current[0])),
            current[0],
            packages,
            str(current[1].get("installer", "")),
            message=f"The environment of {name!r} is up to date ({', '.join(packages)}) at "
            f"{current[0]}; pass --rebuild (rebuild=True) to build it again",
        )
    tool, uv = envbuild.choose_installer(installer)
    env_dir = envbuild.new_env_dir(home, packages)
    commands = envbuild.install_commands(env_dir, packages, tool, uv)
    try:
        request = install_request(skill, packages, env_dir, commands[-1])
    except SkillMagicsError as exc:  # no fingerprint (folders too deep): refused, audited
        audit.refused(name, INSTALL_LABEL, " ".join(packages), exc)
        raise
    return InstallPlan(skill, requirements, packages, home, env_dir, tool, request)


def install(
    plan: InstallPlan,
    audit: AuditLog,
    *,
    on_output: Callable[[str, str], object] | None = None,
    cancel: threading.Event | None = None,
) -> EnvReport:
    """Step 3 of an approved install: build the environment, audit the outcome.

    Raises EnvironmentBuildError (nothing half-built kept); an interrupt is audited and
    re-raised.
    """
    name, packages = plan.skill.name, plan.packages
    started = time.monotonic()
    preview = " ".join(packages)
    try:  # the policies in force now (one may have changed while the approval waited)
        policy_runs.check_skill(plan.skill.base_dir, name)
    except PolicyError as exc:
        audit.refused(name, INSTALL_LABEL, preview, exc)
        raise
    try:
        build = functools.partial(
            envbuild.build_env,
            plan.home,
            packages,
            skill=name,
            installer=plan.installer,
            on_output=on_output,
            cancel=cancel,
            env_dir=plan.env_dir,
        )
        built = traced.env_build(name, packages, str(plan.installer or "auto"), build)
    except EnvironmentBuildError as exc:
        audit.event(
            name,
            INSTALL_LABEL,
            preview,
            AuditOutcome.FAILED,
            reason=str(exc).splitlines()[0],
            duration_ms=(time.monotonic() - started) * 1000,
        )
        raise
    except BaseException as exc:
        audit.event(
            name,
            INSTALL_LABEL,
            preview,
            AuditOutcome.INTERRUPTED,
            reason=f"{type(exc).__name__}: the install was stopped; nothing was kept",
            duration_ms=(time.monotonic() - started) * 1000,
        )
        raise
    audit.event(
        name,
        INSTALL_LABEL,
        preview,
        AuditOutcome.COMPLETED,
        exit_code=0,
        reason=f"installed with {built.installer} into {built.path}",
        duration_ms=built.duration_s * 1000,
    )
    return EnvReport(
        name,
        BUILT,
        str(built.python),
        built.path,
        packages,
        built.installer,
        built.duration_s,
        message=f"Built the environment of {name!r} with {built.installer} in "
        f"{built.duration_s:.1f} s: {', '.join(packages)} at {built.path}; its Python scripts "
        "now run with it" + _programs_note(plan.requirements),
    )


def _programs_note(requirements: Requirements) -> str:
    missing = [p.name for p in requirements.programs if not p.found]
    if not missing:
        return ""
    return f" (programs still missing, install them yourself: {', '.join(missing)})"


__all__ = [
    "EnvReport",
    "InstallPlan",
    "plan_install",
    "install",
    "install_request",
    "BUILT",
    "UP_TO_DATE",
    "NOTHING",
]
