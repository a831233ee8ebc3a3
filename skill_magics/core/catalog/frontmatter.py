"""SKILL.md -> (metadata, body, warnings): a lenient, safe frontmatter parser.

Lenient where real skills are sloppy (BOM, CRLF, unquoted colons, odd ``allowed-tools``
spellings, unknown keys), strict where it matters: only ``yaml.safe`` loading, and a skill
without a description or with YAML that will not parse is skipped, never half-loaded.

Example:
    >>> text = "---\\nname: demo\\ndescription: Hi\\n---\\n# Demo\\n"
    >>> meta, body, warnings = parse_skill_md(text)
    >>> meta["name"], body
    ('demo', '# Demo\\n')
    >>> load_skill_metadata(Path("skills/csv-profiler/SKILL.md")).name   # frontmatter only
    'csv-profiler'
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import yaml

from skill_magics.core.base.errors import SkillParseError
from skill_magics.core.base.models import SkillMetadata
from skill_magics.core.base.paths import folder_name_problem

# The C loader is ~10x faster, which matters when listing a thousand skills.
_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MAX_VALUES = 10_000  # values in one frontmatter, aliases counted each time they are used

MAX_NAME = 64
MAX_DESCRIPTION = 1024
MAX_COMPATIBILITY = 500

KNOWN_KEYS = frozenset(
    {"name", "description", "license", "compatibility", "allowed-tools", "metadata", "version"}
)
# Keys whose value is text by definition: YAML's implicit typing (1.0 -> float, yes -> bool,
# 2024-01-01 -> date) is undone by reading the scalar as written.
_TEXT_KEYS = ("name", "description", "license", "compatibility", "version")

_NAME_RE = re.compile(r"^[a-z0-9-]+$")
_DELIM_RE = re.compile(r"^---[ \t]*$")
# `key: value` on one line; group 3 is the value (used only for the colon-quoting retry).
_SIMPLE_LINE_RE = re.compile(r"^(\s*)([A-Za-z0-9_.-]+):[ \t]+(\S.*?)[ \t]*$")
_BLOCK_INDICATOR_RE = re.compile(r"^[|>][0-9+-]*(\s+#.*)?$")

# Deeper nesting than any real frontmatter needs; far below where libyaml's C composer
# overflows the C stack (about 25,000 levels, well within MAX_FRONTMATTER_BYTES).
MAX_DEPTH = 64
_OPEN_EVENTS = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
_CLOSE_EVENTS = (yaml.SequenceEndEvent, yaml.MappingEndEvent)

# Reading SKILL.md for a listing stops after the frontmatter; this caps a file with no end.
MAX_FRONTMATTER_BYTES = 256 * 1024
_BLOCK = 4096
# The closing delimiter: a line holding only `---` (the newline before it is the match start).
_CLOSE_RE = re.compile(rb"\n---[ \t]*(?:\r?\n|\r(?!\n)|\Z)")


def split_frontmatter(text: str) -> tuple[str, str]:
    """Split SKILL.md text into (yaml_text, body). Raises SkillParseError without frontmatter.

    Only a line that is exactly ``---`` (trailing blanks allowed) opens or closes the block,
    so ``---`` inside a value or an indented block scalar never ends it.
    """
    text = _normalise(text)
    lines = text.split("\n")
    if not lines or not _DELIM_RE.match(lines[0]):
        raise SkillParseError(
            "SKILL.md does not start with a '---' frontmatter line: "
            "add '---', name, description and a closing '---' at the top"
        )
    for i in range(1, len(lines)):
        if _DELIM_RE.match(lines[i]):
            yaml_text = "\n".join(lines[1:i]) + "\n"
            body = "\n".join(lines[i + 1 :]).lstrip("\n")
            return yaml_text, body
    raise SkillParseError(
        "SKILL.md frontmatter is never closed: add a line containing only '---' after it"
    )


def parse_skill_md(text: str) -> tuple[dict[str, Any], str, list[str]]:
    """Parse SKILL.md text into (raw frontmatter mapping, body, warnings).

    Raises SkillParseError when there is no frontmatter or its YAML will not parse even after
    quoting unquoted colons. The mapping has ``version``/``name``/... as strings, as written.
    """
    yaml_text, body = split_frontmatter(text)
    data, warnings = parse_frontmatter_yaml(yaml_text)
    return data, body, warnings


def parse_frontmatter_yaml(yaml_text: str) -> tuple[dict[str, Any], list[str]]:
    """YAML text between the delimiters -> (mapping, warnings). Safe loading only.

    Raises only SkillParseError, whatever the text: one bad SKILL.md must never break the
    listing of the others.
    """
    warnings: list[str] = []
    try:
        data = _load_mapping(yaml_text)
    except yaml.YAMLError as first_error:
        # Real skills often say `description: Use this when: ...`. The Agent Skills client
        # guidance is to retry with such values quoted rather than drop the skill.
        fixed, keys = _quote_colon_values(yaml_text)
        if not keys:
            raise SkillParseError(
                f"frontmatter is not valid YAML ({_yaml_reason(first_error)})"
            ) from None
        try:
            data = _load_mapping(fixed)
        except (yaml.YAMLError, SkillParseError):
            raise SkillParseError(
                f"frontmatter is not valid YAML ({_yaml_reason(first_error)})"
            ) from None
        warnings.append(
            f"unquoted ': ' in the value of {', '.join(repr(k) for k in keys)}; read it as "
            "quoted text (put such values in quotes to silence this)"
        )
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise SkillParseError(
            f"frontmatter is a YAML {type(data).__name__}, not a mapping: write 'key: value' lines"
        )
    _check_expansion(data)
    return data, warnings


def _check_expansion(data: Any) -> None:
    """Refuse frontmatter whose values expand past MAX_VALUES when printed or serialised.

    libyaml shares an aliased node instead of copying it, so ``&a [*b, *b, ...]`` chains
    ("billion laughs") load in microseconds, but showing the metadata (``%skills show``,
    ``json.dumps``) walks every alias and never ends. Count the values as such a walk would,
    stopping at the cap.
    """
    seen = 0
    stack = [data]
    while stack:
        value = stack.pop()
        seen += 1
        if seen > MAX_VALUES:
            raise SkillParseError(
                f"frontmatter expands to more than {MAX_VALUES:,} values (YAML aliases "
                "repeating a list or map?): write the values out, or move them to a file"
            )
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, (list, tuple, set)):
            stack.extend(value)


def read_frontmatter_text(path: Path) -> str:
    """Read SKILL.md only up to the closing ``---`` (progressive disclosure: no body).

    Reads 4 KB blocks until the closing delimiter shows up, so a 50 MB body costs one block.
    Returns the decoded text up to and including the closing line (or what was read when
    there is no frontmatter); BOM and CRLF are left for :func:`split_frontmatter`.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0))
    try:
        data = b""
        while len(data) < MAX_FRONTMATTER_BYTES:
            block = os.read(fd, _BLOCK)
            if not block:
                break
            data += block
            first_nl = data.find(b"\n")
            if first_nl < 0:
                continue
            first = data[:first_nl].rstrip(b"\r")
            if first.startswith(b"\xef\xbb\xbf"):
                first = first[3:]
            if first.rstrip(b" \t") != b"---":
                return data[: first_nl + 1].decode("utf-8", "replace")  # no frontmatter
            end = _CLOSE_RE.search(data, first_nl)
            # A match at the very end of the data may be "---" cut mid-line ("----" or
            # "--- x" continue in the next block): only trust it with more data after it.
            if end is not None and (end.end() < len(data) or data.endswith(b"\n")):
                return data[: end.end()].decode("utf-8", "replace")
    finally:
        os.close(fd)
    return data.decode("utf-8", "replace")


