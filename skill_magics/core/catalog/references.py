"""Which scripts a skill's instructions name: only referenced scripts may run
(docs/architecture.md, *The prompt envelope*).

Reads SKILL.md's body and the markdown files it links to (one level, inside the skill) and
finds script references in the forms real skills use:

- commands: ``python scripts/x.py --flag``, ``python3``, ``bash``/``sh``, ``node``,
  ``uv run [python] scripts/x.py``, ``ruby``, ``perl``, ``npx tsx``, ``./scripts/x.sh``
- inline code and plain prose paths: ``scripts/x.py``
- markdown links ``[run](scripts/x.py)`` and reference links ``[x]: scripts/x.py``
- ``{baseDir}/scripts/x.py``, ``${SKILL_BASE_DIR}/...``, ``$SKILL_DIR/...``,
  ``<path-to-skill>/scripts/x.py`` (a placeholder naming the skill), and an absolute path
  through a folder named like the skill's (``/mnt/skills/user/<skill>/resources/x.sh``, where
  another agent installs it) when the file is in this skill
- module runs: ``python -m scripts.x`` names ``scripts/x.py`` (or ``scripts/x/__main__.py``)
  when the skill has it, or when its top folder (``scripts/``) is the skill's; ``python -m
  pytest`` names nothing of the skill
- a command without the extension, ``python scripts/check_fields file.pdf``, names
  ``scripts/check_fields.py`` when only that exists (``.sh`` for bash/sh, ``.js`` for node)

Strong references (a command argument or link with a directory part, a ``{baseDir}`` path, a
``scripts/...`` path) are kept even when the file is missing or escapes the skill: they become
error entries that never run. Weak ones (a bare ``lint.sh`` or ``src/app.py`` mentioned in
prose) count only when the file exists, so ordinary prose does not produce noise.

Not references: paths inside a URL (``https://host/view?file=scripts/x.sh``) and longer names
that merely start like a script (``scripts/x.sh.orig``, ``x.py.j2``, ``scripts/x.sh-legacy``;
a command that runs one, ``bash scripts/x.sh.orig``, names that missing file, never x.sh).
Markdown files SKILL.md links to are returned too (:func:`linked_markdown`): the prompt
context lists them as reference files.

Flags written after a script in SKILL.md are never executed: callers pass ``argv`` explicitly.

Which scripts are *offered* (catalog/kinds.py) reads every markdown file of the skill
(:func:`scan_markdown`: SKILL.md, ``forms.md``, ``references/*.md``, linked or not);
``%skill_context`` runs the ones SKILL.md and the files it links name (:func:`scan_skill`).

Example:
    >>> [r.path for r in referenced_scripts(manager.get_skill("csv-profiler"))]
    ['scripts/profile.py']
"""

from __future__ import annotations

import os
import posixpath
import re
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote

from skill_magics.core.base.deprecation import deprecation_message
from skill_magics.core.base.errors import (
    PathSecurityError,
    ScriptNotFoundError,
    ScriptPermissionError,
)
from skill_magics.core.base.interpreters import EXTENSIONS
from skill_magics.core.base.paths import resolve_script

SCRIPT_EXTENSIONS = tuple(sorted(ext.lstrip(".") for ext in EXTENSIONS))
_EXT = "|".join(SCRIPT_EXTENSIONS)
_PATH_CHARS = r"[\w.\-/]"
# A base-dir variable, or a placeholder for the skill's folder (openai/skills writes
# ``python "<path-to-skill>/scripts/x.py"``, anthropics/skills ``<skill-creator-path>/...``).
_BASE_PREFIX = (
    r"(?:\{baseDir\}/|\$\{?(?:SKILL_BASE_DIR|SKILL_DIR|CLAUDE_SKILL_DIR|baseDir)\}?/"
    r"|<[\w\-]*skill[\w\-]*>/)"
)
_LEAD = r"(?<![\w/.\-{}$~])"
# What may follow a path: not a further path character, nor ".word"/"-word" (a longer name
# that merely starts like a script: ``x.sh.orig``, ``x.py.j2``, ``x.sh-legacy``). A lone
# "." or "-" (a sentence's full stop) still ends the path.
_TRAIL = r"(?![\w/]|[.\-]\w)"
_HOME = r"(?:~[\w.\-]*/)?"  # "~/x" and "~user/x": reported as outside, "~" included

