"""Checking a skill folder before an agent uses it: ``validate_skill(path) -> list[str]``.

One line per problem, naming the file (and line where there is one) and the fix::

    SKILL.md: name 'PDF' must be lowercase. Fix: rename it to 'pdf' (folder too)

What is checked (docs/architecture.md, *Validation*):

1. Everything the reference validator (skills-ref's ``validate``) reports: the folder and
   SKILL.md exist; frontmatter present, closed, a YAML mapping; ``name`` present, non-empty,
   at most 64 characters, lowercase, letters/digits/hyphens only, no leading, trailing or
   double hyphen, equal to the folder name (both NFKC-normalised, as skills-ref does);
   ``description`` present, non-empty, at most 1024 characters; ``compatibility`` a string of
   at most 500; no frontmatter fields beyond name, description, license, allowed-tools,
   metadata, compatibility (one line per field). What skills-ref's strict YAML parser
   rejects and ours reads leniently is reported too: duplicate keys, flow style
   (``{a: b}``, ``[a, b]``), unquoted ``: `` inside a value.
2. Our own: files SKILL.md references that do not exist or lie outside the skill (scripts,
   via ``catalog/references.py``, and ``references/``/``assets/`` paths and markdown links);
   a command in SKILL.md that runs a script which does nothing when run (an ``__init__.py``
   or a module of definitions only: ``catalog/kinds.py`` refuses it);
   scripts an agent cannot run (no interpreter we know, an interpreter not installed or not
   allowed by default, a shebang ending in CR, a script run as ``./x`` without the
   executable bit); secret-like strings (API keys, private keys) in any text file of the
   skill, shown masked; and, given a budget, an ``<available_skills>`` entry that alone exceeds it.

Never runs anything and reads only the skill's own files (text files up to 1 MiB each).

Example:
    >>> validate_skill("skills/csv-profiler")
    []
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from skill_magics.core.base.errors import SkillParseError
from skill_magics.core.base.paths import folder_name_problem
from skill_magics.core.base.secrets import secret_conflicts
from skill_magics.core.catalog.discovery import is_qualified
from skill_magics.core.catalog.frontmatter import (
    build_metadata,
    parse_frontmatter_yaml,
    split_frontmatter,
)

# The file checks (references, scripts, secrets) and what every check reports.
from skill_magics.core.lab.filechecks import (
    SECRET_PATTERNS,
    Problem,
    reference_problems,
    script_problems,
    secret_problems,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.available_skills import entry_text
from skill_magics.core.prompt.tokens import TokenCounter, as_counter

# The reference validator's limits and fields (the Agent Skills specification).
MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500
SPEC_FIELDS = frozenset(
    {"name", "description", "license", "allowed-tools", "metadata", "compatibility"}
)
# Fields other clients read; still outside the spec (skills-ref reports them too).
CLIENT_FIELDS = {
    "disable-model-invocation": "Claude Code",
    "user-invocable": "Claude Code",
    "argument-hint": "Claude Code",
    "model": "Claude Code",
    "context": "Claude Code",
    "agent": "Claude Code",
    "hooks": "Claude Code",
    "version": "several clients",
}


def validate_skill(
    path: str | os.PathLike[str],
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    counter: TokenCounter | Any | None = None,
) -> list[str]:
    """Problems of the skill at ``path`` (its folder or its SKILL.md), one line each.

    An empty list means nothing was found. ``max_chars``/``max_tokens``: the budget of the
    ``<available_skills>`` block the skill's own entry must fit in
    (``core/prompt/available_skills.py``).
    """
    found = check_skill(path, max_chars=max_chars, max_tokens=max_tokens, counter=counter)
    return [str(p) for p in found]


def check_skill(
    path: str | os.PathLike[str],
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    counter: TokenCounter | Any | None = None,
) -> list[Problem]:
    """:func:`validate_skill` as :class:`Problem` values."""
    skill_dir = Path(path)
    if skill_dir.name in ("SKILL.md", "skill.md") and skill_dir.is_file():
        skill_dir = skill_dir.parent
    if not skill_dir.exists():
        return [Problem(str(skill_dir), "path does not exist", "check the path", "missing-path")]
    if not skill_dir.is_dir():
        return [
            Problem(str(skill_dir), "not a directory", "pass the skill's folder", "not-a-directory")
        ]
    skill_md = _find_skill_md(skill_dir)
    if skill_md is None:
        return [
            Problem(
                "SKILL.md",
                f"missing in {skill_dir}",
                "add SKILL.md with name and description frontmatter",
                "missing-skill-md",
            )
        ]
    problems: list[Problem] = []
    if skill_md.name != "SKILL.md":
        problems.append(
            Problem(
                skill_md.name,
                "named in lowercase; most clients look for SKILL.md only",
                "rename it to SKILL.md",
                "skill-md-case",
            )
        )
    try:
        text = skill_md.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return [
            *problems,
            Problem(skill_md.name, "is not UTF-8 text", "save it as UTF-8", "encoding"),
        ]
    except OSError as exc:
        return [
            *problems,
            Problem(skill_md.name, f"cannot be read ({exc})", "fix its permissions", "unreadable"),
        ]
    data, body, more = _frontmatter(skill_md.name, text)
    problems += more
    if data is not None:
        problems += _metadata_problems(skill_md.name, data, skill_dir)
        problems += _budget_problems(skill_md, data, max_chars, max_tokens, as_counter(counter))
    if body is not None:
        problems += reference_problems(skill_dir, skill_md.name, text, body)
    problems += script_problems(skill_dir, body or "")
    problems += secret_problems(skill_dir)
    return problems


def validate_skills(
    manager: SkillManager,
    targets: Iterable[str] | None = None,
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    counter: TokenCounter | Any | None = None,
) -> dict[str, list[str]]:
    """Problems per skill: ``targets`` are skill names or folder paths (a name wins when
    both exist); None: every skill folder in the manager's directories, including those
    discovery skipped (no description, bad YAML). Keys: the name, or the folder for a path.
    ``LABEL/NAME`` of an added MCP server: its verified copy (fetched now; MCP skills are
    validated only when named). An unknown name that is not a path raises SkillNotFoundError
    (with close matches)."""
    folders: dict[str, Path] = {}
    remote: set[str] = set()  # MCP servers' skills (LABEL/NAME), validated in their copies
    if targets is None:
        for meta in manager.local_skills():
            folders[meta.name] = Path(meta.path).parent
        known = {p.resolve() for p in folders.values()}
        for root in manager.skill_dirs:
            for skill_md in sorted(Path(root).glob("*/SKILL.md")) + sorted(
                Path(root).glob("*/skill.md")
            ):
                if skill_md.parent.resolve() not in known:
                    known.add(skill_md.parent.resolve())
                    folders[str(skill_md.parent)] = skill_md.parent
    else:
        listed = {m.name for m in manager.list_skills()}
        for target in targets:
            if target in listed or _mcp_name(manager, target) or not Path(target).exists():
                skill = manager.get_skill(target)  # an MCP skill: its verified copy
                folders[target] = Path(skill.base_dir)
                if skill.binding:
                    remote.add(target)
            else:
                folders[target] = Path(target)
    out = {}
    for key, folder in folders.items():
        found = check_skill(folder, max_chars=max_chars, max_tokens=max_tokens, counter=counter)
        if key in remote:
            # The copy's folder is the cache's, not the skill's: the host already checked
            # that the server serves it under its own name (core/mcp/wire.py).
            found = [p for p in found if p.code != "name-folder"]
        out[key] = [str(p) for p in found]
    return out


def _mcp_name(manager: SkillManager, target: str) -> bool:
    """``LABEL/NAME`` of a server added to ``manager`` (``skills/x`` stays a path otherwise)."""
    from skill_magics.core.mcp.servers import servers_of

    return is_qualified(target) and servers_of(manager).get(target.split("/")[0]) is not None


# -- frontmatter ----------------------------------------------------------------------------


def _find_skill_md(skill_dir: Path) -> Path | None:
    for name in ("SKILL.md", "skill.md"):
        if (skill_dir / name).is_file():
            return skill_dir / name
    return None


def _frontmatter(file: str, text: str) -> tuple[dict[str, Any] | None, str | None, list[Problem]]:
    """(mapping or None, body or None, problems) for SKILL.md's text."""
    try:
        yaml_text, body = split_frontmatter(text)
    except SkillParseError as exc:
        fix = str(exc).split(": ", 1)[-1]
        return None, None, [Problem(file, str(exc).split(":", 1)[0], fix, "frontmatter")]
    problems = _strict_yaml_problems(file, yaml_text)
    if text.startswith("\ufeff"):
        problems.append(
            Problem(
                file,
                "starts with a byte-order mark: strict parsers (skills-ref) find no frontmatter",
                "save it as UTF-8 without BOM",
                "frontmatter",
                line=1,
            )
        )
    if "---" in yaml_text:
        problems.append(
            Problem(
                file,
                "'---' inside the frontmatter: parsers that split on '---' (skills-ref) cut "
                "the frontmatter there",
                "rephrase the value without '---'",
                "frontmatter",
            )
        )
    try:
        data, warnings = parse_frontmatter_yaml(yaml_text)
    except SkillParseError as exc:
        fix = "fix the YAML between the '---' lines (quote values that hold ': ')"
        return None, body, [*problems, Problem(file, str(exc), fix, "yaml")]
    if not isinstance(data, dict) or not yaml_text.strip():
        fix = "write name: and description: lines between the '---' lines"
        return (
            None,
            body,
            [Problem(file, "frontmatter is empty or not a YAML mapping", fix, "yaml")],
        )
    for warning in warnings:
        if "unquoted ': '" in warning:
            problems.append(
                Problem(
                    file,
                    warning.split(";")[0] + " (strict YAML parsers such as skills-ref reject it)",
                    "put the value in quotes",
                    "yaml",
                    line=2,
                )
            )
    return data, body, problems


