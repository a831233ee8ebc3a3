"""%skills available with budget and globs, %skills validate, %skill_context --envelope
skill_content, in a real IPython shell."""

from __future__ import annotations

import logging
import xml.etree.ElementTree as ET

import pytest

from skill_magics.core.prompt.activation import parse_skill_content
from skill_magics.core.prompt.available_skills import available_skills
from skill_magics.notebook.extension import get_magics
from skill_magics.notebook.magics.context import AvailableSkillsText

LONG = "Does many things with documents and files, described at length for the model. " * 3


@pytest.fixture
def shell(tmp_path, make_skill, ipython_shell):
    skills = tmp_path / "skills"
    for name in ("pdf-a", "pdf-b", "sheet", "zip"):
        make_skill(skills, name, {"name": name, "description": f"{name}: {LONG}"})
    make_skill(skills, "broken", "name: Broken\ndescription: d\nextra: 1")
    return ipython_shell(skills)


def run(ip, line):
    result = ip.run_cell(line)
    assert result.success, result.error_in_exec or result.error_before_exec
    return result.result


def test_available_default_is_unchanged(shell):
    cat = run(shell, "%skills available")
    assert isinstance(cat, AvailableSkillsText) and isinstance(cat, str)
    assert cat == available_skills(get_magics(shell).manager)


def test_available_budget_globs_and_report(shell):
    cat = run(
        shell, "%skills available --budget 300 --include 'pdf-*' sheet --exclude pdf-b -o cat"
    )
    assert shell.user_ns["cat"] is cat
    assert cat.tokens <= 300
    reasons = {o.name: o.reason for o in cat.omitted}
    assert reasons["pdf-b"] == "excluded by 'pdf-b'"
    assert "zip" in reasons and "Broken" in reasons
    pretty = shell.display_formatter.format(cat)[0]
    text = pretty["text/plain"]
    assert "left out: excluded by 'pdf-b'" in text and "estimate: characters / 4" in text
    html = pretty["text/html"]
    assert "<strong>left out</strong>" in html and "tokens" in html


def test_available_drops_and_says_which(shell):
    cat = run(shell, "%skills available --budget 120")
    assert cat.available_skills.dropped and "not listed to fit the catalog budget" in cat
    assert "left out: budget" in cat.available_skills.report()


def test_available_budget_from_config_and_bad_input(shell):
    run(shell, "%config SkillMagics.available_skills_budget = 120")
    assert run(shell, "%skills available").available_skills.max_tokens == 120
    for bad in ("--budget many", "--layout json", "--budget -3", "--nope"):
        result = shell.run_cell(f"%skills available {bad}")
        assert not result.success, bad


def test_the_old_catalog_names_still_work_and_warn(shell, caplog):
    """%skills catalog, SkillMagics.catalog_budget and .catalog: the same as the new names
    (%skills available, available_skills_budget, .available_skills), with a FutureWarning
    (shown in notebooks) naming the new one; two different budgets under both names refuse."""
    with pytest.warns(FutureWarning, match=r"^%skills catalog is deprecated .*%skills available"):
        old = run(shell, "%skills catalog --budget 300")
    assert old == run(shell, "%skills available --budget 300")
    with pytest.warns(FutureWarning, match=r"^\.catalog is deprecated .*\.available_skills"):
        assert old.catalog is old.available_skills
    with pytest.warns(FutureWarning, match="SkillMagics.catalog_budget is deprecated"):
        run(shell, "%config SkillMagics.catalog_budget = 120")
    assert run(shell, "%skills available").available_skills.max_tokens == 120
    with pytest.warns(FutureWarning):
        run(shell, "%config SkillMagics.catalog_budget = 150")  # the old name alone: no clash
    assert get_magics(shell).available_skills_budget == 150
    run(shell, "%config SkillMagics.available_skills_budget = 200")
    with caplog.at_level(logging.ERROR):
        shell.run_cell("%config SkillMagics.catalog_budget = 90")  # %config logs the error
    assert "catalog_budget is the old name of SkillMagics.available_skills_budget: give " in (
        caplog.text
    )
    assert get_magics(shell).available_skills_budget == 200


def test_the_old_format_options_still_work_and_warn(shell):
    """--format meant three things (issue 30): %skill_context --format is now --envelope,
    %skills available --format is --layout; the old spelling gives the same text with a
    FutureWarning naming the new one, and both together refuse (which wins would be a guess)."""
    with pytest.warns(FutureWarning, match=r"^--format is deprecated .*use --envelope"):
        old = run(shell, "%skill_context sheet --format skill_content")
    assert old == run(shell, "%skill_context sheet --envelope skill_content")
    with pytest.warns(FutureWarning, match=r"^--format is deprecated .*use --layout"):
        old = run(shell, "%skills available --format guide")
    new = run(shell, "%skills available --layout guide")
    assert old == new and new.available_skills.layout == "guide"
    for line in (
        "%skill_context sheet --format skill_content --envelope skill_content",
        "%skills available --format guide --layout guide",
    ):
        result = shell.run_cell(line)
        assert not result.success and "give --" in str(result.error_in_exec), line


def test_skill_lists_read_a_comma_like_a_space(shell):
    """%skill_context pdf-a,sheet looked for ONE skill 'pdf-a,sheet' (not found); a list of
    skills on a magic's line now reads commas and spaces alike (core/base/namelist.py)."""
    spaced = run(shell, "%skill_context pdf-a sheet --no-run")
    assert ET.fromstring(spaced).tag == "skill_contexts"
    for line in ("pdf-a,sheet", "pdf-a, sheet", "pdf-a,sheet,"):
        assert run(shell, f"%skill_context {line} --no-run") == spaced, line
    both = run(shell, "%skills available pdf-a sheet")
    assert run(shell, "%skills available pdf-a,sheet") == both
    assert [e.name for e in both.available_skills.entries] == ["pdf-a", "sheet"]
    assert not shell.run_cell("%skill_context , --no-run").success  # names no skill


def test_available_with_no_skills_is_empty(shell):
    cat = run(shell, "%skills available --exclude '*'")
    assert cat == ""
    assert "no block" in shell.display_formatter.format(cat)[0]["text/plain"]


def test_validate_all_name_and_path(shell):
    report = run(shell, "%skills validate")
    assert report["pdf-a"] == []
    lines = report["Broken"]  # listed under its (bad) name
    assert any("must be lowercase" in line for line in lines)
    assert any("'extra' is not in the Agent Skills spec" in line for line in lines)
    text = shell.display_formatter.format(report)[0]["text/plain"]
    assert "✓ pdf-a: no problems found" in text and "✗" in text
    one = run(shell, f"%skills validate {shell.skills_root / 'broken'}")
    assert list(one.values())[0] == lines
    budget = run(shell, "%skills validate pdf-a --budget 40")
    assert "always leaves this skill out" in budget["pdf-a"][0]
    assert not shell.run_cell("%skills validate pdf-z").success  # one-line error


def test_skill_context_skill_content(shell):
    ctx = run(shell, "%skill_context sheet --envelope skill_content")
    assert ET.fromstring(ctx).tag == "skill_content"
    info = parse_skill_content(ctx)[0]
    assert info["name"] == "sheet" and info["directory"].endswith("sheet")
