"""``%skills trace [on|off|auto]``: OpenTelemetry traces of runs, approvals and builds
(core/trace/, docs/tracing.md). Without a word: whether tracing is on and why. ``auto``:
the standard variables (``OTEL_EXPORTER_OTLP_ENDPOINT``, ...) decide, as at start.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "OpenTelemetry traces of runs and approvals: on, off, auto (the OTEL_* variables)"
USAGE = "%skills trace [on|off|auto]"

PARSER = SubcommandParser("trace", USAGE)
PARSER.add_argument("state", nargs="?", choices=("on", "off", "auto"), default=None)


def run(magics: SkillsHost, args: list[str]) -> Any:
    opts = PARSER.parse(args)
    from skill_magics.core import trace
    from skill_magics.core.base.errors import TracingUnavailable

    if opts.state is None:
        trace.refresh(now=True)
        print(trace.status())
        return None
    try:
        print(trace.turn(opts.state))
    except TracingUnavailable as exc:
        raise UsageError(str(exc)) from None
    return None
