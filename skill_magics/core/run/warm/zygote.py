"""The warm server: a Python that imported a skill's packages once and forks one child per run.

Runs in the *skill's* Python (its venv, its managed environment or the kernel's), so it uses
the standard library only and never imports skill_magics. docs/architecture.md, *Warm start*.
The client (warm/server.py) starts it with one end of a SOCK_SEQPACKET socketpair as fd N:

    python [the run's interpreter flags] zygote.py serve N
    bwrap ... -- python -I -S zygote.py stage1 N TMPDIR -- python [flags] zygote.py serve N

Control messages (client -> server), one per packet:

- ``L`` + JSON list of import names: import them here (never a skill's own module: the
  server's sys.path has no skill folder on it); the reply is a JSON report.
- ``R`` with five file descriptors (SCM_RIGHTS): the run's socket, stdin, stdout, stderr and
  a memfd holding the run's spec (argv, cwd, environment with its secrets). The server never
  reads the spec: it forks, and only the child reads it, so no secret value is ever in the
  server's memory.
- ``Q``: stop (also on EOF: the client went away). Every running child's group is killed.

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
(:class:`_Generators`), tempfile's cached directory and
the line cache dropped, the caller's resource limits, nice value and CPU affinity (sent in
the spec), and the run's id
written into the block /proc/self/environ shows (over a slot kept for it: the client finds
a daemon that forks without exec by it). A package that prints, starts a Python thread or
keeps a file descriptor open while it is imported is reported unsafe and
not preloaded (a fork would not show that output, carry that thread or keep that file).
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

import atexit  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import struct  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402


class _State:
    """What a run's child starts from: the interpreter's state once the preloaded packages
    were imported (their warnings filters, signal handlers, hooks and atexit callbacks are
    what a cold run importing them gets too), without anything of the server's own."""

    signals: dict = {}
    filters: list = []
    hooks: dict = {}

    @classmethod
    def take(cls):
        cls.signals = {}
        for sig in signal.valid_signals():
            try:
                cls.signals[sig] = signal.getsignal(sig)
            except (OSError, ValueError):  # SIGKILL/SIGSTOP and the like: nothing to restore
                pass
        cls.filters = [f for f in warnings.filters if f is not _FORK_FILTER[0]]
        cls.hooks = {
            name: getattr(sys, name)
            for name in ("excepthook", "displayhook", "breakpointhook", "unraisablehook")
            if hasattr(sys, name)
        }


_FORK_FILTER: list = []  # the one filter the server adds (for itself): never a run's
_STATUS = struct.Struct("i")
_MAXFDS = 8
# Frames of this file are cut from a run's traceback: the name it was compiled under
# (importlib_bootstrap_zygote.py: one warnings skip, as the interpreter's own frames).
_ZYGOTE_FILE = sys._getframe().f_code.co_filename
_ZYGOTE_DIR = os.path.dirname(os.path.realpath(__file__))

SLOT_VAR = "SKILL_MAGICS_WARM_SLOT"  # first in an unsandboxed server's environment


def _load(name):
    """A module beside this file, loaded as this file is: by path (skill_magics is not
    importable in the skill's Python), compiled under a name of the interpreter's own (its
    frames are skipped by warnings, as this file's) and kept out of sys.modules (a run's
    child holds no module of the server's own)."""
    path = os.path.join(_ZYGOTE_DIR, name + ".py")
    module = type(sys)(name)
    module.__file__ = path
    with open(path, "rb") as fh:
        code = compile(fh.read(), f"{_ZYGOTE_FILE[:-1]}: {name}>", "exec", dont_inherit=True)
    exec(code, module.__dict__)
    return module


TYPE_CHECKING = False  # typing is not imported here: nothing of the server's own in a run
if TYPE_CHECKING:
    from skill_magics.core.run.warm import namespaces
else:
    namespaces = _load("namespaces")  # the sandbox: stage1 and each run's namespaces


# -- the server -------------------------------------------------------------------------------


