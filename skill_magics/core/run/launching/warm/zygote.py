"""The warm server: a Python that imported a skill's packages once and forks one child per run.

Runs in the *skill's* Python (its venv, its managed environment or the kernel's), so it uses
the standard library only and never imports skill_magics. docs/architecture.md, *Warm start*.
The client (warm/server.py) starts it with one end of a SOCK_SEQPACKET socketpair as fd N:

    python [the run's interpreter flags] zygote.py serve N
    bwrap ... -- python -I -S zygote.py stage1 N TMPDIR -- python [flags] zygote.py serve N

Control messages (client -> server), one per packet (every tag: wire.py, loaded by path):

- ``L`` + JSON list of import names: import them here (never a skill's own module: the
  server's sys.path has no skill folder on it); the reply is a JSON report.
- ``R`` with five file descriptors (SCM_RIGHTS): the run's socket, stdin, stdout, stderr and
  a memfd holding the run's spec (argv, cwd, environment with its secrets). The server never
  reads the spec: it forks, and only the child reads it, so no secret value is ever in the
  server's memory.
- ``Q``: stop (also on EOF: the client went away). Every running child's group is killed.

The guard (:func:`_start_guard`, forked before any import, in a process group of its own)
holds each run's pidfd from the fork until it is reaped, and kills every run still there
(and its group) when the server dies, however it dies (a killed kernel takes the server
with it): so a run needs no parent-death signal, which a cold run does not have.

Per run, on the run's socket: the child sends ``P`` first (the client, with SO_PASSCRED, gets
the child's pid as its own PID namespace numbers it: the process group to kill); ``F`` + JSON
when it cannot start (no such cwd: exit 126, like a failed exec); the server sends ``S`` + the
child's exit status (as ``subprocess`` reports it: -N for signal N) when it exits, read with
WNOWAIT; the child is reaped only when the client answers ``R`` (or goes away), after it
killed what was left of the group: a zombie leader keeps the group id from being reused.

A run's child is made to look like a fresh ``python [flags] script.py`` (or ``-m module``) that
has just imported the preloaded packages: a new process group, the run's argv, cwd, umask and
environment (os.environ replaced, putenv included), stdin/stdout/stderr rebuilt on fds 0-2 as
CPython's startup builds them, every other descriptor closed, ``__main__`` a fresh module with
``__file__``, ``sys.path`` as the cold run computes it, the signal dispositions, mask, warnings
filters and sys hooks the interpreter had once the packages were imported (nothing of the
server's own), every random generator the packages seeded from the OS reseeded
(:class:`child.Generators`), tempfile's cached directory and
the line cache dropped, the caller's resource limits, nice value and CPU affinity (sent in
the spec), and the run's id
written into the block /proc/self/environ shows (over a slot kept for it: the client finds
a daemon that forks without exec by it). A package that prints, starts a Python thread,
keeps a file descriptor open or makes memory shared between processes (a multiprocessing
lock, an anonymous shared mmap) while it is imported is reported unsafe and not preloaded
(a fork would not show that output, carry that thread or keep that file, and every run
would share that memory).
Uncaught exceptions print the same traceback (the server's own frames cut off) and exit 1;
KeyboardInterrupt exits by SIGINT; SystemExit prints and exits as the interpreter does; the end
joins threads, runs atexit, flushes (exit 120 when stdout cannot be flushed) and clears the
script's modules so their objects are finalized (:func:`_finalize`).

Sandboxed servers (stage1): bwrap starts this file with ``-I -S`` (no site, no .pth code) in
a user namespace where it holds CAP_SYS_ADMIN; stage1 mounts a spare /proc (so that children
may mount their own), enters a nested user namespace (every mount of the sandbox becomes
locked: nothing run later can unmount the deny list or remount anything writable) and execs
the server. Each run's child then unshares its own mount, PID, IPC, UTS (and, without
network, network) namespaces, mounts a fresh TMPDIR, /dev (with /dev/shm and a devpts of
its own) and /proc (its machine-wide parts read-only, as bwrap covers them), and the script runs
as PID 2 under a small init (PID 1, as in bwrap), with every capability dropped and
no_new_privs set: the same view a cold sandboxed run gets.
"""

import sys

_STARTUP_MODULES = frozenset(sys.modules)  # what a fresh interpreter has: before our imports

import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402

_MAXFDS = 8
# Frames of this file are cut from a run's traceback: the name it was compiled under
# (importlib_bootstrap_zygote.py: one warnings skip, as the interpreter's own frames).
_ZYGOTE_FILE = sys._getframe().f_code.co_filename
_ZYGOTE_DIR = os.path.dirname(os.path.realpath(__file__))


