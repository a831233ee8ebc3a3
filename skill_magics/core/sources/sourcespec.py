"""A parsed source (:class:`SourceSpec`) and the checks every source kind's parser shares
(refs, subfolders, URLs, well-known index addresses). Which kinds there are and how a source
string is read: core/sources/kinds/ (``SOURCE_KINDS``) and ``spec.parse_source``."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.names import path_problem

GIT = "git"
ARCHIVE = "archive"
FOLDER = "folder"
WELL_KNOWN = "well-known"  # an index at https://HOST/.well-known/agent-skills/index.json
ARCHIVE_SUFFIXES = (".skill", ".zip")

SCP = re.compile(r"^(?P<user>[A-Za-z0-9._-]+@)?(?P<host>[A-Za-z0-9.-]+):(?P<path>[^/\\].*)$")
SCHEME = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)(?P<sep>://|::)")
_HEX = re.compile(r"^[0-9a-fA-F]{7,64}$")
BROWSE = re.compile(
    r"^https://(?P<host>github\.com|gitlab\.com)/(?P<repo>[^/]+/[^/]+?)(?:\.git)?"
    r"(?:/-)?/(?P<kind>tree|blob)/(?P<ref>[^/]+)(?:/(?P<path>.*))?$"
)


@dataclass(frozen=True)
class SourceSpec:
    """A parsed source. ``location``: the URL, or an absolute path for local sources."""

    kind: str  # a registered source kind's name (GIT, ARCHIVE, FOLDER, WELL_KNOWN, ...)
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


def source_text(source: str | os.PathLike[str]) -> str:
    """``source`` stripped, or SourceError when it is empty, holds control characters or
    starts with a dash (an option to git)."""
    text = os.fspath(source)
    if not isinstance(text, str) or not text.strip():
        raise SourceError("No source given: pass a git URL, a .skill/.zip file or a folder")
    text = text.strip()
    if visible(text) != text:
        raise SourceError(
            f"The source {visible(text)!r} holds control, bidi or invisible characters"
        )
    if text.startswith("-"):
        raise SourceError(f"The source {text!r} starts with a dash: give a URL or a path")
    return text


def check_url(text: str, name: str, sep: str) -> None:
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
    "ARCHIVE_SUFFIXES",
    "BROWSE",
    "SCHEME",
    "SCP",
    "SourceSpec",
    "check_url",
    "source_text",
    "well_known_index",
    "is_loopback",
    "check_ref",
    "check_subfolder",
    "is_commit",
    "is_repository",
]
