"""HTML checks shared by the render tests (imported as a module), plus their own tests.

``parse_html(markup)`` parses with the stdlib parser and fails on mismatched or unclosed
tags, so "well-formed-ish" is checked for real, not by eye.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html.parser import HTMLParser

import pytest

VOID = {"br", "hr", "img", "input", "meta", "link", "wbr", "col", "source"}


@dataclass
class ParsedHTML:
    tags: list[str] = field(default_factory=list)  # every start tag, in order
    text: str = ""  # all character data, entities decoded


class _Checker(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.result = ParsedHTML()
        self._text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.result.tags.append(tag)
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in VOID:
            return
        assert self.stack, f"</{tag}> closes nothing"
        top = self.stack.pop()
        assert top == tag, f"</{tag}> closes <{top}>"

    def handle_data(self, data: str) -> None:
        self._text.append(data)


def parse_html(markup: str) -> ParsedHTML:
    """Parse ``markup``; assert balanced tags, no <script>, no raw ESC byte."""
    assert "\x1b" not in markup, "raw escape byte in HTML"
    checker = _Checker()
    checker.feed(markup)
    checker.close()
    assert not checker.stack, f"unclosed tags: {checker.stack}"
    checker.result.text = "".join(checker._text)
    assert "script" not in checker.result.tags, "a <script> element got through"
    return checker.result


def test_parse_html_accepts_balanced_markup() -> None:
    parsed = parse_html("<div><p>a &lt;b&gt;</p><br></div>")
    assert parsed.tags == ["div", "p", "br"]
    assert parsed.text == "a <b>"


@pytest.mark.parametrize(
    "bad", ["<div><p></div>", "<div>", "</p>", "<script>x</script>", "a\x1b[31m"]
)
def test_parse_html_rejects_broken_markup(bad: str) -> None:
    with pytest.raises(AssertionError):
        parse_html(bad)