# A path with a script extension, optionally behind a base-dir variable.
_PATH_RE = re.compile(
    rf"{_LEAD}(?P<base>{_BASE_PREFIX})?"
    rf"(?P<path>{_HOME}(?:\./)?(?:{_PATH_CHARS}*/)?[\w\-][\w.\-]*\.(?:{_EXT})){_TRAIL}"
)
# A URL token: paths in its path, query or fragment name web resources, not skill files.
_URL_RE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://\S+")
_BARE_NAME_RE = re.compile(rf"^[\w\-][\w.\-]*\.(?:{_EXT})$")
# ``python [-u ...] ARG``; ARG may lack an extension (``bash scripts/run``).
# The separators are spaces or tabs, never a newline: in a "```bash" fence the language tag is
# not a command whose argument is the next line's first word.
_COMMAND_RE = re.compile(
    r"(?:^|(?<=[\s`;&|(\"']))"
    r"(?P<cmd>python3?(?:\.\d+)?|bash|sh|zsh|node|ruby|perl|tsx|npx[ \t]+tsx|"
    r"uv[ \t]+run(?:[ \t]+--\S+)*(?:[ \t]+python3?)?|deno[ \t]+run)"
    r"(?P<flags>(?:[ \t]+-[\w\-]+)*)[ \t]+[\"']?"
    rf"(?P<arg>(?:{_BASE_PREFIX})?[^\s`'\";&|()<>]+)",
    re.MULTILINE,
)
# ``python -m scripts.run_eval``, ``python3.11 -u -m pkg.tool``, ``uv run python -m x``
MODULE_RUN_RE = re.compile(
    r"(?:^|(?<=[\s`;&|(\"']))(?:uv[ \t]+run[ \t]+)?python3?(?:\.\d+)?(?:[ \t]+-[A-Za-z]+)*"
    r"[ \t]+-m[ \t]+(?P<module>[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)",
    re.MULTILINE,
)
# The extension a command's interpreter implies, for ``python scripts/x`` written without it.
_IMPLIED_EXT = {"python": ".py", "bash": ".sh", "sh": ".sh", "zsh": ".sh", "node": ".js"}
# ``./scripts/x`` run directly.
_DIRECT_RE = re.compile(r"(?:^|(?<=[\s`;&|(]))(?P<arg>\./[\w.\-/]+)", re.MULTILINE)
_LINK_RE = re.compile(
    r"\[[^\]\n]*\]\(\s*(?:<(?P<angle>[^>\n]+)>|(?P<plain>[^)\s]+))(?:\s+\"[^\"\n]*\")?\s*\)"
)
_REF_LINK_RE = re.compile(r"^\s{0,3}\[[^\]\n]+\]:\s*<?(?P<target>[^\s>]+)>?", re.MULTILINE)
_SCHEME_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")
# A markdown file named in prose ("read FORMS.md and follow its instructions", Anthropic's
# pdf skill): a reference like a link. Only names of files that exist in the skill count.
PROSE_MD_RE = re.compile(r"(?<![\w/.\-\[(<])(?P<name>[\w\-]+(?:/[\w\-]+)*\.(?:md|markdown))\b")
_STOP_FLAGS = {"-m", "-c", "-e", "--version", "-V", "--help", "-h"}


class _SkillLike(Protocol):
    @property
    def base_dir(self) -> Path: ...

    @property
    def content(self) -> str: ...


@dataclass(frozen=True)
class ScriptReference:
    """One script named by the instructions, in the order it was first seen."""

    raw: str  # the text as written, e.g. "{baseDir}/scripts/x.py"
    path: str  # normalised posix path relative to the skill, e.g. "scripts/x.py"
    exists: bool  # a regular file inside the skill
    inside: bool  # resolves (symlinks too) inside the skill directory
    error: str | None  # why it cannot run; None when it may
    source: str = "SKILL.md"  # markdown file (relative) that names it
    line: int = 0  # 1-based line in ``source``
    module: str = ""  # the dotted name when written as ``python -m module``
    as_command: bool = False  # a command runs it (not a mention or a link)

    @property
    def ok(self) -> bool:
        return self.error is None

    @property
    def command(self) -> bool:
        """Deprecated: the old name of ``as_command`` (``command`` is an argv elsewhere)."""
        message = deprecation_message("ScriptReference.command", "ScriptReference.as_command")
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.as_command


