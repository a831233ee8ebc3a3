"""The only place that decides whether a script path is inside its skill.

Example:
    >>> script = resolve_script("scripts/profile.py", Path("skills/csv-profiler"))
    >>> script.relative, script.real
    (PosixPath('scripts/profile.py'), PosixPath('/.../skills/csv-profiler/scripts/profile.py'))

Checks, in this order (security first, so a refusal never says whether an outside file exists):
lexical escape (``..``, absolute paths elsewhere), real path escape (symlinked files and
directories resolved), existence, regular file, setuid/setgid bits.
"""

from __future__ import annotations

import errno
import os
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base.errors import (
    PathSecurityError,
    ScriptNotFoundError,
    ScriptPermissionError,
    SkillNameError,
)


@dataclass(frozen=True)
class ResolvedScript:
    """A script that passed every path check.

    ``real`` is what gets executed (symlinks resolved); ``identity`` lets a later re-check
    notice that the file was swapped or edited between the check and the spawn.
    """

    relative: Path  # relative to the skill base dir, as shown to people
    real: Path  # absolute, symlinks resolved, inside real_base
    real_base: Path  # realpath of the skill base dir
    identity: tuple[int, ...] = ()  # (dev, inode, mtime_ns, ctime_ns, size) of the checked file


def _is_within(path: str, base: str) -> bool:
    """Is normalised absolute ``path`` ``base`` or below it? Whole components only."""
    if os.name == "nt":  # pragma: no cover - case-insensitive file system
        path, base = os.path.normcase(path), os.path.normcase(base)
    if path == base:
        return True
    # A prefix test on "base/" is what commonpath computes, at a fraction of the cost (this
    # runs on every call), and "/a/bc" is still not inside "/a/b".
    return path.startswith(base if base.endswith(os.sep) else base + os.sep)


def _below(path: str, base: str) -> str:
    """``path`` relative to ``base`` (``path`` is known to be within ``base``)."""
    return path[len(base) :].lstrip(os.sep) or "."


def real_base_dir(skill_base_dir: str | os.PathLike[str]) -> Path:
    """Realpath of the skill directory; ScriptNotFoundError when it is not a directory."""
    return Path(_real_base(os.path.abspath(skill_base_dir), skill_base_dir))


_O_PATH = getattr(os, "O_PATH", 0)
_PROC_FD = "/proc/self/fd/"
_FAST_REALPATH = bool(_O_PATH) and os.path.isdir(_PROC_FD)


def realpath_stat(path: str) -> tuple[str, os.stat_result | None]:
    """(realpath, stat) of ``path``; stat is None when it does not exist.

    On Linux one O_PATH open + fstat + readlink of /proc/self/fd/N resolves every symlink
    in three system calls, where os.path.realpath lstat()s each component in Python (2x
    slower, and this runs twice per script run). Anything unusual falls back to realpath.
    """
    if _FAST_REALPATH:
        try:
            fd = os.open(path, _O_PATH | os.O_CLOEXEC)
        except OSError:
            pass
        else:
            try:
                st = os.fstat(fd)
                real = os.readlink(f"{_PROC_FD}{fd}")
            except OSError:
                real = ""
            finally:
                os.close(fd)
            if real.startswith("/") and not real.endswith(" (deleted)"):
                return real, st
    real = os.path.realpath(path)
    try:
        return real, os.stat(real)
    except OSError:
        return real, None


# base dir as given (absolute) -> (its realpath, (st_dev, st_ino) of that directory)
_BASE_CACHE: dict[str, tuple[str, tuple[int, int]]] = {}


