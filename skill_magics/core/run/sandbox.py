"""Sandboxed runs with bubblewrap: the modes, the per-run profile, and the bwrap command line.

Modes (docs/architecture.md, *Sandbox and secrets*):

- ``off``: no sandbox (the run has the user's rights).
- ``read-only``: the whole filesystem is read-only; only a private TMPDIR is writable.
- ``workspace-write``: like read-only, plus the caller's working directory (the notebook's
  workspace) is writable. The skill's own folder stays read-only even inside it.
- ``auto``: ``workspace-write`` where bubblewrap works, else no sandbox with one clear note.

Both sandboxed modes run in their own network namespace (no network unless granted for that
skill), their own PID namespace (nothing started inside outlives the run), with credential
paths (``~/.ssh``, ``~/.aws``, ... resolved from ``$HOME``) and the host's service sockets
hidden. Cache tools keep working: ``XDG_CACHE_HOME`` and ``MPLCONFIGDIR`` point into the
private TMPDIR.

Example:
    >>> profile = profile_for("workspace-write", "csv-profiler",
    ...                       skill_dir="/skills/csv-profiler", workspace="/home/me/project")
    >>> profile.info().writable
    ('/home/me/project', '<private TMPDIR>')
"""

from __future__ import annotations

import atexit
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from skill_magics.core.errors import SandboxUnavailableError
from skill_magics.core.run.approval import SandboxInfo

OFF, READ_ONLY, WORKSPACE_WRITE, AUTO = "off", "read-only", "workspace-write", "auto"
MODES = (OFF, READ_ONLY, WORKSPACE_WRITE, AUTO)
ENV_VAR = "SKILL_MAGICS_SANDBOX"  # the default mode when none is configured
DEFAULT_MODE = OFF  # see the README, "Sandboxed runs": why off, and when to choose auto
PRIVATE_TMP = "<private TMPDIR>"  # how the per-run TMPDIR is shown before it exists

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
)
# Unix sockets of host services: a network namespace does not cover sockets in the
# filesystem, and a read-only mount does not stop connect(), so they are hidden as well.
HIDDEN_SOCKETS: tuple[str, ...] = (
    "/run/docker.sock",
    "/var/run/docker.sock",
    "/run/containerd",
    "/run/podman",
    "/run/dbus",
    "/run/user",
)


def check_mode(value: object) -> str:
    """The canonical mode for ``value`` ("off", "read-only", "workspace-write", "auto").

    Accepts underscores and any case (``"workspace_write"``); anything else is a one-line
    ValueError naming the choices.
    """
    if isinstance(value, str):
        mode = value.strip().lower().replace("_", "-")
        if mode in MODES:
            return mode
    raise ValueError(
        f"Unknown sandbox mode {value!r}: use one of {', '.join(MODES)} (e.g. sandbox='auto')"
    )


def default_mode() -> str:
    """``$SKILL_MAGICS_SANDBOX`` when set (checked), else ``off``."""
    value = os.environ.get(ENV_VAR, "").strip()
    if not value:
        return DEFAULT_MODE
    try:
        return check_mode(value)
    except ValueError as exc:
        raise ValueError(f"{ENV_VAR}: {exc}") from None


