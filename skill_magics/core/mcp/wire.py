"""SEP-2640 entries as values, checked: a server's JSON in, a :class:`SkillEntry` or a one-line
:class:`McpSkillMismatchError` out (the package docstring has the wire format and its sources).

Everything a hostile server could lie about in a listing is refused here, before any file is
read: URIs outside the skill or path-like, duplicate files, a missing SKILL.md, a name that
differs from the URI, digests not ``sha256:<hex>``, sizes that are not byte counts, more than
:data:`MAX_FILES` files or :data:`MAX_BYTES` bytes.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import yaml

from skill_magics.core.base.errors import McpError, McpSkillMismatchError, SkillParseError
from skill_magics.core.base.visible import visible
from skill_magics.core.catalog.frontmatter import name_problems, split_frontmatter
from skill_magics.core.installed.names import path_problem

EXTENSION_ID = "io.modelcontextprotocol/skills"
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
# A listing walk stops here: a server that pages forever or lists a million skills is refused.
MAX_PAGES = 100
MAX_ENTRIES = 5000
DYNAMIC = "dynamic"
SKILL_MD = "SKILL.md"

_DIGEST_RE = re.compile(r"^sha256:[0-9a-f]{64}$")
_SCHEME_RE = re.compile(r"^[a-z][a-z0-9+.-]*$")
_MAX_URI = 2048
_MAX_FRONTMATTER_JSON = 256 * 1024


def check_label(label: object) -> str:
    """The host's label for a server, checked like a skill name (lowercase letters, digits,
    single hyphens, 1-64): it prefixes every skill name from that server."""
    if not isinstance(label, str):
        raise McpError(f"MCP server label must be text, not {type(label).__name__}")
    problems = name_problems(label)
    if problems:
        raise McpError(
            f"MCP server label {label!r} cannot be used: {problems[0].removeprefix('name ')}; "
            "choose a label like 'docs' or 'team-tools'"
        )
    return label


@dataclass(frozen=True)
class SkillFile:
    """One listed file: its URI, its path within the skill, digest and size."""

    uri: str
    path: str
    digest: str
    size: int


@dataclass(frozen=True)
class SkillEntry:
    """One skill a server listed, checked. ``files`` is None for a ``"dynamic"`` skill."""

    label: str
    uri: str
    name: str
    frontmatter: dict[str, Any]
    files: tuple[SkillFile, ...] | None
    prefix: str  # every file URI of the skill starts with it ("skill://name/")

    @property
    def qualified_name(self) -> str:
        """The name the host shows: ``label/name`` (the label namespaces the server)."""
        return f"{self.label}/{self.name}"

    @property
    def dynamic(self) -> bool:
        return self.files is None

    @property
    def total_size(self) -> int:
        return sum(f.size for f in self.files or ())

    def file(self, path: str) -> SkillFile | None:
        for f in self.files or ():
            if f.path == path:
                return f
        return None


def _mismatch(label: str, what: str, why: str) -> McpSkillMismatchError:
    return McpSkillMismatchError(f"MCP server '{label}': {what}: {why}; nothing of it is used")


def split_uri(label: str, uri: object, what: str) -> tuple[str, str, tuple[str, ...]]:
    """(scheme, authority, decoded path segments) of a URI, refusing path-like ones."""
    if not isinstance(uri, str) or not uri:
        raise _mismatch(label, what, f"URI {uri!r} is not a non-empty string")
    if len(uri) > _MAX_URI:
        raise _mismatch(label, what, f"URI is longer than {_MAX_URI} characters")
    if any(ord(c) < 0x21 or c in "\\\x7f" for c in uri):
        raise _mismatch(label, what, f"URI {uri!r} holds a space, control character or '\\'")
    parts = urlsplit(uri)
    if (
        not parts.scheme
        or not _SCHEME_RE.match(parts.scheme)
        or not uri.startswith(parts.scheme + "://")
    ):
        raise _mismatch(label, what, f"URI {uri!r} is path-like (no 'scheme://')")
    if parts.scheme == "file":
        raise _mismatch(label, what, f"URI {uri!r} names a local file, not a server resource")
    if parts.query or parts.fragment or "?" in uri or "#" in uri:
        raise _mismatch(label, what, f"URI {uri!r} has a query or fragment")
    segments = []
    for raw in parts.path.split("/")[1:]:
        try:
            seg = unquote(raw, errors="strict")
        except UnicodeDecodeError:
            raise _mismatch(
                label, what, f"URI {_shown(uri)!r} percent-encodes bytes that are not UTF-8"
            ) from None
        if seg in ("", ".", "..") or "/" in seg or "\\" in seg or "\x00" in seg:
            raise _mismatch(label, what, f"URI {uri!r} has a path segment {seg!r}")
        segments.append(seg)
    if parts.path and not parts.path.startswith("/"):
        raise _mismatch(label, what, f"URI {uri!r} is path-like")
    if not parts.netloc or unquote(parts.netloc) in (".", ".."):
        raise _mismatch(label, what, f"URI {uri!r} has no authority")
    return parts.scheme, parts.netloc, tuple(segments)


def skill_path_segments(label: str, uri: object) -> tuple[str, str, tuple[str, ...]]:
    """(scheme, authority, skill-path segments) of a skill's SKILL.md URI. The authority is
    the first skill-path segment of ``skill://``, so the skill path is authority + path."""
    scheme, authority, segments = split_uri(label, uri, "skill")
    if not segments or segments[-1] != SKILL_MD:
        raise _mismatch(label, f"skill {uri!r}", "its URI does not name a SKILL.md")
    return scheme, authority, segments[:-1]