class _Run:
    """One child the server forked: its pid, pidfd and the run's socket."""

    __slots__ = ("pid", "pidfd", "sock", "status")

    def __init__(self, pid, pidfd, sock):
        self.pid = pid
        self.pidfd = pidfd
        self.sock = sock
        self.status = None  # the exit status once sent


class _Job:
    """What a forked child takes out of the server loop: its socket and descriptors."""

    def __init__(self, sock, fds, sandbox, server_pid):
        self.sock = sock
        self.stdin, self.stdout, self.stderr, self.spec_fd = fds
        self.sandbox = sandbox
        self.server_pid = server_pid


class Server:
    def __init__(self, ctl_fd, sandbox):
        self.ctl = socket.socket(fileno=ctl_fd)
        self.pid = os.getpid()
        self.sandbox = sandbox  # {"tmpdir": ..., "network": bool} or None
        self.runs = {}  # fd (pidfd or socket) -> _Run
        self.poll = __import__("select").poll()  # no descriptor of its own (unlike epoll)
        self.loaded = []
        self.failed = {}
        self.path_base = _path_base()

    # -- messages ---------------------------------------------------------------------------

    def hello(self):
        info = {
            "pid": os.getpid(),
            "python": sys.version.split()[0],
            "executable": sys.executable,
            "path": [p for p in sys.path if os.path.isdir(p)],
            "note": os.environ.pop("SKILL_MAGICS_WARM_NOTE", ""),
            "problem": self.sandbox_problem() if self.sandbox else "",
        }
        self.ctl.send(b"H" + json.dumps(info).encode())

    def load(self, names):
        """Import ``names``; a package that prints while it is imported, or starts a Python
        thread, is reported ``unsafe``: a fork would not show that output or carry that
        thread, so the client starts a server without it (a run imports it itself)."""
        started = time.monotonic()
        unsafe: dict = {}
        _Generators.record()
        try:
            self._import(names, unsafe)
        finally:
            _Generators.stop()
        gc.collect()
        _Generators.find()  # before freeze: frozen objects are no longer listed by gc
        gc.freeze()  # the heap stays shared with the children (no refcount-driven copying)
        _State.take()
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

    def sandbox_problem(self):
        """'' when a run can get its own namespaces and mounts here, else why not."""
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            try:
                namespaces.sandbox_chain(self.sandbox, probe=True)
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

    def serve(self):
        """Answer until the client goes away; returns a _Job in a forked run child."""
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

    def control(self):
        try:
            data, fds, _flags, _addr = socket.recv_fds(self.ctl, 65536, _MAXFDS)
        except InterruptedError:
            return None
        if not data or data[:1] == b"Q":
            for fd in fds:
                os.close(fd)
            self.shutdown()
        kind = data[:1]
        if kind == b"L":
            report = self.load(json.loads(data[1:]))
            self.ctl.send(b"L" + json.dumps(report).encode())
            return None
        if kind == b"R" and len(fds) == 5:
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
                sock.send(b"F" + json.dumps([exc.errno, exc.strerror, "fork"]).encode())
            except OSError:
                pass
            sock.close()
            for fd in fds[1:]:
                os.close(fd)
            return None
        if pid == 0:
            self.forget(sock)
            return _Job(sock, fds[1:], self.sandbox, self.pid)
        for fd in fds[1:]:
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # also done in the child: whichever runs first
        except OSError:
            pass
        import select

        pidfd = os.pidfd_open(pid)
        run = _Run(pid, pidfd, sock)
        self.runs[pidfd] = run
        self.runs[sock.fileno()] = run
        self.poll.register(pidfd, select.POLLIN)
        self.poll.register(sock.fileno(), select.POLLIN)
        return None

    def exited(self, run):
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
            run.sock.send(b"S" + _STATUS.pack(run.status))
        except OSError:  # the client is gone: nobody will answer, reap now
            self.reap(run)

    def answered(self, run):
        """The client answered (or went away): reap once the child has exited."""
        try:
            data = run.sock.recv(64)
        except OSError:
            data = b""
        if run.status is None:
            if data:
                return  # nothing to answer before the exit status: ignore
            # The client went away while the run was going: end the run, by its pidfd too
            # (it may have left its group); its exit is then reaped by exited().
            _kill_run(run)
            self.poll.unregister(run.sock.fileno())
            del self.runs[run.sock.fileno()]
            run.sock.close()
            run.sock = None
            return
        self.reap(run)

    def reap(self, run):
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
        for run in set(self.runs.values()):
            if run.sock is not None and run.sock is not own:
                run.sock.detach()
        self.runs = {}

    def shutdown(self):
        for run in set(self.runs.values()):
            _kill_run(run)
        for run in set(self.runs.values()):
            try:
                os.waitpid(run.pid, 0)
            except ChildProcessError:
                pass
        os._exit(0)


