"""The sandbox namespaces of the warm server: the container bwrap builds for a cold run, made
by hand for each forked run (docs/architecture.md, *Warm start*; zygote.py's docstring).

``stage1`` is the sandboxed server's first step, in bwrap's user namespace; ``sandbox_chain``
gives one run's child its own mount, PID, IPC, UTS and network namespaces, its /tmp, /dev and
/proc, a small init as PID 1, and drops every capability. Standard library only, loaded by
zygote.py by path (it runs in the skill's Python, where skill_magics is not importable).
"""

import os
import signal
import socket
import struct

TYPE_CHECKING = False  # typing is not imported here: nothing of the server's own in a run
if TYPE_CHECKING:
    import ctypes
    from typing import Any, NoReturn

_STATUS = struct.Struct("i")  # the script's exit status, from the run's init to its leader

# Linux constants (ctypes: for the sandbox and the children's PDEATHSIG, loaded by serve()).
CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_MOVE, MS_REC, MS_PRIVATE = 32, 4096, 8192, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, PR_CAP_AMBIENT_CLEAR_ALL = 47, 2, 4
CAP_SETPCAP, CAP_NET_ADMIN, CAP_SYS_ADMIN = 8, 12, 21
_CAP_V3 = 0x20080522

_SPARE_PROC = ".skill-magics-proc"  # stage1's spare /proc, in the server's /tmp
_DEVPTS = "newinstance,ptmxmode=0666,mode=620"  # bwrap's options for a run's /dev/pts
_libc: "ctypes.CDLL | None" = None
_PROC_COVERS = ("sys", "sysrq-trigger", "irq", "bus")  # bound read-only, as bwrap does


def libc() -> "ctypes.CDLL":
    """libc through ctypes (loaded on first use: unsandboxed servers may never need it)."""
    global _libc
    if _libc is None:
        import ctypes

        _libc = ctypes.CDLL(None, use_errno=True)
    return _libc


def _check(result: int, what: str) -> None:
    if result != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mount(
    source: "str | None", target: str, fstype: "str | None", flags: int, data: "str | None" = None
) -> None:
    _check(
        libc().mount(
            None if source is None else os.fsencode(source),
            os.fsencode(target),
            None if fstype is None else fstype.encode(),
            flags,
            None if data is None else data.encode(),
        ),
        f"mount {fstype or 'bind'} on {target}",
    )


def _unshare(flags: int, what: str) -> None:
    _check(libc().unshare(flags), f"unshare({what})")


def die_with_parent(parent: int) -> None:
    """This process dies (SIGKILL) when ``parent`` does: nobody would watch it any more."""
    try:
        libc().prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        return
    if os.getppid() not in (parent, 0):  # it died before the prctl (0: it is outside our
        os._exit(137)  # PID namespace, as a run's init sees its leader)


def no_parent_death_signal(parent: int) -> None:
    """Clear this process's parent-death signal (what a cold run has), unless ``parent``
    died before (then it exits, as the signal would have made it)."""
    try:
        libc().prctl(PR_SET_PDEATHSIG, 0, 0, 0, 0)
    except OSError:
        return
    if os.getppid() != parent:
        os._exit(137)


def _caps(values: "tuple[int, ...]") -> None:
    """capset(effective, permitted, inheritable) for capabilities 0-63."""
    import ctypes

    header = struct.pack("Ii", _CAP_V3, 0)
    data = ctypes.create_string_buffer(struct.pack("6I", *values))
    _check(libc().capset(header, data), "capset")


def _capget() -> "tuple[int, ...]":
    import ctypes

    header = struct.pack("Ii", _CAP_V3, 0)
    data = ctypes.create_string_buffer(24)
    _check(libc().capget(header, data), "capget")
    return struct.unpack("6I", data.raw)


