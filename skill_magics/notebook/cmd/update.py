"""``%skills update [NAME ...] [--into DIR] [--force]``: fetch installed skills' refs again.

Shows what changed (files, and a unified diff of the text files, in the approval panel) and
installs only after approval; the lock is rewritten. Declined: nothing changes
(core/sources/update.py).
"""

from __future__ import annotations

import threading
from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources
from skill_magics.notebook.magics import drive
from skill_magics.notebook.names import NameListAction

HELP = "[NAME ...] [--into DIR] [--force]: fetch installed skills again, install what changed"
USAGE = "%skills update [NAME ...] [--into DIR] [--force]"


def _job(magics: Any, args: list[str]) -> _sources.Job:
    p = _sources.parser(USAGE)
    p.add_argument("names", nargs="*", action=NameListAction)
    p.add_argument("--into")
    p.add_argument("--force", action="store_true")
    opts = p.parse(args)

    def job(approver: Any, cancel: threading.Event | None) -> None:
        from skill_magics.core.sources.update import update_skills

        report = update_skills(
            opts.into,
            opts.names or None,
            force=opts.force,
            manager=magics.manager,
            approver=approver,
            on_message=print,
            cancel=cancel,
        )
        print(report.message)

    return job


def magic(mode: drive.Mode, magics: SkillsHost, args: list[str]) -> drive.Magic[Any]:
    return (yield from _sources.waiting(mode, _job(magics, args)))
