"""What a sandboxed run can see: the folders it is given, and the places it never gets.

A sandboxed run does not get the host's filesystem with a few paths hidden: it gets an empty
root (a tmpfs, read-only once set up) with only what it needs bound into it (docs/
architecture.md, *Sandbox and secrets*):

- the system folders (``/usr``, ``/bin``, ``/sbin``, ``/lib*``, ``/etc``, ``/sys``), read-only;
- the program's installation: for Python the interpreter's prefix and base prefix, the
  environment it runs in (the skill's venv, its managed env, the kernel's venv), the folders
  its ``.pth`` files and editable installs add; for others the prefix of the program
  (``~/.nvm/versions/node/v20`` for ``node``); read-only;
- the folders on ``PATH``, ``PYTHONPATH`` and ``NODE_PATH`` (a ``bin``/``shims`` folder brings
  its parent: pyenv's shims need ``~/.pyenv``), read-only;
- the skill folder (read-only), the workspace (writable in ``workspace-write``, else
  read-only) and the run's working directory;
- a private ``/tmp`` (a fresh tmpfs per run), ``/dev`` and ``/proc`` of its own.

Why not bind ``/`` read-only and hide what must not be reached? A read-only mount does not
stop ``connect()`` on a unix socket, and sockets live anywhere (``/tmp/ssh-*/agent.*``,
``~/.1password/agent.sock``, ``~/.docker/desktop/docker.sock``, ``/var/lib/lxd/unix.socket``,
an IDE's or a kernel's socket): no list of them is complete. Giving only what a run needs
leaves every socket outside those folders unreachable by construction. None of those folders
may be, or hold, ``$HOME``, ``/tmp``, ``/run`` and the other places sockets and credentials
live (:func:`private_place`): a folder that would is refused (workspace, working directory,
skill) or narrowed (a program's prefix falls back to its ``bin`` folder).

Inside what is given, some paths are still hidden: the deny list (``~/.ssh``, ...), every
Jupyter runtime folder and the kernel's own connection file (they hold the key that signs
kernel messages, so a network grant never makes the kernel drivable), and in
``workspace-write`` the workspace's ``.git``, ``.hg`` and virtual environments stay
read-only (code that runs later, outside the sandbox: hooks, ``.pth`` files).

Example:
    >>> import os
    >>> private_place(os.path.realpath(os.path.expanduser("~")))
    'your home folder ...'
    >>> private_place(os.path.realpath(os.path.expanduser("~/project")))
    ''
"""

from __future__ import annotations

import ast
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from skill_magics.core.base import envdirs

# Bound read-only as they are (a symlink such as /bin -> usr/bin is recreated as one).
SYSTEM_DIRS: tuple[str, ...] = (
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/sys",
    "/nix/store",
)
# Where the host's service sockets and shared temporary files live: never given to a run (a
# private /tmp replaces /tmp), and no folder given to a run may be or hold one of them.
SOCKET_PLACES: tuple[str, ...] = (
    "/tmp",
    "/var/tmp",
    "/run",
    "/var/run",
    "/dev/shm",
    "/var/lib",
    "/home",
    "/mnt",
    "/media",
    "/srv",
)
# Under $HOME: folders that hold every application's data, sockets included; a program's
# prefix that is one of them is narrowed to its bin/ folder.
_HOME_CATCHALLS = (".local", ".local/share", ".local/state", ".cache", ".config")
# Folders of the workspace that run later, outside the sandbox: kept read-only in
# workspace-write (a venv only when it has a pyvenv.cfg; ".venv" always).
PROTECTED_IN_WORKSPACE: tuple[str, ...] = (".git", ".hg", ".venv", "venv")
# In /etc, files that may point into /run (systemd-resolved): their target is bound alone.
_ETC_LINKS = ("/etc/resolv.conf", "/etc/hosts")
_BIN_NAMES = frozenset({"bin", "sbin", "shims", "Scripts", "libexec"})


@dataclass(frozen=True)
class Bind:
    """``src`` bound at ``dest`` in the sandbox (read-only unless ``writable``)."""

    src: str
    dest: str
    writable: bool = False