def parse_entry(label: str, raw: object) -> SkillEntry:
    """Check one ``Skill`` object from ``skills/list`` or ``skills/get``."""
    if not isinstance(raw, dict):
        raise _mismatch(label, "skills/list", f"an entry is a {type(raw).__name__}, not an object")
    uri = raw.get("uri")
    scheme, authority, skill_path = skill_path_segments(label, uri)
    assert isinstance(uri, str)
    expected = skill_path[-1] if skill_path else unquote(authority)
    fm, name = _frontmatter(label, uri, raw.get("frontmatter"), expected)
    prefix = uri[: -len(SKILL_MD)]
    resources = raw.get("resources")
    if resources == DYNAMIC:
        return SkillEntry(label, uri, name, fm, None, prefix)
    if not isinstance(resources, list):
        raise _mismatch(label, f"skill {uri!r}", "resources is neither a list nor 'dynamic'")
    if len(resources) > MAX_FILES:
        raise _mismatch(
            label, f"skill {name!r}", f"it lists {len(resources)} files, over the {MAX_FILES} limit"
        )
    files: list[SkillFile] = []
    seen: set[str] = set()
    total = 0
    for res in resources:
        files.append(_parse_file(label, name, (scheme, authority, skill_path), prefix, res))
        if files[-1].path in seen:
            raise _mismatch(label, f"skill {name!r}", f"file {files[-1].path!r} listed twice")
        seen.add(files[-1].path)
        total += files[-1].size
    if total > MAX_BYTES:
        raise _mismatch(
            label, f"skill {name!r}", f"its files add up to {total} bytes, over the 16 MiB limit"
        )
    if SKILL_MD not in seen:
        raise _mismatch(label, f"skill {name!r}", "its resources do not list its SKILL.md")
    _check_tree(label, name, files, seen)
    return SkillEntry(label, uri, name, fm, tuple(files), prefix)


def _frontmatter(label: str, uri: str, fm: object, expected: str) -> tuple[dict[str, Any], str]:
    """A listed skill's frontmatter, checked (an object of JSON values, named as its URI
    says, with a description), and its name."""
    if not isinstance(fm, dict):
        raise _mismatch(label, f"skill {uri!r}", "its frontmatter is not an object")
    _check_json(label, uri, fm)
    name = fm.get("name")
    if not isinstance(name, str) or name != expected:
        raise _mismatch(
            label,
            f"skill {uri!r}",
            f"frontmatter name {name!r} differs from its URI's {expected!r}",
        )
    problems = name_problems(name)
    if problems:
        raise _mismatch(label, f"skill {uri!r}", problems[0])
    if not isinstance(fm.get("description"), str) or not fm["description"].strip():
        raise _mismatch(label, f"skill {uri!r}", "its frontmatter has no description")
    return fm, name


def _check_tree(label: str, name: str, files: list[SkillFile], seen: set[str]) -> None:
    """No listed file is also a folder of another: the files make a tree."""
    for f in files:
        parent = f.path.rsplit("/", 1)[0] if "/" in f.path else None
        while parent:
            if parent in seen:
                raise _mismatch(label, f"skill {name!r}", f"{parent!r} is a file and a folder")
            parent = parent.rsplit("/", 1)[0] if "/" in parent else None


def _parse_file(
    label: str, name: str, skill: tuple[str, str, tuple[str, ...]], prefix: str, res: object
) -> SkillFile:
    what = f"skill {name!r}"
    if not isinstance(res, dict):
        raise _mismatch(label, what, "a resource entry is not an object")
    uri = res.get("uri")
    scheme, authority, segments = split_uri(label, uri, what)
    assert isinstance(uri, str)
    base = skill[2]
    if (
        (scheme, authority) != skill[:2]
        or len(segments) <= len(base)
        or segments[: len(base)] != base
        or not uri.startswith(prefix)
    ):
        raise _mismatch(label, what, f"resource {uri!r} lies outside the skill ({prefix})")
    digest, size = res.get("digest"), res.get("size")
    if not isinstance(digest, str) or not _DIGEST_RE.match(digest):
        raise _mismatch(label, what, f"resource {uri!r} has digest {digest!r}, not sha256:<hex>")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        if not (
            isinstance(size, float) and math.isfinite(size) and size.is_integer() and size >= 0
        ):
            raise _mismatch(label, what, f"resource {uri!r} has size {size!r}, not a byte count")
        size = int(size)
    path = "/".join(segments[len(base) :])
    # The installer's rule for a skill's file names (one rule for every source): no control,
    # bidi or look-alike separator, encoded or not; parts a file system takes; a depth limit.
    # Checked here, on the listing, before anything is read or written.
    problem = path_problem(path)
    if problem is not None:
        raise _mismatch(label, what, f"file {_shown(path)!r}: {problem}")
    return SkillFile(uri, path, digest, size)


