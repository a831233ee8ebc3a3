"""A warm run's child after the fork: it becomes the run's process, as a fresh ``python
[flags] script.py`` (or ``-m module``) that has just imported the preloaded packages would be:
its stdio, environment, argv, cwd, sys.path, signal dispositions, hooks and warnings filters,
every preloaded random generator reseeded, then the script run and the interpreter's end
(zygote.py's docstring, docs/architecture.md *Warm start*). Standard library only, loaded by
zygote.py by path (it runs in the skill's Python, where skill_magics is not importable).
"""

import atexit
import gc
import io
import json
import os
import signal
import sys
import warnings

# Frames of this module are cut from a run's traceback: the name zygote.py compiled it under
# (the interpreter's own: warnings skip them, as a cold run has no frame above its script).
_OWN_FILE = sys._getframe().f_code.co_filename
SLOT_VAR = "SKILL_MAGICS_WARM_SLOT"  # first in a server's environment (_show_environ)

TYPE_CHECKING = False  # typing is not imported here: nothing of the server's own in a run
if TYPE_CHECKING:
    import socket
    import types
    from collections.abc import Callable
    from typing import Any, NoReturn

    from skill_magics.core.run.launching.warm import namespaces, wire  # given by zygote._load


class State:
    """What a run's child starts from: the interpreter's state once the preloaded packages
    were imported (their warnings filters, signal handlers, hooks and atexit callbacks are
    what a cold run importing them gets too), without anything of the server's own."""

    signals: dict = {}
    filters: list = []
    hooks: dict = {}

    @classmethod
    def take(cls) -> None:
        cls.signals = {}
        for sig in signal.valid_signals():
            try:
                cls.signals[sig] = signal.getsignal(sig)
            except (OSError, ValueError):  # SIGKILL/SIGSTOP and the like: nothing to restore
                pass
        cls.filters = [f for f in warnings.filters if f is not FORK_FILTER[0]]
        cls.hooks = {
            name: getattr(sys, name)
            for name in ("excepthook", "displayhook", "breakpointhook", "unraisablehook")
            if hasattr(sys, name)
        }


FORK_FILTER: list = []  # the one filter the server adds (for itself): never a run's


class Generators:
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
    def record(cls) -> None:
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
    def stop(cls) -> None:
        import random
        import secrets

        seed, setstate, randbits = cls._saved
        random.Random.seed = seed  # type: ignore[method-assign]
        random.Random.setstate = setstate  # type: ignore[method-assign]
        noted = secrets.randbits
        secrets.randbits = randbits
        _swap_randbits(noted, randbits)

    @classmethod
    def find(cls) -> None:
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
    def reseed(cls) -> None:
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


def _swap_randbits(old: object, new: object) -> None:
    """``randbits`` of every module that took it by ``from secrets import randbits``
    (NumPy's bit_generator) from ``old`` to ``new``."""
    for module in list(sys.modules.values()):
        if module is not None and getattr(module, "randbits", None) is old:
            try:
                module.randbits = new  # type: ignore[attr-defined]
            except (AttributeError, TypeError):
                pass


def pythonpath(value: str) -> "list[str]":
    if not value or sys.flags.ignore_environment:
        return []
    return [os.path.abspath(p) for p in value.split(os.pathsep) if p]


# -- a run's child ----------------------------------------------------------------------------


class Job:
    """What a forked child takes out of the server loop: its socket and descriptors."""

    def __init__(
        self,
        sock: "socket.socket",
        fds: "list[int]",
        sandbox: "dict[str, Any] | None",
        server_pid: int,
        guarded: bool = False,
    ) -> None:
        self.sock = sock
        self.stdin, self.stdout, self.stderr, self.spec_fd = fds
        self.sandbox = sandbox
        self.server_pid = server_pid
        self.guarded = guarded  # the server's guard kills this run's group if the server dies


def send(sock: "socket.socket", kind: bytes, payload: object = None) -> None:
    data = kind if payload is None else kind + json.dumps(payload).encode()
    try:
        sock.send(data)
    except OSError:
        pass


def _read_spec(fd: int) -> "dict[str, Any]":
    chunks = []
    os.lseek(fd, 0, os.SEEK_SET)
    while True:
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(fd)
    return json.loads(b"".join(chunks))