def _inside(path: str, folder: str) -> bool:
    """Is ``path`` ``folder`` or below it (both absolute, normalized)?"""
    if folder == "/":
        return True
    return path == folder or path.startswith(folder + "/")


@dataclass(frozen=True)
class _Places:
    """$HOME and the places never given whole, as real paths (cached per environment)."""

    home: str
    sockets: tuple[str, ...]
    catchalls: frozenset[str]


_PLACES: dict[tuple[str, ...], _Places] = {}
_XDG_HOMES = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_STATE_HOME")


def _places_key() -> tuple[str, ...]:
    get = os.environ.get
    return (get("HOME", ""), get("XDG_RUNTIME_DIR", ""), *(get(v, "") for v in _XDG_HOMES))


def _places() -> _Places:
    key = _places_key()
    hit = _PLACES.get(key)
    if hit is not None:
        return hit
    home = os.path.realpath(key[0]) if os.path.isabs(key[0]) else ""
    raw = [*SOCKET_PLACES, *([key[1]] if os.path.isabs(key[1]) else [])]
    sockets = tuple(dict.fromkeys([*raw, *(os.path.realpath(p) for p in raw)]))
    catchalls = {os.path.join(home, name) for name in _HOME_CATCHALLS} if home else set()
    catchalls |= {os.path.realpath(v) for v in key[2:] if os.path.isabs(v)}
    if len(_PLACES) > 64:
        _PLACES.clear()
    hit = _PLACES[key] = _Places(home, sockets, frozenset(catchalls))
    return hit


def socket_places() -> tuple[str, ...]:
    """:data:`SOCKET_PLACES` plus ``$XDG_RUNTIME_DIR`` (and their real paths)."""
    return _places().sockets


def private_place(folder: str) -> str:
    """Why ``folder`` (a real path) may not be given to a sandboxed run whole, or "".

    It may not be ``/``, ``$HOME`` or a folder holding it, nor one of the places sockets live
    (``/tmp``, ``/run``, ...) or a folder holding one.
    """
    if folder == "/":
        return "the root folder /"
    places = _places()
    home = places.home
    if home and _inside(home, folder):
        return f"your home folder {home}" if folder == home else f"{folder}, which holds {home}"
    for place in places.sockets:
        if _inside(place, folder):
            what = "where sockets and shared temporary files live"
            return f"{folder} ({what})" if folder == place else f"{folder}, which holds {place}"
    return ""


def _too_broad(folder: str) -> bool:
    """A folder not to bind whole as a program's prefix (it may hold anything)."""
    return bool(private_place(folder)) or folder in _places().catchalls


def covered_by_system(path: str) -> bool:
    """Is ``path`` (a real path) inside a system folder every run gets?"""
    return any(_inside(path, d) for d in SYSTEM_DIRS)


def _install_root(path: str) -> str:
    """The installation a file belongs to: ``/x/bin/prog`` -> ``/x``; ``/x/lib/node_modules/
    pkg/cli.js`` -> ``/x``; else its folder."""
    marker = "/lib/node_modules/"
    if marker in path:
        return path.split(marker, 1)[0] or "/"
    folder = os.path.dirname(path)
    if os.path.basename(folder) in _BIN_NAMES:
        return os.path.dirname(folder) or "/"
    return folder


def _add_root(out: list[Bind], folder: str, fallback: str = "") -> None:
    """Give ``folder`` read-only (or ``fallback`` when it is too broad) unless the system
    folders cover it; at its real path, and at the path it was named by when that goes
    through a symlink (a managed env's ``current``)."""
    for candidate in (folder, fallback):
        if not candidate or not os.path.isabs(candidate):
            continue
        real = os.path.realpath(candidate)
        if not os.path.isdir(real) or covered_by_system(real):
            return
        if _too_broad(real):
            continue
        named = os.path.normpath(candidate)
        for bind in (Bind(real, real), Bind(real, named)):
            if bind not in out and not (bind.dest != real and covered_by_system(bind.dest)):
                out.append(bind)
        return


# -- Python ----------------------------------------------------------------------------------

_MAPPING_RE = re.compile(r"^MAPPING\s*(?::[^=\n]*)?=\s*(\{.*?\})\s*$", re.M | re.S)
_FINDERS: dict[tuple[str, int], tuple[str, ...]] = {}


