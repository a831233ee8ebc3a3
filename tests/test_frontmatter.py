"""SKILL.md frontmatter: lenient parsing, spec warnings, safe loading, version as text.

Hostile YAML (values Python cannot build, absurd nesting) is a SkillParseError that names the
line or the fix, never a crash.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st
from manager_support import posix_only

from skill_magics.core.catalog import frontmatter as fm
from skill_magics.core.catalog.frontmatter import (
    MAX_DEPTH,
    build_metadata,
    load_skill_metadata,
    name_problems,
    parse_allowed_tools,
    parse_frontmatter_yaml,
    parse_skill_md,
    read_frontmatter_text,
    split_frontmatter,
)
from skill_magics.core.base.errors import SkillParseError

SKILL_MD = Path("/skills/demo/SKILL.md")


def meta_of(text: str, path: Path = SKILL_MD):
    data, _, warnings = parse_skill_md(text)
    return build_metadata(data, path, warnings)


def doc(*lines: str, body: str = "# Body\n") -> str:
    return "---\n" + "\n".join(lines) + "\n---\n" + body


def test_basic_fields_and_body():
    m = meta_of(
        doc(
            "name: demo",
            "description: Does a thing.",
            "license: MIT",
            "compatibility: Python 3.10+",
            "allowed-tools: Bash Read",
            "metadata:",
            "  author: me",
            body="# Demo\n\nText.\n",
        )
    )
    assert (m.name, m.description, m.license, m.compatibility) == (
        "demo",
        "Does a thing.",
        "MIT",
        "Python 3.10+",
    )
    assert m.allowed_tools == ["Bash", "Read"]
    assert m.metadata == {"author": "me"}
    assert m.warnings == []
    assert m.path == SKILL_MD and m.base_dir == SKILL_MD.parent
    _, body, _ = parse_skill_md(doc("name: demo", "description: x", body="# Demo\n\nText.\n"))
    assert body == "# Demo\n\nText.\n"


def test_bom_and_crlf():
    text = "\ufeff---\r\nname: demo\r\ndescription: Works\r\n---\r\n# Body\r\nline\r\n"
    data, body, warnings = parse_skill_md(text)
    assert data == {"name": "demo", "description": "Works"}
    assert body == "# Body\nline\n"
    assert warnings == []


def test_delimiter_only_on_its_own_line():
    text = doc(
        "name: demo",
        "description: before --- after",
        "notes: |",
        "  a block with",
        "  ---",
        "  inside it",
        body="# Body\n\n---\n\nA horizontal rule stays in the body.\n",
    )
    data, body, _ = parse_skill_md(text)
    assert data["description"] == "before --- after"
    assert data["notes"] == "a block with\n---\ninside it\n"
    assert "---\n\nA horizontal rule" in body


def test_delimiter_with_trailing_spaces_closes():
    data, body, _ = parse_skill_md("---  \nname: demo\ndescription: x\n---\t\nbody\n")
    assert data["name"] == "demo" and body == "body\n"


def test_folded_and_literal_descriptions():
    folded = meta_of(doc("name: demo", "description: >", "  Folded text", "  on two lines."))
    assert folded.description == "Folded text on two lines."
    literal = meta_of(doc("name: demo", "description: |", "  Line one.", "  Line two."))
    assert literal.description == "Line one.\nLine two."


def test_unquoted_colon_is_retried_with_warning():
    m = meta_of(doc("name: demo", "description: Use this when: you need it"))
    assert m.description == "Use this when: you need it"
    assert len(m.warnings) == 1
    assert "unquoted ': '" in m.warnings[0] and "'description'" in m.warnings[0]


def test_colon_retry_keeps_quotes_and_block_scalars_intact():
    text = doc(
        "name: demo",
        'description: Run it: then "check" the \\ output',
        "notes: |",
        "  key: value: stays literal",
    )
    data, _, warnings = parse_skill_md(text)
    assert data["description"] == 'Run it: then "check" the \\ output'
    assert data["notes"] == "key: value: stays literal\n"
    assert warnings and "'notes'" not in warnings[0]


def test_valid_colon_needs_no_retry():
    data, _, warnings = parse_skill_md(doc("name: demo", 'description: "Quoted: fine"'))
    assert data["description"] == "Quoted: fine" and warnings == []


def test_unknown_keys_kept_in_metadata_with_warning():
    m = meta_of(doc("name: demo", "description: x", "author: Ann", "tags: [a, b]"))
    assert m.metadata == {"author": "Ann", "tags": ["a", "b"]}
    assert any("unknown frontmatter key 'author'" in w for w in m.warnings)
    assert any("unknown frontmatter key 'tags'" in w for w in m.warnings)


def test_unknown_key_does_not_override_metadata_value():
    m = meta_of(doc("name: demo", "description: x", "author: B", "metadata:", "  author: A"))
    assert m.metadata["author"] == "A"
    assert any("clashes with metadata.author" in w for w in m.warnings)


def test_metadata_not_a_mapping_is_ignored_with_warning():
    m = meta_of(doc("name: demo", "description: x", "metadata: just text"))
    assert m.metadata == {}
    assert any("'metadata' should be a mapping" in w for w in m.warnings)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("Bash Read Write", ["Bash", "Read", "Write"]),
        ("Bash, Read, Write", ["Bash", "Read", "Write"]),
        ("Bash,Read", ["Bash", "Read"]),
        ("Bash(git:*) Read", ["Bash(git:*)", "Read"]),
        ('"Bash(git status:*), Read"', ["Bash(git status:*)", "Read"]),
        ("[Bash, Read]", ["Bash", "Read"]),
        ("\n  - Bash(python:*)\n  - Read", ["Bash(python:*)", "Read"]),
        ('""', []),
    ],
)
def test_allowed_tools_spellings(value, expected):
    m = meta_of(doc("name: demo", "description: x", f"allowed-tools: {value}"))
    assert m.allowed_tools == expected


def test_allowed_tools_absent_is_none_and_bad_type_warns():
    assert meta_of(doc("name: demo", "description: x")).allowed_tools is None
    m = meta_of(doc("name: demo", "description: x", "allowed-tools: {a: 1}"))
    assert m.allowed_tools is None
    assert any("'allowed-tools' should be a string or a list" in w for w in m.warnings)
    assert parse_allowed_tools(None) == (None, None)


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (["version: 1.0"], "1.0"),
        (["version: 1.10"], "1.10"),
        (["version: 2"], "2"),
        (['version: "3.0"'], "3.0"),
        (["version: 1.2.3"], "1.2.3"),
        (["metadata:", "  version: 1.0"], "1.0"),
        (["metadata: {version: 2.50}"], "2.50"),
        (["version: 4.0", "metadata:", "  version: 1.0"], "4.0"),
        ([], None),
        (["version:"], None),
    ],
)
def test_version_is_read_as_written(lines, expected):
    m = meta_of(doc("name: demo", "description: x", *lines))
    assert m.version == expected
    if "metadata" in "".join(lines):
        assert isinstance(m.metadata.get("version"), str)


def test_text_fields_keep_yaml_implicit_types_as_text():
    # YAML 1.1 would make these a bool, an int and a date.
    m = meta_of(
        doc("name: demo", "description: yes", "license: 2024", "compatibility: 2024-01-01"),
    )
    assert (m.description, m.license, m.compatibility) == ("yes", "2024", "2024-01-01")


@pytest.mark.parametrize(
    ("name", "fragment"),
    [
        ("PDF", "may only contain lowercase letters a-z, digits and hyphens"),
        ("pdf_tools", "may only contain lowercase letters a-z, digits and hyphens"),
        ("-pdf", "must not start or end with a hyphen"),
        ("pdf-", "must not start or end with a hyphen"),
        ("pdf--tools", "must not contain consecutive hyphens"),
        ("a" * 65, "is 65 characters; the spec allows 1-64"),
    ],
)
def test_name_rules_warn_with_exact_reason(name, fragment):
    m = meta_of(doc(f"name: {name}", "description: x"), Path(f"/s/{name}/SKILL.md"))
    assert m.name == name  # a warning, not a failure
    assert any(fragment in w for w in m.warnings), m.warnings


def test_name_must_match_directory():
    m = meta_of(doc("name: other", "description: x"))
    assert m.name == "other"
    assert "name 'other' does not match its directory name 'demo'" in m.warnings


def test_valid_names_have_no_problems():
    for name in ("a", "pdf-tools", "x1-2y", "a" * 64):
        assert name_problems(name, name) == []


def test_missing_name_uses_directory_name():
    m = meta_of(doc("description: x"))
    assert m.name == "demo"
    assert any("no 'name'" in w for w in m.warnings)


def test_long_description_and_compatibility_warn():
    m = meta_of(doc("name: demo", f"description: {'d' * 1025}", f"compatibility: {'c' * 501}"))
    assert any("description is 1025 characters" in w for w in m.warnings)
    assert any("compatibility is 501 characters" in w for w in m.warnings)
    ok = meta_of(doc("name: demo", f"description: {'d' * 1024}", f"compatibility: {'c' * 500}"))
    assert ok.warnings == []


@pytest.mark.parametrize("lines", [["name: demo"], ["name: demo", "description: ''"]])
def test_missing_or_empty_description_is_an_error(lines):
    data, _, warnings = parse_skill_md(doc(*lines))
    with pytest.raises(SkillParseError, match="no 'description'"):
        build_metadata(data, SKILL_MD, warnings)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("# Just markdown\n", "does not start with a '---'"),
        ("---\nname: demo\ndescription: x\n", "never closed"),
        ("---\nname: [unclosed\ndescription: x\n---\n", "not valid YAML"),
        ("---\n- a\n- b\n---\n", "not a mapping"),
        ("---\njust a string\n---\n", "not a mapping"),
    ],
)
def test_fatal_problems_raise_skill_parse_error(text, match):
    with pytest.raises(SkillParseError, match=match):
        parse_skill_md(text)


def test_yaml_error_names_the_line():
    with pytest.raises(SkillParseError, match=r"at line \d+ of SKILL.md"):
        parse_skill_md("---\nname: demo\ndescription: [x\n  y: ]z\n---\n")


def test_empty_frontmatter_is_an_empty_mapping():
    data, _, _ = parse_skill_md("---\n---\nbody")
    assert data == {}


def test_safe_loading_only(tmp_path):
    marker = tmp_path / "pwned"
    text = doc(
        "name: demo",
        "description: x",
        f"evil: !!python/object/apply:os.system ['touch {marker}']",
    )
    with pytest.raises(SkillParseError):
        parse_skill_md(text)
    assert not marker.exists()


def test_c_loader_used_when_available():
    if hasattr(yaml, "CSafeLoader"):
        assert fm._Loader is yaml.CSafeLoader
    else:
        assert fm._Loader is yaml.SafeLoader


def test_split_frontmatter_returns_yaml_and_body():
    yaml_text, body = split_frontmatter("---\na: 1\n---\n\n\nbody\n")
    assert yaml_text == "a: 1\n" and body == "body\n"


def test_read_frontmatter_text_stops_at_closing_delimiter(tmp_path):
    path = tmp_path / "demo" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: demo\ndescription: x\n---\n" + b"BODY\n" * 200_000)
    text = read_frontmatter_text(path)
    assert text == "---\nname: demo\ndescription: x\n---\n"
    m = load_skill_metadata(path)
    assert (m.name, m.description) == ("demo", "x")


def test_read_frontmatter_text_handles_bom_crlf_and_no_frontmatter(tmp_path):
    path = tmp_path / "SKILL.md"
    path.write_bytes(b"\xef\xbb\xbf---\r\nname: demo\r\ndescription: x\r\n---\r\nbody\r\n")
    assert read_frontmatter_text(path).endswith("---\r\n")
    path.write_bytes(b"# no frontmatter\n" + b"x" * 100_000)
    assert read_frontmatter_text(path) == "# no frontmatter\n"
    with pytest.raises(SkillParseError):
        load_skill_metadata(path)


def test_invalid_utf8_in_frontmatter_does_not_crash(tmp_path):
    path = tmp_path / "demo" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(b"---\nname: demo\ndescription: caf\xe9 menu\n---\n")
    assert load_skill_metadata(path).description == "caf\ufffd menu"


@settings(max_examples=60, deadline=None)
@given(
    description=st.text(
        alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=200
    ).filter(lambda s: s.strip()),
    version=st.from_regex(r"\A[0-9]{1,3}(\.[0-9]{1,3}){0,2}\Z"),
)
def test_any_description_and_version_round_trip(description, version):
    dumped = yaml.safe_dump(
        {"name": "demo", "description": description, "version": version}, allow_unicode=True
    )
    m = meta_of(f"---\n{dumped}---\n")
    assert m.description == description.strip()
    assert m.version == version


@pytest.mark.parametrize("shift", range(-6, 7))
def test_closing_delimiter_split_across_read_blocks(tmp_path, shift):
    # Put a `----` line (not a delimiter) and then the real `---` around the 4 KB block edge.
    head = b"---\nname: demo\ndescription: x\nnotes: |\n  "
    pad = b"a" * (fm._BLOCK - len(head) - 1 + shift)
    path = tmp_path / "demo" / "SKILL.md"
    path.parent.mkdir()
    path.write_bytes(head + pad + b"\n  ----\n---\nbody\n" + b"B" * 20_000)
    text = read_frontmatter_text(path)
    assert text.endswith("  ----\n---\n")
    assert load_skill_metadata(path).name == "demo"


def test_frontmatter_longer_than_one_block(tmp_path):
    path = tmp_path / "demo" / "SKILL.md"
    path.parent.mkdir()
    description = "word " * 3000  # ~15 KB
    path.write_text(f"---\nname: demo\ndescription: {description}\n---\nbody\n")
    m = load_skill_metadata(path)
    assert m.description == description.strip()
    assert any("description is" in w for w in m.warnings)


_TOOL = st.one_of(
    st.from_regex(r"\A[A-Z][A-Za-z]{1,8}\Z"),
    st.from_regex(r"\ABash\([a-z]{1,6}( [a-z]{1,6})?:\*\)\Z"),
)


@settings(max_examples=80, deadline=None)
@given(tools=st.lists(_TOOL, min_size=1, max_size=6), sep=st.sampled_from([" ", ", ", ",", "  "]))
def test_allowed_tools_round_trip_any_separator(tools, sep):
    assert parse_allowed_tools(sep.join(tools)) == (tools, None)
    assert parse_allowed_tools(tools) == (tools, None)


# -- hostile YAML: a SkillParseError that names the fix, never a crash ------------------------


@posix_only
def test_the_bad_value_is_named_by_its_line_of_skill_md():
    with pytest.raises(SkillParseError, match=r"at line 5 of SKILL\.md"):
        parse_frontmatter_yaml("name: a\ndescription: d\nmetadata:\n  updated: 2024-02-30\n")


@posix_only
@pytest.mark.parametrize(
    "nesting",
    [
        pytest.param("x: " + "[" * 25_000 + "]" * 25_000 + "\n", id="flow"),
        pytest.param("x:\n" + "- " * 25_000 + "a\n", id="block"),
    ],
)
def test_absurd_nesting_is_refused_before_libyaml_can_crash(tmp_path, nesting, make_skill):
    # ~50 KB, under the 256 KB frontmatter cap; the C composer segfaulted on it. A separate
    # process, so a regression fails this test instead of killing the test run.
    make_skill(tmp_path / "skills", "good", "name: good\ndescription: d\n")
    make_skill(tmp_path / "skills", "evil", f"name: evil\ndescription: d\n{nesting}")
    code = textwrap.dedent(
        """
        import sys
        from skill_magics import SkillManager
        manager = SkillManager([sys.argv[1]])
        print([m.name for m in manager.list_skills()])
        print([w for w in manager.warnings if "evil" in w][0])
        """
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "skills")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    listed, warning = proc.stdout.splitlines()
    assert listed == "['good']"
    assert f"more than {MAX_DEPTH} levels deep" in warning and "flatten it" in warning


@posix_only
def test_nesting_limit_boundary():
    # The top-level mapping counts as one level.
    ok = "x: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n"
    data, _ = parse_frontmatter_yaml(ok)
    assert "x" in data
    with pytest.raises(SkillParseError, match="levels deep"):
        parse_frontmatter_yaml("x: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n")


@posix_only
@pytest.mark.parametrize("opener", ["[", "{a: "])
def test_our_nesting_message_speaks_first_whatever_libyaml_stops(opener):
    # PyYAML 6.0.4's libyaml stops deep flow nesting itself while its scanner looks ahead
    # ("exceeded maximum nesting depth", default 1000 levels); our limit must still be the
    # one a skill author reads. A libyaml limit below ours makes that happen at depth 100;
    # PyYAML without the control (6.0 to 6.0.3, scripts/pyyaml-floor.sh) runs the same text.
    closer = "]" if opener == "[" else "}"
    text = "x: " + opener * 100 + "1" + closer * 100 + "\n"
    cyaml = getattr(yaml, "_yaml", None)
    get_level = getattr(cyaml, "_get_max_nest_level", None)
    set_level = getattr(cyaml, "_set_max_nest_level", None)
    before = get_level() if get_level is not None else -1
    try:
        if set_level is not None and before != -1:
            set_level(MAX_DEPTH // 2)
        with pytest.raises(SkillParseError, match=f"more than {MAX_DEPTH} levels deep.*flatten it"):
            parse_frontmatter_yaml(text)
        # Not every libyaml error is taken for nesting: a broken document keeps its own.
        with pytest.raises(SkillParseError) as broken:
            parse_frontmatter_yaml("x: " + "[" * 30 + "\n" + "y: " * 80 + "\n")
        assert "levels deep" not in str(broken.value)
    finally:
        if set_level is not None and before != -1:
            set_level(before)


@posix_only
def test_long_flat_frontmatter_is_not_mistaken_for_deep_nesting():
    # Far more ':' and '-' than MAX_DEPTH: the cheap bound is exceeded, the exact scan passes.
    lines = "".join(f"  key-{i}: 'value - {i}: with colons'\n" for i in range(200))
    data, _ = parse_frontmatter_yaml("metadata:\n" + lines)
    assert len(data["metadata"]) == 200


@posix_only
@pytest.mark.parametrize(
    "text",
    [
        "a: 2024-13-01\n",
        "a: 2024-02-30T10:00:00Z\n",
        "- 1\n- 2\n",
        "a: [\n",
        "x: " + "{a: " * 100 + "1" + "}" * 100 + "\n",
        "\tbad: tab\n",
    ],
)
def test_hostile_yaml_raises_only_skill_parse_error(text):
    with pytest.raises(SkillParseError):
        parse_frontmatter_yaml(text)
