"""``%skills install SOURCE [--skill NAME ...] [--ref REF] [--path SUB] [--into DIR] [--force]``.

Installs skills from a git repository (https, ssh, file:// or a local repository), a
site's well-known index (``https://HOST``: ``/.well-known/agent-skills/index.json``, each
artifact's digest verified), a ``.skill``/``.zip`` file or a folder into ``DIR`` (default
``./.agents/skills``), records them in its ``skills-lock.json`` and searches the folder
(core/sources/install.py). The
approval panel lists every skill, its files and scripts and the resolved commit.
"""

from __future__ import annotations

import threading
from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources
from skill_magics.notebook.magics import drive
from skill_magics.notebook.names import NameListAction

HELP = (
    "SOURCE [--skill NAME ...] [--ref REF] [--path SUB] [--into DIR] [--force]: install skills "
    "(https://HOST --list: what a site's index offers)"
)
USAGE = (
    "%skills install SOURCE [--skill NAME ...] [--ref REF] [--path SUB] [--into DIR] [--force]"
    " | %skills install https://HOST --list"
)


def _job(magics: Any, args: list[str]) -> _sources.Job:
    p = _sources.parser(USAGE)
    p.add_argument("source")
    p.add_argument("--skill", action=NameListAction, dest="skills")
    p.add_argument("--ref")
    p.add_argument("--path", dest="subfolder")
    p.add_argument("--into")
    p.add_argument("--force", action="store_true")
    p.add_argument("--list", action="store_true", dest="list_only")
    opts = p.parse(args)

    def job(approver: Any, cancel: threading.Event | None) -> None:
        from skill_magics.core.sources.install import install_skills

        if opts.list_only:
            from skill_magics.core.sources.wellknown import index_listing

            print(index_listing(opts.source))
            return

        report = install_skills(
            opts.source,
            into=opts.into,
            skills=opts.skills,
            ref=opts.ref,
            subfolder=opts.subfolder,
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