def _editable_folders(site: str) -> list[str]:
    """Source folders of setuptools editable installs in ``site`` (their finder's MAPPING)."""
    found: list[str] = []
    try:
        names = [n for n in os.listdir(site) if n.startswith("__editable__") and n.endswith(".py")]
    except OSError:
        return found
    for name in names:
        path = os.path.join(site, name)
        try:
            key = (path, os.stat(path).st_mtime_ns)
        except OSError:
            continue
        hit = _FINDERS.get(key)
        if hit is None:
            hit = ()
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    match = _MAPPING_RE.search(fh.read(200_000))
                if match:
                    mapping = ast.literal_eval(match.group(1))
                    if isinstance(mapping, dict):
                        hit = tuple(str(v) for v in mapping.values() if isinstance(v, str))
            except (OSError, ValueError, SyntaxError, MemoryError, RecursionError):
                hit = ()
            if len(_FINDERS) > 256:  # edited finders leave stale keys behind
                _FINDERS.clear()
            _FINDERS[key] = hit
        for value in hit:
            # A package maps to its folder, a single module to its file.
            found.append(value if os.path.isdir(value) else os.path.dirname(value))
    return found


def _venv_base(env_dir: str) -> str:
    """The base installation of a venv (``home`` in its pyvenv.cfg, one level up), or ""."""
    try:
        with open(os.path.join(env_dir, "pyvenv.cfg"), encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, sep, value = line.partition("=")
                if sep and key.strip() == "home" and os.path.isabs(value.strip()):
                    return os.path.dirname(os.path.realpath(value.strip()))
    except OSError:
        pass
    return ""


def _python_roots(program: str) -> tuple[list[Bind], list[str]]:
    """(folders a Python needs, files and folders whose change may change them)."""
    roots: list[Bind] = []
    watch: list[str] = []
    kernel = os.path.abspath(program) == os.path.abspath(sys.executable)
    if kernel:
        for prefix in (sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix):
            _add_root(roots, prefix)
        search = [p for p in sys.path if p and os.path.isabs(p) and p != os.getcwd()]
    else:
        search = envdirs.import_path(program)
    for form in (os.path.abspath(program), os.path.realpath(program)):
        env_dir = os.path.dirname(os.path.dirname(form))
        _add_root(roots, env_dir, os.path.dirname(form))
        watch.append(os.path.join(env_dir, "pyvenv.cfg"))
        base = _venv_base(os.path.realpath(env_dir))
        if base:
            _add_root(roots, base)
    for entry in search:
        if os.path.isdir(entry):
            _add_root(roots, entry)
            if os.path.basename(entry) in ("site-packages", "dist-packages"):
                watch.append(entry)  # a new .pth file or editable install changes its mtime
                for folder in _editable_folders(entry):
                    _add_root(roots, folder)
        elif os.path.isfile(entry):  # a zip on sys.path
            _add_root(roots, os.path.dirname(entry))
    return roots, watch


def is_python(program: str) -> bool:
    return os.path.basename(program).lower().startswith(("python", "pypy"))


def _program_roots(program: str) -> tuple[list[Bind], list[str]]:
    if is_python(program):
        return _python_roots(program)
    roots: list[Bind] = []
    for form in (os.path.abspath(program), os.path.realpath(program)):
        _add_root(roots, _install_root(form), os.path.dirname(form))
    return roots, [program]


def _search_path_roots(env_key: tuple[str, ...]) -> tuple[list[Bind], list[str]]:
    roots: list[Bind] = []
    watch: list[str] = []
    for value in env_key:
        for entry in value.split(os.pathsep):
            if not entry or not os.path.isabs(entry):
                continue
            watch.append(entry)
            name = os.path.basename(entry.rstrip("/"))
            if name in _BIN_NAMES:
                _add_root(roots, os.path.dirname(entry.rstrip("/")), entry)
            else:
                _add_root(roots, entry)
    return roots, watch


@dataclass(frozen=True)
class _Found:
    roots: tuple[Bind, ...]
    watch: tuple[str, ...]
    stamp: tuple[int, ...]


_ROOTS: dict[tuple[object, ...], _Found] = {}
_ROOTS_LOCK = threading.Lock()


def _stamp(paths: Iterable[str]) -> tuple[int, ...]:
    out = []
    for path in paths:
        try:
            out.append(os.stat(path).st_mtime_ns)
        except OSError:
            out.append(-1)
    return tuple(out)


def _cached(
    key: tuple[object, ...], compute: Callable[[], tuple[list[Bind], list[str]]]
) -> list[Bind]:
    """Roots computed once per key and recomputed when a watched path changes: a few stats
    instead of a realpath per candidate (this runs at the plan of every sandboxed run)."""
    with _ROOTS_LOCK:
        hit = _ROOTS.get(key)
    if hit is not None and _stamp(hit.watch) == hit.stamp:
        return list(hit.roots)
    roots, watch = compute()
    found = _Found(tuple(roots), tuple(watch), _stamp(watch))
    with _ROOTS_LOCK:
        if len(_ROOTS) > 256:
            _ROOTS.clear()
        _ROOTS[key] = found
    return list(roots)


def python_roots(program: str) -> list[Bind]:
    """Folders a Python interpreter needs: its environment, base installation, import path
    (the kernel's: its prefixes and ``sys.path``), editable installs' source folders."""
    kernel = os.path.abspath(program) == os.path.abspath(sys.executable)
    key = ("python", program, _places_key(), tuple(sys.path) if kernel else (), os.getcwd())
    return _cached(key, lambda: _python_roots(program))


def program_roots(program: str) -> list[Bind]:
    """Folders the run's program needs (its installation; for Python see python_roots)."""
    if is_python(program):
        return python_roots(program)
    return _cached(("program", program, _places_key()), lambda: _program_roots(program))


def search_path_roots(env: Mapping[str, str]) -> list[Bind]:
    """Folders on the run's PATH, PYTHONPATH and NODE_PATH (a bin/shims folder with its
    installation: pyenv's shims run ~/.pyenv/libexec/pyenv)."""
    values = tuple(env.get(v, "") for v in ("PATH", "PYTHONPATH", "NODE_PATH"))
    return _cached(("search", values, _places_key()), lambda: _search_path_roots(values))


# -- what is never readable ------------------------------------------------------------------


def _connection_files() -> list[str]:
    """The connection file of the kernel this code runs in, if any: from ipykernel's app when
    it is loaded (no import here: the core does not import IPython), else ``-f`` in argv."""
    found: list[str] = []
    app_module = sys.modules.get("ipykernel.kernelapp")
    app_class = getattr(app_module, "IPKernelApp", None)
    try:
        if app_class is not None and app_class.initialized():
            path = getattr(app_class.instance(), "abs_connection_file", "") or ""
            if path:
                found.append(str(path))
    except Exception:  # noqa: BLE001 - whatever the app's state, argv is the fallback
        pass
    argv = list(sys.argv)
    for i, arg in enumerate(argv):
        value = ""
        if arg == "-f" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--f="):
            value = arg[4:]
        elif arg.startswith("--") and ".connection_file=" in arg:
            value = arg.split("=", 1)[1]
        if value.endswith(".json"):
            found.append(os.path.abspath(value))
    return found


_RUNTIME: dict[tuple[object, ...], tuple[str, ...]] = {}
_JUPYTER_VARS = ("JUPYTER_RUNTIME_DIR", "JUPYTER_DATA_DIR", "XDG_DATA_HOME", "HOME", "APPDATA")


def jupyter_runtime_dirs() -> list[str]:
    """Every folder where Jupyter keeps connection files (cached per environment)."""
    key = (*(os.environ.get(v, "") for v in _JUPYTER_VARS), tuple(sys.argv))
    hit = _RUNTIME.get(key)
    if hit is None:
        if len(_RUNTIME) > 64:
            _RUNTIME.clear()
        hit = _RUNTIME[key] = tuple(_jupyter_runtime_dirs())
    return list(hit)


def _jupyter_runtime_dirs() -> list[str]:
    """Every folder where Jupyter keeps connection files: ``jupyter_core``'s answer (when it
    is installed), ``$JUPYTER_RUNTIME_DIR``, ``$JUPYTER_DATA_DIR/runtime``,
    ``$XDG_DATA_HOME/jupyter/runtime``, ``~/.local/share/jupyter/runtime`` and the folder of
    the running kernel's connection file when it is named like one (``kernel-*.json``)."""
    out: list[str] = []
    try:
        from jupyter_core.paths import jupyter_runtime_dir  # optional: Jupyter's own rule

        out.append(jupyter_runtime_dir())
    except Exception:  # noqa: BLE001 - not installed, or a broken config: the rules below
        pass
    get = os.environ.get
    if get("JUPYTER_RUNTIME_DIR"):
        out.append(get("JUPYTER_RUNTIME_DIR", ""))
    if get("JUPYTER_DATA_DIR"):
        out.append(os.path.join(get("JUPYTER_DATA_DIR", ""), "runtime"))
    if get("XDG_DATA_HOME"):
        out.append(os.path.join(get("XDG_DATA_HOME", ""), "jupyter", "runtime"))
    home = get("HOME", "")
    if home:
        out.append(os.path.join(home, ".local", "share", "jupyter", "runtime"))
        out.append(os.path.join(home, "Library", "Jupyter", "runtime"))
    for path in _connection_files():
        if os.path.basename(path).startswith("kernel-"):
            out.append(os.path.dirname(path))
    return [p for p in dict.fromkeys(os.path.abspath(p) for p in out if p)]


def never_readable() -> list[str]:
    """Jupyter's runtime folders and the kernel's connection file (existing ones)."""
    out: list[str] = []
    for path in (*jupyter_runtime_dirs(), *_connection_files()):
        if os.path.lexists(path):
            out.append(path)
            real = os.path.realpath(path)
            if real != path:
                out.append(real)
    return list(dict.fromkeys(out))


def protected_in(workspace: str) -> list[str]:
    """The workspace's folders that run later outside the sandbox (existing ones)."""
    out = []
    for name in PROTECTED_IN_WORKSPACE:
        path = os.path.join(workspace, name)
        if name == "venv" and not os.path.isfile(os.path.join(path, "pyvenv.cfg")):
            continue
        if os.path.lexists(path) and not os.path.islink(path):
            out.append(path)
    return out


# -- the plan --------------------------------------------------------------------------------


def order_binds(binds: Iterable[Bind]) -> list[Bind]:
    """Parents before children (a later bind lands on top); redundant ones dropped: a
    read-only bind of what an enclosing read-only bind already shows at the same place."""
    unique: dict[tuple[str, bool], Bind] = {}
    for bind in binds:
        unique.setdefault((bind.dest, bind.writable), bind)
    ordered = sorted(unique.values(), key=lambda b: (b.dest.split("/"), b.writable))
    kept: list[Bind] = []
    for bind in ordered:
        parent = None
        for earlier in kept:
            if _inside(bind.dest, earlier.dest) and (
                parent is None or len(earlier.dest) >= len(parent.dest)
            ):
                parent = earlier
        if (
            parent is not None
            and not bind.writable
            and not parent.writable
            and parent.src == parent.dest
            and bind.src == bind.dest
        ):
            continue  # already visible, read-only, at the same path
        kept.append(bind)
    return kept


def given(path: str, writable: bool = False) -> list[Bind]:
    """Binds for a folder given to the run: at its real path, and at the path it was named by
    when that goes through a symlink (``SKILL_BASE_DIR`` and the like keep working)."""
    absolute = os.path.abspath(path)
    real = os.path.realpath(absolute)
    binds = [Bind(real, real, writable)]
    if absolute != real and not covered_by_system(absolute):
        binds.append(Bind(real, absolute, writable))
    return binds


__all__ = [
    "Bind",
    "PROTECTED_IN_WORKSPACE",
    "SOCKET_PLACES",
    "SYSTEM_DIRS",
    "covered_by_system",
    "given",
    "is_python",
    "jupyter_runtime_dirs",
    "never_readable",
    "order_binds",
    "private_place",
    "program_roots",
    "protected_in",
    "python_roots",
    "search_path_roots",
    "socket_places",
]