@dataclass
class _Candidate:
    pos: int
    raw: str
    path: str  # relative to the directory the reference is resolved against
    strong: bool
    relative_to_file: bool = False  # links resolve against the linking file's directory
    as_command: bool = False  # ``python x``, ``./x``, ``python -m x``
    module: str = ""
    implied_ext: str = ""  # tried when the path as written is not a file


def referenced_scripts(skill: _SkillLike) -> list[ScriptReference]:
    """Scripts SKILL.md (and markdown files it links to, one level) reference, first-seen order."""
    return scan_skill(skill)[0]


def linked_markdown(skill: _SkillLike) -> list[str]:
    """Markdown files SKILL.md links to (relative posix paths, existing, inside the skill),
    in the order linked: ``[forms](FORMS.md)`` in Anthropic's pdf skill, say."""
    return scan_skill(skill)[1]


def scan_skill(skill: _SkillLike) -> tuple[list[ScriptReference], list[str]]:
    """(referenced scripts, linked markdown files) from one read of the instructions."""
    base = Path(skill.base_dir)
    name = _skill_name(skill)
    refs: list[ScriptReference] = []
    seen: set[str] = set()
    body = skill.content or ""
    linked: list[str] = []
    first_line = _body_offset(skill, body) + 1
    found = find_references(
        body, base, source="SKILL.md", skill_name=name, linked=linked, first_line=first_line
    )
    for ref in found:
        if ref.path not in seen:
            seen.add(ref.path)
            refs.append(ref)
    for rel in linked:
        try:
            text = (base / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for ref in find_references(text, base, source=rel, skill_name=name):
            if ref.path not in seen:
                seen.add(ref.path)
                refs.append(ref)
    return refs, linked


@dataclass(frozen=True)
class MarkdownScan:
    """Every markdown file of a skill, read for script references (what is *offered*)."""

    refs: tuple[ScriptReference, ...]  # first-seen order: SKILL.md first, then by path
    modules: frozenset[str]  # dotted names any of them runs with ``python -m``
    files: tuple[str, ...]  # the markdown files read (relative), SKILL.md first
    signature: tuple  # changes when a markdown file is added, removed or edited


MAX_MARKDOWN_FILES = 400
MAX_MARKDOWN_BYTES = 1 << 20  # a larger .md file is data, not instructions
MARKDOWN_DEPTH = 6
_SKIP_DIRS = frozenset({"node_modules", "venv", ".venv", "__pycache__", "site-packages"})


def markdown_signature(base_dir: Path | str) -> tuple:
    """(folders with their mtimes, markdown files with mtime and size): equal while no
    markdown file of the skill was added, removed or edited. No file is read."""
    dirs: list[tuple[str, int]] = []
    files: list[tuple[str, int, int]] = []
    _walk_markdown(os.fspath(base_dir), "", 0, dirs, files)
    return (tuple(dirs), tuple(files))


def _walk_markdown(path: str, rel: str, depth: int, dirs: list, files: list) -> None:
    try:
        with os.scandir(path) as it:
            entries = sorted(it, key=lambda e: e.name)
        dirs.append((rel, os.stat(path).st_mtime_ns))
    except OSError:
        return
    for entry in entries:
        name = entry.name
        if name.startswith(".") or len(files) >= MAX_MARKDOWN_FILES:
            continue
        child = f"{rel}/{name}" if rel else name
        try:
            if entry.is_dir(follow_symlinks=False):
                if depth < MARKDOWN_DEPTH and name not in _SKIP_DIRS:
                    _walk_markdown(entry.path, child, depth + 1, dirs, files)
            elif name.lower().endswith((".md", ".markdown")) and entry.is_file(
                follow_symlinks=False
            ):
                st = entry.stat(follow_symlinks=False)
                files.append((child, st.st_mtime_ns, st.st_size))
        except OSError:
            continue


def scan_markdown(skill: _SkillLike, signature: tuple | None = None) -> MarkdownScan:
    """References in SKILL.md and in every other markdown file of the skill (hidden folders,
    ``node_modules`` and virtual environments left out; symlinks not followed)."""
    base = Path(skill.base_dir)
    signature = markdown_signature(base) if signature is None else signature
    refs, _ = scan_skill(skill)
    seen = {r.path for r in refs}
    modules = module_runs(skill.content or "")
    read = ["SKILL.md"]
    name = _skill_name(skill)
    for rel, _, size in signature[1]:
        if rel in ("SKILL.md", "skill.md") or size > MAX_MARKDOWN_BYTES:
            continue
        try:
            text = (base / rel).read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        read.append(rel)
        modules |= module_runs(text)
        for ref in find_references(text, base, source=rel, skill_name=name):
            if ref.path not in seen:
                seen.add(ref.path)
                refs.append(ref)
    return MarkdownScan(tuple(refs), frozenset(modules), tuple(read), signature)


def find_references(
    text: str,
    base_dir: Path,
    *,
    source: str = "SKILL.md",
    skill_name: str = "",
    linked: list[str] | None = None,
    first_line: int = 1,
) -> list[ScriptReference]:
    """References in one markdown text, deduplicated, in order; ``linked`` collects .md links.

    ``first_line`` is the line number of ``text``'s first line in ``source`` (after frontmatter).
    """
    base = Path(base_dir)
    source_dir = posixpath.dirname(source)
    candidates = _candidates(text, linked_md=linked, source_dir=source_dir, base=base)
    candidates.sort(key=lambda c: c.pos)
    out: list[ScriptReference] = []
    seen: dict[str, int] = {}  # path -> its index in out
    for cand in candidates:
        joined = posixpath.join(source_dir, cand.path) if cand.relative_to_file else cand.path
        rel, inside_lexically = _normalise(joined)
        if not inside_lexically:
            installed = _installed_rel(rel, base)
            if installed:
                rel, inside_lexically = installed, True
        if cand.implied_ext and inside_lexically and not (base / rel).exists():
            if (base / (rel + cand.implied_ext)).is_file():
                rel += cand.implied_ext  # ``python scripts/check_fields`` names the .py file
        if rel not in seen and not cand.strong and not _weak_counts(base, rel, inside_lexically):
            resolved = _bare_script(base, rel) if inside_lexically and "/" not in rel else None
            if resolved is None:
                continue
            rel = resolved
        if rel in seen:
            # First seen wins; a later command (``./x`` after a mention of x) still counts.
            kept = out[seen[rel]]
            if cand.as_command and not kept.as_command:
                out[seen[rel]] = replace(kept, as_command=True, module=kept.module or cand.module)
            continue
        seen[rel] = len(out)
        line = text.count("\n", 0, cand.pos) + first_line
        ref = _reference(base, cand.raw, rel, inside_lexically, source, line, skill_name)
        out.append(replace(ref, module=cand.module, as_command=cand.as_command))
    return out


def _candidates(
    text: str, *, linked_md: list[str] | None, source_dir: str, base: Path
) -> list[_Candidate]:
    found: list[_Candidate] = []
    # Link targets are read by _link (relative to the linking file), not as prose paths.
    link_spans = [
        m.span("angle") if m.group("angle") else m.span("plain") for m in _LINK_RE.finditer(text)
    ]
    link_spans += [m.span("target") for m in _REF_LINK_RE.finditer(text)]
    url_spans = [m.span() for m in _URL_RE.finditer(text)]
    for m in _PATH_RE.finditer(text):
        path = m.group("path")
        at = m.start("path")
        if _within(at, link_spans) or _within(at, url_spans):
            continue
        # A path that climbs out or is absolute is reported (as an error), never dropped:
        # instructions pointing outside the skill are worth knowing about. "//host/..." is
        # the tail of a URL, not a path.
        escapes = not _normalise(path)[1] and not path.startswith("//")
        strong = bool(m.group("base")) or _strip_dot(path).startswith("scripts/") or escapes
        found.append(_Candidate(m.start(), m.group(0), path, strong))
    for m in _COMMAND_RE.finditer(text):
        if set(m.group("flags").split()) & _STOP_FLAGS:
            continue
        arg = m.group("arg").rstrip(".,:;!?")
        if not arg or arg.startswith("-") or _within(m.start("arg"), url_spans):
            continue
        raw = arg
        arg = _strip_base(arg)
        has_dir = "/" in arg or raw != arg
        word = m.group("cmd").split()[-1].rstrip("0123456789.")
        implied = _IMPLIED_EXT.get(word, "") if not posixpath.splitext(arg)[1] else ""
        found.append(
            _Candidate(m.start("arg"), raw, arg, has_dir, as_command=True, implied_ext=implied)
        )
    for m in _DIRECT_RE.finditer(text):
        if _within(m.start("arg"), url_spans):
            continue
        found.append(
            _Candidate(m.start("arg"), m.group("arg"), m.group("arg"), True, as_command=True)
        )
    for m in MODULE_RUN_RE.finditer(text):
        cand = _module_candidate(m.start("module"), m.group("module"), base)
        if cand is not None and not _within(m.start("module"), url_spans):
            found.append(cand)
    for m in _LINK_RE.finditer(text):
        target = m.group("angle") or m.group("plain")
        _link(found, m.start(), target, linked_md, source_dir, base)
    for m in _REF_LINK_RE.finditer(text):
        _link(found, m.start("target"), m.group("target"), linked_md, source_dir, base)
    if linked_md is not None:
        for m in PROSE_MD_RE.finditer(text):
            at = m.start("name")
            if not (_within(at, link_spans) or _within(at, url_spans)):
                _link(found, at, m.group("name"), linked_md, source_dir, base)
    return found


def _module_candidate(pos: int, module: str, base: Path) -> _Candidate | None:
    """``python -m a.b``: the skill's ``a/b.py`` (or ``a/b/__main__.py``); None when the
    module is not the skill's (``python -m pytest``)."""
    parts = module.split(".")
    stem = "/".join(parts)
    for rel in (stem + ".py", stem + "/__main__.py"):
        if (base / rel).is_file():
            return _Candidate(pos, module, rel, True, as_command=True, module=module)
    if len(parts) > 1 and (base / parts[0]).is_dir():
        # The skill's own package with the module missing: worth an error entry.
        return _Candidate(pos, module, stem + ".py", True, as_command=True, module=module)
    return None


def module_runs(text: str) -> set[str]:
    """Dotted module names a text runs with ``python -m`` (the skill's or not)."""
    return {m.group("module") for m in MODULE_RUN_RE.finditer(text or "")}


def _within(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(start <= pos < end for start, end in spans)


def _link(
    found: list[_Candidate],
    pos: int,
    target: str,
    linked_md: list[str] | None,
    source_dir: str,
    base: Path,
) -> None:
    if _SCHEME_RE.match(target) or target.startswith("#"):
        return
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    if not target:
        return
    stripped = _strip_base(target)
    ext = posixpath.splitext(stripped)[1].lower().lstrip(".")
    if ext in SCRIPT_EXTENSIONS:
        found.append(_Candidate(pos, target, stripped, True, relative_to_file=stripped == target))
    elif ext in ("md", "markdown") and linked_md is not None:
        rel, inside = _normalise(posixpath.join(source_dir, stripped))
        rel = (case_match(base, rel) or rel) if inside else rel
        if inside and rel not in linked_md and rel != "SKILL.md" and _inside_file(base, rel):
            linked_md.append(rel)


def case_match(base: Path, rel: str) -> str | None:
    """``rel`` as it is on disk when only its case differs (``FORMS.md`` for ``forms.md``:
    written on a case-insensitive system, read on Linux); ``rel`` when it exists as written;
    None when no single file matches. Each folder is listed, not followed: a name matching
    two entries (``a.md`` and ``A.md``) matches none."""
    if (base / rel).is_file():
        return rel
    here = os.fspath(base)
    parts = []
    for part in rel.split("/"):
        try:
            with os.scandir(here) as entries:
                hits = [e.name for e in entries if e.name.lower() == part.lower()]
        except OSError:
            return None
        if len(hits) != 1:
            return None
        parts.append(hits[0])
        here = os.path.join(here, hits[0])
    return "/".join(parts) if os.path.isfile(here) else None


def _strip_base(value: str) -> str:
    m = re.match(_BASE_PREFIX, value)
    return value[m.end() :] if m else value


def _strip_dot(value: str) -> str:
    while value.startswith("./"):
        value = value[2:]
    return value


def _normalise(path: str) -> tuple[str, bool]:
    """Posix-normalise; second item False when the path is absolute or climbs out with ``..``."""
    path = path.replace("\\", "/")
    if path.startswith("/") or re.match(r"^[A-Za-z]:/", path) or path.startswith("~"):
        return path, False
    norm = posixpath.normpath(path)
    return norm, not (norm == ".." or norm.startswith("../"))


def _installed_rel(path: str, base: Path) -> str:
    """``/mnt/skills/user/<skill folder>/resources/x.sh`` (where the skill is installed in
    another agent's machine) -> ``resources/x.sh`` when that file is in this skill; ""
    otherwise."""
    marker = f"/{base.name}/"
    if not path.startswith("/") or marker not in path:
        return ""
    rel, inside = _normalise(path.rsplit(marker, 1)[1])
    return rel if inside and (base / rel).is_file() else ""


def _check(base: Path, rel: str) -> Exception | None:
    """None when ``rel`` is a runnable-looking file inside the skill, else the refusal."""
    try:
        resolve_script(rel, base)
    except (PathSecurityError, ScriptNotFoundError, ScriptPermissionError) as exc:
        return exc
    return None


def _inside_file(base: Path, rel: str) -> bool:
    problem = _check(base, rel)
    return problem is None or (
        isinstance(problem, ScriptPermissionError) and (base / rel).is_file()
    )


def _weak_counts(base: Path, rel: str, inside: bool) -> bool:
    return inside and _inside_file(base, rel)


def _bare_script(base: Path, name: str) -> str | None:
    """A bare file name like ``lint.sh`` that matches exactly one file under ``scripts/``."""
    scripts = base / "scripts"
    if not _BARE_NAME_RE.match(name) or not scripts.is_dir():
        return None
    matches: list[str] = []
    for root, dirs, files in os.walk(scripts):
        dirs.sort()
        if name in files:
            rel = (Path(root) / name).relative_to(base).as_posix()
            if _inside_file(base, rel):
                matches.append(rel)
    return matches[0] if len(matches) == 1 else None


def _reference(
    base: Path, raw: str, rel: str, inside_lexically: bool, source: str, line: int, skill: str
) -> ScriptReference:
    where = f"{source}:{line}"
    who = f"skill '{skill}'" if skill else "the skill"
    if not inside_lexically:
        problem: Exception | None = PathSecurityError(
            f"{raw} points outside {who}: only scripts inside the skill folder can run; "
            "fix the path in the instructions"
        )
    else:
        problem = _check(base, rel)
    if problem is None:
        return ScriptReference(raw, rel, True, True, None, source=source, line=line)
    if isinstance(problem, ScriptNotFoundError):
        message = (
            f"{rel} is referenced in {where} but does not exist in {who}: "
            "fix the path in the instructions or add the script"
        )
        return ScriptReference(raw, rel, False, True, message, source=source, line=line)
    inside = not isinstance(problem, PathSecurityError)
    exists = inside_lexically and (base / rel).is_file()
    return ScriptReference(raw, rel, exists, inside, f"{where}: {problem}", source, line)


def _body_offset(skill: object, body: str) -> int:
    """Lines before the body in SKILL.md (the frontmatter), so line numbers match the file."""
    meta = getattr(skill, "metadata", None)
    path = getattr(meta, "path", None)
    if path is None or not body:
        return 0
    try:
        raw = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return 0
    index = raw.replace("\r\n", "\n").find(body.replace("\r\n", "\n")[:200])
    return raw.count("\n", 0, index) if index > 0 else 0


def _skill_name(skill: object) -> str:
    meta = getattr(skill, "metadata", None)
    return str(getattr(meta, "name", "") or getattr(skill, "name", "") or "")


__all__ = [
    "PROSE_MD_RE",
    "case_match",
    "MODULE_RUN_RE",
    "MarkdownScan",
    "markdown_signature",
    "module_runs",
    "scan_markdown",
    "ScriptReference",
    "referenced_scripts",
    "linked_markdown",
    "scan_skill",
    "find_references",
    "SCRIPT_EXTENSIONS",
]
