"""Shared by ``%skills install``, ``update``, ``sync`` and ``verify``: parsing their words and
running the core functions (core/sources/) with the notebook's approver.

The three that install ask first (an approval panel listing the skills, their files and
scripts, the commit). On ipykernel >= 7.4 their line is awaited (magics/rewrite.py): the
approval and the fetch run in a worker thread while the cell awaits, so the click arrives
and Kernel > Interrupt stops git's process group.
"""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

from IPython.core.error import UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # one line, no exit
        raise UsageError(f"{message}: usage: {self.usage}")


def parser(usage: str) -> argparse.ArgumentParser:
    """An argparse parser whose errors are one-line UsageErrors naming ``usage``."""
    return _Parser(prog="%skills", usage=usage, add_help=False, allow_abbrev=False)


Job = Callable[[Any, threading.Event | None], Any]


def run_sync(magics: Any, job: Job) -> Any:
    """Run ``job(approver, cancel)`` here (terminal IPython, older kernels)."""
    approver_of = getattr(magics, "approver", None)
    approver = approver_of() if callable(approver_of) else None
    return job(approver, None)


async def run_async(magics: Any, job: Job) -> Any:
    """The await path: ``job`` in a worker thread; an interrupt sets ``cancel``."""
    from skill_magics.core.run.bridge import await_in_thread

    cancel = threading.Event()
    approver = magics.approver(in_worker=True, cancel=cancel)
    return await await_in_thread(lambda: job(approver, cancel), cancel)


__all__ = ["parser", "run_sync", "run_async"]
