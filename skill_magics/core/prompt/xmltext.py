"""XML text and attribute escaping that round-trips through any conforming parser.

Escaping rules (what ``xml.etree.ElementTree.fromstring`` gives back is the exact input):

- text (one rule for ``<skill_context>``, ``<skill_content>`` and ``<available_skills>``): a model
  reads it, so code must stay code: text holding ``<`` or ``&`` goes in CDATA sections
  (``H<sub>2</sub>O`` and ``a && b`` read as written, not ``H&lt;sub&gt;``). Outside them,
  as character references: ``\\r`` (``&#13;``: a parser would normalise it to ``\\n``), the
  ``>`` of a ``]]>`` (which would end the section), and every ``<`` that opens a tag of the
  envelope itself (``</instructions>``, ``<skill_context``, ...: :data:`ENVELOPE_TAGS`),
  so a skill's files can never show a model, or a parser, an envelope tag of their own.
  Entities everywhere (the old rule) kept that safety but made every snippet of HTML,
  XML, JSX or shell with ``&&`` unreadable; CDATA alone would have let a skill write a
  literal ``</skill_context>`` a model might take for the real end.
- attributes: as text, plus ``"`` and tab/newline as character references (a parser
  would otherwise turn them into spaces).
- characters XML 1.0 cannot carry at all (NUL and the other C0 controls except tab, LF,
  CR; lone surrogates; U+FFFE, U+FFFF): the value is *backslash-escaped*: every ``\\``
  becomes ``\\\\`` and each forbidden character becomes ``\\xHH`` (C0) or ``\\uHHHH``. Only
  values that contain a forbidden character are rewritten, and the element says so in
  ``sanitized="..."`` (``text`` and/or the attribute names). ``unescape_backslashes``
  reverses it exactly.

Example:
    >>> element("out", "a\\x00b", {"source": "x.py"})
    '<out source="x.py" sanitized="text">a\\\\x00b</out>'
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# Characters XML 1.0 forbids even as character references.
FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_TEXT_SPECIAL = re.compile("[&<>\r]")
_ATTR_SPECIAL = re.compile('[&<>"\t\n\r]')
_TEXT_MAP = {"&": "&amp;", "<": "&lt;", ">": "&gt;", "\r": "&#13;"}
_ATTR_MAP = {**_TEXT_MAP, '"': "&quot;", "\t": "&#9;", "\n": "&#10;"}
_BACKSLASH_ESCAPE = re.compile(r"\\(\\|x[0-9a-f]{2}|u[0-9a-f]{4})")
_NEEDS_BACKSLASH = re.compile("[\\\\\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

SANITIZED_ATTR = "sanitized"

# The tags our envelopes are made of (context.py, activation.py, available_skills.py): a "<"
# opening one of them inside a text is always written as "&lt;".
ENVELOPE_TAGS = (
    "skill_contexts",
    "skill_context",
    "skill_contents",
    "skill_content",
    "skill_resources",
    "instructions",
    "active_resources",
    "reference_files",
    "execution_directive",
    "script_output",
    "stdout",
    "stderr",
    "file",
    "error",
    "available_skills",
    "skill",
    "name",
    "description",
    "location",
)
_CDATA_NEEDED = re.compile("[<&]")
_BREAK = re.compile(
    r"\r|(?<=\]\])>|<(?=[\s/]*(?:" + "|".join(ENVELOPE_TAGS) + r")(?![\w\-.:]))",
    re.IGNORECASE,
)
_BREAK_MAP = {"\r": "&#13;", ">": "&gt;", "<": "&lt;"}


def has_forbidden(value: str) -> bool:
    """True when ``value`` holds a character XML 1.0 cannot represent."""
    return FORBIDDEN.search(value) is not None


def escape_backslashes(value: str) -> str:
    """Reversible rewrite: ``\\`` -> ``\\\\``; forbidden chars -> ``\\xHH`` / ``\\uHHHH``."""

    def one(match: re.Match[str]) -> str:
        char = match.group(0)
        if char == "\\":
            return "\\\\"
        code = ord(char)
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NEEDS_BACKSLASH.sub(one, value)


def unescape_backslashes(value: str) -> str:
    """Inverse of :func:`escape_backslashes`."""

    def one(match: re.Match[str]) -> str:
        body = match.group(1)
        return "\\" if body == "\\" else chr(int(body[1:], 16))

    return _BACKSLASH_ESCAPE.sub(one, value)


def sanitize(value: str) -> tuple[str, bool]:
    """``(value, False)`` when XML can carry it, else ``(escape_backslashes(value), True)``."""
    if has_forbidden(value):
        return escape_backslashes(value), True
    return value, False


def escape_text(value: str) -> str:
    """Element text by the rule above (the value must already be free of forbidden
    characters): as is when it needs nothing, else CDATA sections and character references."""
    if not _TEXT_SPECIAL.search(value):
        return value
    out: list[str] = []
    start = 0
    for m in _BREAK.finditer(value):
        out.append(_segment(value[start : m.start()]))
        out.append(_BREAK_MAP[m.group(0)])
        start = m.end()
    out.append(_segment(value[start:]))
    return "".join(out)


def _segment(text: str) -> str:
    """A run of text without a break character: CDATA when it holds ``<`` or ``&``."""
    return f"<![CDATA[{text}]]>" if _CDATA_NEEDED.search(text) else text


def escape_attr(value: str) -> str:
    """Escape an attribute value for use inside double quotes."""
    return _ATTR_SPECIAL.sub(lambda m: _ATTR_MAP[m.group(0)], value)


def attrs(attributes: Mapping[str, object | None]) -> tuple[str, list[str]]:
    """Render ``name="value"`` pairs (None values skipped) and the names that were sanitized."""
    parts: list[str] = []
    sanitized: list[str] = []
    for name, raw in attributes.items():
        if raw is None:
            continue
        value, changed = sanitize(str(raw))
        if changed:
            sanitized.append(name)
        parts.append(f' {name}="{escape_attr(value)}"')
    return "".join(parts), sanitized


def start_tag(
    tag: str, attributes: Mapping[str, object | None] | None = None, *, text: str = ""
) -> str:
    """``<tag a="..">`` with ``sanitized=".."`` added when ``text`` or an attribute needed it."""
    rendered, sanitized = attrs(attributes or {})
    if has_forbidden(text):
        sanitized.insert(0, "text")
    if sanitized:
        rendered += f' {SANITIZED_ATTR}="{" ".join(sanitized)}"'
    return f"<{tag}{rendered}>"


def element(
    tag: str, text: str | None = None, attributes: Mapping[str, object | None] | None = None
) -> str:
    """One element with escaped text (self-closing when ``text`` is None)."""
    body = text or ""
    head = start_tag(tag, attributes, text=body)
    if text is None:
        return head[:-1] + "/>"
    return f"{head}{escape_text(sanitize(body)[0])}</{tag}>"


def body(text: str) -> str:
    """Escaped element text, backslash-escaped first when it holds forbidden characters."""
    return escape_text(sanitize(text)[0])


def decoded_text(elem_text: str | None, sanitized: str | None, part: str = "text") -> str:
    """What a consumer does after parsing: undo the backslash escape when ``part`` was sanitized."""
    value = elem_text or ""
    if sanitized and part in sanitized.split():
        return unescape_backslashes(value)
    return value


__all__ = [
    "FORBIDDEN",
    "SANITIZED_ATTR",
    "has_forbidden",
    "escape_backslashes",
    "unescape_backslashes",
    "sanitize",
    "escape_text",
    "ENVELOPE_TAGS",
    "escape_attr",
    "attrs",
    "start_tag",
    "element",
    "body",
    "decoded_text",
]