class _Generators:
    """The random generators the preloaded packages hold that were seeded from the OS's
    entropy: a cold run's differ in every process, so each run's child reseeds them
    (:meth:`reseed`). One a package seeded itself (``random.Random(42)``,
    ``numpy.random.default_rng(7)``) is left as it is: a cold run gets that same sequence.

    Why reseed rather than refuse to preload: nearly every package holds a generator (the
    ``random`` module's own, NumPy's global one), so refusing would leave nothing warm.
    How one is told apart: while packages are imported, ``random.Random.seed`` and
    ``secrets.randbits`` (where NumPy's SeedSequence draws its entropy) are wrapped to note
    which instance was seeded without a seed and which entropy was drawn; the wrappers are
    removed once the imports are done, so a run sees the originals."""

    python: dict = {}  # id -> random.Random seeded from the OS
    numpy: list = []  # NumPy BitGenerators whose SeedSequence drew OS entropy
    _drawn: set = set()
    _saved: list = []

    @classmethod
    def record(cls):
        import random
        import secrets

        if not cls._saved:  # the module's own instance: seeded from the OS when imported
            cls.python.setdefault(id(random._inst), random._inst)
        seed, setstate, randbits = random.Random.seed, random.Random.setstate, secrets.randbits
        cls._saved = [seed, setstate, randbits]

        def noted_seed(self, a=None, version=2):
            seed(self, a, version)
            if a is None:
                cls.python[id(self)] = self
            else:
                cls.python.pop(id(self), None)

        def noted_setstate(self, state):
            setstate(self, state)
            cls.python.pop(id(self), None)

        def noted_randbits(k):
            value = randbits(k)
            cls._drawn.add(value)
            return value

        random.Random.seed = noted_seed  # type: ignore[method-assign]
        random.Random.setstate = noted_setstate  # type: ignore[method-assign]
        _swap_randbits(randbits, noted_randbits)  # NumPy imported by an earlier load too
        secrets.randbits = noted_randbits

    @classmethod
    def stop(cls):
        import random
        import secrets

        seed, setstate, randbits = cls._saved
        random.Random.seed = seed  # type: ignore[method-assign]
        random.Random.setstate = setstate  # type: ignore[method-assign]
        noted = secrets.randbits
        secrets.randbits = randbits
        _swap_randbits(noted, randbits)

    @classmethod
    def find(cls):
        bit_generator = sys.modules.get("numpy.random.bit_generator")
        kind = getattr(bit_generator, "BitGenerator", None)
        if kind is None or not cls._drawn:
            return
        for obj in gc.get_objects():
            if isinstance(obj, kind) and obj not in cls.numpy:
                seq = getattr(obj, "seed_seq", None)
                if getattr(seq, "entropy", None) in cls._drawn:
                    cls.numpy.append(obj)

    @classmethod
    def reseed(cls):
        """In a run's child: new OS entropy for each generator seeded from it."""
        if cls.python:
            import random

            for inst in cls.python.values():
                random.Random.seed(inst, None)
        for bits in cls.numpy:
            try:
                bits.state = type(bits)().state
            except Exception:  # noqa: BLE001 - a generator we cannot reseed keeps its state
                pass