def _real_base(base_abs: str, shown: object, *, cached: bool = True) -> str:
    if cached:
        hit = _BASE_CACHE.get(base_abs)
        if hit is not None:
            # One stat() confirms the name still leads to the same directory. A directory
            # moved elsewhere under the same name can make the cached path stale; that only
            # causes a refusal, which resolve_script retries without the cache.
            try:
                st = os.stat(base_abs)
            except OSError:
                st = None
            if st is not None and (st.st_dev, st.st_ino) == hit[1]:
                return hit[0]
    real, st = realpath_stat(base_abs)
    if st is None or not stat.S_ISDIR(st.st_mode):
        raise ScriptNotFoundError(
            f"Skill directory {shown} does not exist or is not a directory: "
            "reload the skills or check the skill_dirs setting"
        )
    if len(_BASE_CACHE) > 512:  # skill dirs are few; never grow without bound
        _BASE_CACHE.clear()
    _BASE_CACHE[base_abs] = (real, (st.st_dev, st.st_ino))
    return real


def resolve_script(
    script_path: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str]
) -> ResolvedScript:
    """Validate ``script_path`` (absolute, or relative to the skill) and return where it really is.

    Raises PathSecurityError for anything that resolves outside the skill directory,
    ScriptNotFoundError when it does not exist, ScriptPermissionError when it is not a regular
    file or has setuid/setgid bits.
    """
    try:
        return _resolve(script_path, skill_base_dir, cached=True)
    except PathSecurityError:
        # Maybe only the cached realpath of the skill dir was stale: decide again from scratch.
        return _resolve(script_path, skill_base_dir, cached=False)


def _resolve(
    script_path: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str], *, cached: bool
) -> ResolvedScript:
    shown = os.fspath(script_path)
    if not shown or "\0" in shown:
        raise PathSecurityError(
            f"Script path {shown!r} is empty or contains a NUL byte: "
            "give the script's path relative to the skill directory"
        )
    base_abs = os.path.abspath(skill_base_dir)  # abspath also normalises
    base_real = _real_base(base_abs, skill_base_dir, cached=cached)

    # Lexical check first: catches `../../etc/passwd`, `scripts/../../x` and absolute paths
    # elsewhere before touching the file system. An absolute path may name the skill through
    # its symlinked or its real location.
    candidate = os.path.normpath(os.path.join(base_abs, shown))
    if not (_is_within(candidate, base_abs) or _is_within(candidate, base_real)):
        raise PathSecurityError(
            f"Script path {shown} escapes the skill directory {base_abs}: "
            "give a path inside the skill, relative to it (e.g. scripts/run.py)"
        )
    # Real check: symlinked files or directories pointing outside the skill.
    real, st = realpath_stat(candidate)
    if not _is_within(real, base_real):
        raise PathSecurityError(
            f"Script path {shown} resolves through a symlink to {real}, outside the skill "
            f"directory {base_real}: copy the script into the skill instead of linking it"
        )
    # Show the path as the caller named it (a symlink inside the skill keeps its own name).
    lexical_base = base_abs if _is_within(candidate, base_abs) else base_real
    relative = Path(_below(candidate, lexical_base))
    if real == base_real:
        raise ScriptPermissionError(
            f"Script path {shown} is the skill directory itself: name a script file inside it"
        )
    if st is None:
        if os.path.lexists(real):  # there, but stat() fails: a permission problem
            raise ScriptPermissionError(
                f"Script {relative} cannot be inspected: fix the permissions of it and its "
                "directories"
            )
        raise ScriptNotFoundError(
            f"Script {relative} not found in {base_real}: check the name "
            "(paths are relative to the skill directory)"
        )
    if not stat.S_ISREG(st.st_mode):
        kind = "a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file"
        raise ScriptPermissionError(
            f"Script {relative} is {kind}: name a script file (e.g. scripts/run.py)"
        )
    check_mode(relative, st.st_mode)
    return ResolvedScript(relative, Path(real), Path(base_real), _identity(st))