def _strict_yaml_problems(file: str, yaml_text: str) -> list[Problem]:
    """Duplicate top-level keys and flow style: lenient YAML reads them, strict YAML does not."""
    problems: list[Problem] = []
    try:
        node = yaml.compose(yaml_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        events = list(yaml.parse(yaml_text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)))
    except yaml.YAMLError:
        return problems  # reported by the parser itself
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, _ in node.value:
            if isinstance(key, yaml.ScalarNode) and key.value in seen:
                problems.append(
                    Problem(
                        file,
                        f"frontmatter key {key.value!r} appears twice (only the last is read)",
                        "keep one",
                        "yaml",
                        line=(key.start_mark.line if key.start_mark else 0) + 2,
                    )
                )
            elif isinstance(key, yaml.ScalarNode):
                seen.add(key.value)
    for event in events:
        if (
            isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent))
            and event.flow_style
        ):
            problems.append(
                Problem(
                    file,
                    "flow-style YAML ({...} or [...]) in the frontmatter: strict parsers such "
                    "as skills-ref reject it",
                    "write the mapping or list in block style, one item per line",
                    "yaml",
                    line=(event.start_mark.line if event.start_mark else 0) + 2,
                )
            )
            break
    return problems


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, (dict, list)):
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _secret_declaration_problems(file: str, data: dict[str, Any]) -> list[Problem]:
    """A secret name declared twice differently (core/base/secrets.py reads every form)."""
    extra = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    merged = {k: v for k, v in data.items() if k not in SPEC_FIELDS} | dict(extra or {})
    return [
        Problem(file, line.rsplit(": ", 1)[0], line.rsplit(": ", 1)[1], "secret-declared-twice")
        for line in secret_conflicts(merged)
    ]


