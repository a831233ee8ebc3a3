"""``%skills`` subcommands: one small module each, ``run(magics, args) -> displayable | None``,
or, for one that waits (an approval, a process, a model), ``magic(mode, magics, args)``:
a generator written once for the blocking and the await path (magics/drive.py).

A module named like the subcommand (``list.py`` for ``%skills list``) with a ``run``
function and a one-line ``HELP`` string is picked up automatically; another helper's module
(e.g. ``available.py``) needs no registration here. A renamed subcommand's old name stays in
``RENAMED`` for one release (a FutureWarning, which notebooks show). Every subcommand reads
its words with a :class:`SubcommandParser` (argparse): one style, and one kind of error, a
one-line UsageError ending in the usage. An unknown subcommand names the close matches
(``difflib``)."""

from __future__ import annotations

import argparse
import difflib
import importlib
import pkgutil
import warnings
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NoReturn, Protocol

from IPython.core.error import UsageError

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager


class SkillsHost(Protocol):
    """What a subcommand gets: the magics' shared SkillManager (SkillMagics has it)."""

    @property
    def manager(self) -> SkillManager: ...


ALIASES = {"ls": "list", "rm": "remove", "approved": "approvals", "log": "history"}
RENAMED = {"catalog": "available"}  # old name -> new name, each deprecated for one release


def names() -> list[str]:
    """Every available subcommand, sorted."""
    return sorted(
        info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_")
    )


def lookup(name: str) -> Callable[[SkillsHost, list[str]], Any]:
    """The ``run`` function of subcommand ``name``; UsageError with close matches otherwise."""
    name = ALIASES.get(name, name)
    if name in RENAMED:
        from skill_magics.core.base.deprecation import deprecation_message

        old, name = name, RENAMED[name]
        warnings.warn(deprecation_message(f"%skills {old}", f"%skills {name}"), FutureWarning, 2)
    available = names()
    if name not in available:
        close = difflib.get_close_matches(name, available, n=2, cutoff=0.5)
        hint = f" Did you mean {' or '.join(close)}?" if close else ""
        raise UsageError(
            f"Unknown subcommand %skills {name}.{hint} Available: {', '.join(available)} "
            "(see %skills?)"
        )
    module = importlib.import_module(f"{__name__}.{name}")
    magic = getattr(module, "magic", None)
    if magic is not None:  # a subcommand that waits, written once (magics/drive.py)
        from skill_magics.notebook.magics import drive

        return lambda magics, args: drive.blocking(magics, magic, magics, args)
    return module.run


def help_lines() -> list[str]:
    """``name  one-line help`` for every subcommand (used in %skills? and errors)."""
    lines = []
    for name in names():
        module = importlib.import_module(f"{__name__}.{name}")
        lines.append(f"{name:<10} {getattr(module, 'HELP', '')}")
    return lines


class SubcommandParser(argparse.ArgumentParser):
    """The argument parser of a ``%skills`` subcommand: a mistake is one UsageError line that
    ends with the usage (never a printed help, never SystemExit); a word left over is
    ``Unexpected 'word'`` (a stray word is a mistake, not noise).

    Example:
        >>> parser = SubcommandParser("remove", "%skills remove DIR")
        >>> _ = parser.add_argument("dir")
        >>> parser.parse(["./skills"]).dir
        './skills'
    """

    def __init__(self, name: str, usage: str) -> None:
        super().__init__(
            prog=f"%skills {name}",
            usage=usage,
            add_help=False,
            allow_abbrev=False,
            exit_on_error=False,
        )

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message}: usage: {self.usage}")

    def parse(self, args: list[str]) -> argparse.Namespace:
        try:
            opts, rest = self.parse_known_args(args)
        except argparse.ArgumentError as exc:
            self.error(str(exc))
        if rest:
            raise UsageError(f"Unexpected {' '.join(rest)!r}: usage: {self.usage}")
        return opts


__all__ = ["names", "lookup", "help_lines", "SubcommandParser"]