def build_metadata(
    data: dict[str, Any], skill_md: Path, warnings: list[str] | None = None
) -> SkillMetadata:
    """Turn a raw frontmatter mapping into a SkillMetadata, collecting spec warnings.

    Raises SkillParseError when the description is missing or empty (the skill is skipped:
    an agent cannot know when to use it).
    """
    skill_md = Path(skill_md)
    warnings = list(warnings or [])
    dir_name = skill_md.parent.name

    description = data.get("description")
    if description is None or (isinstance(description, str) and not description.strip()):
        raise SkillParseError(
            "frontmatter has no 'description': "
            "add one saying what the skill does and when to use it"
        )
    description = _as_text(description).strip()
    if len(description) > MAX_DESCRIPTION:
        warnings.append(
            f"description is {len(description)} characters; the spec allows at most "
            f"{MAX_DESCRIPTION}"
        )

    name = data.get("name")
    if name is None or not _as_text(name).strip():
        warnings.append(f"frontmatter has no 'name'; using the directory name {dir_name!r}")
        name = dir_name
    else:
        name = _as_text(name).strip()
        warnings.extend(name_problems(name, dir_name))

    compatibility = _optional_text(data.get("compatibility"))
    if compatibility is not None and len(compatibility) > MAX_COMPATIBILITY:
        warnings.append(
            f"compatibility is {len(compatibility)} characters; the spec allows at most "
            f"{MAX_COMPATIBILITY}"
        )

    extra = data.get("metadata")
    if extra is None:
        extra = {}
    elif not isinstance(extra, dict):
        warnings.append(
            f"'metadata' should be a mapping of key: value, got {type(extra).__name__}; ignored it"
        )
        extra = {}
    else:
        extra = dict(extra)
    for key in data:
        if key in KNOWN_KEYS:
            continue
        if key in extra:
            warnings.append(
                f"unknown frontmatter key {key!r} clashes with metadata.{key}; "
                "kept metadata's value"
            )
            continue
        extra[key] = data[key]
        warnings.append(f"unknown frontmatter key {key!r} kept in metadata")

    version = _optional_text(data.get("version"))
    if version is None:
        version = _optional_text(extra.get("version"))

    allowed_tools, tool_warning = parse_allowed_tools(data.get("allowed-tools"))
    if tool_warning:
        warnings.append(tool_warning)

    return SkillMetadata(
        name=name,
        description=description,
        path=skill_md,
        version=version,
        license=_optional_text(data.get("license")),
        compatibility=compatibility,
        allowed_tools=allowed_tools,
        metadata=extra,
        warnings=warnings,
    )