def _metadata_problems(file: str, data: dict[str, Any], skill_dir: Path) -> list[Problem]:
    problems: list[Problem] = []
    for key in sorted(set(map(str, data)) - SPEC_FIELDS):
        client = CLIENT_FIELDS.get(key)
        note = f"; {client} reads it, other clients ignore it" if client else ""
        problems.append(
            Problem(
                file,
                f"frontmatter field {key!r} is not in the Agent Skills spec{note}",
                f"move it under metadata: ({', '.join(sorted(SPEC_FIELDS))} are allowed)",
                "unknown-field",
            )
        )
    problems += _secret_declaration_problems(file, data)
    if "name" not in data:
        problems.append(
            Problem(
                file, "missing required field 'name'", f"add name: {skill_dir.name}", "name-missing"
            )
        )
    else:
        problems += _name_problems(file, data["name"], skill_dir)
    if "description" not in data:
        problems.append(
            Problem(
                file,
                "missing required field 'description'",
                "add description: what the skill does and when to use it",
                "description-missing",
            )
        )
    else:
        description = _text(data["description"])
        if description is None or not description.strip():
            problems.append(
                Problem(
                    file,
                    "'description' is empty",
                    "say what the skill does and when to use it",
                    "description-empty",
                )
            )
        elif len(description) > MAX_DESCRIPTION:
            problems.append(
                Problem(
                    file,
                    f"description is {len(description):,} characters, over the spec's "
                    f"{MAX_DESCRIPTION:,}",
                    "shorten it; move details into the body",
                    "description-length",
                )
            )
    if "compatibility" in data:
        compatibility = data["compatibility"]
        if not isinstance(compatibility, str):
            problems.append(
                Problem(
                    file,
                    "'compatibility' must be a string",
                    "write it as one line of text",
                    "compatibility-type",
                )
            )
        elif len(compatibility) > MAX_COMPATIBILITY:
            problems.append(
                Problem(
                    file,
                    f"compatibility is {len(compatibility):,} characters, over the spec's "
                    f"{MAX_COMPATIBILITY}",
                    "shorten it",
                    "compatibility-length",
                )
            )
    return problems


