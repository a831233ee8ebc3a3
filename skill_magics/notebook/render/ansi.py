"""Terminal output -> readable text or safe HTML.

Scripts print colour codes, progress bars (``\\r``) and the odd control byte. The text view
strips all of it; the HTML view turns SGR colours and bold/italic/underline into escaped
``<span>`` markup. Either way no raw escape byte reaches the page.

>>> strip_ansi("\\x1b[31mred\\x1b[0m\\n50%\\r100%")
'red\\n100%'
>>> ansi_to_html("\\x1b[1m<b>\\x1b[0m")
'<span style="font-weight:bold">&lt;b&gt;</span>'
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

# One token per escape sequence. The trailing alternatives catch a sequence cut in half by
# display truncation, so it is dropped instead of leaking "[31" into the page.
_ESCAPE = re.compile(
    r"""
      \x1b\[ (?P<params>[0-?]*) [\ -/]* (?P<final>[@-~])   # CSI (SGR when final is m)
    | \x1b\] .*? (?:\x07|\x1b\\)                          # OSC (titles, hyperlinks)
    | \x1b\[ [0-?]* [\ -/]* \Z                             # CSI cut off at the end
    | \x1b\] [^\x07\x1b]* \Z                               # OSC cut off at the end
    | \x1b [\ -/]* [0-~]                                   # other two-byte escapes
    | \x1b \Z
    """,
    re.VERBOSE | re.DOTALL,
)

# Remaining control bytes become visible Unicode "control pictures" (␀ ␇ ␈ ...) so a stray
# byte is visible and harmless; tab and newline stay as they are.
_CONTROLS = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
_CONTROLS[0x7F] = "\u2421"
_CONTROLS.update({c: "\ufffd" for c in range(0x80, 0xA0)})

# Jupyter's own ANSI palette (normal, then intense), readable on light and dark themes.
_BASIC = (
    "#3e424d", "#e75c58", "#00a250", "#ddb62b", "#208ffb", "#d160c4", "#60c6c8", "#c5c1b4",
    "#282c36", "#b22b31", "#007427", "#b27d12", "#0065ca", "#a03196", "#258f8f", "#a1a6b2",
)  # fmt: skip


def _collapse_carriage_returns(text: str) -> str:
    # Progress bars redraw a line with \r; like Jupyter, keep the last non-empty redraw.
    if "\r" not in text:
        return text
    lines = text.replace("\r\n", "\n").split("\n")
    out = []
    for line in lines:
        if "\r" in line:
            parts = [p for p in line.split("\r") if p]
            line = parts[-1] if parts else ""
        out.append(line)
    return "\n".join(out)


def _visible_controls(text: str) -> str:
    return text.translate(_CONTROLS)


def strip_ansi(text: str) -> str:
    """Plain text: escape sequences removed, ``\\r`` redraws collapsed, controls made visible."""
    return _visible_controls(_ESCAPE.sub("", _collapse_carriage_returns(text)))


@dataclass(frozen=True)
class _Style:
    bold: bool = False
    dim: bool = False
    italic: bool = False
    underline: bool = False
    inverse: bool = False
    fg: str | None = None
    bg: str | None = None

    def css(self) -> str:
        fg, bg = (self.bg, self.fg) if self.inverse else (self.fg, self.bg)
        rules = []
        if fg:
            rules.append(f"color:{fg}")
        if bg:
            rules.append(f"background-color:{bg}")
        if self.bold:
            rules.append("font-weight:bold")
        if self.dim:
            rules.append("opacity:0.7")
        if self.italic:
            rules.append("font-style:italic")
        if self.underline:
            rules.append("text-decoration:underline")
        return ";".join(rules)


def _colour_256(n: int) -> str | None:
    if 0 <= n < 16:
        return _BASIC[n]
    if 16 <= n < 232:
        n -= 16
        levels = (0, 95, 135, 175, 215, 255)
        r, g, b = levels[n // 36], levels[(n // 6) % 6], levels[n % 6]
        return f"#{r:02x}{g:02x}{b:02x}"
    if 232 <= n < 256:
        v = 8 + 10 * (n - 232)
        return f"#{v:02x}{v:02x}{v:02x}"
    return None


def _extended_colour(codes: list[int], i: int) -> tuple[str | None, int]:
    """Parse ``38;5;n`` / ``38;2;r;g;b`` starting after the 38/48; returns (colour, next index)."""
    if i < len(codes) and codes[i] == 5 and i + 1 < len(codes):
        return _colour_256(codes[i + 1]), i + 2
    if i < len(codes) and codes[i] == 2 and i + 3 < len(codes):
        r, g, b = (max(0, min(255, c)) for c in codes[i + 1 : i + 4])
        return f"#{r:02x}{g:02x}{b:02x}", i + 4
    return None, len(codes)  # malformed: ignore the rest of this sequence


# SGR codes that set or clear attributes.
_SGR_FLAGS: dict[int, Callable[[_Style], _Style]] = {
    1: lambda s: replace(s, bold=True),
    2: lambda s: replace(s, dim=True),
    3: lambda s: replace(s, italic=True),
    4: lambda s: replace(s, underline=True),
    7: lambda s: replace(s, inverse=True),
    22: lambda s: replace(s, bold=False, dim=False),
    23: lambda s: replace(s, italic=False),
    24: lambda s: replace(s, underline=False),
    27: lambda s: replace(s, inverse=False),
}
# Basic colours: (first code, last code, field, index of the first code's colour in _BASIC).
_SGR_COLOURS = ((30, 37, "fg", 0), (90, 97, "fg", 8), (40, 47, "bg", 0), (100, 107, "bg", 8))


def _apply_sgr(style: _Style, params: str) -> _Style:
    try:
        codes = [int(p) if p else 0 for p in params.replace(":", ";").split(";")]
    except ValueError:  # private-mode junk such as "?25": not a colour change
        return style
    i = 0
    while i < len(codes):
        code = codes[i]
        i += 1
        if code in (38, 48):
            colour, i = _extended_colour(codes, i)
            if colour is not None:
                style = _coloured(style, code == 38, colour)
        else:
            style = _apply_code(style, code)
    return style


def _apply_code(style: _Style, code: int) -> _Style:
    """One SGR code other than an extended colour (unknown codes change nothing)."""
    if code == 0:
        return _Style()
    flag = _SGR_FLAGS.get(code)
    if flag is not None:
        return flag(style)
    if code in (39, 49):
        return _coloured(style, code == 39, None)
    for first, last, field_name, base in _SGR_COLOURS:
        if first <= code <= last:
            return _coloured(style, field_name == "fg", _BASIC[code - first + base])
    return style


def _coloured(style: _Style, foreground: bool, colour: str | None) -> _Style:
    return replace(style, fg=colour) if foreground else replace(style, bg=colour)


def ansi_to_html(text: str) -> str:
    """Escaped HTML with SGR styling as ``<span style=...>``; every other sequence removed."""
    text = _collapse_carriage_returns(text)
    out: list[str] = []
    style = _Style()
    open_span = False
    pos = 0

    def emit(chunk: str) -> None:
        nonlocal open_span
        if not chunk:
            return
        css = style.css()
        if css and not open_span:
            out.append(f'<span style="{css}">')
            open_span = True
        out.append(html.escape(_visible_controls(chunk), quote=False))

    for match in _ESCAPE.finditer(text):
        emit(text[pos : match.start()])
        pos = match.end()
        if match.group("final") == "m":
            new = _apply_sgr(style, match.group("params") or "")
            if new != style:
                if open_span:
                    out.append("</span>")
                    open_span = False
                style = new
    emit(text[pos:])
    if open_span:
        out.append("</span>")
    return "".join(out)


__all__ = ["strip_ansi", "ansi_to_html"]