def child_of(job: Job, path_base: "list[str]") -> "dict[str, Any]":
    """In the forked child: become the run's process (see the module docstring). Returns the
    spec of what to run; a failure to start exits 126 after telling the client why."""
    os.setpgid(0, 0)
    namespaces.die_with_parent(job.server_pid)
    sock = job.sock
    sock.send(wire.PID)  # the client learns our pid from the credentials
    try:
        spec = _read_spec(job.spec_fd)
    except (OSError, ValueError) as exc:
        send(sock, wire.FAILED, [getattr(exc, "errno", None) or 5, str(exc), "spec"])
        os._exit(126)
    if spec.get("cgroup"):  # the run's own cgroup (core/run/launching/cgroups.py), before anything
        _join(spec["cgroup"])
    for fd, target in ((job.stdin, 0), (job.stdout, 1), (job.stderr, 2)):
        os.dup2(fd, target)
    for fd in {job.stdin, job.stdout, job.stderr} - {0, 1, 2}:
        os.close(fd)
    if job.sandbox is not None:
        try:
            namespaces.sandbox_chain(job.sandbox, sock=sock)
        except OSError as exc:
            send(sock, wire.FAILED, [exc.errno or 1, f"sandbox: {exc}", "sandbox"])
            os._exit(126)
    try:
        os.chdir(spec["cwd"])
    except OSError as exc:
        send(sock, wire.FAILED, [exc.errno, exc.strerror, spec["cwd"]])
        os._exit(126)
    os.umask(spec["umask"])
    sock.detach()
    os.closerange(3, 1 << 20)  # close_range(2): every descriptor of the server
    _reset(spec, path_base)
    if job.guarded and job.sandbox is None:
        # The guard holds our pidfd since the fork (the server told it before it read its
        # next message); a cold run has no parent-death signal. (A sandboxed run's script
        # is PID 2 and gets the one bwrap --die-with-parent gives a cold one.)
        namespaces.no_parent_death_signal(job.server_pid)
    return spec


def _join(procs: str) -> None:
    """Move this process into its run's cgroup; when it cannot, the client's look-and-kill
    is all there is, as without a cgroup."""
    try:
        fd = os.open(procs, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.write(fd, b"0")
    except OSError:
        pass
    finally:
        os.close(fd)


def _reset(spec: "dict[str, Any]", path_base: "list[str]") -> None:
    for sig, handler in State.signals.items():
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
    _show_environ(spec)
    _set_rlimits(spec.get("rlimits", ()))
    _set_sched(spec.get("sched", {}))
    _std_streams()
    for name, hook in State.hooks.items():
        setattr(sys, name, hook)
    warnings.filters[:] = State.filters  # type: ignore[index]
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
    base = path_base
    sys.path[:] = path0 + pythonpath(spec["env"].get("PYTHONPATH", "")) + base
    if "linecache" in sys.modules:
        sys.modules["linecache"].clearcache()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]  # read TMPDIR again (the run's)
    Generators.reseed()
    numpy_random = sys.modules.get("numpy.random")
    if numpy_random is not None:
        numpy_random.seed()  # NumPy's global RandomState is not reseeded at fork
    torch = sys.modules.get("torch")
    if torch is not None and hasattr(torch, "seed"):
        torch.seed()


def _show_environ(spec: "dict[str, Any]") -> None:
    """Write the run's environment into the block /proc/self/environ shows (what psutil's
    ``environ()``, ``ps e`` and a cold run's own look there read), over the slot the
    client put first in the server's environment for this (SLOT_VAR), ended by a double NUL
    (readers stop there; the server's entries after the slot stay, see below). Its run id
    first (``environ_mark``): core/run/launching/orphans.py finds a run's daemons by that entry, and
    a daemon that forks without exec keeps this block. An environment too big for the slot
    gets the run id alone. Only the slot is written: a C library may still point into the
    rest (a getenv() result kept since its import)."""
    mark = spec.get("environ_mark") or ""
    entries = [mark] if mark else []
    entries += [f"{k}={v}" for k, v in spec["env"].items() if f"{k}={v}" != mark]
    whole = b"".join(os.fsencode(entry) + b"\0" for entry in entries)
    if not _write_slot(whole) and mark:
        _write_slot(os.fsencode(mark) + b"\0")


def _write_slot(data: bytes) -> bool:
    """``data`` over the slot, NUL-padded to its end (at least one NUL more than ``data``
    has); False when it does not fit or there is no slot."""
    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (fields 50, 51)
        fd = os.open("/proc/self/mem", os.O_RDWR)
    except (OSError, ValueError, IndexError):
        return False
    try:
        head = SLOT_VAR.encode() + b"="
        block = os.pread(fd, min(end - start, 1 << 20), start)
        if not block.startswith(head):
            return False
        slot = block.index(b"\0")  # the slot's length, its NUL excluded
        if len(data) > slot:
            return False
        os.pwrite(fd, data.ljust(slot + 1, b"\0"), start)
        return True
    except (OSError, ValueError):
        return False
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


def _std_streams() -> None:
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


def _new_main() -> "types.ModuleType":
    import builtins
    import types

    main = types.ModuleType("__main__")
    main.__dict__["__annotations__"] = {}
    main.__dict__["__builtins__"] = builtins
    sys.modules["__main__"] = main
    return main


