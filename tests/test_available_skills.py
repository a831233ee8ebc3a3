"""The budgeted, filtered <available_skills> block (core/prompt/available_skills.py): nothing left
out silently, skills-ref's bytes by default."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import skills_ref.prompt as skills_ref_prompt
from manager_support import manager_for

from skill_magics.core.prompt.available_skills import MIN_DESCRIPTION, available_skills, shorten
from skill_magics.core.prompt.tokens import ESTIMATE_LABEL, TokenCounter

LONG = (
    "Extract text and tables from PDF files, fill in forms, merge and split documents, "
    "rotate pages and add watermarks. Use when the user mentions PDFs, forms or scanned "
    "documents and wants their content or a changed file back."
)


def _skills(tmp_path, make_skill, spec: dict[str, str], **extra_frontmatter) -> Path:
    for name, description in spec.items():
        fm = {"name": name, "description": description, **extra_frontmatter.get(name, {})}
        make_skill(tmp_path, name, fm)
    return tmp_path


@pytest.fixture
def five(tmp_path, make_skill):
    spec = {f"skill-{c}": f"{LONG} ({c})" for c in "abcde"}
    return manager_for(_skills(tmp_path, make_skill, spec))


def _listed(catalog: str) -> list[str]:
    if not catalog:
        return []
    return [s.find("name").text.strip() for s in ET.fromstring(catalog).iter("skill")]


def test_unbudgeted_is_skills_ref_byte_for_byte(five):
    dirs = [Path(m.path).parent for m in five.list_skills()]
    catalog = available_skills(five)
    assert catalog == skills_ref_prompt.to_prompt(dirs)
    assert catalog.omitted == () and catalog.shortened == ()
    assert [e.name for e in catalog.entries] == [f"skill-{c}" for c in "abcde"]


def test_include_and_exclude_globs(five):
    catalog = available_skills(five, include=["skill-[cd]", "skill-a"], exclude="skill-d")
    # include order is priority order: the first pattern's skills first
    assert _listed(catalog) == ["skill-c", "skill-a"]
    reasons = {o.name: o.reason for o in catalog.omitted}
    assert reasons["skill-d"] == "excluded by 'skill-d'"
    assert reasons["skill-b"].startswith("not matched by --include")
    assert set(reasons) == {"skill-b", "skill-d", "skill-e"}
    # filtered skills are hidden from the model entirely: no note in the text
    assert "skill-b" not in catalog and "<!--" not in catalog
    # the same selection is still skills-ref's format byte for byte
    dirs = [Path(five.get_skill(n).base_dir) for n in ("skill-c", "skill-a")]
    assert catalog == skills_ref_prompt.to_prompt(dirs)


def test_disable_model_invocation_is_left_out(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "manual",
        {"name": "manual", "description": "Deploys.", "disable-model-invocation": True},
    )
    make_skill(tmp_path, "quoted", 'name: quoted\ndescription: d\ndisable-model-invocation: "true"')
    make_skill(
        tmp_path,
        "auto",
        {"name": "auto", "description": "Helps.", "disable-model-invocation": False},
    )
    catalog = available_skills(manager_for(tmp_path))
    assert _listed(catalog) == ["auto"]
    assert {o.name: o.reason for o in catalog.omitted} == {
        "manual": "disable-model-invocation: true",
        "quoted": "disable-model-invocation: true",
    }


def test_nothing_left_means_no_block(five):
    catalog = available_skills(five, exclude="*")
    assert catalog == "" and len(catalog.omitted) == 5 and catalog.tokens == 0


def test_budget_shortens_first_and_says_so(five):
    full = available_skills(five)
    catalog = available_skills(five, max_chars=len(full) - 200)
    assert len(catalog) <= len(full) - 200
    assert _listed(catalog) == [f"skill-{c}" for c in "abcde"]  # nobody dropped
    assert set(catalog.shortened) == {f"skill-{c}" for c in "abcde"}
    for entry in catalog.entries:
        assert entry.description.endswith("…") and len(entry.description) >= MIN_DESCRIPTION
        assert LONG.startswith(entry.description[:-1].rstrip())
        assert entry.original_chars == len(LONG) + 4
    assert "Descriptions shortened to fit (ending in …): skill-a, skill-b" in catalog
    ET.fromstring(catalog)  # the note is a comment: still one XML element


def test_budget_drops_from_the_end_and_names_them(five):
    catalog = available_skills(five, max_tokens=250, counter=None)
    assert catalog.tokens <= 250 and catalog.counter == ESTIMATE_LABEL
    kept = _listed(catalog)
    assert kept == [f"skill-{c}" for c in "abcde"][: len(kept)] and 0 < len(kept) < 5
    dropped = [f"skill-{c}" for c in "abcde"][len(kept) :]
    assert list(catalog.dropped) == dropped
    assert all(o.reason == "budget" for o in catalog.omitted)
    assert f"not listed to fit the catalog budget: {', '.join(dropped)}." in catalog
    # every description the model sees is whole, or ends in the ellipsis and is named
    for entry in catalog.entries:
        assert entry.description == f"{LONG} ({entry.name[-1]})" or (
            entry.shortened and entry.description.endswith("…")
        )


def test_names_set_the_priority(five):
    catalog = available_skills(five, ["skill-e", "skill-a", "skill-c"], max_tokens=160)
    assert _listed(catalog) == ["skill-e"] and list(catalog.dropped) == ["skill-a", "skill-c"]


def test_budget_too_small_for_anything(five):
    catalog = available_skills(five, max_chars=10)
    assert catalog == "" and len(catalog.dropped) == 5


def test_both_budgets_hold(five):
    catalog = available_skills(five, max_chars=900, max_tokens=400)
    assert len(catalog) <= 900 and catalog.tokens <= 400


def test_fits_exactly_changes_nothing(five):
    full = available_skills(five)
    assert available_skills(five, max_chars=len(full)) == full
    assert available_skills(five, max_tokens=full.tokens).shortened == ()


def test_counts_per_skill_and_total_with_a_real_tokenizer(five):
    import tiktoken

    # A byte-level BPE encoding built offline: one token per UTF-8 byte.
    encoding = tiktoken.Encoding(
        name="bytes",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )
    catalog = available_skills(five, counter=encoding, max_tokens=1000)
    assert catalog.counter == "tiktoken bytes"
    assert catalog.tokens == len(catalog.encode()) <= 1000
    for entry in catalog.entries:
        assert entry.tokens == len(entry.description.encode()) + (
            entry.chars - len(entry.description)
        )
    assert catalog.dropped, "the budget, counted in bytes, should have left skills out"
    assert catalog.tokens < available_skills(five, counter=encoding).tokens


def test_custom_counter_and_report(five):
    words = TokenCounter("words", lambda text: len(text.split()))
    catalog = available_skills(five, counter=words, exclude="skill-e")
    report = catalog.report()
    assert "total: 4 skills" in report and "(words)" in report
    assert "skill-e" in report and "left out: excluded by 'skill-e'" in report
    assert catalog.tokens == len(catalog.split())


def test_guide_format_is_well_formed_and_escaped(tmp_path, make_skill):
    make_skill(tmp_path, "amp", {"name": "amp", "description": "Tom & <Jerry> \x01 bell"})
    catalog = available_skills(manager_for(tmp_path), layout="guide")
    root = ET.fromstring(catalog)
    skill = root.find("skill")
    assert skill.find("name").text == "amp"
    assert skill.find("description").get("sanitized") == "text"
    assert catalog.startswith("<available_skills>\n  <skill>\n    <name>amp</name>")


def test_bad_arguments(five):
    with pytest.raises(ValueError, match="layout"):
        available_skills(five, layout="json")
    with pytest.raises(ValueError, match="max_tokens"):
        available_skills(five, max_tokens=-1)


def test_shorten_cuts_at_a_word():
    assert shorten("alpha beta gamma delta", 13) == "alpha beta…"
    assert shorten("short", 10) == "short"


def test_skills_catalog_is_the_deprecated_old_name(five):
    """``catalog`` is core/catalog/ (skills on disk); the block's old name still works for one
    release, warns naming the new one, and gives the same block."""
    import warnings

    import skill_magics
    from skill_magics.core.prompt.context import skills_catalog

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new = skill_magics.available_skills(five, max_tokens=300)
    with pytest.warns(
        DeprecationWarning,
        match=r"^skills_catalog\(\) is deprecated .*use "
        r"available_skills\(\) instead$",
    ) as caught:
        old = skill_magics.skills_catalog(five, max_tokens=300)
    assert caught[0].filename == __file__
    assert (
        old == new and old.omitted == new.omitted and skills_catalog is skill_magics.skills_catalog
    )
    assert skills_catalog.__name__ == "skills_catalog"