def _identity(st: os.stat_result) -> tuple[int, ...]:
    # ctime too: mtime can be put back with os.utime after a same-size edit, ctime cannot
    # (the kernel sets it on every write, chmod and utime).
    return (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What "the same file, unchanged" means here: (dev, inode, mtime_ns, ctime_ns, size)."""
    return _identity(st)


def inside(real: str | os.PathLike[str], real_base: str | os.PathLike[str]) -> bool:
    """Is the resolved path ``real`` the skill directory ``real_base`` or below it?"""
    return _is_within(os.fspath(real), os.fspath(real_base))


def read_inside(
    relative: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str], limit: int
) -> bytes:
    """Read up to ``limit`` bytes of a file that must really be inside the skill.

    Raises PathSecurityError for a file outside the skill, OSError when it cannot be read
    (see :func:`open_inside`).
    """
    fd = open_inside(relative, skill_base_dir)
    try:
        return read_fd(fd, limit)
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> bytes:
    """Up to ``limit`` bytes from the open descriptor ``fd`` (1 MiB reads; never more)."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def open_inside(relative: str | os.PathLike[str], skill_base_dir: str | os.PathLike[str]) -> int:
    """A read-only descriptor of a regular file that must really be inside the skill.

    A link whose target stays inside the skill is followed (skills link their own files);
    symlinks are resolved first and the opened file is checked again through its descriptor
    (/proc/self/fd on Linux), so a link swapped in between cannot make us read outside. A
    FIFO or device never blocks the open and is refused. Raises PathSecurityError for a file
    outside the skill, OSError when it cannot be opened or is not a regular file.
    """
    shown = os.fspath(relative)
    if "\0" in shown:
        raise PathSecurityError(f"Path {shown!r} contains a NUL byte: name a file in the skill")
    base_real = os.path.realpath(skill_base_dir)
    candidate = os.path.join(os.path.abspath(skill_base_dir), shown)
    real = os.path.realpath(candidate)
    if not _is_within(real, base_real) or real == base_real:
        raise PathSecurityError(
            f"{shown} resolves to {real}, outside the skill directory {base_real}: "
            "copy the file into the skill instead of linking it"
        )
    # O_NONBLOCK: opening a FIFO planted in references/ must not hang (regular files ignore it).
    flags = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
    fd = os.open(real, flags | getattr(os, "O_NOFOLLOW", 0))
    try:
        if _FAST_REALPATH:
            opened = os.readlink(f"{_PROC_FD}{fd}")
            if not _is_within(opened, base_real):
                raise PathSecurityError(
                    f"{shown} changed to point outside the skill while it was read: remove the link"
                )
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def unchanged(script: ResolvedScript, candidate: str, base_mtime_ns: int | None) -> bool:
    """Does ``candidate`` still reach the very file ``script`` describes (same device, inode,
    mtime, ctime and size), a regular file without setuid/setgid bits, in a skill dir whose
    mtime is ``base_mtime_ns`` (None: whatever it is)? For caches: a False answer only means
    "check again from scratch".

    One stat, following links: where the path resolves is not tested here. It need not be,
    for a cached answer: every spawn is preceded by :func:`recheck` (realpath and stat, never
    skipped), which refuses a file now reached through a link or from outside the skill. The
    identity holds ctime, which every write, chmod, rename of the file and new hard link to it
    moves: the same identity is the same, unedited file."""
    try:
        st = os.stat(candidate)
    except (OSError, ValueError):
        return False
    # _identity(st), inline: this runs for every run.
    if (st.st_dev, st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size) != script.identity:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_mode & (stat.S_ISUID | stat.S_ISGID):
        return False
    if base_mtime_ns is None:
        return True
    try:
        return os.stat(script.real_base).st_mtime_ns == base_mtime_ns
    except OSError:
        return False


def check_mode(relative: Path | str, mode: int) -> None:
    """Refuse setuid/setgid files: a skill has no business asking for other privileges."""
    bits = [
        name for flag, name in ((stat.S_ISUID, "setuid"), (stat.S_ISGID, "setgid")) if mode & flag
    ]
    if bits:
        octal = oct(stat.S_IMODE(mode))[2:]
        raise ScriptPermissionError(
            f"Script {relative} has the {' and '.join(bits)} bit set (mode {octal}): "
            f"remove it with `chmod ug-s {relative}` before running it"
        )


def recheck(script: ResolvedScript) -> None:
    """Re-validate just before spawning (the file may have changed while approval waited).

    Never skipped, even microseconds after the checks (a batch item, a direct call): the
    checks' cache trusts it to catch a file now reached through a link. Four system calls
    (realpath_stat) and a few comparisons, 15-20 us; raises the same errors as resolve_script.
    """
    real, st = realpath_stat(str(script.real))
    if st is None:
        raise ScriptNotFoundError(
            f"Script {script.relative} was removed after it was checked: restore it or run "
            "another script"
        )
    if real != str(script.real) or not _is_within(real, str(script.real_base)):
        raise PathSecurityError(
            f"Script {script.relative} was replaced by a symlink to {real} after it was checked: "
            "remove the link and run it again"
        )
    if not stat.S_ISREG(st.st_mode):
        raise ScriptPermissionError(
            f"Script {script.relative} is no longer a regular file: restore it and run it again"
        )
    if st.st_mode & (stat.S_ISUID | stat.S_ISGID):  # first: the more specific error for u+s
        check_mode(script.relative, st.st_mode)
    if script.identity and _identity(st) != script.identity:
        # Replaced or edited since the check (e.g. while approval waited): what was checked
        # and approved is not what would run.
        raise PathSecurityError(
            f"Script {script.relative} was replaced or changed after it was checked: "
            "run it again so the current file is checked"
        )


# -- names that may never become paths ---------------------------------------------------------

MAX_COMPONENT_BYTES = 255  # NAME_MAX on Linux, macOS and Windows (in UTF-16 units there)


def folder_name_problem(name: str) -> str | None:
    """Why ``name`` could not be ONE folder name, or None when it could.

    A skill's name is never used to build a path (shipped copies, environments and temp
    folders are named by digests), but a name that is not one folder name is refused before
    anything runs, so no future path can be built from it. Anything else may run: a name
    that differs from its folder, capitals, spaces, non-ASCII letters.

    Example:
        >>> folder_name_problem("../../x/precious")
        "it holds '/'"
        >>> folder_name_problem("PDF Tools") is None
        True
    """
    if not name:
        return "it is empty"
    if name in (".", ".."):
        return f"it is {name!r}, which names a folder relative to another"
    for sep in ("/", "\\"):
        if sep in name:
            return f"it holds {sep!r}"
    for char in name:
        category = unicodedata.category(char)
        if category == "Cs":
            return "it holds bytes that are not valid text"
        if category in ("Cc", "Zl", "Zp"):
            return "it holds a control character or a line break"
    if len(name.encode("utf-8")) > MAX_COMPONENT_BYTES:
        return f"it is longer than {MAX_COMPONENT_BYTES} bytes"
    return None


_GOOD_NAMES: set[str] = set()  # names that passed: the check is a pure function of the text


def check_skill_name(name: str, folder: str | None = None, *, folder_of: str = "") -> None:
    """Raise SkillNameError (one line naming the fix) unless ``name`` is one folder name.
    ``folder`` (or the last part of the path ``folder_of``): the skill's folder, suggested
    as the name in the error."""
    if name in _GOOD_NAMES:  # every run checks its skill's name: decide each name once
        return
    # An MCP server's skill is LABEL/NAME (core/mcp/runs.py): two folder names, each checked;
    # the finder never resolves such a name to a skills folder's skill.
    parts = name.split("/") if isinstance(name, str) and name.count("/") == 1 else [name]
    why = next((w for w in map(folder_name_problem, parts) if w is not None), None)
    if why is None:
        if type(name) is str and len(_GOOD_NAMES) < 4096:
            _GOOD_NAMES.add(name)
        return
    if folder is None and folder_of:
        folder = os.path.basename(folder_of)
    example = folder if folder and folder_name_problem(folder) is None else "my-skill"
    raise SkillNameError(
        f"Skill name {name!r} cannot be used: {why}, and a skill's name must work as one "
        f"folder name; nothing of it runs until 'name:' in its SKILL.md is one, e.g. "
        f"name: {example}"
    )


__all__ = [
    "MAX_COMPONENT_BYTES",
    "folder_name_problem",
    "check_skill_name",
    "ResolvedScript",
    "resolve_script",
    "recheck",
    "check_mode",
    "real_base_dir",
    "realpath_stat",
    "unchanged",
    "identity",
    "inside",
    "read_inside",
]