def run(spec: "dict[str, Any]") -> "NoReturn":
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


def _own_frames_cut(tb: "types.TracebackType | None") -> "types.TracebackType | None":
    while tb is not None and tb.tb_frame.f_code.co_filename == _OWN_FILE:
        tb = tb.tb_next  # the server's own frames: a cold run has none
    return tb


def _print_uncaught(exc: BaseException, tb: "types.TracebackType | None") -> None:
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


def _exit_code(exc: SystemExit) -> int:
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


def _finalize(code: int, before: "set[str]") -> "NoReturn":
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
    _frameless(_teardown(before))
    _flush_std(report=False)  # again, in case more was printed (not reported, as CPython)
    if code == -signal.SIGINT:
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    os._exit(code if ok else 120)


def _teardown(before: "set[str]") -> "list[Callable[[], object]]":
    """finalize_modules, for the script's part: the import system unplugged and the std
    streams put back (one the script swapped in is finalized now: 3.13 reports its failing
    close), then ``__main__`` and the
    modules the script imported cleared as the interpreter clears a module (names starting
    with one underscore first, then the rest, ``__builtins__`` kept) so their objects are
    finalized, then a collection. As calls of built-ins only (for :func:`_frameless`)."""
    import functools

    # finalize_modules_delete_special: the import system unplugged (an import while modules
    # are cleared fails, as cold: io's ResourceWarning then suggests no tracemalloc) ...
    steps: list[Callable[[], object]] = [
        functools.partial(dict.update, sys.__dict__, dict.fromkeys(_SYS_DELETES))
    ]
    steps += [  # ... then the std streams put back
        functools.partial(setattr, sys, name, getattr(sys, "__" + name + "__", None))
        for name in ("stdin", "stdout", "stderr")
    ]
    for name in ["__main__", *[m for m in reversed(list(sys.modules)) if m not in before]]:
        namespace = getattr(sys.modules.get(name), "__dict__", None)
        if not isinstance(namespace, dict):
            continue
        for names in (
            [k for k in namespace if k.startswith("_") and not k.startswith("__")],
            [k for k in namespace if not k.startswith("__")],
        ):
            steps.append(functools.partial(dict.update, namespace, dict.fromkeys(names)))
    steps.append(gc.collect)
    return steps


# What Py_FinalizeEx sets to None in sys before it clears the modules (pylifecycle.c).
_SYS_DELETES = (
    "path",
    "argv",
    "ps1",
    "ps2",
    "last_exc",
    "last_type",
    "last_value",
    "last_traceback",
    "path_hooks",
    "path_importer_cache",
    "meta_path",
    "__interactivehook__",
)


def _frameless(steps: "list[Callable[[], object]]") -> None:
    """Call ``steps`` (built-ins: no Python frame of their own) in a new thread, which has
    no Python frame either, and wait for them. What they finalize then reports a failure
    as in a cold run's teardown, which runs in C: PyErr_WriteUnraisable gives an error
    raised in C (a file's failing close) the current frame as its traceback, and there a
    cold run has none. In this thread if no thread can start (RLIMIT_NPROC)."""
    import _thread
    import collections
    import operator

    done = _thread.allocate_lock()
    done.acquire()
    calls = map(operator.methodcaller("__call__"), [*steps, done.release])
    running = _thread._count()
    try:
        _thread.start_new_thread(collections.deque(maxlen=0).extend, (calls,))
    except RuntimeError:
        for step in steps:
            step()
        return
    # A step cannot raise (setattr on sys, dict.update with None values, gc.collect: a
    # finalizer's error is reported, never raised); should the thread end anyway, go on.
    while not done.acquire(timeout=0.1):
        if _thread._count() <= running:
            return


def _flush_std(report: bool) -> bool:
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


def _unraisable(exc: BaseException, obj: object) -> None:
    """What the interpreter reports when stdout cannot be flushed at exit: until 3.12
    PyErr_WriteUnraisable(stdout), since 3.13 PyErr_FormatUnraisable("Exception ignored on
    flushing sys.stdout") (no object). The hook gets a real UnraisableHookArgs, no traceback
    (the flush is C's; a cold run has no frame there)."""
    hook = getattr(sys, "unraisablehook", None)
    if hook is None or _UNRAISABLE_ARGS is None:
        return
    exc.__traceback__ = None
    message = None
    if sys.version_info >= (3, 13):
        message, obj = "Exception ignored on flushing sys.stdout", None
    try:
        hook(_UNRAISABLE_ARGS((type(exc), exc, None, message, obj)))
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


def _run_file(main: "types.ModuleType", path: str) -> None:
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