def _swap_randbits(old, new):
    """``randbits`` of every module that took it by ``from secrets import randbits``
    (NumPy's bit_generator) from ``old`` to ``new``."""
    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "randbits", None) is old:
            try:
                module.randbits = new  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass


def _kill_run(run):
    """SIGKILL a run's process by its pidfd (never a reused pid) and its group (a zombie
    leader keeps the group id from being reused, so the number is still the run's)."""
    if run.pidfd >= 0:
        try:
            signal.pidfd_send_signal(run.pidfd, signal.SIGKILL)
        except OSError:
            pass
    _killpg(run.pid, signal.SIGKILL)


def _killpg(pgid, sig):
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


def _fd_name(fd):
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return str(fd)


def _sources():
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


def _drop_own_dir():
    """The server's sys.path[0] is this file's folder: never import a preload from there."""
    if sys.path and not getattr(sys.flags, "safe_path", False):
        if sys.path[0] and os.path.realpath(sys.path[0]) == _ZYGOTE_DIR:
            del sys.path[0]


def _path_base():
    """sys.path without what depends on the run: the entries PYTHONPATH added (the run has
    its own; the script's folder or cwd in front is the run's too)."""
    path = list(sys.path)
    ours = _pythonpath(os.environ.get("PYTHONPATH", ""))
    for entry in ours:
        if entry in path:
            path.remove(entry)
    return path


def _pythonpath(value):
    if not value or sys.flags.ignore_environment:
        return []
    return [os.path.abspath(p) for p in value.split(os.pathsep) if p]


# -- a run's child ----------------------------------------------------------------------------


def _send(sock, kind, payload=None):
    data = kind if payload is None else kind + json.dumps(payload).encode()
    try:
        sock.send(data)
    except OSError:
        pass


def _read_spec(fd):
    chunks = []
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def _child(job):
    """In the forked child: become the run's process (see the module docstring). Returns the
    spec of what to run; a failure to start exits 126 after telling the client why."""
    os.setpgid(0, 0)
    namespaces.die_with_parent(job.server_pid)
    sock = job.sock
    sock.send(b"P")  # the client learns our pid from the credentials
    try:
        spec = _read_spec(job.spec_fd)
    except (OSError, ValueError) as exc:
        _send(sock, b"F", [getattr(exc, "errno", None) or 5, str(exc), "spec"])
        os._exit(126)
    for fd, target in ((job.stdin, 0), (job.stdout, 1), (job.stderr, 2)):
        os.dup2(fd, target)
    for fd in {job.stdin, job.stdout, job.stderr} - {0, 1, 2}:
        os.close(fd)
    if job.sandbox is not None:
        try:
            namespaces.sandbox_chain(job.sandbox, sock=sock)
        except OSError as exc:
            _send(sock, b"F", [exc.errno or 1, f"sandbox: {exc}", "sandbox"])
            os._exit(126)
    try:
        os.chdir(spec["cwd"])
    except OSError as exc:
        _send(sock, b"F", [exc.errno, exc.strerror, spec["cwd"]])
        os._exit(126)
    os.umask(spec["umask"])
    sock.detach()
    os.closerange(3, 1 << 20)  # close_range(2): every descriptor of the server
    _reset(spec)
    return spec


