"""Shared pieces of the skill lab's tests: the scripted server, real SDK clients pointed at it,
and skills in the shapes the lab meets (no tests in here).

The clients are the real ``anthropic`` and ``openai`` SDK clients, sync and async, with
retries off (a scripted HTTP error must reach the lab once, not be retried by the SDK).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
from model_server import Call, Scripted

CLIENTS = ["anthropic", "openai", "anthropic-async", "openai-async"]
SYNC_CLIENTS = ["anthropic", "openai"]

# A script that leaves a marker in its skill folder when it runs, and echoes its input.
MARKER = textwrap.dedent(
    """\
    import json, os, sys
    data = json.load(sys.stdin) if not sys.argv[1:] else {}
    with open(os.path.join(os.environ["SKILL_BASE_DIR"], "ran.marker"), "a") as fh:
        fh.write("ran\\n")
    print(json.dumps({"echo": data, "argv": sys.argv[1:], "cwd": os.getcwd()}))
    """
)
# A script that writes a report file into its working folder (an eval run's outputs/).
REPORT = textwrap.dedent(
    """\
    import json, os, sys
    data = json.load(sys.stdin)
    with open("report.txt", "w") as fh:
        fh.write("rows: " + str(data.get("rows", 0)) + "\\n")
    print("wrote report.txt with rows=" + str(data.get("rows", 0)))
    """
)
FAILING = "import sys\nsys.stderr.write('bad input: no such unit\\n')\nsys.exit(2)\n"


def make_client(kind: str, url: str, *, timeout: float = 20.0) -> Any:
    """A real SDK client of ``kind`` (see CLIENTS) talking to the server at ``url``."""
    common = {"api_key": "test-key-not-a-secret", "max_retries": 0, "timeout": timeout}
    if kind == "anthropic":
        return anthropic.Anthropic(base_url=url, **common)
    if kind == "anthropic-async":
        return anthropic.AsyncAnthropic(base_url=url, **common)
    if kind == "openai":
        return openai.OpenAI(base_url=url + "/v1", **common)
    if kind == "openai-async":
        return openai.AsyncOpenAI(base_url=url + "/v1", **common)
    raise ValueError(kind)


def provider_of(kind: str) -> str:
    return kind.split("-")[0]


def run_lab(entry: Callable[..., Any], client: Any, *args: Any, **kwargs: Any) -> Any:
    """``entry(client, ...)`` with a sync client; with an async one its ``*_async`` twin,
    awaited (the sync entry points refuse async clients)."""
    import asyncio
    import inspect

    if type(client).__name__.startswith("Async"):
        twin = getattr(inspect.getmodule(entry), f"{entry.__name__}_async")
        return asyncio.run(twin(client, *args, **kwargs))
    return entry(client, *args, **kwargs)


def lab_skills(make_skill: Callable[..., Path], root: Path) -> Path:
    """Three skills: ``marker`` (scripts that leave a marker, fail, write a report), ``notes``
    (no scripts) and ``hidden-skill`` (disable-model-invocation: true)."""
    make_skill(
        root,
        "marker",
        {
            "name": "marker",
            "description": "Marks a run on disk and echoes its input. Use for marking runs.",
        },
        {"scripts/mark.py": MARKER, "scripts/fail.py": FAILING, "scripts/report.py": REPORT},
        body="# Marker\n\nRun `python scripts/mark.py` or `python scripts/report.py`.\n",
    )
    make_skill(
        root,
        "notes",
        {"name": "notes", "description": "Write meeting notes in a fixed layout."},
        body="# Notes\n\nUse headings: Decisions, Actions.\n",
    )
    make_skill(
        root,
        "hidden-skill",
        {
            "name": "hidden-skill",
            "description": "Only people may use this.",
            "disable-model-invocation": True,
        },
        {"scripts/x.py": "print('x')\n"},
    )
    return root


def by_turn(*turns: Callable[[Call], Scripted] | Scripted) -> Callable[[Call], Scripted]:
    """A script answering the n-th request of a conversation with ``turns[n-1]``."""

    def script(call: Call) -> Scripted:
        step = turns[min(call.turn, len(turns)) - 1]
        return step(call) if callable(step) else step

    return script


__all__ = [
    "CLIENTS",
    "MARKER",
    "SYNC_CLIENTS",
    "by_turn",
    "lab_skills",
    "make_client",
    "provider_of",
    "run_lab",
]