def load_skill_metadata(skill_md: Path) -> SkillMetadata:
    """Read only the frontmatter of ``skill_md`` and build its SkillMetadata.

    Raises SkillParseError (missing description, bad YAML, no frontmatter) or OSError.
    """
    yaml_text, _ = split_frontmatter(read_frontmatter_text(skill_md))
    data, warnings = parse_frontmatter_yaml(yaml_text)
    return build_metadata(data, skill_md, warnings)


def name_problems(name: str, dir_name: str | None = None) -> list[str]:
    """Agent Skills name rules -> a list of exact reasons (empty when the name is fine).

    >>> name_problems("PDF--tools", "pdf-tools")[0]
    "name 'PDF--tools' may only contain lowercase letters a-z, digits and hyphens"
    """
    problems = []
    why = folder_name_problem(name)
    if why is not None:
        # Listed (so the warning is seen), never run: core/base/paths.py check_skill_name.
        example = dir_name if dir_name and folder_name_problem(dir_name) is None else "my-skill"
        problems.append(
            f"name {name!r} cannot be one folder name ({why}): none of its scripts run until "
            f"it is; set name: {example}"
        )
    if not 1 <= len(name) <= MAX_NAME:
        problems.append(f"name {name!r} is {len(name)} characters; the spec allows 1-{MAX_NAME}")
    if not _NAME_RE.match(name):
        problems.append(f"name {name!r} may only contain lowercase letters a-z, digits and hyphens")
    if name.startswith("-") or name.endswith("-"):
        problems.append(f"name {name!r} must not start or end with a hyphen")
    if "--" in name:
        problems.append(f"name {name!r} must not contain consecutive hyphens")
    if dir_name is not None and name != dir_name:
        problems.append(f"name {name!r} does not match its directory name {dir_name!r}")
    return problems