def _drop_all_caps() -> None:
    """No capability left, none regained by exec (empty bounding set), no_new_privs: what
    bwrap --cap-drop ALL gives a cold sandboxed run."""
    lib = libc()
    last = 63
    try:
        with open("/proc/sys/kernel/cap_last_cap") as fh:
            last = int(fh.read())
    except (OSError, ValueError):
        pass
    for cap in range(last + 1):
        lib.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0)  # EINVAL past the last one: fine
    lib.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    _check(lib.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _caps((0, 0, 0, 0, 0, 0))


# -- stage1: the sandboxed server's first step (python -I -S: no site, no .pth code) ----------


def _write(path: str, text: str) -> None:
    with open(path, "w") as fh:
        fh.write(text)


def stage1(args: "list[str]") -> None:
    """In bwrap's user namespace (CAP_SYS_ADMIN there): a spare /proc for the children, a
    nested user namespace that locks every mount, then exec the real server."""
    tmpdir = args[2]  # ["stage1", fd, tmpdir, "--", server argv...]
    rest = args[args.index("--") + 1 :]
    spare = os.path.join(tmpdir, _SPARE_PROC)
    note = ""
    try:
        os.mkdir(spare, 0o700)
        _mount("proc", spare, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except OSError as exc:
        # Where bwrap's own /proc is fully visible (no covers), children need no spare one.
        note = f"no spare /proc ({exc.strerror})"
    uid, gid = os.getuid(), os.getgid()
    _unshare(CLONE_NEWUSER | CLONE_NEWNS, "user, mount")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")
    if uid != 0:
        # A non-root uid loses its capabilities at exec unless they are ambient: the server
        # keeps what its runs' children use (mounts, dropping capabilities, their loopback).
        eff0, perm0, _inh0, eff1, perm1, _inh1 = _capget()
        _caps((eff0, perm0, perm0, eff1, perm1, perm1))
        for cap in (CAP_SYS_ADMIN, CAP_SETPCAP, CAP_NET_ADMIN):
            _check(libc().prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, cap, 0, 0), "ambient")
    env = dict(os.environ)
    if note:
        env["SKILL_MAGICS_WARM_NOTE"] = note
    os.execve(rest[0], rest, env)


def _loopback_up() -> None:
    """Bring up ``lo`` in the run's new network namespace (as bwrap does for a cold run):
    127.0.0.1 is the run's own, and nothing on the host's loopback is reachable."""
    import fcntl

    siocgifflags, siocsifflags, iff_up = 0x8913, 0x8914, 0x1
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14x", b"lo", 0)
        flags = struct.unpack("16sH14x", fcntl.ioctl(sock, siocgifflags, request))[1]
        fcntl.ioctl(sock, siocsifflags, struct.pack("16sH14x", b"lo", flags | iff_up))


def _mount_points(under: str) -> "list[str]":
    """Mount points below ``under`` in this mount namespace, outermost first (from
    /proc/self/mountinfo; octal escapes such as ``\\040`` decoded)."""
    prefix = under.rstrip("/") + "/"
    points = []
    with open("/proc/self/mountinfo", "rb") as fh:
        for line in fh:
            field = line.split()[4].decode("unicode_escape").encode("latin-1")
            point = os.fsdecode(field)
            if point.startswith(prefix):
                points.append(point)
    points.sort(key=len)
    outer: list[str] = []
    for point in points:
        if not any(point.startswith(p.rstrip("/") + "/") or point == p for p in outer):
            outer.append(point)
    return outer


def _fresh_tmp(tmp: str) -> None:
    """The run's own /tmp, as bwrap gives a cold run one: a fresh tmpfs with the cache
    folders tools expect, and the sandbox's folders that lie below /tmp (the workspace, the
    skill, $HOME...) bound in again at the same places. Built aside, then moved onto /tmp."""
    inner = [p for p in _mount_points(tmp) if os.path.basename(p) != _SPARE_PROC]
    old = os.open(tmp, os.O_RDONLY | os.O_DIRECTORY)
    name = f".skill-magics-tmp-{os.getpid()}"
    stage = os.path.join(tmp, name)
    os.mkdir(stage, 0o700)
    try:
        _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        for sub in (".cache", ".config", ".config/matplotlib"):
            os.mkdir(os.path.join(stage, sub), 0o755)
        for point in inner:
            target = os.path.join(stage, os.path.relpath(point, tmp))
            if os.path.isdir(point):
                os.makedirs(target, 0o755, exist_ok=True)
            else:
                os.makedirs(os.path.dirname(target), 0o755, exist_ok=True)
                with open(target, "w"):
                    pass
            _mount(point, target, None, MS_BIND | MS_REC)
        _mount(stage, tmp, None, MS_MOVE)
    finally:
        try:
            os.rmdir(name, dir_fd=old)  # the empty folder left in the server's /tmp
        except OSError:
            pass
        os.close(old)


def _private_dev(scratch: str) -> None:
    """A /dev of the run's own, as bwrap gives a cold run: a fresh tmpfs with the server's
    device nodes bound in, its symlinks and folders (``shm`` included), moved onto /dev."""
    stage = os.path.join(scratch, ".skill-magics-dev")
    os.mkdir(stage, 0o755)
    _mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
    with os.scandir("/dev") as entries:
        for entry in entries:
            target = os.path.join(stage, entry.name)
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), target)
            elif entry.is_dir():
                os.mkdir(target, 0o755)
                if entry.name == "pts" and os.path.ismount(entry.path):
                    # A devpts instance of the run's own, as bwrap --dev gives a cold run: the
                    # terminals other runs of this server open are not there.
                    _mount("devpts", target, "devpts", MS_NOSUID | MS_NOEXEC, _DEVPTS)
                elif os.path.ismount(entry.path) and entry.name != "shm":
                    _mount(entry.path, target, None, MS_BIND | MS_REC)
            else:
                with open(target, "w"):
                    pass
                _mount(entry.path, target, None, MS_BIND)  # null, zero, urandom, tty...
    _mount(stage, "/dev", None, MS_MOVE)
    os.rmdir(stage)


