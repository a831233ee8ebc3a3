"""Lists of skill names on a magic's line, read by the one parser (core/base/namelist.py).

``--skills a,b``, ``--skills a b`` and ``--skills a --skills b`` name the same two skills in
every magic that takes several (``%skill_context``, ``%%skillagent``, ``%skills triggers``,
``available``, ``install --skill``, ``update``; ``%skills evals --configurations`` too):
argparse gives the tokens, :class:`NameListAction` reads each one as a string list (commas and
whitespace separate) and adds its names to what the option already holds (an option given
replaces its default). A list option given only separators (``--skills ,``) is refused:
offering the model no skills must be said (Python: ``skills=[]``), never fall out of a typo.

Example:
    >>> import argparse
    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--skills", nargs="+", action=NameListAction)
    >>> p.parse_args(["--skills", "a,b", "c", "--skills", "d"]).skills
    ['a', 'b', 'c', 'd']
    >>> _ = p.add_argument("--configurations", nargs="+", action=NameListAction, default=["x"])
    >>> p.parse_args(["--configurations", "y,z"]).configurations  # replaces the default
    ['y', 'z']
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from skill_magics.core.base.namelist import token_names


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
            given = " ".join(map(str, tokens))
            parser.error(f"{label} {given!r} holds no name: give names as a,b or a b")
        held = getattr(namespace, self.dest, None)
        if held is self.default:  # the option given replaces its default, never extends it
            held = None
        setattr(namespace, self.dest, [*(held or ()), *names])


__all__ = ["NameListAction"]
