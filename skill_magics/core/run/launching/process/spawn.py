"""Starting a run's process (the cold launch; a sandboxed run is the same, its command
wrapped in bwrap): :class:`Child`, what the drive loop drives whichever way a run started,
and :func:`spawn`, which makes one with pipes of our own in a process group of its own,
under the tree guard when asked (treeguard.py, beside this package)."""

from __future__ import annotations

import errno
import logging
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence

from skill_magics.core.run.launching.cgroups import RUN_CGROUPS, RunCgroup
from skill_magics.core.run.launching.orphans import RUN_ID_VAR, SUBREAPER, Orphans, new_run_id

logger = logging.getLogger("skill_magics.executor")


_HAS_PIDFD = hasattr(os, "pidfd_open")
_HAS_WAITID = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


class SpawnError(OSError):
    """The program could not be started at all (nothing ran)."""


def group_kwargs() -> dict:
    """Popen keywords that start the child in a process group of its own."""
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {"process_group": 0}  # setpgid in the child; keeps the fast vfork path


class Pipe:
    """Our end of one of a run's pipes: a bare descriptor. The loop reads and writes it with
    os.read/os.write, so it needs no file object (whose creation costs an fstat)."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def fileno(self) -> int:
        return self.fd

    @property
    def closed(self) -> bool:
        return self.fd < 0

    def close(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            os.close(fd)


class Child:
    """A started run as the loop drives it: the main process (its pid is its group id), our
    ends of its pipes, how to notice its exit without reaping it, and how to reap it.

    :class:`_PopenChild` is a process this one spawned; a warm server's fork
    (core/run/launching/warm/server.py) is another kind, whose exit a message on a socket announces.
    """

    pid: int
    stdin: Pipe | None  # None: stdin was /dev/null, or the payload was written already
    stdout: Pipe
    stderr: Pipe
    reaped = False
    start = 0.0  # time.monotonic() when it was spawned: the timeout counts from there
    payload: bytes | None = None  # what is left to write to its stdin (the loop writes it)
    held: Orphans | None = (
        None  # its orphans (core/run/launching/orphans.py), the subreaper entered
    )
    cgroup: RunCgroup | None = None  # the run's own cgroup (core/run/launching/cgroups.py), if any
    failure: SpawnError | None = None  # it could not start after all (a warm child's cwd)
    # A warm run's server ended while it ran ("signal 9", "exit 1"): its status is not the
    # script's own doing (ProcessOutcome.server_stopped).
    server_stopped = ""

    def exit_fd(self) -> int | None:
        """A descriptor that becomes readable when the main process exits (None: poll)."""
        return None

    def on_exit_fd(self) -> bool:
        """``exit_fd`` is readable: has the main process exited?"""
        return True

    def poll_exit(self) -> bool:
        """Has the main process exited? Never reaps it."""
        raise NotImplementedError

    def reap(self, exited: bool = False) -> int:
        """Wait for the exited (or killed) main process; its status, -N for signal N.
        ``exited``: it surely has exited already (:meth:`has_exited`)."""
        raise NotImplementedError

    def kill(self, sig: int) -> None:
        """Signal the main process itself, by pid (a pidfd where there is one): it may have
        left its group (``setpgid`` into its parent's, ``setsid``), where the group kill
        misses it. Never reaps it, so its pid cannot be recycled meanwhile."""
        raise NotImplementedError

    def close(self) -> None:
        """Release what the child holds beyond its pipes (the loop closes those)."""

    def release(self) -> None:
        """The run is over: let its orphans go (the subreaper is left)."""
        held, self.held = self.held, None
        if held is not None:
            if held.held:
                held.close()
            SUBREAPER.leave()
        group, self.cgroup = self.cgroup, None
        if group is not None:
            RUN_CGROUPS.release(group)

    def has_exited(self) -> bool:
        """After the loop saw the exit: has the main process surely exited (it is a zombie
        or reaped, so its children were re-parented already)? False when unsure."""
        return False


class _PopenChild(Child):
    """A process started here with subprocess.Popen."""

    def __init__(
        self,
        proc: subprocess.Popen,
        stdin: Pipe | None,
        stdout: Pipe,
        stderr: Pipe,
        *,
        start: float,
        payload: bytes | None,
        held: Orphans | None,
    ) -> None:
        self.start = start
        self.payload = payload
        self.held = held
        self.proc = proc
        self.pid = proc.pid
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr
        self.pidfd: int | None = None

    def exit_fd(self) -> int | None:
        if _HAS_PIDFD:
            try:
                self.pidfd = os.pidfd_open(self.pid)
            except OSError:  # old kernel (< 5.3) or seccomp: poll the pid instead
                self.pidfd = None
        return self.pidfd

    def kill(self, sig: int) -> None:
        if self.reaped:
            return
        try:
            if self.pidfd is not None:
                signal.pidfd_send_signal(self.pidfd, sig)
            else:  # unreaped: the pid is still this child's (a zombie at worst)
                os.kill(self.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass

    def poll_exit(self) -> bool:
        if _HAS_WAITID:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:  # already reaped: it has exited
                return True
            return info is not None
        return self.proc.poll() is not None  # pragma: no cover - no waitid(): reaps

    def has_exited(self) -> bool:
        return True  # the loop saw its pidfd readable or waitid(WNOWAIT) report it

    def reap(self, exited: bool = False) -> int:
        if exited and self.proc.returncode is None:
            # A zombie already (``has_exited``): one waitpid, not Popen.wait's timed loop.
            try:
                _pid, status = os.waitpid(self.pid, 0)
            except ChildProcessError:  # reaped elsewhere: Popen knows how to say so
                pass
            else:
                self.proc.returncode = code = os.waitstatus_to_exitcode(status)
                self.reaped = True
                return code
        try:
            code = self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - uninterruptible sleep
            logger.error("Process %s did not exit after SIGKILL; leaving it", self.pid)
            code = -signal.SIGKILL
        self.reaped = True
        return code

    def close(self) -> None:
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class ChildFds:
    """The descriptors of a child being started (a cold spawn, a warm fork): the ends the
    child gets are closed here once the block ends (it has its copies by then, or never
    will), ours are closed too when the start fails. Every pipe is close-on-exec.

    Example::

        with ChildFds() as fds:
            theirs_r, ours_w = fds.pipe(ours="w")   # the child's stdin
            start_child(stdin=theirs_r)
        # theirs_r closed; ours_w open, unless start_child raised
    """

    def __init__(self) -> None:
        self.ours: list[int] = []
        self.theirs: list[int] = []

    def pipe(self, ours: str) -> tuple[int, int]:
        """A new pipe (read end, write end); ``ours``: "r" or "w", the end this process keeps."""
        read, write = os.pipe2(os.O_CLOEXEC) if _PIPE2 else os.pipe()
        self.ours.append(read if ours == "r" else write)
        self.theirs.append(write if ours == "r" else read)
        return read, write

    def give(self, fd: int) -> int:
        """``fd`` is the child's (closed here once it has it)."""
        self.theirs.append(fd)
        return fd

    def close_ours(self, fd: int) -> None:
        """Close our ``fd`` now (all written)."""
        self.ours.remove(fd)
        os.close(fd)

    def __enter__(self) -> ChildFds:
        return self

    def __exit__(self, kind: object, *_rest: object) -> None:
        try:
            if kind is not None:
                for fd in self.ours:
                    os.close(fd)
        finally:
            for fd in self.theirs:
                os.close(fd)


def spawn(
    command: Sequence[str],
    payload: bytes | None,
    *,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    orphans: bool = True,
    die_with_parent: bool = False,
) -> Child:
    """Start ``command`` (list form, never a shell) in a process group of its own: the cold
    launch (a sandboxed run is the same, its command wrapped in bwrap). payload None means
    stdin reads as empty. ``orphans``: also find and kill the run's daemons that left the
    group (core/run/launching/orphans.py; a sandboxed run's PID namespace does that already).
    ``die_with_parent``: see :func:`run_process`. Raises SpawnError when the program cannot
    be started (nothing ran)."""
    held: Orphans | None = None
    group: RunCgroup | None = None
    join = -1
    arm = die_with_parent
    if die_with_parent:
        guarded = _guarded(command, env)
        arm = guarded is command  # the guard sets its own parent-death signal
        command = guarded
    if orphans and SUBREAPER.enter():
        held = Orphans(run_id := new_run_id())
        env = {**(os.environ if env is None else env), RUN_ID_VAR: run_id}
    try:
        if held is not None and (group := RUN_CGROUPS.new()) is not None:
            join = group.join_fd()  # the child joins its cgroup before it execs
            if join < 0:
                RUN_CGROUPS.release(group)
                group = None
        start = time.monotonic()
        try:
            proc, stdin, out_r, err_r, rest = _popen(command, payload, cwd, env, arm, join)
        finally:
            if join >= 0:
                os.close(join)
    except BaseException:
        if held is not None:
            SUBREAPER.leave()
        if group is not None:
            RUN_CGROUPS.release(group)
        raise
    child = _PopenChild(proc, stdin, Pipe(out_r), Pipe(err_r), start=start, payload=rest, held=held)
    child.cgroup = group
    return child


def _popen(
    command: Sequence[str],
    payload: bytes | None,
    cwd: str | os.PathLike[str],
    env: Mapping[str, str] | None,
    die_with_parent: bool = False,
    join: int = -1,
) -> tuple[subprocess.Popen, Pipe | None, int, int, bytes | None]:
    """Popen with pipes made here, not by Popen: it would wrap its ends in file objects (an
    fstat each) that the loop never uses. A payload that fits the pipe is written before the
    spawn and its write end closed: the script reads it, then EOF. Returns the process, our
    stdin end (None: nothing left to write), stdout and stderr read ends, the unwritten
    payload. ``join``: a cgroup's ``cgroup.procs`` the child is moved into before its
    command runs (by this process when it can start held, :func:`_hold`; else by the
    child itself)."""
    setup = _child_setup(die_with_parent)
    held = join >= 0 and setup is None and _held_ok(command, env)
    if join >= 0 and not held:
        setup = _child_setup(die_with_parent, join)
    stdin: Pipe | None = None
    go = b""  # held: what releases the child, written before the payload
    with ChildFds() as fds:
        if payload is None and not held:
            child_in: int = subprocess.DEVNULL
        else:
            child_in, in_w = fds.pipe(ours="w")
            if held:
                command = _hold(command, env)
                go, payload = b"\n" + (payload or b""), None
            else:
                payload = _prefill(in_w, payload or b"", fds)
                stdin = Pipe(in_w) if payload is not None else None
        out_r, out_w = fds.pipe(ours="r")
        err_r, err_w = fds.pipe(ours="r")
        try:
            proc = subprocess.Popen(
                command,
                stdin=child_in,
                stdout=out_w,
                stderr=err_w,
                cwd=cwd,
                env=env,
                shell=False,
                bufsize=0,
                preexec_fn=setup,
                **_GROUP,
            )
        except OSError as exc:
            raise SpawnError(exc.errno, exc.strerror or str(exc), exc.filename) from exc
        if held:
            try:  # into its cgroup, then released: its command starts inside
                payload = _release(proc, join, in_w, go, fds)
            except BaseException:
                proc.kill()
                proc.wait()
                raise
            stdin = Pipe(in_w) if payload is not None else None
    return proc, stdin, out_r, err_r, payload


def _prefill(fd: int, payload: bytes, fds: ChildFds) -> bytes | None:
    """Write what fits the new pipe ``fd`` at once; closed (and None) when all of it did,
    else what the loop must still write (all of it: a small write is atomic or nothing)."""
    written = os.write(fd, payload) if len(payload) <= _PREFILL else 0
    if written == len(payload):
        fds.close_ours(fd)
        return None
    return payload[written:]


def _release(proc: subprocess.Popen, join: int, fd: int, go: bytes, fds: ChildFds) -> bytes | None:
    """Move the held child into its cgroup (a move that fails leaves it to the look-and-kill,
    as a child without a cgroup is), then let it go: ``go`` is the newline and the payload,
    written at once when it fits the pipe (``fd`` closed, None), else the newline alone and
    the payload returned for the loop to write."""
    try:
        os.write(join, b"%d" % proc.pid)
    except OSError as exc:
        logger.debug("could not move run %s into its cgroup: %s", proc.pid, exc)
    if _prefill(fd, go, fds) is None:
        return None
    os.write(fd, b"\n")  # one byte into the empty pipe: never blocks
    return go[1:]


# Held start (a run with a cgroup): a preexec_fn makes Popen fork() where it would vfork(),
# and a fork copies this process's page tables, as big as the kernel's memory (48 ms a spawn
# from a process holding 400 MB, against 1.2 ms by vfork; bench/bench_executor.py). So the
# child starts as /bin/sh, waits on its stdin for one line, which this process writes once it
# has moved the child into its cgroup, then execs the command in its place: the same pid,
# argv and stdin (the payload follows the line); nothing the command forks is outside.
# No line (this process died, or the spawn failed): the shell exits, nothing ran. dash only
# (Debian's /bin/sh): it adds nothing to the environment but PWD, which is put back as given.
_SH = "/bin/sh"
_DASH = os.path.basename(os.path.realpath(_SH)) == "dash"
_WAIT = "IFS= read -r _ || exit 125; "


def _hold(command: Sequence[str], env: Mapping[str, str] | None) -> list[str]:
    """``command`` started held (see above), its environment exactly ``env``."""
    pwd = (os.environ if env is None else env).get("PWD")
    if pwd is None:
        return [_SH, "-c", _WAIT + 'unset PWD; exec "$@"', "skill-magics-run", *command]
    script = _WAIT + 'PWD=$1; export PWD; shift; exec "$@"'
    return [_SH, "-c", script, "skill-magics-run", pwd, *command]


def _held_ok(command: Sequence[str], env: Mapping[str, str] | None) -> bool:
    """Can ``command`` start held? Its program must be an executable binary or ``#!`` script
    (anything else: Popen's own exec error, not a shell's fallback of running it as a shell
    script), and /bin/sh must be there."""
    if not command or not _DASH or not os.access(_SH, os.X_OK):
        return False
    program = command[0]
    if os.sep not in program:
        path = (os.environ if env is None else env).get("PATH", os.defpath)
        found = shutil.which(program, path=path)
        if found is None:
            return False
        program = found
    try:
        with open(program, "rb") as fh:
            head = fh.read(4)
    except OSError:
        return False
    return os.access(program, os.X_OK) and (head == b"\x7fELF" or head[:2] == b"#!")


# A write of at most PIPE_BUF bytes to a new, empty pipe never blocks: every pipe holds at
# least one page (even past the per-user pipe buffer limits), and PIPE_BUF is at most that.
_PREFILL = getattr(select, "PIPE_BUF", 512)


_GROUP = group_kwargs()  # the same for every run
PR_SET_PDEATHSIG = 1  # linux/prctl.h


# Beside this package (launching/treeguard.py): run by path, as a script.
_GUARD = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "treeguard.py")