def _reset(spec):
    for sig, handler in _State.signals.items():
        try:
            signal.signal(sig, handler)
        except (OSError, ValueError, TypeError):
            pass
    signal.pthread_sigmask(signal.SIG_SETMASK, [])
    try:
        signal.set_wakeup_fd(-1)
    except ValueError:
        pass
    os.environ.clear()  # unsetenv for each: C code sees the run's environment too
    os.environ.update(spec["env"])
    mark = spec.get("environ_mark")
    if mark:
        _mark_environ(mark)
    _set_rlimits(spec.get("rlimits", ()))
    _set_sched(spec.get("sched", {}))
    _std_streams()
    for name, hook in _State.hooks.items():
        setattr(sys, name, hook)
    warnings.filters[:] = _State.filters  # type: ignore[index]
    mutated = getattr(warnings, "_filters_mutated", None)
    if mutated is not None:
        mutated()
    sys.argv = list(spec["argv"])
    if hasattr(sys, "orig_argv"):
        sys.orig_argv = list(spec["orig_argv"])
    path0 = []
    if not getattr(sys.flags, "safe_path", False):
        if spec["module"]:
            path0 = [os.getcwd()]
        else:
            path0 = [os.path.dirname(os.path.realpath(spec["target"]))]
    base = _SERVER.path_base if _SERVER is not None else []
    sys.path[:] = path0 + _pythonpath(spec["env"].get("PYTHONPATH", "")) + base
    if "linecache" in sys.modules:
        sys.modules["linecache"].clearcache()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]  # read TMPDIR again (the run's)
    _Generators.reseed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # NumPy's global RandomState is not reseeded at fork
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "seed"):
        torch.seed()


def _mark_environ(entry):
    """Write ``entry`` (``SKILL_MAGICS_RUN_ID=...``) into the block /proc/self/environ shows,
    over the slot the client put first in the server's environment for this (SLOT_VAR):
    core/run/orphans.py finds a run's daemons by that entry, and a daemon that forks
    without exec keeps this block, which is the server's. Only the slot is written: a C
    library may still point into the rest (a getenv() result kept since its import)."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50, 51)
        fd = os.open("/proc/self/mem", os.O_RDWR)
    except (OSError, ValueError, IndexError):
        return
    try:
        block = os.pread(fd, min(end - start, 4096), start)
        if not block.startswith(SLOT_VAR.encode() + b"="):
            return
        slot = block.index(b"\0")  # the slot's length, its NUL excluded
        data = os.fsencode(entry) + b"\0"
        if len(data) <= slot + 1:
            os.pwrite(fd, data.ljust(slot + 1, b"\0"), start)
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)


def _set_rlimits(limits):
    """The caller's resource limits as they are now (a cold child inherits them; the
    server has those of when it started). A hard limit above ours cannot be had: then the
    soft one as close as it can."""
    if not limits:
        return
    import resource

    for which, soft, hard in limits:
        try:
            if resource.getrlimit(which) == (soft, hard):
                continue
            resource.setrlimit(which, (soft, hard))
        except (OSError, ValueError):
            try:
                cur_hard = resource.getrlimit(which)[1]
                if cur_hard != resource.RLIM_INFINITY and (
                    soft == resource.RLIM_INFINITY or soft > cur_hard
                ):
                    soft = cur_hard
                resource.setrlimit(which, (soft, cur_hard))
            except (OSError, ValueError):
                pass


def _set_sched(sched):
    """The caller's nice value and CPU affinity now (a lower priority than the server's
    cannot be raised back without privilege: then as close as it can)."""
    nice = sched.get("nice")
    try:
        if nice is not None and os.getpriority(os.PRIO_PROCESS, 0) != nice:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    except OSError:
        pass
    cpus = sched.get("cpus")
    try:
        if cpus and sorted(os.sched_getaffinity(0)) != cpus:
            os.sched_setaffinity(0, cpus)
    except OSError:
        pass


def _std_streams():
    """sys.stdin/stdout/stderr on fds 0-2, made as CPython's startup makes them (same
    encoding, errors, buffering and line buffering as the server's, which started alike)."""
    made = {}
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        old = getattr(sys, "__" + name + "__", None) or getattr(sys, name, None)
        encoding = getattr(old, "encoding", None) or "utf-8"
        errors = getattr(old, "errors", None) or "strict"
        buffered = not getattr(old, "write_through", False)
        write = mode == "w"
        buffering = 0 if (write and not buffered) else -1
        buf = open(fd, mode + "b", buffering=buffering, closefd=False)
        raw = buf.raw if buffering else buf  # type: ignore[attr-defined]
        raw.name = "<" + name + ">"  # type: ignore[misc]  # as CPython names them
        line = buffered and (raw.isatty() or fd == 2)
        stream = io.TextIOWrapper(
            buf, encoding, errors, newline="\n", line_buffering=line, write_through=not buffered
        )
        stream.mode = mode  # type: ignore[misc]  # as CPython sets it
        made[name] = stream
    for name, stream in made.items():
        setattr(sys, name, stream)
        setattr(sys, "__" + name + "__", stream)


