"""The ``%%skillrun`` line, parsed the same way for a single run (magics/skillrun.py) and a
batch (magics/skillmap.py): words, the ``--`` tail, SKILL.SCRIPT, ``-o`` and ``--no-approval``.

Example:
    >>> from skill_magics.notebook.magics.skillrun import SkillRunMagics
    >>> parser = SkillRunMagics.skillrun.parser
    >>> run = parse_run_line(parser, "pdf.extract -o out -- a.pdf", require_approval=False)
    >>> run.skill, run.script, run.tail
    ('pdf', 'extract', ['a.pdf'])
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import dataclass
from keyword import iskeyword

from IPython.core.error import UsageError


@dataclass(frozen=True)
class RunLine:
    """A parsed line; ``tail`` is what follows ``--`` (argv, or a batch's argv template)."""

    opts: argparse.Namespace
    skill: str
    script: str
    tail: list[str] | None


def parse_run_line(
    parser: argparse.ArgumentParser, line: str, *, require_approval: bool
) -> RunLine:
    """Split and check the line; a one-line UsageError naming the fix when it cannot run."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"Cannot parse the %%skillrun line: {exc}; check the quotes") from None
    tail: list[str] | None = None
    if "--" in words:
        cut = words.index("--")
        words, tail = words[:cut], words[cut + 1 :]
    if "--warm" in words and "--cold" in words:
        raise UsageError("--warm and --cold exclude each other: give one (or neither)")
    opts = parser.parse_args(words)  # already split: quotes stay removed
    skill, dot, script = opts.target.partition(".")
    if not dot or not skill or not script:
        raise UsageError(
            f"Name a skill and a script as SKILL.SCRIPT (e.g. pdf.extract), not "
            f"{opts.target!r}: %skills show SKILL lists its scripts"
        )
    if opts.out is not None and not (opts.out.isidentifier() and not iskeyword(opts.out)):
        raise UsageError(f"-o needs a Python variable name, not {opts.out!r}: e.g. -o result")
    if opts.no_approval and require_approval:
        raise UsageError(
            "--no-approval is refused while SkillMagics.require_approval is True: "
            "set %config SkillMagics.require_approval = False to allow it"
        )
    return RunLine(opts, skill, script, tail)


__all__ = ["RunLine", "parse_run_line"]
