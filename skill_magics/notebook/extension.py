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

from skill_magics.notebook import completion
from skill_magics.notebook.magics import rewrite
from skill_magics.notebook.magics.context import ContextMagics
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
        )
        setattr(shell, _PARTS, parts)
    skillrun, context, skillpy = parts
    for part in (magics, *parts):
        shell.register_magics(part)
    completion.install(shell, lambda: magics.manager)
    _batch_display(shell, install=True)  # how core's BatchResult shows itself
    rewrite.install(  # used per cell, only where the kernel supports the await path
        shell,
        {
            "skillrun": skillrun.skillrun_async,
            "skillpy": skillpy.skillpy_async,
            "skill_context": context.skill_context_async,
            "skills env": magics.skills_env_async,
            **{
                f"skills {name}": functools.partial(magics.skills_sources_async, name)
                for name in ("install", "update", "sync")
            },
        },
    )
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


_BATCH_RESULT = ("skill_magics.core.run.batch_result", "BatchResult")


def _batch_bundle(result: Any) -> dict:
    from skill_magics.notebook.render.batch import batch_bundle  # on first display only

    return batch_bundle(result)


def _batch_display(shell: Any, *, install: bool) -> None:
    """Register (by name: nothing is imported now) or remove the printer that shows core's
    BatchResult as widget + HTML + text (notebook/render/batch.py)."""
    formatter = getattr(getattr(shell, "display_formatter", None), "mimebundle_formatter", None)
    if formatter is None:
        return
    if install:
        formatter.for_type_by_name(*_BATCH_RESULT, _batch_bundle)
        return
    formatter.deferred_printers.pop(_BATCH_RESULT, None)
    for cls in list(formatter.type_printers):
        if (cls.__module__, cls.__name__) == _BATCH_RESULT:
            formatter.type_printers.pop(cls, None)


def unload(shell: Any) -> None:
    """Undo load(): magics, completion and the rewrite go; the instances are dropped."""
    rewrite.uninstall(shell)
    completion.uninstall(shell)
    _batch_display(shell, install=False)
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
