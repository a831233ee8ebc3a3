"""Make hostile text safe to show: control characters and bidi overrides become visible.

A script's source, its name or an argv item may hold terminal escapes (``ESC[2K`` erases a
line, ``\\r`` overwrites it), line separators (which forge extra lines in a text log) or
bidirectional overrides ("Trojan Source": U+202E makes code read differently from what runs).
Where such text is shown to a person deciding something, it is rendered visibly instead.

Example:
    >>> visible("alice\\u200b@example.com")
    'alice⟨U+200B⟩@example.com'
    >>> visible("ok\\x1b[2K\\rhidden\\u202e")
    'ok\\\\x1b[2K\\\\rhidden⟨U+202E⟩'
    >>> visible("a\\tb\\nc", keep="\\t\\n")
    'a\\tb\\nc'
"""

from __future__ import annotations

import re
import unicodedata

# Bidirectional formatting characters: embeddings/overrides (U+202A-202E), isolates
# (U+2066-2069) and the invisible direction marks (LRM, RLM, ALM).
BIDI_CONTROLS = frozenset(
    "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
)

# Characters that show as nothing: zero-width space, non-joiner and joiner, word joiner and
# the invisible operators, the byte-order mark, the soft hyphen, the Mongolian vowel
# separator. "alice\u200b@example.com" reads as alice@example.com and is another name.
INVISIBLE = frozenset("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad\u180e")

# C0 controls, DEL, C1 controls, the Unicode line/paragraph separators (str.splitlines() and
# many log viewers break lines there), the bidi characters and the invisible ones above.
_UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u2028\u2029" + "".join(sorted(BIDI_CONTROLS | INVISIBLE)) + "]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if char in BIDI_CONTROLS or char in INVISIBLE or code > 0xFF:
        return f"⟨U+{code:04X}⟩"
    return f"\\x{code:02x}"


def visible(text: str, keep: str = "") -> str:
    """``text`` with every control, line-separator, bidi and invisible character shown as
    an escape.

    Characters in ``keep`` (e.g. ``"\\t\\n"`` for a multi-line preview) stay as they are.
    Printable text, including non-ASCII letters and emoji, is untouched.
    """
    if not _UNSAFE.search(text):
        return text  # the common case: nothing to do, no copy
    return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m.group()), text)


_JOINERS = "\u200c\u200d"  # zero-width non-joiner and joiner: part of Persian, Indic words


def _in_word(char: str) -> bool:
    """A letter or a combining mark (a virama, before an Indic joiner)."""
    return unicodedata.category(char)[0] in "LM"


def hides_characters(text: str) -> bool:
    """Does ``text`` hold a character :func:`visible` would escape (a name, a path, a source
    refused for it)? A zero-width non-joiner or joiner between two letters of a non-Latin
    script is not one: Persian and Indic words are spelled with them (``می‌خواهم``).

    Example:
        >>> hides_characters("pdf\u200c"), hides_characters("\u0645\u06cc\u200c\u062e\u0648")
        (True, False)
    """
    if not _UNSAFE.search(text):
        return False
    for i, char in enumerate(text):
        if not _UNSAFE.match(char):
            continue
        if char in _JOINERS and 0 < i < len(text) - 1:
            before, after = text[i - 1], text[i + 1]
            if not (before.isascii() or after.isascii()) and _in_word(before) and _in_word(after):
                continue
        return True
    return False


def mark_non_ascii(name: str) -> str:
    """A name (a package, a program, a skill) with every non-ASCII character shown as
    ``⟨U+XXXX⟩``, so a lookalike cannot pass for the name it imitates; control and bidi
    characters are made visible as by :func:`visible`.

    Example:
        >>> mark_non_ascii("requ\u0435sts")
        'requ⟨U+0435⟩sts'
    """
    shown = visible(name)
    if shown.isascii():
        return shown
    return "".join(c if c.isascii() else f"⟨U+{ord(c):04X}⟩" for c in shown)


def non_ascii_note(name: str) -> str | None:
    """Why a name deserves a second look, or None: it has non-ASCII letters (which ones)."""
    if name.isascii():
        return None
    chars = dict.fromkeys(c for c in name if not c.isascii())
    described = ", ".join(
        f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed character')}" for c in list(chars)[:3]
    )
    more = f" and {len(chars) - 3} more" if len(chars) > 3 else ""
    return (
        f"{mark_non_ascii(name)!r} has non-ASCII letters ({described}{more}): it may "
        "imitate another name"
    )


def has_bidi(text: str) -> bool:
    """Does ``text`` contain a bidirectional formatting character?"""
    return any(ch in BIDI_CONTROLS for ch in text)


__all__ = [
    "BIDI_CONTROLS",
    "INVISIBLE",
    "has_bidi",
    "hides_characters",
    "mark_non_ascii",
    "non_ascii_note",
    "visible",
]
