"""A run with a cgroup of its own starts held (core/run/launching/process/spawn.py): as
/bin/sh waiting for one line on its stdin, written once this process has moved it into its
cgroup, then exec'd into the command. Popen keeps its vfork path (a preexec_fn would make
it fork() this whole process: 47 ms a spawn from 400 MB, bench/bench_executor.py).

What must hold whichever way a run starts: the command's pid, argv, environment (exactly
the one given: dash's PWD is put back), stdin (the payload, whole, whatever its size), its
cgroup from its first instruction, and Popen's own error for a program that cannot be
exec'd (never a shell's fallback of running the file as a shell script).
"""

from __future__ import annotations

import errno
import hashlib
import importlib
import os
import subprocess
from pathlib import Path

import pytest

from skill_magics.core.run.launching.cgroups import RUN_CGROUPS
from skill_magics.core.run.launching.process import SpawnError, run_process

spawn_module = importlib.import_module("skill_magics.core.run.launching.process.spawn")

pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self"), reason="Linux: /proc")

ENV = {"PATH": "/usr/bin:/bin", "A": "1"}


class _Out:
    def __init__(self, outcome) -> None:
        self.pid, self.returncode = outcome.pid, outcome.returncode
        self.stdout, self.stderr = outcome.stdout.text, outcome.stderr.text


def _run(command: list[str], payload: bytes | None = b"{}", env=ENV, cwd="/") -> _Out:
    return _Out(
        run_process(
            command, cwd=cwd, env=env, payload=payload, timeout=60, max_output_size=64 * 2**20
        )
    )


def test_runs_here_start_held() -> None:
    """Where a run gets a cgroup, it starts held (else the rest of this module proves the
    unheld path, which is the same contract)."""
    if RUN_CGROUPS.base() is None:
        assert RUN_CGROUPS.why_not
        return
    out = _run(["/bin/cat", "/proc/self/cgroup"])
    assert out.returncode == 0, out.stderr
    assert "/skill-magics-" in out.stdout and "/run-" in out.stdout, out.stdout
    assert spawn_module._held_ok(["/bin/cat"], ENV) == spawn_module._DASH


@pytest.mark.parametrize("pwd", [None, "/somewhere/else"])
def test_the_environment_is_exactly_the_one_given(pwd: str | None) -> None:
    env = dict(ENV) if pwd is None else {**ENV, "PWD": pwd}
    out = _run(["/usr/bin/env", "-0"], env=env)
    assert out.returncode == 0, out.stderr
    seen = dict(item.split("=", 1) for item in out.stdout.split("\0") if item)
    seen.pop("SKILL_MAGICS_RUN_ID")  # the run's own id (core/run/launching/orphans.py)
    assert seen == env


def test_argv_and_pid_are_the_commands() -> None:
    code = "import os, sys; print(os.getpid(), sys.argv[1:], open('/proc/self/comm').read())"
    out = _run(["/usr/bin/python3", "-c", code, "a b", "--x"])
    assert out.returncode == 0, out.stderr
    pid, rest = out.stdout.split(" ", 1)
    assert int(pid) == out.pid
    assert rest.startswith("['a b', '--x'] python3"), rest


@pytest.mark.parametrize("size", [0, 1, 4095, 4096, 70_000, 3 * 2**20])
def test_the_payload_reaches_stdin_whole(size: int) -> None:
    payload = os.urandom(size // 2).hex().encode()[:size]
    payload += b"x" * (size - len(payload))
    out = _run(["/usr/bin/sha256sum"], payload=payload)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[0] == hashlib.sha256(payload).hexdigest()


def test_no_payload_reads_as_empty() -> None:
    out = _run(["/usr/bin/wc", "-c"], payload=None)
    assert out.returncode == 0 and out.stdout.strip() == "0", (out.stdout, out.stderr)


def test_a_program_that_cannot_be_execd_is_popens_error_never_a_shell_script(
    tmp_path: Path,
) -> None:
    """An executable file with no #! line: exec gives ENOEXEC; a shell would run it as a
    shell script (here: touch a marker)."""
    marker = tmp_path / "ran"
    program = tmp_path / "prog"
    program.write_text(f"touch {marker}\n")
    program.chmod(0o755)
    assert not spawn_module._held_ok([str(program)], ENV)
    with pytest.raises(SpawnError) as raised:
        _run([str(program)])
    assert raised.value.errno == errno.ENOEXEC
    assert not marker.exists()
    with pytest.raises(SpawnError) as missing:
        _run([str(tmp_path / "absent")])
    assert missing.value.errno == errno.ENOENT


def test_a_held_child_never_released_runs_nothing(tmp_path: Path) -> None:
    """The line never comes (the spawner died, or failed before releasing it): the shell
    exits and the command never starts."""
    if not spawn_module._DASH:  # no held start here: every run joins from the child
        assert not spawn_module._held_ok(["/usr/bin/touch"], ENV)
        return
    marker = tmp_path / "ran"
    held = spawn_module._hold(["/usr/bin/touch", str(marker)], ENV)
    done = subprocess.run(held, stdin=subprocess.DEVNULL, env=ENV, timeout=30)
    assert done.returncode == 125 and not marker.exists()
    released = subprocess.run(held, input=b"\n", env=ENV, timeout=30)
    assert released.returncode == 0 and marker.exists()


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_a_childs_descriptors_are_closed_here_and_ours_too_when_the_start_fails() -> None:
    """ChildFds (the cold spawn's and the warm fork's): the child's ends close when the block
    ends; ours stay open, unless the start failed."""
    with spawn_module.ChildFds() as fds:
        theirs_r, ours_w = fds.pipe(ours="w")
        ours_r, theirs_w = fds.pipe(ours="r")
        given = fds.give(os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC))
    assert not any(map(_is_open, (theirs_r, theirs_w, given)))
    assert _is_open(ours_w) and _is_open(ours_r)
    os.close(ours_w)
    os.close(ours_r)
    with pytest.raises(RuntimeError), spawn_module.ChildFds() as fds:
        theirs_r, ours_w = fds.pipe(ours="w")
        raise RuntimeError("the start failed")
    assert not _is_open(theirs_r) and not _is_open(ours_w)