class NetworkGrants:
    """Skills given the network in sandboxed runs during this session (the approval panel,
    ``SkillManager.grant_network``), on top of the ``sandbox_network`` setting. Session
    state, like secret values: shared by the planner and the executor, which reads it again
    at spawn time, so a grant given while approving counts for that run. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._names: set[str] = set()

    def grant(self, skill: str) -> bool:
        """Give ``skill`` the network; False when it already had it."""
        with self._lock:
            if skill in self._names:
                return False
            self._names.add(skill)
            return True

    def has(self, skill: str) -> bool:
        with self._lock:
            return skill in self._names or "*" in self._names

    def names(self) -> tuple[str, ...]:
        with self._lock:
            return tuple(sorted(self._names))

    def clear(self) -> None:
        with self._lock:
            self._names.clear()


@dataclass(frozen=True)
class SandboxProfile:
    """How one run is isolated, decided at plan time (shown in the approval request).

    ``mode`` is what the run gets ("read-only" / "workspace-write", or "off" when ``auto``
    found no bubblewrap; ``note`` then says why). ``requested`` is the mode asked for.
    """

    mode: str
    requested: str
    network: bool = False
    workspace: str | None = None  # writable (workspace-write only)
    skill_dir: str = ""
    deny_read: tuple[str, ...] = field(default=(), repr=False)  # existing paths, hidden
    note: str = ""

    @property
    def active(self) -> bool:
        return self.mode in (READ_ONLY, WORKSPACE_WRITE)

    def writable(self, tmpdir: str | None = None) -> tuple[str, ...]:
        if not self.active:
            return ()
        tmp = tmpdir or PRIVATE_TMP
        return (self.workspace, tmp) if self.workspace else (tmp,)

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
            "(see the README, 'Sandboxed runs', for macOS and Windows)"
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
            done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
            why = ""
            if done.returncode != 0:
                err = done.stderr.decode("utf-8", "replace").strip().splitlines()
                why = (
                    f"bubblewrap is installed but may not create namespaces here "
                    f"({err[-1] if err else f'exit {done.returncode}'}): allow unprivileged "
                    "user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run "
                    "where they are allowed"
                )
        except (OSError, subprocess.TimeoutExpired) as exc:
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
    """Existing paths to hide: the defaults, ``extra`` and the host's sockets, ``~`` from
    $HOME, each also by its real path when it is a symlink."""
    home = os.environ.get("HOME", "") if home is None else home
    found: list[str] = []
    for raw in (*DEFAULT_DENY_READ, *extra, *HIDDEN_SOCKETS):
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
    return tuple(found)


def profile_for(
    mode: str,
    skill: str,
    *,
    skill_dir: str,
    network: bool = False,
    deny_read: Iterable[str] = (),
    workspace: str | None = None,
) -> SandboxProfile | None:
    """The profile of a run of ``skill`` in ``mode`` (None: ``off``, no sandbox at all).

    ``network``: the skill may use the network (``sandbox_network`` or a grant);
    ``deny_read``: paths hidden on top of :data:`DEFAULT_DENY_READ`.

    ``auto`` without a usable bubblewrap gives an ``off`` profile with a note; an explicit
    sandboxed mode raises SandboxUnavailableError (one line) instead: it never silently runs
    unsandboxed. ``workspace`` defaults to the current working directory.
    """
    mode = check_mode(mode)
    if mode == OFF:
        return None
    why = unavailable_reason()
    if why:
        if mode == AUTO:
            return SandboxProfile(
                mode=OFF,
                requested=AUTO,
                network=True,
                skill_dir=skill_dir,
                note=f"not sandboxed: {why}",
            )
        raise SandboxUnavailableError(
            f"Sandbox '{mode}' refused for skill '{skill}': {why}; or choose sandbox='auto' "
            "to run unsandboxed where it is unavailable"
        )
    real = WORKSPACE_WRITE if mode == AUTO else mode
    where = None
    if real == WORKSPACE_WRITE:
        where = os.path.realpath(workspace if workspace is not None else os.getcwd())
        if where == "/":
            raise SandboxUnavailableError(
                f"Sandbox 'workspace-write' refused for skill '{skill}': the working directory "
                "is /, so everything would be writable: change to a project folder "
                "(os.chdir / %cd) or choose sandbox='read-only'"
            )
    return SandboxProfile(
        mode=real,
        requested=mode,
        network=network,
        workspace=where,
        skill_dir=os.path.realpath(skill_dir),
        deny_read=deny_paths(deny_read),
    )


# -- the bwrap command line --------------------------------------------------------------------


def _base_args(*, network: bool) -> list[str]:
    args = [
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
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


_TMP_MOUNT: list[str] = []


def _tmp_mountpoint() -> str:
    """An empty 0700 folder (one per process, removed at exit) where every sandboxed run
    mounts its own private tmpfs as TMPDIR: each run sees only its own files, and they vanish
    with its mount namespace. Nothing is written to or removed from the disk per run (an
    on-disk TMPDIR measured ~7 ms per run just for its removal on this machine's disk)."""
    with _PROBE_LOCK:
        if not _TMP_MOUNT or not os.path.isdir(_TMP_MOUNT[0]):
            path = tempfile.mkdtemp(prefix="skill-magics-sandbox-")
            _TMP_MOUNT[:] = [path]
            atexit.register(shutil.rmtree, path, True)
        return _TMP_MOUNT[0]


@dataclass
class SandboxedCommand:
    """A command wrapped in bwrap: ``argv`` and ``env`` to spawn (nothing to clean up after:
    the run's tmpfs goes with its mount namespace)."""

    argv: tuple[str, ...]
    env: dict[str, str]
    tmpdir: str  # inside the sandbox: a tmpfs of the run's own
    network: bool


def private_tmpdir() -> str:
    """Where a sandboxed run's private TMPDIR is mounted (the same empty folder for every run
    of this process; each run gets its own tmpfs on it)."""
    return _tmp_mountpoint()


def tmp_env(tmpdir: str) -> dict[str, str]:
    """TMPDIR and the cache folders tools expect, inside a run's private TMPDIR."""
    cache, mpl = os.path.join(tmpdir, ".cache"), os.path.join(tmpdir, ".config", "matplotlib")
    return {"TMPDIR": tmpdir, "XDG_CACHE_HOME": cache, "MPLCONFIGDIR": mpl}


def find_or_refuse(profile: SandboxProfile) -> str:
    bwrap = find_bwrap()
    if bwrap is None:  # uninstalled since the plan: refuse rather than run unsandboxed
        raise SandboxUnavailableError(
            f"Sandbox '{profile.mode}' refused: bubblewrap is no longer installed "
            "(apt-get install bubblewrap)"
        )
    return bwrap


def _profile_args(profile: SandboxProfile, tmpdir: str) -> list[str]:
    """The mounts of a profile: the private TMPDIR, the workspace, the skill read-only, the
    deny list hidden."""
    env = tmp_env(tmpdir)
    # The private TMPDIR: a fresh tmpfs (at most half the RAM, the kernel's default), with
    # the cache folders tools expect.
    args = ["--tmpfs", tmpdir, "--dir", env["XDG_CACHE_HOME"], "--dir", env["MPLCONFIGDIR"]]
    if profile.mode == WORKSPACE_WRITE and profile.workspace:
        args += ["--bind", profile.workspace, profile.workspace]
    # After the workspace: a skill inside the workspace still cannot rewrite its own code.
    if profile.skill_dir:
        args += ["--ro-bind", profile.skill_dir, profile.skill_dir]
    for path in profile.deny_read:
        if os.path.islink(path):
            continue  # its target is in the list as well; bwrap mounts on the target
        if os.path.isdir(path):
            args += ["--tmpfs", path, "--remount-ro", path]
        elif os.path.exists(path):
            args += ["--ro-bind", "/dev/null", path]
    return args


def wrap(
    profile: SandboxProfile,
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
    tmpdir = _tmp_mountpoint()
    args = [bwrap, *_base_args(network=net), *_profile_args(profile, tmpdir)]
    args += ["--chdir", cwd, "--", *command]
    child_env = dict(env)
    child_env.update(tmp_env(tmpdir))
    return SandboxedCommand(tuple(args), child_env, tmpdir, net)


def server_argv(
    profile: SandboxProfile, command: Sequence[str], *, network: bool, tmpdir: str
) -> list[str]:
    """The bwrap command line of a warm server for ``profile`` (core/run/warm/): the same
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
    args += _profile_args(profile, tmpdir)
    args += ["--chdir", "/", "--", *command]
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
    "SandboxProfile",
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
