"""``%skills revoke NAME`` (or ``--all``): forget a session approval."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "NAME | --all: forget session approvals, so the next run asks again"


USAGE = "%skills revoke NAME  or  %skills revoke --all"
PARSER = SubcommandParser("revoke", USAGE)
PARSER.add_argument("name", nargs="?")
PARSER.add_argument("--all", action="store_true")


def run(magics: SkillsHost, args: list[str]) -> Any:
    opts = PARSER.parse(args)
    if (opts.name is None) == (not opts.all):
        raise UsageError(f"Usage: {USAGE}")
    store = magics.manager.approvals
    if opts.all:
        count = len(store.approvals())
        store.clear()
        print(f"Revoked {count} session approval(s)")
        return None
    name = opts.name
    if not store.revoke(name):
        have = ", ".join(sorted(store.approvals())) or "none"
        raise UsageError(f"No session approval for {name!r} (approved: {have})")
    print(f"Revoked the session approval for {name}: the next run asks again")
    return None