def parse_allowed_tools(value: Any) -> tuple[list[str] | None, str | None]:
    """``allowed-tools`` in any common spelling -> (list or None, warning or None).

    Space- or comma-separated strings and YAML lists all work; separators inside
    parentheses are kept, so ``Bash(git status:*) Read`` -> ``['Bash(git status:*)', 'Read']``.
    """
    if value is None:
        return None, None
    if isinstance(value, str):
        return _split_tools(value), None
    if isinstance(value, (list, tuple)):
        tools: list[str] = []
        for item in value:
            if item is None:
                continue
            text = str(item).strip()
            if text:
                tools.append(text)
        return tools, None
    return None, (
        f"'allowed-tools' should be a string or a list, got {type(value).__name__}; ignored it"
    )


def _split_tools(text: str) -> list[str]:
    if "(" not in text:
        return [t for t in re.split(r"[\s,]+", text) if t]
    tools: list[str] = []
    current: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")" and depth:
            depth -= 1
        if depth == 0 and (ch.isspace() or ch == ","):
            if current:
                tools.append("".join(current))
                current = []
            continue
        current.append(ch)
    if current:
        tools.append("".join(current))
    return tools


def _normalise(text: str) -> str:
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _load_mapping(yaml_text: str) -> Any:
    """safe_load, but text keys keep the scalar exactly as written (``1.0`` stays "1.0").

    Raises yaml.YAMLError for text that is not YAML, SkillParseError for YAML nested too
    deeply or holding a value Python cannot build (``2024-02-30``, a 5000-digit number).
    """
    _check_depth(yaml_text)
    loader = _Loader(yaml_text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        try:
            data = loader.construct_document(node)
        except yaml.YAMLError:
            raise
        except Exception as exc:  # noqa: BLE001 - any constructor failure skips only this skill
            raise SkillParseError(_value_reason(loader, node, exc)) from None
    finally:
        loader.dispose()
    if isinstance(data, dict) and isinstance(node, yaml.MappingNode):
        _restore_text_scalars(node, data, _TEXT_KEYS)
        meta_node = _mapping_value_node(node, "metadata")
        if isinstance(meta_node, yaml.MappingNode) and isinstance(data.get("metadata"), dict):
            _restore_text_scalars(meta_node, data["metadata"], ("version",))
    return data


def _check_depth(yaml_text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH before composing: libyaml's C composer recurses
    once per level and overflows the C stack (a segfault, not an exception) near 25,000.
    """
    # Every level opens with one of these characters, so their count bounds the depth and
    # ordinary frontmatter (~15 of them) skips the exact scan (~half the cost of a load).
    if sum(map(yaml_text.count, "[{-?:")) <= MAX_DEPTH:
        return
    try:
        _scan_depth(_Loader, yaml_text)
    except yaml.YAMLError:
        if _Loader is yaml.SafeLoader:
            raise
        # libyaml 0.2.5+ as bundled by PyYAML >= 6.0.4 stops deep flow nesting itself while
        # its scanner looks ahead, before our count reaches MAX_DEPTH, and in its own words
        # ("exceeded maximum nesting depth"). The pure-Python scanner has no such limit and
        # keeps its stacks on the heap, so it finds our limit whatever libyaml does; any
        # other error stands as libyaml reported it.
        _scan_depth(yaml.SafeLoader, yaml_text)
        raise


def _scan_depth(loader_type: type, yaml_text: str) -> None:
    """Walk the parser's events (no composing), raising SkillParseError past MAX_DEPTH."""
    depth = 0
    loader = loader_type(yaml_text)  # the event parser keeps its stack on the heap
    try:
        while loader.check_event():
            event = loader.get_event()
            if isinstance(event, _OPEN_EVENTS):
                depth += 1
                if depth > MAX_DEPTH:
                    mark = event.start_mark
                    where = f" (at line {mark.line + 2} of SKILL.md)" if mark is not None else ""
                    raise SkillParseError(
                        f"frontmatter nests lists/mappings more than {MAX_DEPTH} levels deep"
                        f"{where}: flatten it"
                    )
            elif isinstance(event, _CLOSE_EVENTS):
                depth -= 1
    finally:
        loader.dispose()


def _value_reason(loader: Any, root: yaml.Node, exc: Exception) -> str:
    """One line for a value YAML reads but Python cannot build, naming its line if found."""
    # First clause only: int's message goes on to suggest sys.set_int_max_str_digits().
    reason = str(exc).split("\n", 1)[0].split(";", 1)[0][:120] or type(exc).__name__
    where = ""
    stack = [root]  # iterative: depth is bounded, but no reason to recurse
    while stack:
        node = stack.pop()
        if isinstance(node, yaml.ScalarNode):
            try:
                loader.construct_object(node)
            except Exception:  # noqa: BLE001 - this is the search for the bad value
                where = f" at line {node.start_mark.line + 2} of SKILL.md"
                break
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(reversed(node.value))
        elif isinstance(node, yaml.MappingNode):
            stack.extend(n for pair in reversed(node.value) for n in reversed(pair))
    return (
        f"frontmatter has a value YAML cannot convert ({reason}){where}: "
        "put it in quotes to keep it as text"
    )


def _mapping_value_node(node: yaml.MappingNode, key: str) -> yaml.Node | None:
    for key_node, value_node in node.value:
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == key:
            return value_node
    return None


def _restore_text_scalars(node: yaml.MappingNode, data: dict, keys: tuple[str, ...]) -> None:
    for key in keys:
        value = data.get(key)
        if value is None or isinstance(value, str):
            continue
        value_node = _mapping_value_node(node, key)
        if isinstance(value_node, yaml.ScalarNode):
            data[key] = value_node.value


def _quote_colon_values(yaml_text: str) -> tuple[str, list[str]]:
    """Quote plain one-line values that contain ': ' (skipping block scalar contents)."""
    out: list[str] = []
    keys: list[str] = []
    block_indent: int | None = None  # inside a |/> block scalar deeper than this indent
    for line in yaml_text.split("\n"):
        indent = len(line) - len(line.lstrip(" "))
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                out.append(line)
                continue
            block_indent = None
        match = _SIMPLE_LINE_RE.match(line)
        if not match:
            out.append(line)
            continue
        lead, key, value = match.groups()
        if _BLOCK_INDICATOR_RE.match(value):
            block_indent = len(lead)
            out.append(line)
            continue
        if ": " in value and value[0] not in "\"'[{&*!|>":
            escaped = value.replace("\\", "\\\\").replace('"', '\\"')
            out.append(f'{lead}{key}: "{escaped}"')
            keys.append(key)
            continue
        out.append(line)
    return "\n".join(out), keys


def _yaml_reason(error: yaml.YAMLError) -> str:
    problem = getattr(error, "problem", None) or str(error).split("\n", 1)[0]
    mark = getattr(error, "problem_mark", None)
    if mark is not None:
        # +2: 1-based, and the opening '---' line comes before the YAML text.
        return f"{problem} at line {mark.line + 2} of SKILL.md"
    return problem


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)


def _optional_text(value: Any) -> str | None:
    if value is None:
        return None
    text = _as_text(value).strip()
    return text or None


__all__ = [
    "KNOWN_KEYS",
    "split_frontmatter",
    "parse_skill_md",
    "parse_frontmatter_yaml",
    "read_frontmatter_text",
    "build_metadata",
    "load_skill_metadata",
    "name_problems",
    "parse_allowed_tools",
]
