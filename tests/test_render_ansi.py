"""ANSI handling: colours become escaped spans, everything else disappears, never garbage."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_render_support import parse_html

from skill_magics.notebook.render.ansi import ansi_to_html, strip_ansi


@pytest.mark.parametrize(
    ("raw", "plain"),
    [
        ("\x1b[31mred\x1b[0m", "red"),
        ("\x1b[1;4;38;5;208mx\x1b[m", "x"),
        ("\x1b[38;2;10;20;30mrgb\x1b[39m", "rgb"),
        ("\x1b[2K\x1b[1Gclear\x1b[?25l", "clear"),  # erase line, cursor column, hide cursor
        ("\x1b]0;window title\x07after", "after"),
        ("\x1b]8;;https://x.org\x1b\\link\x1b]8;;\x1b\\", "link"),  # OSC 8 hyperlink
        ("\x1b(Bcharset", "charset"),
        ("cut \x1b[3", "cut "),  # display truncation split a sequence
        ("cut \x1b", "cut "),
        ("10%\r50%\r100%\ndone", "100%\ndone"),
        ("crlf\r\nkept\r\n", "crlf\nkept\n"),
        ("bell\x07nul\x00tab\tend", "bell\u2407nul\u2400tab\tend"),
    ],
)
def test_strip_ansi(raw: str, plain: str) -> None:
    assert strip_ansi(raw) == plain


def test_basic_and_bright_colours_and_bold() -> None:
    assert ansi_to_html("\x1b[32mok\x1b[0m") == '<span style="color:#00a250">ok</span>'
    assert ansi_to_html("\x1b[91;1mE\x1b[22mx") == (
        '<span style="color:#b22b31;font-weight:bold">E</span><span style="color:#b22b31">x</span>'
    )
    assert ansi_to_html("\x1b[44m \x1b[49m") == '<span style="background-color:#208ffb"> </span>'


def test_256_and_truecolour() -> None:
    assert ansi_to_html("\x1b[38;5;196mr") == '<span style="color:#ff0000">r</span>'
    assert ansi_to_html("\x1b[38;5;244mg") == '<span style="color:#808080">g</span>'
    assert ansi_to_html("\x1b[48;2;1;2;3mb") == '<span style="background-color:#010203">b</span>'
    assert ansi_to_html("\x1b[38;5mmalformed") == "malformed"


def test_html_is_escaped_inside_and_outside_spans() -> None:
    out = ansi_to_html("<b>\x1b[31m</span><script>x</script>\x1b[0m&")
    assert out == (
        '&lt;b&gt;<span style="color:#e75c58">&lt;/span&gt;&lt;script&gt;x&lt;/script&gt;'
        "</span>&amp;"
    )
    parse_html(out)


def test_reset_without_style_emits_no_empty_spans() -> None:
    assert ansi_to_html("\x1b[0mplain\x1b[0m") == "plain"


printable_with_escapes = st.text(
    alphabet=st.sampled_from(list("ab<>&\"'\n\r\t;[]m0123456789") + ["\x1b", "\x07", "\x00"]),
    max_size=200,
)


@given(printable_with_escapes)
def test_any_input_gives_balanced_html_without_escape_bytes(raw: str) -> None:
    parse_html(f"<pre>{ansi_to_html(raw)}</pre>")
    plain = strip_ansi(raw)
    assert "\x1b" not in plain and "\x00" not in plain and "\r" not in plain