def sandbox_chain(
    sandbox: "dict[str, Any]", probe: bool = False, sock: "socket.socket | None" = None
) -> None:
    """Give this run its own namespaces and mounts; returns only in the process that runs
    the script (PID 2 of a new PID namespace). ``probe``: check that it works, run nothing."""
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS
    if not sandbox.get("network"):
        flags |= CLONE_NEWNET  # its own loopback, like a cold run's
    _unshare(flags, "mount, pid, ipc, uts, net")
    if flags & CLONE_NEWNET:
        _loopback_up()
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    tmpdir = sandbox["tmpdir"]
    _fresh_tmp(tmpdir)
    _private_dev(tmpdir)
    leader = os.getpid()
    read, write = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(read)
        die_with_parent(leader)
        _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
        _cover_proc()
        if probe:
            _drop_all_caps()
            os.write(write, _STATUS.pack(0))
            os._exit(0)
        script = os.fork()
        if script == 0:
            os.close(write)
            # What bwrap --die-with-parent gives a cold sandboxed run's command: SIGKILL
            # when its parent (the init) dies (PR_GET_PDEATHSIG reads 9 there too).
            die_with_parent(1)
            _drop_all_caps()
            return  # PID 2: runs the script
        _init(script, write)
    # The run's group leader (the pid the client kills): keep nothing open but the pipe,
    # wait for the init, then end as the script did, so the client reads its status.
    os.close(write)
    if sock is not None:
        sock.detach()
    os.closerange(0, read)
    os.closerange(read + 1, 1 << 20)
    status = _wait_init(init, read)
    if probe:
        os._exit(0 if status == 0 else 3)
    _exit_as(status)


def _cover_proc() -> None:
    """Read-only binds over the parts of /proc that reach the whole machine (sysrq-trigger,
    irq, bus, sys), as bwrap --proc covers them for a cold run."""
    flags = MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC
    for name in _PROC_COVERS:
        path = "/proc/" + name
        if os.path.exists(path):
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, flags)


def _init(script: int, write: int) -> None:
    """PID 1 of the run's namespace: reap everything, report the script's status, exit (the
    kernel then kills whatever is left in the namespace)."""
    os.closerange(0, write)
    os.closerange(write + 1, 1 << 20)
    status = None
    while True:
        try:
            pid, raw = os.waitpid(-1, 0)
        except ChildProcessError:
            break
        except InterruptedError:
            continue
        if pid == script:
            status = raw
            break
    if status is not None:
        os.write(write, _STATUS.pack(os.waitstatus_to_exitcode(status)))
    os._exit(0)


def _wait_init(init: int, read: int) -> int:
    while True:
        try:
            os.waitpid(init, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            break
    data = os.read(read, _STATUS.size)
    return _STATUS.unpack(data)[0] if len(data) == _STATUS.size else -signal.SIGKILL


def _exit_as(code: int) -> "NoReturn":
    """End this process the way the script ended (exit code, or killed by a signal)."""
    if code >= 0:
        os._exit(code)
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the script's core, not ours
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass
    os._exit(128 + sig)