def _new_main():
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__dict__["__annotations__"] = {}
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    return main


def _run(spec):
    """Run the script as ``python script.py`` / ``python -m module`` would, then end as the
    interpreter ends (see :func:`_finalize`). Never returns."""
    main = _new_main()
    before = set(sys.modules)
    uncaught = None
    try:
        if spec["module"]:
            import runpy

            runpy._run_module_as_main(spec["target"])  # type: ignore[attr-defined]  # = python -m
        else:
            _run_file(main, spec["target"])
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException as exc:  # noqa: BLE001 - printed as the interpreter prints it
        uncaught = exc
        # An uncaught KeyboardInterrupt ends a cold Python by SIGINT after finalizing.
        code = -signal.SIGINT if isinstance(exc, KeyboardInterrupt) else 1
    else:
        code = 0
    if uncaught is not None:
        # Out of the except block: nothing the hook raises gets the run's exception as its
        # context (the interpreter calls the hook with no exception being handled).
        tb = _own_frames_cut(uncaught.__traceback__)
        uncaught.__traceback__ = tb  # the display reads the exception's own traceback
        try:
            _print_uncaught(uncaught, tb)
        except SystemExit as hook_exit:  # raised by the hook: the interpreter exits so
            code = _exit_code(hook_exit)
        del uncaught, tb
    _finalize(code, before)


def _own_frames_cut(tb):
    while tb is not None and tb.tb_frame.f_code.co_filename == _ZYGOTE_FILE:
        tb = tb.tb_next  # the server's own frames: a cold run has none
    return tb


def _print_uncaught(exc, tb):
    """sys.excepthook, as the interpreter calls it (pythonrun.c, _PyErr_PrintEx): a hook
    that raises prints its own error, then the original one, both by the built-in display;
    a SystemExit it raises ends the run as such."""
    try:
        sys.excepthook(type(exc), exc, tb)
    except SystemExit:
        raise
    except BaseException as hook_exc:  # noqa: BLE001 - displayed as the interpreter does
        hook_tb = _own_frames_cut(hook_exc.__traceback__)
        hook_exc.__traceback__ = hook_tb
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        except BaseException:  # noqa: BLE001
            pass
        sys.stderr.write("Error in sys.excepthook:\n")
        sys.__excepthook__(type(hook_exc), hook_exc, hook_tb)
        sys.stderr.write("\nOriginal exception was:\n")
        sys.__excepthook__(type(exc), exc, tb)


def _exit_code(exc):
    """What the interpreter exits with for an uncaught SystemExit (and what it prints)."""
    value = exc.code
    if value is None:
        return 0
    if isinstance(value, int):
        if not -(2**63) <= value < 2**63:
            return -1  # PyLong_AsLong overflows: (int)-1
        return ((value + 2**31) % 2**32) - 2**31  # the C int the interpreter passes to exit()
    try:
        text = str(value)
    except BaseException:  # noqa: BLE001
        text = ""
    stderr = sys.stderr
    try:
        if stderr is not None:
            stderr.write(text + "\n")
    except BaseException:  # noqa: BLE001
        pass
    return 1


def _finalize(code, before):
    """The interpreter's own ending, minus tearing down what the server had imported:
    non-daemon threads joined, atexit callbacks, stdout/stderr flushed (a failure to flush
    stdout: exit 120), the script's modules (``__main__`` and those it imported) cleared so
    their objects are finalized (a file left open is flushed and closed), the streams
    flushed again, then exit. Tearing down the preloaded packages as well would cost more
    than the whole run (60-80 ms for pandas) and changes nothing the run can observe, except
    objects the script left inside those packages' own state."""
    threading = sys.modules.get("threading")
    if threading is not None:
        threading._shutdown()
    atexit._run_exitfuncs()
    ok = _flush_std(report=True)
    for name in ["__main__", *[m for m in reversed(list(sys.modules)) if m not in before]]:
        module = sys.modules.get(name)
        if module is not None and hasattr(module, "__dict__"):
            _clear_module(module.__dict__)
    gc.collect()
    _flush_std(report=False)  # again, in case more was printed (not reported, as CPython)
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code if ok else 120)


