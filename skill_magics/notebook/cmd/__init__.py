"""``%skills`` subcommands: one small module each, ``run(magics, args) -> displayable | None``.

A module named like the subcommand (``list.py`` for ``%skills list``) with a ``run`` function
and a one-line ``HELP`` string is picked up automatically; another helper's module (e.g.
``catalog.py``) needs no registration here.
"""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager


class SkillsHost(Protocol):
    """What a subcommand gets: the magics' shared SkillManager (SkillMagics has it)."""

    @property
    def manager(self) -> SkillManager: ...


ALIASES = {"ls": "list", "rm": "remove", "approved": "approvals", "log": "history"}


def names() -> list[str]:
    """Every available subcommand, sorted."""
    return sorted(
        info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
    )


def lookup(name: str) -> Callable[[SkillsHost, list[str]], Any]:
    """The ``run`` function of subcommand ``name``; UsageError with close matches otherwise."""
    name = ALIASES.get(name, name)
    available = names()
    if name not in available:
        close = difflib.get_close_matches(name, available, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(
            f"Unknown subcommand %skills {name}.{hint} Available: {', '.join(available)} "
            "(see %skills?)"
        )
    return importlib.import_module(f"{__name__}.{name}").run


def help_lines() -> list[str]:
    """``name  one-line help`` for every subcommand (used in %skills? and errors)."""
    lines = []
    for name in names():
        module = importlib.import_module(f"{__name__}.{name}")
        lines.append(f"{name:<10} {getattr(module, 'HELP', '')}")
    return lines


def one_arg(args: list[str], usage: str) -> str:
    """Exactly one positional argument, else UsageError showing ``usage``."""
    if len(args) != 1:
        raise UsageError(f"Usage: {usage}")
    return args[0]


def no_args(args: list[str], usage: str) -> None:
    """No arguments, else UsageError showing ``usage`` (a stray word is a mistake, not noise)."""
    if args:
        raise UsageError(f"Unexpected {' '.join(args)!r}: usage: {usage}")


__all__ = ["names", "lookup", "help_lines", "one_arg", "no_args"]
