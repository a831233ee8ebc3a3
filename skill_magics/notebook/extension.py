"""``%load_ext skill_magics``: the one place the notebook layer is wired together.

Registers SkillMagics (configuration, the shared manager, ``%skills``) and, sharing it, the
``%%skillrun``, ``%skill_context`` and ``%%skillpy`` magics; completion; and the await
rewrite (magics/rewrite.py) with the coroutines it dispatches to.

Kept light on purpose: nothing here imports ipywidgets or core's executor; they load on first
use (a test checks it in a fresh process).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from traitlets import TraitError
from traitlets.config import Config

from skill_magics.core.base.loaded import loaded
from skill_magics.notebook import completion, sidepanel
from skill_magics.notebook.magics import rewrite
from skill_magics.notebook.magics.context import ContextMagics
from skill_magics.notebook.magics.skillagent import SkillAgentMagics
from skill_magics.notebook.magics.skillpy import SkillPyMagics
from skill_magics.notebook.magics.skillrun import SkillRunMagics
from skill_magics.notebook.magics.skills import SkillMagics

_ATTR = "_skill_magics"  # where the SkillMagics instance lives on the shell
_PARTS = "_skill_magics_parts"  # the magics that share it


def load(shell: Any) -> SkillMagics:
    """Register everything on ``shell`` (idempotent) and return the SkillMagics."""
    magics = getattr(shell, _ATTR, None)
    if magics is None:
        magics = _configured(shell)
        setattr(shell, _ATTR, magics)
    parts = getattr(shell, _PARTS, None)
    if parts is None:
        parts = (
            SkillRunMagics(shell, magics),
            ContextMagics(shell, magics),
            SkillPyMagics(shell, magics),
            SkillAgentMagics(shell, magics),
        )
        setattr(shell, _PARTS, parts)
    skillrun, context, skillpy, skillagent = parts
    for part in (magics, *parts):
        shell.register_magics(part)
    completion.install(shell, lambda: magics.manager)
    _core_displays(shell, install=True)  # how core's values show themselves
    _lab_progress(shell, install=True)
    rewrite.install(  # used per cell, only where the kernel supports the await path
        shell,
        {
            "skillrun": skillrun.skillrun_async,
            "skillpy": skillpy.skillpy_async,
            "skill_context": context.skill_context_async,
            "skillagent": skillagent.skillagent_async,
            **{
                f"skills {name}": functools.partial(magics.skills_subcommand_async, name)
                for name in ("env", "install", "update", "sync", "evals", "triggers")
            },
        },
    )
    sidepanel.start(shell, magics)  # the Skills side panel's channel (kernels only)
    return magics


def _configured(shell: Any) -> SkillMagics:
    """A SkillMagics with the shell's config; a bad value (``c.SkillMagics.timeout = 0`` in
    ipython_config.py) is reported in one line and left at its default, not a failed load."""
    try:
        return SkillMagics(shell=shell)
    except TraitError:
        pass
    magics = SkillMagics(shell=shell, config=Config())
    section = getattr(shell, "config", Config()).get(SkillMagics.__name__, {})
    for name, value in section.items():
        try:
            setattr(magics, name, value)
        except TraitError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(
                f"skill_magics: ignored {SkillMagics.__name__}.{name} = {value!r} from the "
                f"configuration ({reason}); fix it in ipython_config.py or with %config",
                file=sys.stderr,
            )
    return magics


# core value (module, class) -> (render module, bundle function): registered by name, so
# nothing is imported until such a value is shown.
_DISPLAYS = {
    ("skill_magics.core.run.batch.result", "BatchResult"): ("batch", "batch_bundle"),
    ("skill_magics.core.lab.transcript", "Transcript"): ("lab", "transcript_bundle"),
    ("skill_magics.core.lab.triggers", "TriggerReport"): ("lab", "trigger_report_bundle"),
    ("skill_magics.core.lab.triggers", "TriggerComparison"): ("lab", "comparison_bundle"),
    ("skill_magics.core.lab.evals", "EvalReport"): ("lab", "eval_report_bundle"),
}


def _printer(module: str, function: str) -> Any:
    def bundle(value: Any) -> dict:
        import importlib  # on first display only

        render = importlib.import_module(f"skill_magics.notebook.render.{module}")
        return getattr(render, function)(value)

    return bundle


def _core_displays(shell: Any, *, install: bool) -> None:
    """Register (by name: nothing is imported now) or remove the printers that show core's
    BatchResult and the skill lab's values as widget + HTML + text (notebook/render/)."""
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is None:
        return
    for key, (module, function) in _DISPLAYS.items():
        if install:
            formatter.for_type_by_name(*key, _printer(module, function))
            continue
        formatter.deferred_printers.pop(key, None)
        for cls in list(formatter.type_printers):
            if (cls.__module__, cls.__name__) == key:
                formatter.type_printers.pop(cls, None)


def _lab_progress(shell: Any, *, install: bool) -> None:
    """The skill lab's default progress display (core/lab/progress.py): a bar or a line."""
    from skill_magics.core.lab import progress

    if install:
        from skill_magics.notebook.render.lab import lab_progress

        progress.set_display(lab_progress(shell))
    else:
        progress.set_display(None)


def unload(shell: Any) -> None:
    """Undo load(): magics, completion and the rewrite go; the instances are dropped; the
    warm servers stop (run/launching/warm/: they would otherwise wait for their idle timeout), and
    so do the skills servers ``%skills serve mcp`` started (core/mcp/serving.py)."""
    magics = getattr(shell, _ATTR, None)
    if magics is not None and magics.has_manager:
        magics.manager.stop_warm_servers()
    serving = loaded("skill_magics.core.mcp.serving")  # imported only when used
    if serving is not None:
        serving.stop()
    sidepanel.stop(shell)
    rewrite.uninstall(shell)
    completion.uninstall(shell)
    _core_displays(shell, install=False)
    _lab_progress(shell, install=False)
    parts = getattr(shell, _PARTS, ())
    magics = getattr(shell, _ATTR, None)
    for part in (*parts, magics):
        if part is None:
            continue
        _remove_magics(shell, part)
        if part in shell.configurables:
            shell.configurables.remove(part)
    for attr in (_PARTS, _ATTR):
        if hasattr(shell, attr):
            delattr(shell, attr)


def _remove_magics(shell: Any, magics: Any) -> None:
    """Unregister every magic of a Magics instance (IPython has no public call for it)."""
    manager = shell.magics_manager
    for kind, table in magics.magics.items():
        for name in table:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(type(magics).__name__, None)


def get_magics(shell: Any) -> SkillMagics:
    """The SkillMagics of ``shell`` (loading the extension if needed).

    Use it to share state: ``get_magics(shell).manager`` is the SkillManager (approvals,
    audit, executor) that every magic uses.
    """
    magics = getattr(shell, _ATTR, None)
    return magics if magics is not None else load(shell)


__all__ = ["load", "unload", "get_magics"]
