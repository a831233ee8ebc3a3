"""``%skills sync [DIR] [--force]``: re-create the skills of DIR's ``skills-lock.json``.

Each skill comes from its locked commit (or archive / folder) and must give exactly the
locked digests, else nothing is written (core/sources/update.py). It asks first, like an
install.

``%skills sync --from PATH [--into DIR]``: install exactly the skills another tool's lock
names (the ``skills`` CLI's ``skills-lock.json`` v1 or ``~/.agents/.skill-lock.json`` v3, or
a folder of skills carrying ``gh skill`` metadata), each hash verified first
(core/sources/foreign_locks.py).
"""

from __future__ import annotations

import threading
from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources
from skill_magics.notebook.magics import drive

HELP = (
    "[DIR] [--force] | --from PATH [--into DIR]: re-create the skills a skills-lock.json pins "
    "(e.g. on a new machine), or install what another tool's lock names, verified"
)
USAGE = "%skills sync [DIR] [--force] | %skills sync --from PATH [--into DIR] [--force]"


def _job(magics: Any, args: list[str]) -> _sources.Job:
    p = _sources.parser(USAGE)
    p.add_argument("folder", nargs="?")
    p.add_argument("--into")
    p.add_argument("--force", action="store_true")
    p.add_argument("--from", dest="source")
    opts = p.parse(args)

    def job(approver: Any, cancel: threading.Event | None) -> None:
        from skill_magics.core.sources.update import sync_skills

        if opts.source:
            from skill_magics.core.sources.foreign_locks import sync_from

            for one in sync_from(
                opts.source,
                into=opts.into or opts.folder,
                force=opts.force,
                manager=magics.manager,
                approver=approver,
                on_message=print,
                cancel=cancel,
            ):
                print(one.message)
            return

        report = sync_skills(
            opts.folder or opts.into,
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
