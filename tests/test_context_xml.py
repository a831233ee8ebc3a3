"""XML escaping: whatever the text, a standard parser gives back exactly what went in."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from hypothesis import given, settings
from hypothesis import strategies as st

from skill_magics.core.prompt import xmltext

# Every code point, surrogates and the forbidden C0 controls included.
any_text = st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None))
hostile_bits = st.sampled_from(
    [
        "</instructions>",
        "]]>",
        "<![CDATA[",
        "\x00",
        "\x1b[31m",
        "&amp;",
        "&#0;",
        "\r\n",
        "\r",
        "\ud800",
        "\uffff",
        "\\x00",
        "\\\\",
        '"',
        "'",
        "<script_output>",
        "\t",
    ]
)
hostile_text = st.lists(st.one_of(any_text, hostile_bits), max_size=12).map("".join)


def roundtrip_text(value: str) -> str:
    xml = xmltext.element("t", value, {"source": "x"})
    elem = ET.fromstring(xml)
    return xmltext.decoded_text(elem.text, elem.get("sanitized"))


def roundtrip_attr(value: str) -> str:
    elem = ET.fromstring(xmltext.element("t", "", {"source": value}))
    return xmltext.decoded_text(elem.get("source"), elem.get("sanitized"), "source")


@settings(max_examples=400)
@given(hostile_text)
def test_text_roundtrips_exactly(value):
    assert roundtrip_text(value) == value


@settings(max_examples=400)
@given(hostile_text)
def test_attribute_roundtrips_exactly(value):
    assert roundtrip_attr(value) == value


@settings(max_examples=300)
@given(hostile_text)
def test_allowed_text_is_carried_verbatim_without_sanitizing(value):
    allowed = xmltext.FORBIDDEN.sub("", value)
    elem = ET.fromstring(xmltext.element("t", allowed))
    assert elem.get("sanitized") is None
    assert (elem.text or "") == allowed


@settings(max_examples=300)
@given(hostile_text)
def test_documented_substitution_for_forbidden_chars(value):
    elem = ET.fromstring(xmltext.element("t", value))
    if xmltext.has_forbidden(value):
        assert elem.get("sanitized") == "text"
        assert (elem.text or "") == xmltext.escape_backslashes(value)
        assert not xmltext.has_forbidden(elem.text or "")
    else:
        assert (elem.text or "") == value


@given(hostile_text)
def test_escape_backslashes_is_reversible(value):
    assert xmltext.unescape_backslashes(xmltext.escape_backslashes(value)) == value


def test_examples():
    assert xmltext.escape_backslashes("a\x00b\\c\ud800") == "a\\x00b\\\\c\\ud800"
    assert xmltext.element("x", "]]></instructions>") == "<x>]]&gt;&lt;/instructions></x>"
    assert xmltext.element("x", None, {"a": 'q"\n'}) == '<x a="q&quot;&#10;"/>'
    assert 'sanitized="text a"' in xmltext.element("x", "\x01", {"a": "\x02"})


def test_code_stays_readable_and_the_envelope_cannot_be_forged():
    # Issue 31 item 8: one rule for <skill_context> and <skill_content>; code a model reads
    # is written as it is (CDATA), never H&lt;sub&gt;2&lt;/sub&gt;O.
    code = "Write H<sub>2</sub>O; run `make && ./go < in.txt` and <Button onClick={f}/>"
    xml = xmltext.element("instructions", code)
    assert code in xml and "&lt;sub" not in xml and "&amp;" not in xml
    assert ET.fromstring(xml).text == code
    # What must NOT pass as is: a tag of the envelope itself, in any case or spacing.
    for forged in ("</instructions>", "</ SKILL_CONTEXT>", "<skill_context id='x'>", "<file>"):
        xml = xmltext.element("instructions", f"a{forged}b")
        assert "&lt;" in xml and f"a{forged}b" not in xml, xml
        assert ET.fromstring(xml).text == f"a{forged}b"
    # Tags that merely start like one of ours stay readable.
    assert "<filename>" in xmltext.element("x", "<filename> & <errors>")
