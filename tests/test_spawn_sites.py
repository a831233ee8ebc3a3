"""Where processes start: only the modules core/run/launching/spawning.SPAWN_SITES names call
``subprocess``, ``os.fork``, ``os.posix_spawn``, ``os.exec*``/``os.spawn*``,
``asyncio.create_subprocess_*`` or ``anyio.open_process`` (read from the source with ``ast``,
nothing imported), and git's commands during an install, its ``cat-file`` reader included,
run under the tree guard (core/run/launching/treeguard.py) so they die with a killed kernel."""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from manager_support import posix_only
from sources_support import make_repo, skill_md

import skill_magics
from skill_magics.core.run.launching.spawning import SPAWN_SITES, start_helper

SOURCE = Path(skill_magics.__file__).parent
# What starts a process, by its full dotted name (after the module's imports are resolved).
STARTERS = frozenset(
    {f"subprocess.{n}" for n in "Popen run call check_call check_output getoutput".split()}
    | {"subprocess.getstatusoutput", "pty.fork", "pty.spawn", "anyio.open_process"}
    | {"anyio.run_process", "multiprocessing.Process", "multiprocessing.Pool"}
    | {"concurrent.futures.ProcessPoolExecutor", "asyncio.create_subprocess_exec"}
    | {"asyncio.create_subprocess_shell", "os.fork", "os.forkpty", "os.system", "os.popen"}
    | {f"os.{n}{s}" for n in ("exec", "spawn") for s in "v ve vp vpe l le lp lpe".split()}
    | {"os.posix_spawn", "os.posix_spawnp"}
)

_LOOP_STARTERS = frozenset({"subprocess_exec", "subprocess_shell"})


def _dotted(node: ast.expr, names: dict[str, str]) -> str:
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return ""
    return ".".join([names.get(node.id, node.id), *reversed(parts)])


def starts(source: str) -> list[tuple[int, str]]:
    """The calls in ``source`` that start a process: (line, dotted name). An import under
    another name counts (``from subprocess import Popen as P; P(...)``); a mention that is
    no call does not (a type annotation, ``except subprocess.TimeoutExpired``)."""
    tree = ast.parse(source)
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.partition(".")[0]] = (
                    alias.name if alias.asname else alias.name.partition(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Attribute) and func.attr in _LOOP_STARTERS:
                found.append((node.lineno, f"loop.{func.attr}"))  # an event loop's, any loop
            elif (name := _dotted(func, names)) in STARTERS:
                found.append((node.lineno, name))
    return sorted(found)


def _module(path: Path) -> str:
    parts = list(path.relative_to(SOURCE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_only_the_named_modules_start_processes() -> None:
    found: dict[str, list[str]] = {}
    for path in sorted(SOURCE.rglob("*.py")):
        if path.is_relative_to(SOURCE / "examples"):  # skills' scripts, not package code
            continue
        for line, name in starts(path.read_text(encoding="utf-8")):
            found.setdefault(_module(path), []).append(f"{path.name}:{line} {name}")
    stray = {m: calls for m, calls in found.items() if m not in SPAWN_SITES}
    assert not stray, (
        f"start it through core/run/launching/process/ or spawning.start_helper: {stray}"
    )
    # Every site named still starts something (a stale entry would hide a new one).
    assert set(found) == set(SPAWN_SITES)


def test_the_walk_finds_aliases_and_leaves_mentions_alone() -> None:
    code = (
        "import os, subprocess as sp\nfrom subprocess import Popen as P\nimport asyncio\n"
        "p: sp.Popen | None = None\ntry:\n    P(['x'])\nexcept sp.TimeoutExpired:\n    pass\n"
        "os.fork()\nsp.run(['y'])\nasyncio.get_running_loop().subprocess_exec(None)\n"
        "text = 'subprocess.Popen(x)'\nos.getpid()\nsp.PIPE\n"
    )
    assert starts(code) == [
        (6, "subprocess.Popen"),
        (9, "os.fork"),
        (10, "subprocess.run"),
        (11, "loop.subprocess_exec"),
    ]


def _parent_cmdline(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as fh:
        ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
    with open(f"/proc/{ppid}/cmdline", "rb") as fh:
        return fh.read().replace(b"\0", b" ").decode()


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tree guard is Linux's")
def test_a_guarded_helper_runs_under_the_tree_guard_and_an_unguarded_one_does_not() -> None:
    for guard in (True, False):
        proc = start_helper(
            [sys.executable, "-c", "import os, sys; print(os.getpid()); sys.stdin.read()"],
            guard=guard,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            process_group=0,
        )
        try:
            assert proc.stdout is not None
            pid = int(proc.stdout.readline())
            assert ("treeguard.py" in _parent_cmdline(pid)) is guard
            assert (pid != proc.pid) is guard
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
            for pipe in (proc.stdin, proc.stdout):
                if pipe is not None:
                    pipe.close()


@posix_only
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the tree guard is Linux's")
def test_git_runs_under_the_tree_guard_during_an_install(isolated_env, monkeypatch) -> None:
    from skill_magics.core.sources.install import install_skills

    repo = make_repo(isolated_env / "pdf", {"SKILL.md": skill_md("pdf")})
    # A git on PATH that writes down its parent's command line, then is the real git.
    shim = isolated_env / "bin"
    shim.mkdir()
    seen = isolated_env / "parents.txt"
    real = shutil.which("git")
    (shim / "git").write_text(
        f'#!/bin/sh\ntr "\\0" " " </proc/$PPID/cmdline >>{seen}; echo >>{seen}\nexec {real} "$@"\n'
    )
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    report = install_skills(f"file://{repo}", into=isolated_env / "into", approver=None)
    assert report.names == ["pdf"]
    parents = seen.read_text().splitlines()
    assert len(parents) >= 3  # init, fetch, ls-tree, cat-file: each under the guard
    assert all("treeguard.py" in parent for parent in parents), parents
