"""``%skills warm [--stop | NAME]``: the warm servers (core/run/launching/warm/) of this kernel.

Without arguments: one line per running server (interpreter, sandbox, preloaded packages,
memory, idle time, runs). ``--stop`` stops them all (they also stop when idle, on
``%skills reload``, when the extension is unloaded and when the kernel exits). ``NAME``
starts the servers of a skill's Python scripts now and waits until they are ready.
"""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "warm servers (preloaded packages, memory, idle time); --stop; NAME starts a skill's"
USAGE = "%skills warm [--stop | NAME [SCRIPT ...]]"

PARSER = SubcommandParser("warm", USAGE)
PARSER.add_argument("name", nargs="?", default=None)
PARSER.add_argument("scripts", nargs="*")
PARSER.add_argument("--stop", action="store_true")


def run(magics: SkillsHost, args: list[str]) -> Any:
    opts = PARSER.parse(args)
    manager = magics.manager
    if opts.stop:
        if opts.name:
            PARSER.error("--stop takes no skill name")
        count = manager.stop_warm_servers(wait_for_runs=True)  # a run in flight ends as it would
        print(f"Stopped {count} warm server{'s' if count != 1 else ''}")
        return None
    if opts.name:
        for got in manager.warm_up(opts.name, opts.scripts or None):
            if got.server is not None:
                print(f"{got.script}: ready · {got.server.line()}")
            else:
                print(f"{got.script}: cold ({got.note or 'warm start is off'})")
        return None
    infos = manager.warm_servers()
    if not infos:
        print(
            "No warm server is running: Python scripts start one when they import packages "
            f"(SkillMagics.warm_start = {manager.settings.warm_start!r}); %skills warm NAME "
            "starts one now"
        )
        return None
    for info in infos:
        print(info.line())
    return None