def _shown(text: str) -> str:
    """Untrusted text as one short printable line (controls and bidi made visible)."""
    text = visible(text)
    return text if len(text) <= 120 else text[:117] + "..."


def _check_json(label: str, uri: str, fm: dict[str, Any]) -> None:
    try:
        text = json.dumps(fm, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise _mismatch(label, f"skill {uri!r}", f"frontmatter is not JSON ({exc})") from None
    if len(text) > _MAX_FRONTMATTER_JSON:
        raise _mismatch(label, f"skill {uri!r}", "frontmatter is larger than 256 KiB")


def sha256_digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def binding(entry: SkillEntry) -> str | None:
    """The value an approval of this skill binds to: a digest of the full set of
    ``{uri, digest}`` (any file added, removed or changed changes it). None for a dynamic
    skill, which is never content-bound: each run must be asked again."""
    if entry.files is None:
        return None
    return binding_of((f.uri, f.digest) for f in entry.files)


def binding_of(pairs: Iterable[tuple[str, str]]) -> str:
    """:func:`binding` of (uri, digest) pairs (a cache record is checked with it)."""
    ordered = sorted(pairs)
    text = json.dumps([{"uri": u, "digest": d} for u, d in ordered], separators=(",", ":"))
    return "mcp-sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def frontmatter_of(text: str) -> dict[str, Any]:
    """A SKILL.md's frontmatter as JSON values, the way a server puts it in an entry (YAML
    1.1 safe types; a date becomes its ISO text). Raises SkillParseError."""
    yaml_text, _body = split_frontmatter(text)
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load(yaml_text, Loader=loader)  # noqa: S506 - a safe loader
    except (yaml.YAMLError, RecursionError, ValueError) as exc:
        raise SkillParseError(f"frontmatter is not valid YAML ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise SkillParseError("frontmatter is not a mapping")
    return _jsonish(data, 0)


def _jsonish(value: Any, depth: int) -> Any:
    if depth > 64:
        raise SkillParseError("frontmatter is nested more than 64 levels")
    if isinstance(value, dict):
        return {str(k): _jsonish(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonish(v, depth + 1) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value


def frontmatter_difference(listed: dict[str, Any], fetched: dict[str, Any]) -> str | None:
    """The first field where two frontmatters differ, said in a few words (None: equal).

    Equal means equal as JSON, up to what YAML parsers legitimately disagree on: ``1.0`` and
    ``1`` (a JavaScript server's JSON has no integral floats), ``yes``/``on`` and ``true``
    (YAML 1.1 against 1.2), a date and its ISO text (with or without a midnight time)."""
    for key in sorted(set(listed) | set(fetched)):
        if key not in fetched:
            return f"field {key!r} is in the entry but not in SKILL.md"
        if key not in listed:
            return f"field {key!r} is in SKILL.md but not in the entry"
        a, b = listed[key], fetched[key]
        if not _same(a, b):
            return f"field {key!r} is {_short(a)} in the entry, {_short(b)} in SKILL.md"
    return None


_YAML11_BOOLS = {
    **dict.fromkeys(("y", "yes", "on", "true"), True),
    **dict.fromkeys(("n", "no", "off", "false"), False),
}
_MIDNIGHT = ("T00:00:00", "T00:00:00Z", "T00:00:00.000Z", "T00:00:00+00:00")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return _same_bool(a, b)
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, str) and isinstance(b, str):
        return _same_text(a, b)
    return type(a) is type(b) and a == b


def _same_bool(a: Any, b: Any) -> bool:
    """One of them a bool: the other the same bool, or a YAML 1.1 word for it."""
    if isinstance(a, bool) and isinstance(b, bool):
        return a == b
    word, flag = (b, a) if isinstance(a, bool) else (a, b)
    return isinstance(word, str) and _YAML11_BOOLS.get(word.lower()) is flag


def _same_text(a: str, b: str) -> bool:
    """The same text, or a date and that date's midnight."""
    if a == b:
        return True
    short, long = sorted((a, b), key=len)
    return len(short) == 10 and long[10:] in _MIDNIGHT and long.startswith(short)


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."
