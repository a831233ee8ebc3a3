"""Sandboxed runs with bubblewrap: a run's sandbox (:class:`RunSandbox`, from the profile it
asks for) and the bwrap command line.

The profiles are registered kinds (core/run/launching/sandbox_profiles/: ``PROFILES``; docs/
architecture.md, *Sandbox and secrets*); the standard ones:

- ``off``: no sandbox (the run has the user's rights).
- ``read-only``: the run sees only what it needs (core/run/launching/sandbox_mounts.py: system
  folders, its program's installation and environment, the folders on its PATH, the skill,
  the workspace), all read-only; only a private ``/tmp`` is writable.
- ``workspace-write``: like read-only, plus the caller's working directory (the notebook's
  workspace) is writable, except its ``.git``, ``.hg`` and virtual environments. The skill's
  own folder stays read-only even inside it.
- ``auto``: ``workspace-write`` where bubblewrap works, else no sandbox with one clear note.

A workspace that is ``$HOME``, ``/``, ``/tmp`` or another place sockets live, or that holds
one, is refused in both sandboxed modes before anything starts (it would be given whole).
Both sandboxed modes run in their own network namespace (no network unless granted for that
skill), their own PID namespace (nothing started inside outlives the run); credential paths
(``~/.ssh``, ``~/.aws``, ... resolved from ``$HOME``), Jupyter's runtime folders and the
kernel's connection file are hidden wherever a given folder would include them. Cache tools
keep working: ``XDG_CACHE_HOME`` and ``MPLCONFIGDIR`` point into the private ``/tmp``.

Example:
    >>> profile = profile_for("workspace-write", "csv-profiler",
    ...                       skill_dir="/skills/csv-profiler", workspace="/home/me/project")
    >>> profile.info().writable
    ('/home/me/project', '<private /tmp>')
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields

from skill_magics.core.base.envsetting import from_env
from skill_magics.core.base.errors import SandboxUnavailableError
from skill_magics.core.run.launching import sandbox_mounts as mounts
from skill_magics.core.run.launching.grants import NetworkGrants
from skill_magics.core.run.launching.process import run_process
from skill_magics.core.run.launching.sandbox_mounts import Bind
from skill_magics.core.run.launching.sandbox_profiles import PROFILES, SandboxInfo, SandboxProfile

OFF, READ_ONLY, WORKSPACE_WRITE, AUTO = "off", "read-only", "workspace-write", "auto"
MODES = PROFILES.names()  # every registered profile's name, read live
ENV_VAR = "SKILL_MAGICS_SANDBOX"  # the default mode when none is configured
DEFAULT_MODE = OFF  # see docs/sandbox.md: why off, and when to choose auto
PRIVATE_TMP = "<private /tmp>"  # how the run's own /tmp (its TMPDIR) is shown
TMP = "/tmp"  # inside the sandbox: a fresh tmpfs per run

# Unreadable in every sandboxed run; "~" is $HOME at the time of the run.
DEFAULT_DENY_READ: tuple[str, ...] = (
    "~/.ssh",
    "~/.aws",
    "~/.config/gcloud",
    "~/.azure",
    "~/.netrc",
    "~/.docker/config.json",
    "~/.kube",
    "~/.gnupg",
    "~/.git-credentials",
    "~/.config/gh/hosts.yml",  # GitHub CLI token
    "~/.pypirc",  # PyPI upload token
    "~/.npmrc",  # npm registry token
    "~/.cache/huggingface/token",  # Hugging Face token
    "~/.cargo/credentials.toml",  # crates.io token (~/.cargo is given when it is on PATH)
    "~/.cargo/credentials",
)
# Where host services keep their unix sockets (plus $XDG_RUNTIME_DIR): a network namespace
# does not cover sockets in the filesystem and a read-only mount does not stop connect(), so
# these are never given to a run, and a workspace may not be or hold one of them.
HIDDEN_SOCKETS: tuple[str, ...] = mounts.SOCKET_PLACES


def check_mode(value: object) -> str:
    """The canonical mode for ``value``: a registered profile's name ("off", "read-only",
    "workspace-write", "auto", ...).

    Accepts underscores and any case (``"workspace_write"``); anything else is a one-line
    ValueError naming the choices.
    """
    if type(value) is str and value in PROFILES:  # already canonical (every run asks)
        return value
    if isinstance(value, str):
        mode = value.strip().lower().replace("_", "-")
        if mode in PROFILES:
            return mode
    raise ValueError(
        f"Unknown sandbox mode {value!r}: use one of {', '.join(MODES)} (e.g. sandbox='auto')"
    )


def default_mode() -> str:
    """``$SKILL_MAGICS_SANDBOX`` when set (checked), else ``off``."""
    return from_env(ENV_VAR, DEFAULT_MODE, check_mode)


_NOT_KEYED = frozenset({"requested", "note", "network"})  # network: as decided at spawn


@dataclass(frozen=True)
class RunSandbox:
    """How one run is isolated, decided at plan time (shown in the approval request).

    ``mode`` is the name of the profile the run gets ("read-only" / "workspace-write", or
    "off" when ``auto`` found no bubblewrap; ``note`` then says why). ``requested`` is the
    mode asked for.
    ``binds`` are the folders the run is given (core/run/launching/sandbox_mounts.py), ``deny_read``
    the paths hidden wherever a given folder would show them.
    """

    mode: str
    requested: str
    network: bool = False
    workspace: str | None = None  # writable (workspace-write only)
    skill_dir: str = ""
    deny_read: tuple[str, ...] = field(default=(), repr=False)  # existing paths, hidden
    note: str = ""
    binds: tuple[Bind, ...] = field(default=(), repr=False)
    home: str = field(default="", repr=False)  # $HOME at plan time: an empty folder inside

    @property
    def profile(self) -> SandboxProfile:
        """The registered profile the run gets."""
        return PROFILES.get(self.mode)

    @property
    def active(self) -> bool:
        """Does bubblewrap confine the run (its profile's rank is above 0)?"""
        return self.profile.confined

    def server_key(self, network: bool) -> tuple[object, ...]:
        """Everything a warm server's sandbox is made of (the part of its ServerKey): every
        field but the note and the mode asked for (what the run got counts), and the network
        decided now. A field added here keys the servers at once."""
        return (
            *(getattr(self, f.name) for f in fields(self) if f.name not in _NOT_KEYED),
            network,
        )

    def writable(self, tmpdir: str | None = None) -> tuple[str, ...]:
        if not self.active:
            return ()
        tmp = tmpdir or PRIVATE_TMP
        return (self.workspace, tmp) if self.workspace else (tmp,)

    def readable(self) -> tuple[str, ...]:
        """The folders given read-only besides the system's (for the docs and debugging)."""
        return tuple(b.dest for b in self.binds if not b.writable)

    def info(self, tmpdir: str | None = None) -> SandboxInfo:
        """What the approval panel shows (and the result header, and the audit record)."""
        mode = self.mode if not self.note else f"{self.mode} ({self.note})"
        return SandboxInfo(
            mode=mode, network=self.network or not self.active, writable=self.writable(tmpdir)
        )

    def record(self, tmpdir: str | None = None) -> dict[str, object]:
        """The audit/result form: mode, network, writable paths (and the note, if any)."""
        out: dict[str, object] = {
            "mode": self.mode,
            "network": self.network or not self.active,
            "writable": list(self.writable(tmpdir)),
        }
        if self.note:
            out["note"] = self.note
        return out


# -- is bubblewrap usable here? ----------------------------------------------------------------

_PROBES: dict[str, str] = {}  # bwrap path -> "" (works) or why not
_PROBE_LOCK = threading.Lock()
_NOTED: set[str] = set()


BWRAP_ENV_VAR = "SKILL_MAGICS_BWRAP"  # another bubblewrap binary (a path; "" means none)


def find_bwrap() -> str | None:
    """The bubblewrap binary: ``$SKILL_MAGICS_BWRAP`` when set, else /usr/bin/bwrap (the
    distribution's), else ``bwrap`` on PATH."""
    if BWRAP_ENV_VAR in os.environ:
        chosen = os.environ[BWRAP_ENV_VAR]
        return chosen if chosen and os.access(chosen, os.X_OK) else None
    if os.access("/usr/bin/bwrap", os.X_OK):
        return "/usr/bin/bwrap"
    return shutil.which("bwrap")


def unavailable_reason() -> str:
    """ "" when bubblewrap can sandbox a run here, else one line saying why not and the fix.

    Tried once per bwrap binary per process with the same namespaces a run uses (a few ms).
    """
    if not sys.platform.startswith("linux"):
        return (
            f"sandboxing needs bubblewrap on Linux and this is {sys.platform} "
            "(see docs/sandbox.md, 'macOS and Windows')"
        )
    bwrap = find_bwrap()
    if bwrap is None:
        if os.environ.get(BWRAP_ENV_VAR):
            return f"{BWRAP_ENV_VAR}={os.environ[BWRAP_ENV_VAR]} is not an executable file"
        return "bubblewrap is not installed (apt-get install bubblewrap, or dnf install bubblewrap)"
    with _PROBE_LOCK:
        if bwrap in _PROBES:
            return _PROBES[bwrap]
        true = shutil.which("true") or "/bin/true"
        argv = [bwrap, *_base_args(network=False), "--", true]
        try:
            done = run_process(
                argv,
                cwd="/",
                env=None,
                payload=None,
                timeout=10,
                max_output_size=1 << 16,
                orphans=False,  # its own PID namespace: nothing outlives it
            )
            why = ""
            if done.timed_out:
                why = f"bubblewrap at {bwrap} did not finish a trial run within 10 s"
            elif done.returncode != 0:
                err = done.stderr.text.strip().splitlines()
                why = (
                    f"bubblewrap is installed but may not create namespaces here "
                    f"({err[-1] if err else f'exit {done.returncode}'}): allow unprivileged "
                    "user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run "
                    "where they are allowed"
                )
        except OSError as exc:
            why = f"bubblewrap at {bwrap} could not be started ({exc})"
        _PROBES[bwrap] = why
        return why


def note_once(note: str) -> bool:
    """True the first time ``note`` is seen in this process (log it once, not per run)."""
    with _PROBE_LOCK:
        if note in _NOTED:
            return False
        _NOTED.add(note)
        return True


# -- the profile for one run -------------------------------------------------------------------


def deny_paths(extra: Iterable[str] = (), home: str | None = None) -> tuple[str, ...]:
    """Existing paths to hide: the defaults and ``extra`` (``~`` from $HOME), Jupyter's
    runtime folders and the kernel's connection file, each also by its real path when it is
    a symlink."""
    home = os.environ.get("HOME", "") if home is None else home
    found: list[str] = []
    for raw in (*DEFAULT_DENY_READ, *extra):
        path = raw
        if raw == "~" or raw.startswith("~/"):
            if not home:
                continue
            path = home + raw[1:]
        path = os.path.abspath(path)
        try:
            mode = os.lstat(path).st_mode
        except (OSError, ValueError):
            continue  # nothing there to read (one lstat: this runs for every run)
        candidates = [path]
        if stat.S_ISLNK(mode):  # hide where it points too (realpath costs a stat per part)
            candidates.append(os.path.realpath(path))
        for candidate in candidates:
            if candidate != "/" and candidate not in found:
                found.append(candidate)
    for path in mounts.never_readable():
        if path != "/" and path not in found:
            found.append(path)
    return tuple(found)


def _refuse_folder(
    mode: str, skill: str, role: str, folder: str, why: str, *, writable: bool
) -> None:
    home = os.path.realpath(os.environ.get("HOME", "") or "/")
    if home != "/" and (folder == "/" or home == folder or home.startswith(folder + "/")):
        suggestion = os.path.join(home, "work")  # a folder holding $HOME: a project in it
    else:
        suggestion = os.path.join(folder, "work")  # /tmp -> /tmp/work: below, not above
    raise SandboxUnavailableError(
        f"Sandbox '{mode}' refused for skill '{skill}': the {role} is {why}, and a sandboxed "
        f"run is given its {role} whole{' to write' if writable else ''}: work "
        f"in a subfolder such as {suggestion} (os.makedirs('{suggestion}', exist_ok=True); "
        f"%cd {suggestion}), or choose sandbox='off'"
    )


def profile_for(
    mode: str,
    skill: str,
    *,
    skill_dir: str,
    network: bool = False,
    deny_read: Iterable[str] = (),
    read: Iterable[str] = (),
    workspace: str | None = None,
    cwd: str | None = None,
    program: str | None = None,
    env: Mapping[str, str] | None = None,
) -> RunSandbox | None:
    """The sandbox of a run of ``skill`` in ``mode`` (None: ``off``, no sandbox at all).

    ``network``: the skill may use the network (``sandbox_network`` or a grant);
    ``deny_read``: paths hidden on top of :data:`DEFAULT_DENY_READ`; ``read``: folders given
    read-only on top of what the run needs (``sandbox_read``).

    The profile (``PROFILES``) says what it is here (``SandboxProfile.here``): ``auto``
    without a usable bubblewrap gives an ``off`` sandbox with a note; an explicit sandboxed
    mode raises SandboxUnavailableError (one line) instead: it never silently runs
    unsandboxed. ``workspace`` defaults to the current working directory; ``cwd`` (the run's
    working directory), ``program`` (what runs: the interpreter) and ``env`` (its PATH,
    PYTHONPATH, NODE_PATH) decide the other folders the run is given.
    """
    mode = check_mode(mode)
    probed: list[str] = []

    def why_not() -> str:  # probes bubblewrap only when the profile asks
        if not probed:
            probed.append(unavailable_reason())
        return probed[0]

    asked = PROFILES.get(mode)
    got = asked.here(why_not)
    if got is None:
        raise SandboxUnavailableError(
            f"Sandbox '{mode}' refused for skill '{skill}': {why_not()}; or choose "
            "sandbox='auto' to run unsandboxed where it is unavailable"
        )
    if not got.confined:
        if got is asked:
            return None  # off: no sandbox at all
        return RunSandbox(
            mode=got.name,
            requested=mode,
            network=True,
            skill_dir=skill_dir,
            note=f"not sandboxed: {why_not()}",
        )
    real = got.name
    where = os.path.realpath(workspace if workspace is not None else os.getcwd())
    skill_real = os.path.realpath(skill_dir)
    run_dir = os.path.realpath(cwd) if cwd is not None else where
    given_workspace = got.workspace_mounts(workspace or where, where)
    writable = any(b.writable for b in given_workspace)
    _refuse_private_places(real, skill, where, run_dir, skill_real, writable)
    binds = _read_binds(read, real, skill)
    binds += given_workspace
    if not mounts.covered_by_system(run_dir):
        binds += [b for b in mounts.given(cwd or run_dir) if not _inside_any(b.dest, binds)]
    # The program's installation and search paths, read-only. Binds are ordered parents
    # first, so one inside the workspace (the kernel's venv) lands on it: not writable.
    if program:
        binds += mounts.program_roots(program)
    binds += mounts.search_path_roots(env if env is not None else os.environ)
    binds += mounts.given(skill_dir)  # last: a skill inside the workspace stays read-only
    return RunSandbox(
        mode=real,
        requested=mode,
        network=network,
        workspace=where if writable else None,
        skill_dir=skill_real,
        deny_read=deny_paths(deny_read),
        binds=tuple(mounts.order_binds(binds)),
        home=os.environ.get("HOME", ""),
    )


def _refuse_private_places(
    real: str, skill: str, where: str, run_dir: str, skill_real: str, writable: bool
) -> None:
    """Everything given to the run is given whole: a folder holding $HOME or a place where
    sockets live would hand over the agent sockets, the kernel's files and, writable,
    ~/.bashrc and the IPython startup folder (code that runs later, unconfined)."""
    for role, folder in (("workspace", where), ("working directory", run_dir)):
        reason = mounts.private_place(folder)
        if reason:
            _refuse_folder(real, skill, role, folder, reason, writable=writable)
    reason = mounts.private_place(skill_real)
    if reason:
        raise SandboxUnavailableError(
            f"Sandbox '{real}' refused for skill '{skill}': its folder is {reason}: move the "
            "skill into a folder of its own"
        )


def _read_binds(read: Iterable[str], real: str, skill: str) -> list[Bind]:
    """The user's own grants (``sandbox_read``): given read-only, under the same rule."""
    binds: list[Bind] = []
    for raw in read:
        folder = os.path.realpath(os.path.expanduser(raw))
        reason = mounts.private_place(folder)
        if reason:
            raise SandboxUnavailableError(
                f"Sandbox '{real}' refused for skill '{skill}': sandbox_read names {reason}, "
                "which a run may not be given whole: name the folder the skill needs instead"
            )
        if os.path.isdir(folder):
            binds += mounts.given(os.path.expanduser(raw))
    return binds


def _inside_any(path: str, binds: Iterable[Bind]) -> bool:
    return any(path == b.dest or path.startswith(b.dest.rstrip("/") + "/") for b in binds)


# -- the bwrap command line --------------------------------------------------------------------


def _namespace_args(*, network: bool) -> list[str]:
    args = [
        # Own PID namespace: when the script's main process exits, the kernel kills whatever
        # it started inside (nothing outlives the run). --die-with-parent: if bwrap itself is
        # killed (the executor's group kill), the namespace goes with it.
        "--unshare-pid",
        "--unshare-ipc",
        "--unshare-uts",
        "--unshare-cgroup-try",
        "--die-with-parent",
        # A new session: a sandboxed process cannot push keystrokes into the terminal that
        # started the kernel (TIOCSTI). The executor's group kill still ends it: killing
        # bwrap tears the PID namespace down.
        "--new-session",
    ]
    if not network:
        args.append("--unshare-net")  # only a loopback of its own: no host, no internet
    if os.geteuid() == 0:
        # As root bwrap keeps capabilities unless told; without CAP_SYS_ADMIN nothing inside
        # can unmount the read-only binds or the hidden paths.
        args += ["--cap-drop", "ALL"]
    return args


def _system_args() -> list[str]:
    """The system folders (read-only; a symlink such as /bin -> usr/bin stays a symlink),
    a /dev and /proc of the run's own."""
    args: list[str] = []
    for folder in mounts.SYSTEM_DIRS:
        try:
            if os.path.islink(folder):
                args += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                args += ["--ro-bind", folder, folder]
        except OSError:
            continue
    return [*args, "--dev", "/dev", "--proc", "/proc"]


def _base_args(*, network: bool) -> list[str]:
    return [*_namespace_args(network=network), *_system_args()]


def _etc_targets() -> list[str]:
    """/etc files that are symlinks out of the given folders (resolv.conf into /run with
    systemd-resolved): their targets, bound alone, so names resolve when network is granted."""
    args: list[str] = []
    for link in ("/etc/resolv.conf", "/etc/hosts"):
        if not os.path.islink(link):
            continue
        target = os.path.realpath(link)
        if os.path.isfile(target) and not mounts.covered_by_system(target):
            args += ["--ro-bind", target, target]
    return args


_EMPTY: list[str] = []


def _empty_dir() -> str:
    """An empty 0700 folder (one per process, removed at exit): bound read-only where the
    run must find an empty folder in a writable place ($HOME under the private /tmp)."""
    with _PROBE_LOCK:
        if not _EMPTY or not os.path.isdir(_EMPTY[0]):
            path = tempfile.mkdtemp(prefix="skill-magics-sandbox-")
            _EMPTY[:] = [path]
            atexit.register(shutil.rmtree, path, True)
        return _EMPTY[0]


@dataclass
class SandboxedCommand:
    """A command wrapped in bwrap: ``argv`` and ``env`` to spawn (nothing to clean up after:
    the run's tmpfs goes with its mount namespace)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    tmpdir: str  # inside the sandbox: a tmpfs of the run's own
    network: bool


def private_tmpdir() -> str:
    """Where a sandboxed run's private TMPDIR is (its own /tmp: a fresh tmpfs per run)."""
    return TMP


def tmp_env(tmpdir: str = TMP) -> dict[str, str]:
    """TMPDIR and the cache folders tools expect, inside a run's private /tmp."""
    cache, mpl = f"{tmpdir}/.cache", f"{tmpdir}/.config/matplotlib"
    return {"TMPDIR": tmpdir, "XDG_CACHE_HOME": cache, "MPLCONFIGDIR": mpl}


def find_or_refuse(profile: RunSandbox) -> str:
    """The bubblewrap binary; SandboxUnavailableError when it was uninstalled since the plan
    (refused rather than run unsandboxed)."""
    bwrap = find_bwrap()
    if bwrap is None:
        raise SandboxUnavailableError(
            f"Sandbox '{profile.mode}' refused: bubblewrap is no longer installed "
            "(apt-get install bubblewrap)"
        )
    return bwrap


def _profile_args(profile: RunSandbox, net: bool) -> list[str]:
    """The run's file system on top of the system folders: the private /tmp, $HOME, the
    given folders (profile.binds), the deny list hidden."""
    env = tmp_env()
    cache, mpl = env["XDG_CACHE_HOME"], env["MPLCONFIGDIR"]
    # The private /tmp: a fresh tmpfs (at most half the RAM, the kernel's default), with the
    # cache folders tools expect; /var/tmp is the same folder, unless a given folder lies
    # there (then bwrap makes plain folders on the way to it).
    args = ["--tmpfs", TMP, "--dir", cache, "--dir", mpl]
    if not any(b.dest.startswith("/var/tmp/") for b in profile.binds):
        args += ["--symlink", "../tmp", "/var/tmp"]
    if net:
        args += _etc_targets()
    args += _home_args(profile)
    shown: list[str] = list(mounts.SYSTEM_DIRS)
    for bind in profile.binds:
        args += ["--bind" if bind.writable else "--ro-bind", bind.src, bind.dest]
        shown.append(bind.dest)
    return args + _deny_args(profile, [Bind(d, d) for d in shown])


def _home_args(profile: RunSandbox) -> list[str]:
    home = os.path.abspath(profile.home) if os.path.isabs(profile.home) else ""
    if not home or home == "/" or mounts.covered_by_system(home):
        return []
    # $HOME exists and is empty (read-only, like everything created in the root). Under
    # the private /tmp, which stays writable, an empty read-only folder is bound on it,
    # unless a given folder lies below it (then it is scratch space like the rest of
    # that /tmp, gone with the run).
    below = any(b.dest.startswith(home.rstrip("/") + "/") for b in profile.binds)
    if home.startswith(TMP + "/") and not below:
        return ["--ro-bind", _empty_dir(), home]
    return ["--dir", home]


def _deny_args(profile: RunSandbox, given: list[Bind]) -> list[str]:
    """The deny list hidden where it lies in a given folder."""
    args: list[str] = []
    hidden_dirs = [Bind(p, p) for p in profile.deny_read if os.path.isdir(p)]
    for path in profile.deny_read:
        if os.path.islink(path) or not _inside_any(path, given):
            continue  # a symlink's target is in the list; a path in no given folder is absent
        if _inside_any(path, (d for d in hidden_dirs if d.dest != path)):
            continue  # inside a hidden folder: hidden with it (and absent from its tmpfs)
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


def wrap(
    profile: RunSandbox,
    command: Sequence[str],
    env: Mapping[str, str],
    cwd: str,
    *,
    network: bool | None = None,
) -> SandboxedCommand:
    """``command`` inside bubblewrap per ``profile`` (``network`` overrides the profile's:
    a grant given after the plan)."""
    bwrap = find_or_refuse(profile)
    net = profile.network if network is None else network
    args = [bwrap, *_base_args(network=net), *_profile_args(profile, net)]
    args += ["--remount-ro", "/", "--chdir", cwd, "--", *command]
    child_env = dict(env)
    child_env.update(tmp_env())
    return SandboxedCommand(tuple(args), child_env, TMP, net)


def server_argv(profile: RunSandbox, command: Sequence[str], *, network: bool) -> list[str]:
    """The bwrap command line of a warm server for ``profile`` (core/run/launching/warm/): the same
    mounts and namespaces as a cold run's, plus a user namespace of its own where the
    server's first step (run with ``python -I -S``, before any package code) holds
    CAP_SYS_ADMIN, CAP_SETPCAP and CAP_SETFCAP (Linux 5.12+ wants it to map uid 0 into the
    nested namespace): it mounts a spare /proc and locks every mount in a nested user
    namespace; each run then gets its own namespaces and drops every capability
    (docs/architecture.md, *Warm start*)."""
    bwrap = find_or_refuse(profile)
    base = [a for a in _base_args(network=network) if a not in ("--cap-drop", "ALL")]
    args = [bwrap, *base, "--unshare-user", "--cap-drop", "ALL"]
    for cap in ("CAP_SYS_ADMIN", "CAP_SETPCAP", "CAP_SETFCAP"):
        args += ["--cap-add", cap]
    args += _profile_args(profile, network)
    args += ["--remount-ro", "/", "--chdir", "/", "--", *command]
    return args


__all__ = [
    "AUTO",
    "BWRAP_ENV_VAR",
    "DEFAULT_DENY_READ",
    "DEFAULT_MODE",
    "ENV_VAR",
    "HIDDEN_SOCKETS",
    "MODES",
    "OFF",
    "READ_ONLY",
    "WORKSPACE_WRITE",
    "RunSandbox",
    "NetworkGrants",
    "SandboxedCommand",
    "check_mode",
    "default_mode",
    "deny_paths",
    "find_bwrap",
    "find_or_refuse",
    "note_once",
    "private_tmpdir",
    "profile_for",
    "server_argv",
    "tmp_env",
    "unavailable_reason",
    "wrap",
]