def _clear_module(namespace):
    """As the interpreter clears a module at exit: names starting with one underscore first,
    then the rest (``__builtins__`` kept)."""
    for names in (
        [k for k in namespace if k.startswith("_") and not k.startswith("__")],
        [k for k in namespace if not k.startswith("__")],
    ):
        for key in names:
            try:
                namespace[key] = None
            except BaseException:  # noqa: BLE001 - a __del__ raising
                pass


def _flush_std(report):
    """Flush sys.stdout (a failure is reported as unraisable when ``report``) and
    sys.stderr; False when one could not be flushed."""
    ok = True
    for stream in (sys.stdout, sys.stderr):
        if stream is None or getattr(stream, "closed", False):
            continue
        try:
            stream.flush()
        except BaseException as exc:  # noqa: BLE001
            ok = False  # stderr too: exit 120 (flush_std_files), reported for stdout only
            if stream is sys.stdout and report:
                _unraisable(exc, stream)
    return ok


def _unraisable(exc, obj):
    """PyErr_WriteUnraisable(obj) as the interpreter calls it when stdout cannot be
    flushed at exit: the hook gets a real UnraisableHookArgs, no traceback (the flush is C's;
    a cold run has no frame there)."""
    hook = getattr(sys, "unraisablehook", None)
    if hook is None or _UNRAISABLE_ARGS is None:
        return
    exc.__traceback__ = None
    try:
        hook(_UNRAISABLE_ARGS((type(exc), exc, None, None, obj)))
    except BaseException:  # noqa: BLE001 - the interpreter ignores a failing hook too
        pass


def _unraisable_args_type():
    """The type of the argument sys.unraisablehook is given (not exposed by name)."""
    got: list = []

    class _Raises:
        def __del__(self):
            raise RuntimeError

    hook = sys.unraisablehook
    sys.unraisablehook = got.append
    try:
        _Raises()  # its refcount drops to 0 here: __del__ raises, the hook gets the args
    finally:
        sys.unraisablehook = hook
    return type(got[0]) if got else None


_UNRAISABLE_ARGS = _unraisable_args_type()


def _run_file(main, path):
    from importlib.machinery import SourceFileLoader

    try:
        with io.open_code(path) as fh:
            source = fh.read()
    except OSError as exc:
        sys.stderr.write(
            f"{sys.executable}: can't open file {path!r}: [Errno {exc.errno}] {exc.strerror}\n"
        )
        sys.exit(2)
    main.__dict__.update(
        __file__=path,
        __cached__=None,
        __loader__=SourceFileLoader("__main__", path),
    )
    code = compile(source, path, "exec", dont_inherit=True)
    exec(code, main.__dict__)


_SERVER = None


def serve(args):
    global _SERVER
    ctl_fd = int(args[1])
    sandbox = None
    if "--sandbox" in args:
        sandbox = json.loads(args[args.index("--sandbox") + 1])
    # A Python that forks with threads warns (3.12+); the server checks its threads itself.
    warnings.filterwarnings("ignore", category=DeprecationWarning, message=".*fork.*")
    _FORK_FILTER.append(warnings.filters[0])
    _State.take()
    _drop_own_dir()
    os.environ.pop(SLOT_VAR, None)  # nothing imported here ever sees it: the block keeps it
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
    return _child(job)


if __name__ == "__main__":
    if sys.argv[1:2] == ["stage1"]:
        namespaces.stage1(sys.argv[1:])
    _run(serve(sys.argv[1:]))
