"""``%skills history``: this session's audit records (runs, refusals, declines)."""

from __future__ import annotations

from typing import Any

HELP = "this session's audit records as a table"


def run(magics: Any, args: list[str]) -> Any:
    from ..render import history_table

    return history_table(magics.manager.audit.records())
