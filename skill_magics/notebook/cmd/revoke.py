"""``%skills revoke NAME`` (or ``--all``): forget a session approval."""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost, one_arg

HELP = "NAME | --all: forget session approvals, so the next run asks again"


def run(magics: SkillsHost, args: list[str]) -> Any:
    store = magics.manager.approvals
    if args == ["--all"]:
        count = len(store.approvals())
        store.clear()
        print(f"Revoked {count} session approval(s)")
        return None
    name = one_arg(args, "%skills revoke NAME  or  %skills revoke --all")
    if not store.revoke(name):
        have = ", ".join(sorted(store.approvals())) or "none"
        raise UsageError(f"No session approval for {name!r} (approved: {have})")
    print(f"Revoked the session approval for {name}: the next run asks again")
    return None
