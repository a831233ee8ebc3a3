"""available_skills: byte-for-byte the <available_skills> block of skills-ref's to_prompt."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import skills_ref.prompt as skills_ref_prompt
from manager_support import manager_for

from skill_magics.core.prompt.context import available_skills

EXAMPLES = Path(__file__).resolve().parent.parent / "skill_magics" / "examples" / "skills"


def reference(manager) -> str:
    """skills-ref's own output for the same skill directories, in the same order."""
    dirs = [Path(m.path).parent for m in manager.list_skills()]
    return skills_ref_prompt.to_prompt(dirs)


def test_empty_catalog_is_no_block(tmp_path):
    # The client guide: no skills, no block (skills-ref writes an empty block here).
    manager = manager_for(tmp_path)
    catalog = available_skills(manager)
    assert catalog == ""
    assert catalog.entries == () and catalog.omitted == () and catalog.tokens == 0


def test_bundled_examples_match_skills_ref_byte_for_byte():
    manager = manager_for(EXAMPLES)
    assert manager.list_skills(), "bundled example skills are missing"
    assert available_skills(manager) == reference(manager)


def test_escaping_matches_skills_ref(tmp_path, make_skill):
    # Frontmatter as raw YAML text: the quoting is part of what the reference must match.
    make_skill(tmp_path, "alpha", 'name: alpha\ndescription: "Tom & Jerry\'s <b>bold</b> tool"')
    make_skill(tmp_path, "beta", "name: beta\ndescription: Plain description, with a comma")
    make_skill(tmp_path, "gamma", "name: gamma\ndescription: 'Unicode ✓ — ünïcode > ascii'")
    manager = manager_for(tmp_path)
    catalog = available_skills(manager)
    assert catalog == reference(manager)
    assert "Tom &amp; Jerry&#x27;s &lt;b&gt;bold&lt;/b&gt; tool" in catalog
    root = ET.fromstring(catalog)
    assert [s.find("name").text.strip() for s in root] == ["alpha", "beta", "gamma"]


def test_location_is_the_absolute_resolved_skill_md(tmp_path, make_skill):
    real = tmp_path / "real"
    make_skill(real, "linked")
    (tmp_path / "via").symlink_to(real, target_is_directory=True)
    manager = manager_for(tmp_path / "via")
    catalog = available_skills(manager)
    assert f"<location>\n{real.resolve() / 'linked' / 'SKILL.md'}\n</location>" in catalog
    assert catalog == reference(manager)


def test_names_select_and_order(tmp_path, make_skill):
    for name in ("one", "two", "three"):
        make_skill(tmp_path, name)
    manager = manager_for(tmp_path)
    catalog = available_skills(manager, ["two", "one"])
    dirs = [tmp_path / "two", tmp_path / "one"]
    assert catalog == skills_ref_prompt.to_prompt(dirs)
