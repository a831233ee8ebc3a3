"""``%load_ext skill_magics``: register the magics, completion and the await transformer.

Registers ``%skills`` / ``%%skillrun`` (magics.py) and ``%skill_context`` / ``%%skillpy``
(context_magics.py, which shares this manager and approvals through :func:`get_magics`).

Kept light on purpose: nothing here imports ipywidgets or core's executor; they load on first
use (tests/test_magics.py::test_load_is_light checks it in a fresh process).
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from skill_magics.notebook.magics import SkillMagics

_ATTR = "_skill_magics"  # where the SkillMagics instance lives on the shell


def load(shell: Any) -> SkillMagics:
    """Register SkillMagics on ``shell`` (idempotent) and return it."""
    from skill_magics.notebook import completion, context_magics, transformer
    from skill_magics.notebook.magics import SkillMagics

    magics = getattr(shell, _ATTR, None)
    if magics is None:
        magics = _configured(shell, SkillMagics)
        setattr(shell, _ATTR, magics)
    shell.register_magics(magics)
    completion.install(shell, lambda: magics.manager)
    transformer.install(shell)  # await path only where the kernel supports it (per cell)
    context_magics.register(shell, magics)
    return magics


def _configured(shell: Any, cls: type[SkillMagics]) -> SkillMagics:
    """A SkillMagics with the shell's config; a bad value (``c.SkillMagics.timeout = 0`` in
    ipython_config.py) is reported in one line and left at its default, not a failed load."""
    from traitlets import TraitError
    from traitlets.config import Config

    try:
        return cls(shell=shell)
    except TraitError:
        pass
    magics = cls(shell=shell, config=Config())
    section = getattr(shell, "config", Config()).get(cls.__name__, {})
    for name, value in section.items():
        try:
            setattr(magics, name, value)
        except TraitError as exc:
            reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            print(
                f"skill_magics: ignored {cls.__name__}.{name} = {value!r} from the "
                f"configuration ({reason}); fix it in ipython_config.py or with %config",
                file=sys.stderr,
            )
    return magics


def unload(shell: Any) -> None:
    """Undo load(): magics, completion and transformers go; the instance is dropped."""
    from skill_magics.notebook import completion, context_magics, transformer

    context_magics.unregister(shell)
    transformer.uninstall(shell)
    completion.uninstall(shell)
    magics = getattr(shell, _ATTR, None)
    if magics is None:
        return
    remove_magics(shell, magics)
    if magics in shell.configurables:
        shell.configurables.remove(magics)
    delattr(shell, _ATTR)


def remove_magics(shell: Any, magics: Any) -> None:
    """Unregister every magic of a Magics instance (IPython has no public call for it)."""
    manager = shell.magics_manager
    for kind, table in magics.magics.items():
        for name in table:
            manager.magics[kind].pop(name, None)
    manager.registry.pop(type(magics).__name__, None)


def get_magics(shell: Any) -> SkillMagics:
    """The SkillMagics of ``shell`` (loading the extension if needed).

    Use it to share state: ``get_magics(shell).manager`` is the SkillManager (approvals,
    audit, executor) that %skills and %%skillrun use.
    """
    magics = getattr(shell, _ATTR, None)
    return magics if magics is not None else load(shell)


__all__ = ["load", "unload", "get_magics", "remove_magics"]
