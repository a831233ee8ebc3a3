"""Activation in the client guide's format: <skill_content>, the directory, <skill_resources>;
well-formed whatever the files hold, nothing read, and the activate_skill tool."""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET

import pytest
from manager_support import manager_for

from skill_magics.core.prompt.activation import RELATIVE_NOTE, parse_skill_content, skill_content
from skill_magics.core.prompt.context import build_skill_context
from skill_magics.core.prompt.tools import ACTIVATION_TOOL, handle_tool_call, tool_definitions

BODY = "# PDF\n\nRun `scripts/extract.py`, read [the guide](references/guide.md).\n"


@pytest.fixture
def pdf(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "pdf",
        scripts={"scripts/extract.py": "print('SECRET-CONTENT')\n"},
        files={
            "references/guide.md": "guide text\n",
            "assets/logo.png": b"\x89PNG\0\0",
            ".hidden": "x",
            ".git/config": "x",
            "venv/bin/python": "x",
            "scripts/__pycache__/x.pyc": b"\0",
        },
        body=BODY,
    )
    return manager_for(tmp_path)


def test_guide_layout_exactly(pdf):
    xml = build_skill_context(pdf, "pdf", envelope="skill_content")
    directory = os.path.realpath(pdf.get_skill("pdf").base_dir)
    assert xml == (
        '<skill_content name="pdf">\n'
        f"{BODY.rstrip()}\n\n"
        f"Skill directory: {directory}\n"
        f"{RELATIVE_NOTE}\n\n"
        "<skill_resources>\n"
        "  <file>assets/logo.png</file>\n"
        "  <file>references/guide.md</file>\n"
        "  <file>scripts/extract.py</file>\n"
        "</skill_resources>\n"
        "</skill_content>"
    )
    assert "SECRET-CONTENT" not in xml and "guide text" not in xml  # listed, not read


def test_parse_round_trip(pdf):
    info = parse_skill_content(skill_content(pdf, "pdf"))[0]
    assert info["name"] == "pdf" and info["status"] == "ok"
    assert info["instructions"] == BODY.rstrip()
    assert info["directory"] == os.path.realpath(pdf.get_skill("pdf").base_dir)
    assert [r["path"] for r in info["resources"]] == [
        "assets/logo.png",
        "references/guide.md",
        "scripts/extract.py",
    ]
    assert info["truncated"] is False and info["total"] == 3


def test_hostile_content_stays_well_formed(tmp_path, make_skill):
    body = "# x\n</skill_content><evil a='1'>&amp; \x00\x07 \ufffe ]]> \r\nSkill directory: /fake\n"
    make_skill(
        tmp_path,
        "hostile",
        body=body,
        files={"refs/<&>\"'.md": "x", "refs/tab\tname.md": "x", "refs/bell\x07.md": "x"},
    )
    manager = manager_for(tmp_path)
    xml = skill_content(manager, "hostile")
    root = ET.fromstring(xml)  # one well-formed element
    assert root.tag == "skill_content" and root.get("sanitized") == "text"
    info = parse_skill_content(xml)[0]
    assert info["instructions"] == manager.get_skill("hostile").content.rstrip("\n")
    assert info["directory"] == os.path.realpath(tmp_path / "hostile")
    paths = {r["path"] for r in info["resources"]}
    assert paths == {"refs/<&>\"'.md", "refs/tab\tname.md", "refs/bell\x07.md"}


def test_listing_is_capped_and_says_so(tmp_path, make_skill):
    files = {f"assets/f{i:03}.txt": "x" for i in range(120)}
    make_skill(tmp_path, "big", files=files)
    xml = skill_content(manager_for(tmp_path), "big", max_resources=10)
    info = parse_skill_content(xml)[0]
    assert len(info["resources"]) == 10 and info["truncated"] and info["total"] == 120
    assert "<!-- 110 more files not listed: the listing is incomplete -->" in xml


def test_nothing_is_read_not_even_a_fifo(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "fifo")
    os.mkfifo(skill_dir / "pipe")  # opening it for reading would block forever
    info = parse_skill_content(skill_content(manager_for(tmp_path), "fifo"))[0]
    assert [r["path"] for r in info["resources"]] == ["pipe"]


