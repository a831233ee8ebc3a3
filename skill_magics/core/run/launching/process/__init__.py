"""Run one command in its own process group, driven by one selector loop in the calling thread.

Example (not run as a doctest: it starts a process)::

    child = spawn(["bash", "x.sh"], b"{}", cwd="/skills/s", env={"PATH": "/usr/bin"})
    out = drive(child, Limits(timeout=30, max_output_size=10 * 2**20))
    out.returncode, out.stdout.text

:func:`spawn` is the cold launch; a warm one (core/run/launching/warm/launch.fork) returns another
kind of :class:`Child`; :func:`drive` drives either to its end (launchers/ chooses). The modules:
``spawn.py`` (the Child, starting one), ``drive.py`` (the loop, run_process), ``tree.py`` (the
group, the descendants, the kill of all of it), ``capture.py`` (a stream as it is read).
The kill reaches the main process by its own pid (a pidfd) as well as its group: a script
can move itself into another group (``setpgid``) or session, where the group kill misses it.

Why one loop and no reader threads: per-run threads measured ~1.27x raw ``subprocess.run`` on
a trivial bash script, one loop ~1.05x. Why a process group and not a new session: with
autogroup scheduling each new session costs a scheduler tick per spawn on a busy machine.

The loop writes stdin without blocking, reads stdout/stderr, and watches the main process
through a pidfd (Linux), so it notices the main process exiting even while a background child
keeps the pipes open. The group is always killed before the main process is reaped: an
unreaped (zombie) leader keeps the group id from being reused by an unrelated process.

A child that calls setsid()/setpgid() leaves the group, so killing the group misses it. Once
a run has lasted ``TREE_POLL_S`` (50 ms), the loop also snapshots the run's process tree every
``TREE_POLL_S`` during the first second, then every ``TREE_POLL_LATER_S`` (250 ms), and
remembers every descendant; when the run ends (exit, timeout, cancel, interrupt) those still
alive die with the group (checked by creation time, so a recycled pid is never hit). Runs
shorter than 50 ms pay no snapshot. A descendant born, detached and orphaned between two
snapshots (a double fork) is caught on Linux by orphans.py instead: during a run this
process is a child subreaper, so the orphan is re-parented here, and it carries the run's id
in its environment; the run's end kills and reaps it. What still escapes is said there.
That kill stops what it finds and looks again until nothing new turns up, so processes forked
during the kill die too, and a watcher kills the run when the kernel dies
(core/run/launching/containment.py).
"""

from __future__ import annotations

from skill_magics.core.run.launching.process.capture import OnOutput, StreamCapture
from skill_magics.core.run.launching.process.drive import (
    DRAIN_S,
    GRACE_S,
    Limits,
    ProcessOutcome,
    drive,
    run_process,
)
from skill_magics.core.run.launching.process.spawn import (
    Child,
    ChildFds,
    Pipe,
    SpawnError,
    group_kwargs,
    spawn,
)
from skill_magics.core.run.launching.process.tree import TREE_POLL_S, kill_group

__all__ = [
    "Child",
    "ChildFds",
    "Limits",
    "Pipe",
    "drive",
    "group_kwargs",
    "GRACE_S",
    "DRAIN_S",
    "TREE_POLL_S",
    "StreamCapture",
    "ProcessOutcome",
    "SpawnError",
    "run_process",
    "spawn",
    "kill_group",
    "OnOutput",
]
