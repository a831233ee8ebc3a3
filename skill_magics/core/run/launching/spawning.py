"""Where processes start (docs/architecture.md, *Launch*): the short list of modules that may
call ``subprocess``, ``os.fork``, ``os.posix_spawn`` or ``asyncio.create_subprocess_*``, which
``tests/test_spawn_sites.py`` holds the source to (an ast walk), and :func:`start_helper`,
the one way a helper with pipes of its own starts (git's ``cat-file --batch`` reader).

A run, an installer, git's and ssh-keygen's commands go through ``process.spawn`` /
``process.run_process``; installers and git pass ``die_with_parent``, so they and every
helper they start (git-remote-https, ssh, a build backend) run under core/run/launching/treeguard.py
and die with a killed kernel.
"""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from typing import Any

from skill_magics.core.run.launching.process.spawn import _guarded

# Module -> why it may start processes itself (everything else asks one of these).
_LAUNCHING = "skill_magics.core.run.launching"
SPAWN_SITES: Mapping[str, str] = {
    f"{_LAUNCHING}.process.spawn": "runs, installers, git, ssh-keygen (spawn, run_process)",
    f"{_LAUNCHING}.spawning": "helpers with pipes of their own (start_helper)",
    f"{_LAUNCHING}.treeguard": "the tree guard starts the command it guards",
    f"{_LAUNCHING}.containment": "the run watcher, which kills runs the kernel left",
    f"{_LAUNCHING}.warm.server": "a warm server (it has its own guard, skm-warm-guard)",
    f"{_LAUNCHING}.warm.zygote": "forks inside a warm server, never in the kernel",
    f"{_LAUNCHING}.warm.namespaces": "forks inside a warm server, never in the kernel",
    "skill_magics.core.mcp.stdio": "an MCP stdio server, whose pipes anyio drives",
    "skill_magics.core.mcp.serving": "the MCP skills server (its lifeline ends it)",
}


def start_helper(
    argv: Sequence[str],
    *,
    guard: bool,
    env: Mapping[str, str] | None = None,
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start a helper process (list form, never a shell) with Popen's keywords ``popen``
    (pipes, cwd, ``pass_fds``; ``process_group=0`` or ``start_new_session`` keep it out of
    the kernel's group). ``guard``: under core/run/launching/treeguard.py, so it and what it starts
    die with this process (Linux); only for a helper whose starting thread outlives it (the
    parent-death signal follows the thread). A program that is not there raises SpawnError
    (an OSError) when guarded, FileNotFoundError otherwise: nothing started."""
    command = _guarded(argv, env) if guard else list(argv)
    return subprocess.Popen(command, env=env, **popen)


__all__ = ["SPAWN_SITES", "start_helper"]