def _load(name: str, **shared: object) -> "types.ModuleType":
    """A module beside this file, loaded as this file is: by path (skill_magics is not
    importable in the skill's Python), compiled under a name of the interpreter's own (its
    frames are skipped by warnings, as this file's) and kept out of sys.modules (a run's
    child holds no module of the server's own)."""
    path = os.path.join(_ZYGOTE_DIR, name + ".py")
    module = type(sys)(name)
    module.__file__ = path
    module.__dict__.update(shared)  # the modules loaded before it that it uses
    with open(path, "rb") as fh:
        code = compile(fh.read(), f"{_ZYGOTE_FILE[:-1]}: {name}>", "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


TYPE_CHECKING = False  # typing is not imported here: nothing of the server's own in a run
if TYPE_CHECKING:
    import types
    from typing import Any

    from skill_magics.core.run.launching.warm import child, namespaces, wire
else:
    wire = _load("wire")  # the message tags, one table for both ends
    namespaces = _load("namespaces")  # the sandbox: stage1 and each run's namespaces
    child = _load("child", namespaces=namespaces, wire=wire)  # a run's child after the fork
_STATUS = wire.INT


# -- the server -------------------------------------------------------------------------------


class _Run:
    """One child the server forked: its pid, pidfd and the run's socket."""

    __slots__ = ("pid", "pidfd", "sock", "status")

    def __init__(self, pid: int, pidfd: int, sock: socket.socket) -> None:
        self.pid = pid
        self.pidfd = pidfd
        self.sock: socket.socket | None = sock
        self.status: int | None = None  # the exit status once sent


class Server:
    def __init__(self, ctl_fd: int, sandbox: "dict[str, Any] | None") -> None:
        self.ctl = socket.socket(fileno=ctl_fd)
        # The guard's socket and pid (None: runs keep their parent-death signal instead).
        self.guard, self.guard_pid = _start_guard()
        self.pid = os.getpid()
        self.sandbox = sandbox  # {"tmpdir": ..., "network": bool} or None
        self.runs: dict[int, _Run] = {}  # fd (pidfd or socket) -> _Run
        self.poll = __import__("select").poll()  # no descriptor of its own (unlike epoll)
        self.loaded: list[str] = []
        self.failed: dict[str, str] = {}
        self.path_base = _path_base()

    # -- messages ---------------------------------------------------------------------------

    def hello(self) -> None:
        info = {
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "path": [p for p in sys.path if os.path.isdir(p)],
            "note": os.environ.pop("SKILL_MAGICS_WARM_NOTE", ""),
            "problem": self.sandbox_problem(self.sandbox) if self.sandbox else "",
        }
        self.ctl.send(wire.HELLO + json.dumps(info).encode())

    def load(self, names):
        """Import ``names``; a package that prints while it is imported, or starts a Python
        thread, is reported ``unsafe``: a fork would not show that output or carry that
        thread, so the client starts a server without it (a run imports it itself)."""
        started = time.monotonic()
        unsafe: dict = {}
        child.Generators.record()
        try:
            self._import(names, unsafe)
        finally:
            child.Generators.stop()
        gc.collect()
        child.Generators.find()  # before freeze: frozen objects are no longer listed by gc
        gc.freeze()  # the heap stays shared with the children (no refcount-driven copying)
        child.State.take()
        extra = sorted({m.split(".", 1)[0] for m in sys.modules} - _top(_STARTUP_MODULES))
        return {
            "loaded": self.loaded,
            "failed": self.failed,
            "unsafe": unsafe,
            "os_threads": _os_threads(),
            "modules": extra,
            "fds": _open_fds(),
            "sources": _sources(),
            "seconds": time.monotonic() - started,
        }

    def _import(self, names, unsafe):
        for name in names:
            if name in self.loaded or name in self.failed:
                continue
            out_before = _written()
            threads_before = _thread_names()
            fds_before = _open_fds()
            shared_before = _shared_maps()
            try:
                __import__(name)
            except BaseException as exc:  # noqa: BLE001 - a package that fails is not preloaded
                self.failed[name] = f"{type(exc).__name__}: {exc}"[:300]
                continue
            self.loaded.append(name)
            started_threads = sorted(_thread_names() - threads_before)
            kept = sorted(set(_open_fds()) - set(fds_before))
            if started_threads:
                unsafe[name] = f"it starts Python threads ({', '.join(started_threads[:3])})"
            elif _written() != out_before:
                unsafe[name] = "it prints while it is imported"
            elif kept:
                # Closed in every run's child, the package's handle would then name whatever
                # the script opens next under that number (its log lines in the script's file).
                unsafe[name] = f"it keeps a file descriptor open ({_fd_name(kept[0])})"
            else:
                shared = sorted(_shared_maps() - shared_before)
                if shared:
                    # Every run forked from here would share it (a counter, a lock one run
                    # leaves taken), where each cold run makes its own.
                    unsafe[name] = (
                        "it makes memory shared between processes while imported (a "
                        f"multiprocessing lock, a shared mmap: {shared[0][1]})"
                    )

    def sandbox_problem(self, sandbox: "dict[str, Any]") -> str:
        """'' when a run can get its own namespaces and mounts here, else why not."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                namespaces.sandbox_chain(sandbox, probe=True)
            except BaseException as exc:  # noqa: BLE001 - reported to the client
                os.write(write, str(exc).encode()[:500])
                os._exit(3)
            os._exit(0)  # pragma: no cover - the chain never returns when probing
        os.close(write)
        why = os.read(read, 1000).decode(errors="replace")
        os.close(read)
        status = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
        if status == 0 and not why:
            return ""
        return (
            "a run cannot get its own mount, PID, IPC and network namespaces inside the warm "
            f"server ({why or f'status {status}'})"
        )

    # -- the loop ---------------------------------------------------------------------------

    def serve(self) -> child.Job:
        """Answer until the client goes away; returns a child.Job in a forked run child."""
        import select

        ctl_fd = self.ctl.fileno()
        self.poll.register(ctl_fd, select.POLLIN)
        while True:
            for fd, _events in self.poll.poll():
                if fd == ctl_fd:
                    job = self.control()
                    if job is not None:
                        return job
                    continue
                run = self.runs.get(fd)
                if run is None:
                    continue
                if fd == run.pidfd:
                    self.exited(run)
                else:
                    self.answered(run)

    def control(self) -> "child.Job | None":
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.ctl, 65536, _MAXFDS)
        except InterruptedError:
            return None
        if not data or data[:1] == wire.QUIT:
            for fd in fds:
                os.close(fd)
            self.shutdown()
        kind = data[:1]
        if kind == wire.LOAD:
            report = self.load(json.loads(data[1:]))
            self.ctl.send(wire.LOAD + json.dumps(report).encode())
            return None
        if kind == wire.RUN and len(fds) == 5:
            return self.fork(fds)
        for fd in fds:
            os.close(fd)
        return None

    def fork(self, fds):
        sock = socket.socket(fileno=fds[0])
        try:
            pid = os.fork()
        except OSError as exc:
            try:
                sock.send(wire.FAILED + json.dumps([exc.errno, exc.strerror, "fork"]).encode())
            except OSError:
                pass
            sock.close()
            for fd in fds[1:]:
                os.close(fd)
            return None
        if pid == 0:
            guarded = self.guard is not None
            self.forget(sock)
            return child.Job(sock, fds[1:], self.sandbox, self.pid, guarded)
        for fd in fds[1:]:
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # also done in the child: whichever runs first
        except OSError:
            pass
        import select

        pidfd = os.pidfd_open(pid)
        self.tell_guard(wire.HOLD, pid, pidfd)
        run = _Run(pid, pidfd, sock)
        self.runs[pidfd] = run
        self.runs[sock.fileno()] = run
        self.poll.register(pidfd, select.POLLIN)
        self.poll.register(sock.fileno(), select.POLLIN)
        return None

    def exited(self, run: _Run) -> None:
        """The child ended: tell the client how (WNOWAIT: not reaped yet)."""
        info = os.waitid(os.P_PID, run.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        if info is None:
            return
        run.status = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
        self.poll.unregister(run.pidfd)
        del self.runs[run.pidfd]
        os.close(run.pidfd)
        run.pidfd = -1
        if run.sock is None:  # its client went away first: nobody will answer, reap now
            self.reap(run)
            return
        try:
            run.sock.send(wire.STATUS + _STATUS.pack(run.status))
        except OSError:  # the client is gone: nobody will answer, reap now
            self.reap(run)

    def answered(self, run: _Run) -> None:
        """The client answered (or went away): reap once the child has exited."""
        sock = run.sock
        if sock is None:  # never: a run's socket is polled only while it has one
            return
        try:
            data = sock.recv(64)
        except OSError:
            data = b""
        if run.status is None:
            if data:
                return  # nothing to answer before the exit status: ignore
            # The client went away while the run was going: end the run, by its pidfd too
            # (it may have left its group); its exit is then reaped by exited().
            _kill_run(run)
            self.poll.unregister(sock.fileno())
            del self.runs[sock.fileno()]
            sock.close()
            run.sock = None
            return
        self.reap(run)

    def tell_guard(self, kind: bytes, pid: int, pidfd: int = -1) -> None:
        """``+``: the guard holds this run's pidfd; ``-``: it lets go (the run was reaped)."""
        if self.guard is None:
            return
        try:
            socket.send_fds(self.guard, [kind + _STATUS.pack(pid)], [pidfd] if pidfd >= 0 else [])
        except OSError:  # the guard is gone or stopped: the client's group kill still holds
            pass

    def reap(self, run: _Run) -> None:
        self.tell_guard(wire.LET_GO, run.pid)
        if run.sock is not None:
            fd = run.sock.fileno()
            if self.runs.pop(fd, None) is not None:
                self.poll.unregister(fd)
            run.sock.close()
            run.sock = None
        try:
            os.waitpid(run.pid, 0)
        except ChildProcessError:
            pass

    def forget(self, own):
        """In a forked child: let go of every socket the server holds without closing the
        descriptors (closed later, all at once) so no object closes a reused number."""
        self.ctl.detach()
        if self.guard is not None:
            self.guard.detach()
        for run in set(self.runs.values()):
            if run.sock is not None and run.sock is not own:
                run.sock.detach()
        self.runs = {}

    def shutdown(self) -> None:
        for run in set(self.runs.values()):
            _kill_run(run)
        for run in set(self.runs.values()):
            try:
                os.waitpid(run.pid, 0)
            except ChildProcessError:
                pass
        if self.guard is not None:
            self.guard.close()  # EOF: it ends (the runs are gone already); reaped here
            try:
                os.waitpid(self.guard_pid, 0)
            except ChildProcessError:
                pass
        os._exit(0)


GUARD_NAME = "skm-warm-guard"  # the guard's comm (15 bytes at most)


def _start_guard() -> "tuple[socket.socket | None, int]":
    """Fork the guard (before any import: a small process), which kills every run's group
    when this server dies, however it dies: the runs then need no parent-death signal of
    their own (a cold run has none: ``PR_GET_PDEATHSIG`` reads 0). Its own process group,
    so a kill of the server's group leaves it to do that. None when it cannot start."""
    try:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    except OSError:
        return None, 0
    try:
        pid = os.fork()
    except OSError:
        ours.close()
        theirs.close()
        return None, 0
    if pid == 0:  # pragma: no cover - the guard process
        try:
            os.setpgid(0, 0)
            try:  # the name a zombie keeps: orphans.reap_zombies knows it as a run's
                with open("/proc/self/comm", "w") as comm:
                    comm.write(GUARD_NAME)
            except OSError:
                pass
            ours.detach()
            keep = theirs.fileno()
            os.closerange(0, keep)
            os.closerange(keep + 1, 1 << 20)
            _guard(theirs)
        finally:
            os._exit(0)
    theirs.close()
    ours.setblocking(False)  # a stopped guard (SIGSTOP) never stalls the server: see tell_guard
    return ours, pid


def _guard(sock: socket.socket) -> None:  # pragma: no cover - runs in the guard process
    """The guard's loop: hold each run's pidfd (``+``) until it is reaped (``-``); at EOF
    (the server is gone) kill each run still there, and its group."""
    held: dict = {}
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(sock, 64, 1)
        except InterruptedError:
            continue
        except OSError:
            data, fds = b"", []
        if not data:
            break
        pid = _STATUS.unpack(data[1 : 1 + _STATUS.size])[0]
        old = held.pop(pid, None)
        if old is not None:
            os.close(old)
        if data[:1] == wire.HOLD and fds:
            held[pid] = fds[0]
        else:
            for fd in fds:
                os.close(fd)
    for pid, pidfd in held.items():
        try:
            # ESRCH once reaped: the number may be someone else's now, so no group kill.
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        except OSError:
            continue
        _killpg(pid, signal.SIGKILL)


def _kill_run(run: _Run) -> None:
    """SIGKILL a run's process by its pidfd (never a reused pid) and its group (a zombie
    leader keeps the group id from being reused, so the number is still the run's)."""
    if run.pidfd >= 0:
        try:
            signal.pidfd_send_signal(run.pidfd, signal.SIGKILL)
        except OSError:
            pass
    _killpg(run.pid, signal.SIGKILL)


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except OSError:
        pass


def _top(names):
    return {name.split(".", 1)[0] for name in names}


def _written():
    """Bytes written to the server's stdout/stderr so far (both are its log file), what
    their buffers hold included (a write without a newline is not in the file yet, and a
    run's child would never flush it where a cold run prints it)."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        return (os.fstat(1).st_size, os.fstat(2).st_size)
    except OSError:
        return (0, 0)


def _thread_names():
    threading = sys.modules.get("threading")
    if threading is None:
        return set()
    main = threading.main_thread()
    return {f"{t.name}#{t.ident}" for t in threading.enumerate() if t is not main}


def _os_threads():
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return 0


def _open_fds():
    """The descriptors open now (not the one listing them: it is closed by then)."""
    try:
        listed = [int(fd) for fd in os.listdir("/proc/self/fd")]
    except OSError:
        return []
    out = []
    for fd in sorted(listed):
        try:
            os.fstat(fd)
        except OSError:
            continue
        out.append(fd)
    return out


def _shared_maps():
    """The writable shared mappings of this process that no cold run could map again, as
    (range, what) pairs: an anonymous shared mmap (``/dev/zero (deleted)``), a POSIX
    semaphore (``/dev/shm/sem.* (deleted)``: multiprocessing's locks), SysV shared memory,
    a memfd. Every run forked from here would share them. A file that is still there is
    left out: a cold run maps the same file and sees the same bytes."""
    out = set()
    try:
        with open("/proc/self/maps", "rb") as fh:
            for line in fh:
                fields = line.split(None, 5)
                if len(fields) < 2 or fields[1][1:2] != b"w" or fields[1][3:4] != b"s":
                    continue
                what = (fields[5].strip() if len(fields) > 5 else b"").decode(errors="replace")
                if what.startswith("/") and what != "/dev/zero" and "(deleted)" not in what:
                    continue
                out.add((fields[0].decode(), what or "anonymous"))
    except OSError:
        pass
    return out


def _fd_name(fd: int) -> str:
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return str(fd)


def _sources() -> "list[str]":
    """The files of the modules held here that lie outside the interpreter's standard
    library and its site-packages (an editable install's source tree, a PYTHONPATH folder):
    edited in place, they change no folder the client watches, so it watches these files."""
    stdlib = os.path.dirname(os.__file__) + os.sep
    out = set()
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not isinstance(path, str) or path.startswith(stdlib):
            continue
        parts = path.split(os.sep)
        if "site-packages" in parts or "dist-packages" in parts:
            continue
        out.add(path)
    return sorted(out)


def _drop_own_dir() -> None:
    """The server's sys.path[0] is this file's folder: never import a preload from there."""
    if sys.path and not getattr(sys.flags, "safe_path", False):
        if sys.path[0] and os.path.realpath(sys.path[0]) == _ZYGOTE_DIR:
            del sys.path[0]


def _path_base() -> "list[str]":
    """sys.path without what depends on the run: the entries PYTHONPATH added (the run has
    its own; the script's folder or cwd in front is the run's too)."""
    path = list(sys.path)
    ours = child.pythonpath(os.environ.get("PYTHONPATH", ""))
    for entry in ours:
        if entry in path:
            path.remove(entry)
    return path


_SERVER = None


def serve(args: "list[str]") -> "dict[str, Any]":
    global _SERVER
    ctl_fd = int(args[1])
    sandbox = None
    if "--sandbox" in args:
        sandbox = json.loads(args[args.index("--sandbox") + 1])
    # A Python that forks with threads warns (3.12+); the server checks its threads itself.
    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
    child.FORK_FILTER.append(warnings.filters[0])
    child.State.take()
    _drop_own_dir()
    os.environ.pop(child.SLOT_VAR, None)  # nothing imported here ever sees it: the block keeps it
    # What every run's child needs (its limits, its parent-death signal), loaded once here
    # instead of per run (ctypes: 1.7 ms), and so among the modules the server reports: a
    # skill's own ctypes.py runs cold.
    import resource  # noqa: F401

    namespaces.libc()
    if sandbox is not None:
        import fcntl  # noqa: F401
    _SERVER = Server(ctl_fd, sandbox)
    _SERVER.hello()
    job = _SERVER.serve()
    return child.child_of(job, _SERVER.path_base)


if __name__ == "__main__":
    if sys.argv[1:2] == ["stage1"]:
        namespaces.stage1(sys.argv[1:])
    child.run(serve(sys.argv[1:]))
