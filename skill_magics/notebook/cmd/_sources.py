"""Shared by ``%skills install``, ``update``, ``sync`` and ``verify``: parsing their words and
running the core functions (core/sources/) with the notebook's approver.

The three that install ask first (an approval panel listing the skills, their files and
scripts, the commit). On ipykernel >= 7.4 their line is awaited (magics/rewrite.py): the
approval and the fetch run in a worker thread while the cell awaits, so the click arrives
and Kernel > Interrupt stops git's process group.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from skill_magics.notebook.cmd import SubcommandParser
from skill_magics.notebook.magics import drive


def parser(usage: str) -> SubcommandParser:
    """The subcommand's parser (cmd.SubcommandParser: one-line UsageErrors naming ``usage``)."""
    return SubcommandParser(usage.split()[1], usage)


Job = Callable[[Any, threading.Event | None], Any]


def waiting(mode: drive.Mode, job: Job) -> drive.Magic[Any]:
    """Run ``job(approver, cancel)``: here, or in a worker thread that an interrupt stops."""
    approver = mode.approver()
    return (yield drive.Step(lambda: job(approver, mode.cancel)))


__all__ = ["parser", "waiting"]