def _guarded(command: Sequence[str], env: Mapping[str, str] | None) -> Sequence[str]:
    """``command`` under core/run/launching/treeguard.py (Linux), so its children die with this
    process too: the parent-death signal reaches only the process it is set on (the guard
    sets its own; ``command`` itself where there is no guard). A program that is not there
    is still a SpawnError here, as without the guard."""
    if not sys.platform.startswith("linux") or not sys.executable or not command:
        return command
    path = (os.environ if env is None else env).get("PATH", os.defpath)
    if shutil.which(command[0], path=path) is None:
        raise SpawnError(errno.ENOENT, "No such file or directory", command[0])
    return [sys.executable, "-I", "-S", _GUARD, str(os.getpid()), "--", *command]


def _child_setup(die_with_parent: bool, join: int = -1) -> Callable[[], None] | None:
    """The ``preexec_fn`` of a spawn, or None (Popen's fast path).

    A script starts with SIGINT at its default whatever this process does with it: a kernel
    ignores SIGINT between cells (ipykernel), and ``nohup``/``&`` start a process with it
    ignored; an ignored signal survives exec, so the script's Ctrl-C, Interrupt and Stop
    would find it deaf (KeyboardInterrupt never raised). ``join``: the child writes itself
    into its run's cgroup (core/run/launching/cgroups.py) before it execs, so nothing it forks is
    outside; a failed write leaves it to the look-and-kill, as without a cgroup."""
    arm = _death_signal() if die_with_parent else None
    deaf = signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    if not deaf and join < 0:
        return arm

    def setup() -> None:
        if join >= 0:
            try:
                os.write(join, b"0")
            except OSError:
                pass
        if deaf:
            signal.signal(signal.SIGINT, signal.SIG_DFL)
        if arm is not None:
            arm()

    return setup


def _death_signal() -> Callable[[], None] | None:
    """A ``preexec_fn`` that makes the child die (SIGKILL) with the thread that spawned it;
    None where prctl is not there. libc is loaded here, in the parent: nothing is loaded
    between fork and exec."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl
    parent = os.getpid()

    def arm() -> None:
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent:  # the parent died before the prctl: nobody will wait
            os._exit(1)

    return arm


_PIPE2 = hasattr(os, "pipe2")  # both ends close-on-exec at once (os.pipe's are too, later)


__all__ = ["Child", "ChildFds", "Pipe", "SpawnError", "group_kwargs", "spawn"]
