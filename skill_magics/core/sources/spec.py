"""What a source string names: a git repository, a .skill/.zip archive, or a folder.

Accepted, and nothing else (``ext::``, ``git://``, ``http://`` and options are refused):

- ``https://host/owner/repo[.git]``, ``ssh://[user@]host/path``, ``user@host:path`` (scp-like)
- ``file:///path/to/repo``, or the path of a local repository (its committed files)
- a browser URL of GitHub or GitLab with the ref and folder in it:
  ``https://github.com/anthropics/skills/tree/main/skills/pdf``
- the path of a ``.skill`` or ``.zip`` file
- the path of a folder (its files as they are on disk)

The subfolder to look in comes from ``subfolder=`` (``--path``) or a browser URL; the ref
(branch, tag or commit) from ``ref=`` (``--ref``) or a browser URL.

Example:
    >>> parse_source("https://github.com/openai/skills", ref="main")
    SourceSpec(kind='git', location='https://github.com/openai/skills', ref='main', subfolder='')
"""

from __future__ import annotations

import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base.errors import SourceError
from skill_magics.core.sources.names import path_problem
from skill_magics.core.base.visible import visible

GIT = "git"
ARCHIVE = "archive"
FOLDER = "folder"
WELL_KNOWN = "well-known"  # an index at https://HOST/.well-known/agent-skills/index.json
ARCHIVE_SUFFIXES = (".skill", ".zip")

_SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9.-]+):(?P<path>[^/\\].*)$")
_SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)(?P<sep>://|::)")
_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")
_BROWSE = re.compile(
    r"^https://(?P<host>github\.com|gitlab\.com)/(?P<repo>[^/]+/[^/]+?)(?:\.git)?"
    r"(?:/-)?/(?P<kind>tree|blob)/(?P<ref>[^/]+)(?:/(?P<path>.*))?$"
)


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source. ``location``: the URL, or an absolute path for local sources."""

    kind: str  # GIT, ARCHIVE or FOLDER
    location: str
    ref: str | None = None
    subfolder: str = ""

    @property
    def scheme(self) -> str:
        """The git transport: https, ssh or file."""
        if self.kind != GIT:
            return ""
        if self.location.startswith("https://"):
            return "https"
        if self.location.startswith("file://") or self.location.startswith("/"):
            return "file"
        return "ssh"

    @property
    def default_name(self) -> str:
        """The folder name when the source itself is one skill: the repository's, the
        archive's (without its suffix), or the folder's (validated before use)."""
        base = self.location.rstrip("/").replace(":", "/").rsplit("/", 1)[-1]
        if self.subfolder:
            base = self.subfolder.rsplit("/", 1)[-1]
        elif self.kind == GIT and base.endswith(".git"):
            base = base[:-4]
        elif self.kind == ARCHIVE:
            base = os.path.splitext(base)[0]
        return base

    def __str__(self) -> str:
        text = self.location + (f"@{self.ref}" if self.ref else "")
        return visible(text + (f" ({self.subfolder})" if self.subfolder else ""))


def parse_source(
    source: str | os.PathLike[str], *, ref: str | None = None, subfolder: str | None = None
) -> SourceSpec:
    """The SourceSpec of ``source``; SourceError (one line, naming the fix) when it is none."""
    text = _source_text(source)
    sub = check_subfolder(subfolder or "")
    ref = check_ref(ref) if ref else None
    browse = _BROWSE.match(text)
    if browse is not None:
        path = (browse.group("path") or "").strip("/")
        if browse.group("kind") == "blob":  # a link to SKILL.md: its folder
            path = path.rsplit("/", 1)[0] if "/" in path else ""
        location = f"https://{browse.group('host')}/{browse.group('repo')}"
        return SourceSpec(
            GIT, location, ref or check_ref(browse.group("ref")), sub or check_subfolder(path)
        )
    scheme = _SCHEME.match(text)
    index = well_known_index(text) if scheme is not None else None
    if index is not None:
        if ref:
            raise SourceError("A well-known index has no refs: leave out ref (--ref)")
        return SourceSpec(WELL_KNOWN, index, None, sub)
    if scheme is not None:
        _check_url(text, scheme.group("scheme").lower(), scheme.group("sep"))
        return SourceSpec(GIT, text.rstrip("/"), ref, sub)
    scp = _SCP.match(text)
    if scp is not None and not os.path.exists(text):
        if re.search(r"\s", text):
            raise SourceError(f"The URL {text!r} holds whitespace")
        return SourceSpec(GIT, text, ref, sub)
    return _local(Path(text).expanduser(), ref, sub)


_NOT_WELL_KNOWN = frozenset({"github.com", "gitlab.com", "huggingface.co"})
_WELL_KNOWN_DIRS = ("/.well-known/agent-skills", "/.well-known/skills")


def well_known_index(text: str) -> str | None:
    """The index URL when ``text`` names a site's well-known skills index: ``https://HOST``
    (``/.well-known/agent-skills/index.json`` is added) or a URL into ``/.well-known/
    agent-skills/`` (or the older ``/.well-known/skills/``). ``http://`` only for this machine
    (loopback): the digests are checked either way, but who is asked must see the real site.
    None: not such a URL (a git URL, say)."""
    from urllib.parse import urlsplit

    try:
        url = urlsplit(text)
        host = (url.hostname or "").lower()
        url.port  # noqa: B018 - raises ValueError on a bad port
    except ValueError:
        return None
    if url.scheme.lower() not in ("https", "http") or not host or host in _NOT_WELL_KNOWN:
        return None
    path = url.path
    marker = next((m for m in _WELL_KNOWN_DIRS if m in path + "/"), None)
    if path not in ("", "/") and marker is None:
        return None
    if url.scheme.lower() == "http" and not is_loopback(host):
        raise SourceError(
            f"The source {visible(text)!r} uses plain http: use https:// (http only reaches a "
            "server on this machine)"
        )
    if re.search(r"\s", text) or url.query or url.fragment or url.username:
        raise SourceError(f"The URL {visible(text)!r} holds whitespace, a query or a user name")
    base = f"{url.scheme.lower()}://{url.netloc}"
    if marker is None:
        return f"{base}{_WELL_KNOWN_DIRS[0]}/index.json"
    head = path[: path.index(marker) + len(marker)]
    return f"{base}{head}/index.json"


def is_loopback(host: str) -> bool:
    """Is ``host`` this machine (``localhost`` or a loopback address)?"""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _source_text(source: str | os.PathLike[str]) -> str:
    """``source`` stripped, or SourceError when it is empty, holds control characters or
    starts with a dash (an option to git)."""
    text = os.fspath(source)
    if not isinstance(text, str) or not text.strip():
        raise SourceError("No source given: pass a git URL, a .skill/.zip file or a folder")
    text = text.strip()
    if visible(text) != text:
        raise SourceError(f"The source {visible(text)!r} holds control or bidi characters")
    if text.startswith("-"):
        raise SourceError(f"The source {text!r} starts with a dash: give a URL or a path")
    return text


def _check_url(text: str, name: str, sep: str) -> None:
    """A URL's transport must be encrypted or local (https, ssh, file:// absolute)."""
    if sep == "::" or name not in ("https", "ssh", "file"):
        hint = " (plain http and git:// are not encrypted)" if name in ("http", "git") else ""
        raise SourceError(
            f"The source {text!r} uses the {name!r} transport{hint}: use https://, ssh://, "
            "file:// or a local path"
        )
    if name == "file":
        local = Path(text[len("file://") :])
        if not local.is_absolute():
            raise SourceError(f"{text!r}: a file:// URL needs an absolute path (file:///...)")
    if re.search(r"\s", text):
        raise SourceError(f"The URL {text!r} holds whitespace")


def _local(path: Path, ref: str | None, sub: str) -> SourceSpec:
    absolute = Path(os.path.abspath(path))
    if not absolute.exists():
        raise SourceError(
            f"{visible(str(path))} does not exist: give a git URL (https://, ssh://, file://), "
            "a .skill/.zip file or a folder"
        )
    if absolute.is_file():
        if absolute.suffix.lower() not in ARCHIVE_SUFFIXES or not zipfile.is_zipfile(absolute):
            raise SourceError(
                f"{visible(str(path))} is not a .skill or .zip archive: give one, a git URL or "
                "a folder"
            )
        if ref:
            raise SourceError("An archive has no refs: leave out ref (--ref)")
        return SourceSpec(ARCHIVE, str(absolute), None, sub)
    if is_repository(absolute):
        return SourceSpec(GIT, str(absolute), ref, sub)
    if ref:
        raise SourceError(
            f"{visible(str(path))} is a folder, not a git repository's top folder: a ref "
            "(--ref) needs a repository (give its top folder and --path SUBFOLDER)"
        )
    return SourceSpec(FOLDER, str(absolute), None, sub)


def is_repository(path: Path) -> bool:
    """Is ``path`` the top folder of a git repository (a work tree's or a bare one)?"""
    if (path / ".git").exists():
        return True
    return (path / "HEAD").is_file() and (path / "objects").is_dir() and (path / "refs").is_dir()


def check_ref(ref: str) -> str:
    """``ref`` when it can be a branch, tag or commit name (never an option), else
    SourceError. A subset of git's own rules (``git check-ref-format``)."""
    ref = ref.strip()
    bad = (
        not ref
        or ref.startswith(("-", "/", "."))
        or ref.endswith(("/", ".", ".lock"))
        or ".." in ref
        or "@{" in ref
        or "//" in ref
        or "/." in ref
        or re.search(r"[\x00-\x20\x7f~^:?*\[\\]", ref) is not None
        or visible(ref) != ref
    )
    if bad:
        raise SourceError(
            f"The ref {visible(ref)!r} is not a branch, tag or commit name: give e.g. main, "
            "v1.2 or a commit hash"
        )
    return ref


def is_commit(ref: str | None) -> bool:
    """Does ``ref`` look like a (possibly abbreviated) commit hash?"""
    return bool(ref) and _HEX.match(ref or "") is not None


def check_subfolder(subfolder: str) -> str:
    """The subfolder normalised (``/``-separated, no leading ``./`` or trailing ``/``), or
    SourceError when it is absolute or climbs out with ``..``."""
    sub = subfolder.strip().replace(os.sep, "/") if os.sep != "/" else subfolder.strip()
    while sub.startswith("./"):
        sub = sub[2:]
    sub = sub.strip("/") if not sub.startswith("/") else sub
    if not sub or sub == ".":
        return ""
    problem = path_problem(sub)
    if problem is not None:
        raise SourceError(
            f"The subfolder {visible(subfolder)!r} is refused: {problem}; give a folder "
            "inside the source, e.g. skills/pdf"
        )
    return sub


__all__ = [
    "GIT",
    "ARCHIVE",
    "FOLDER",
    "WELL_KNOWN",
    "SourceSpec",
    "well_known_index",
    "is_loopback",
    "parse_source",
    "check_ref",
    "check_subfolder",
    "is_commit",
    "is_repository",
]