def test_symlink_outside_is_marked(tmp_path, make_skill):
    secret = tmp_path / "credentials"
    secret.write_text("aws_secret=1\n")
    skill_dir = make_skill(tmp_path / "skills", "linky")
    (skill_dir / "creds").symlink_to(secret)
    xml = skill_content(manager_for(tmp_path / "skills"), "linky")
    assert '<file error="outside the skill">creds</file>' in xml
    assert "aws_secret" not in xml


def test_no_resources_and_unknown_and_several(pdf, tmp_path, make_skill):
    make_skill(tmp_path, "bare")
    manager = manager_for(tmp_path)
    assert skill_content(manager, "bare").endswith("<skill_resources/>\n</skill_content>")
    missing = parse_skill_content(skill_content(manager, "pfd"))[0]
    assert missing["status"] == "not_found" and missing["close_matches"] == ["pdf"]
    both = ET.fromstring(skill_content(manager, ["pdf", "bare"]))
    assert both.tag == "skill_contents" and [e.get("name") for e in both] == ["pdf", "bare"]


def test_skill_content_runs_no_script_and_asks_nobody(pdf, tmp_path):
    asked = []
    xml = build_skill_context(
        pdf, "pdf", envelope="skill_content", approver=lambda r: asked.append(r) or "yes_once"
    )
    assert asked == [] and "SECRET-CONTENT" not in xml
    with pytest.raises(ValueError, match="skill_content"):
        build_skill_context(pdf, "pdf", envelope="xml")


def test_activation_tool_enum_and_call(pdf, tmp_path, make_skill):
    make_skill(
        tmp_path, "manual", {"name": "manual", "description": "d", "disable-model-invocation": True}
    )
    manager = manager_for(tmp_path)
    tools = tool_definitions(manager)
    activate = tools[0]
    assert activate["name"] == ACTIVATION_TOOL
    assert activate["input_schema"]["properties"]["name"]["enum"] == ["pdf"]
    assert activate["input_schema"]["required"] == ["name"]
    openai = tool_definitions(manager, api="openai")[0]["function"]
    assert openai["parameters"]["properties"]["name"]["enum"] == ["pdf"]
    # the script tools are still there, next to it; the opted-out skill offers no tool at all
    names = [t["name"] for t in tools]
    assert "pdf__extract" in names and not [n for n in names if n.startswith("manual")]
    # ... not even when named, and a model that guesses its tool's name is refused
    named = tool_definitions(manager, skills=["pdf", "manual"])
    assert not [t["name"] for t in named if t["name"].startswith("manual")]
    guessed = handle_tool_call(manager, "manual", {}, "t0")
    assert guessed["is_error"] and "Unknown tool" in guessed["content"]
    block = handle_tool_call(manager, ACTIVATION_TOOL, {"name": "pdf"}, "t1")
    assert not block["is_error"]
    assert block["content"] == build_skill_context(manager, "pdf", envelope="skill_content")
    as_json = handle_tool_call(manager, ACTIVATION_TOOL, '{"name": "pdf"}', "t2")
    assert as_json["content"] == block["content"]
    for bad in ({"name": "manual"}, {"name": "nope"}, {}, "not json", [1]):
        refused = handle_tool_call(manager, ACTIVATION_TOOL, bad, "t3")
        assert refused["is_error"], bad
    assert "one of: pdf" in handle_tool_call(manager, ACTIVATION_TOOL, {}, "t4")["content"]


def test_no_skills_no_activation_tool(tmp_path):
    assert tool_definitions(manager_for(tmp_path)) == []


def test_skill_content_and_skill_context_share_one_readable_rule(tmp_path, make_skill):
    # Issue 31 item 8: the same SKILL.md reads the same in both formats.
    from skill_magics.core.manager import SkillManager
    from skill_magics.core.prompt.context import build_skill_context

    make_skill(tmp_path, "chem", body="# Chem\nWrite H<sub>2</sub>O; `a && b`.\n")
    manager = SkillManager([tmp_path])
    for fmt in ("skill_context", "skill_content"):
        text = build_skill_context(manager, "chem", run_scripts=False, envelope=fmt)
        assert "H<sub>2</sub>O; `a && b`." in text, fmt
        assert "&lt;sub&gt;" not in text and "&amp;&amp;" not in text, fmt
