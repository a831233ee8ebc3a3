"""Lists of skill names on a magic's line, read by the one parser (core/namelist.py).

``--skills a,b``, ``--skills a b`` and ``--skills a --skills b`` name the same two skills in
every magic that takes several (``%skill_context``, ``%%skillagent``, ``%skills triggers``,
``available``, ``install --skill``, ``update``): argparse gives the tokens, :class:`NameListAction`
reads each one as a string list (commas and whitespace separate) and adds its names to what
the option already holds. A list option given only separators (``--skills ,``) is refused:
offering the model no skills must be said (Python: ``skills=[]``), never fall out of a typo.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--skills", nargs="+", action=NameListAction)
    >>> p.parse_args(["--skills", "a,b", "c", "--skills", "d"]).skills
    ['a', 'b', 'c', 'd']
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from skill_magics.core.namelist import token_names


class NameListAction(argparse.Action):
    """Extend the option's list with the names in its tokens (``nargs``, or one token)."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        tokens = [values] if isinstance(values, str) else list(values or ())
        names = token_names(str(t) for t in tokens)
        if tokens and not names:
            label = option_string or self.dest
            parser.error(f"{label} {' '.join(map(str, tokens))!r} names no skill: give a name")
        held = getattr(namespace, self.dest, None)
        setattr(namespace, self.dest, [*(held or ()), *names])


__all__ = ["NameListAction"]