def _name_problems(file: str, value: Any, skill_dir: Path) -> list[Problem]:
    raw = _text(value)
    if raw is None or not raw.strip():
        return [Problem(file, "'name' is empty", f"set name: {skill_dir.name}", "name-empty")]
    name = unicodedata.normalize("NFKC", raw.strip())
    suggestion = re.sub(r"-{2,}", "-", re.sub(r"[^0-9a-z-]+", "-", name.lower())).strip("-")
    suggestion = suggestion[:MAX_NAME].strip("-") or "my-skill"
    out = []
    why = folder_name_problem(name)
    if why is not None:
        out.append(
            (
                "name-not-a-folder",
                f"name {name!r} cannot be one folder name ({why}): none of its scripts run",
                f"rename it to {suggestion!r}",
            )
        )
    if len(name) > MAX_NAME:
        out.append(
            (
                "name-length",
                f"name is {len(name)} characters, over {MAX_NAME}",
                f"shorten it, e.g. {suggestion!r} (folder too)",
            )
        )
    if name != name.lower():
        out.append(
            (
                "name-lowercase",
                f"name {name!r} must be lowercase",
                f"rename it to {suggestion!r} (folder too)",
            )
        )
    if name.startswith("-") or name.endswith("-"):
        out.append(
            (
                "name-hyphen-edge",
                f"name {name!r} starts or ends with a hyphen",
                f"rename it to {suggestion!r} (folder too)",
            )
        )
    if "--" in name:
        out.append(
            (
                "name-double-hyphen",
                f"name {name!r} has consecutive hyphens",
                f"rename it to {suggestion!r} (folder too)",
            )
        )
    if not all(c.isalnum() or c == "-" for c in name):
        out.append(
            (
                "name-characters",
                f"name {name!r} has characters other than letters, digits and hyphens",
                f"rename it to {suggestion!r} (folder too)",
            )
        )
    folder = unicodedata.normalize("NFKC", skill_dir.name)
    if folder != name:
        out.append(
            (
                "name-folder",
                f"name {name!r} does not match its folder {skill_dir.name!r}",
                f"rename the folder to {name!r} or set name: {skill_dir.name}",
            )
        )
    return [Problem(file, message, fix, code) for code, message, fix in out]


def _budget_problems(
    skill_md: Path,
    data: dict[str, Any],
    max_chars: int | None,
    max_tokens: int | None,
    counter: TokenCounter,
) -> list[Problem]:
    if max_chars is None and max_tokens is None:
        return []
    try:
        meta = build_metadata(data, skill_md.resolve())
    except SkillParseError:
        return []  # no description: reported above
    entry = "<available_skills>\n" + entry_text(meta) + "\n</available_skills>"
    over = []
    if max_chars is not None and len(entry) > max_chars:
        over.append(f"{len(entry):,} characters (budget {max_chars:,})")
    if max_tokens is not None and counter.count(entry) > max_tokens:
        over.append(f"{counter.count(entry):,} tokens (budget {max_tokens:,}, {counter.label})")
    if not over:
        return []
    return [
        Problem(
            skill_md.name,
            f"its <available_skills> entry alone is {' and '.join(over)}: a budgeted "
            "<available_skills> block always leaves this skill out",
            f"shorten the description (now {len(meta.description):,} characters) or raise "
            "the budget",
            "description-budget",
        )
    ]


__all__ = ["Problem", "SECRET_PATTERNS", "check_skill", "validate_skill", "validate_skills"]
