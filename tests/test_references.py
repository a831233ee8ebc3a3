"""Script references in SKILL.md: the forms real skills use, order, dedup, errors."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from manager_support import manager_for

from skill_magics.core.catalog.references import (
    find_references,
    linked_markdown,
    referenced_scripts,
)

SCRIPTS = {
    "scripts/extract.py": "print('x')\n",
    "scripts/convert.sh": "echo c\n",
    "scripts/utils/parser.py": "print('p')\n",
    "scripts/lint.sh": "echo lint\n",
    "scripts/build.js": "console.log(1)\n",
    "scripts/report.rb": "puts 1\n",
    "scripts/tally.pl": "print 1\n",
    "scripts/unused.py": "print('never referenced')\n",
}


def refs_for(make_skill, tmp_path, body, files=None, name="demo"):
    make_skill(tmp_path, name, scripts=SCRIPTS, files=files, body=body)
    skill = manager_for(tmp_path).get_skill(name)
    return referenced_scripts(skill)


def paths(refs):
    return [r.path for r in refs]


def test_fenced_commands_in_order(tmp_path, make_skill):
    body = """\
    # Demo

    ```bash
    python scripts/extract.py --input file.pdf --pages 1-3
    python3 -u scripts/utils/parser.py
    bash scripts/convert.sh
    node scripts/build.js
    ruby scripts/report.rb
    perl scripts/tally.pl
    ```
    """
    refs = refs_for(make_skill, tmp_path, body)
    assert paths(refs) == [
        "scripts/extract.py",
        "scripts/utils/parser.py",
        "scripts/convert.sh",
        "scripts/build.js",
        "scripts/report.rb",
        "scripts/tally.pl",
    ]
    assert all(r.ok and r.exists and r.inside for r in refs)
    # The flags written in SKILL.md are part of the raw text only, never of the path.
    assert refs[0].raw == "scripts/extract.py"


def test_uv_run_inline_links_basedir_and_prose(tmp_path, make_skill):
    body = """\
    Step one: `uv run scripts/convert.sh`.
    Then read [the parser](scripts/utils/parser.py "title").
    Run {baseDir}/scripts/extract.py and ${SKILL_BASE_DIR}/scripts/build.js,
    also $SKILL_DIR/scripts/report.rb. Finally the plain path scripts/tally.pl does totals.
    """
    assert paths(refs_for(make_skill, tmp_path, body)) == [
        "scripts/convert.sh",
        "scripts/utils/parser.py",
        "scripts/extract.py",
        "scripts/build.js",
        "scripts/report.rb",
        "scripts/tally.pl",
    ]


def test_dedup_keeps_first_seen_and_unreferenced_scripts_are_absent(tmp_path, make_skill):
    body = """\
    Run `scripts/convert.sh`, then python scripts/extract.py, then scripts/convert.sh again,
    and ./scripts/extract.py once more.
    """
    refs = refs_for(make_skill, tmp_path, body)
    assert paths(refs) == ["scripts/convert.sh", "scripts/extract.py"]
    assert "scripts/unused.py" not in paths(refs)


def test_bare_script_names_match_a_unique_file_under_scripts(tmp_path, make_skill):
    body = "1. **Lint**: Run `lint.sh` to check code style. Node.js and setup.py are not scripts.\n"
    refs = refs_for(make_skill, tmp_path, body)
    assert paths(refs) == ["scripts/lint.sh"]
    assert refs[0].raw == "lint.sh"


def test_missing_and_escaping_references_are_error_entries(tmp_path, make_skill):
    outside = tmp_path / "outside.py"
    outside.write_text("print('outside')\n")
    body = """\
    ```
    python scripts/missing.py
    python ../outside.py
    python /etc/passwd.py
    ```
    """
    refs = refs_for(make_skill, tmp_path / "skills", body)
    assert paths(refs) == ["scripts/missing.py", "../outside.py", "/etc/passwd.py"]
    missing, up, absolute = refs
    assert missing.inside and not missing.exists
    assert "does not exist" in missing.error and "SKILL.md:" in missing.error
    assert not up.inside and "outside" in up.error
    assert not absolute.inside and absolute.error


def test_escaping_paths_in_inline_code_and_prose_are_reported_not_dropped(tmp_path, make_skill):
    """Outside the skill is always worth an error entry, however the path is written; a
    missing path that is not under scripts/ stays prose (it may be a file of the user's)."""
    body = "Use `../outside.py`, see /etc/evil.sh and `tools/nothere.py` or src/app.py.\n"
    refs = refs_for(make_skill, tmp_path / "skills", body)
    assert paths(refs) == ["../outside.py", "/etc/evil.sh"]
    assert all(not r.inside and "points outside skill 'demo'" in r.error for r in refs)


def test_symlink_escaping_the_skill_is_an_error(tmp_path, make_skill):
    target = tmp_path / "elsewhere.py"
    target.write_text("print('x')\n")
    skill_dir = make_skill(
        tmp_path / "skills", "demo", scripts=SCRIPTS, body="python scripts/link.py\n"
    )
    os.symlink(target, skill_dir / "scripts" / "link.py")
    refs = referenced_scripts(manager_for(tmp_path / "skills").get_skill("demo"))
    assert paths(refs) == ["scripts/link.py"]
    assert refs[0].exists and not refs[0].inside
    assert "symlink" in refs[0].error


def test_weak_prose_paths_count_only_when_they_exist(tmp_path, make_skill):
    body = "Edit src/app.py yourself, python is great, use `python -m pip install x`.\n"
    assert refs_for(make_skill, tmp_path, body) == []


def test_linked_markdown_one_level(tmp_path, make_skill):
    files = {
        "references/guide.md": (
            "# Guide\nUse `node scripts/build.js` and [other](../scripts/lint.sh).\n"
            "Also see [deeper](deeper.md).\n"
        ),
        "references/deeper.md": "python scripts/report.rb\n",
    }
    body = "python scripts/extract.py\n\nSee [the guide](references/guide.md#usage).\n"
    refs = refs_for(make_skill, tmp_path, body, files)
    assert paths(refs) == ["scripts/extract.py", "scripts/build.js", "scripts/lint.sh"]
    assert [r.source for r in refs] == ["SKILL.md", "references/guide.md", "references/guide.md"]
    assert refs[1].line == 2


def test_line_numbers_count_the_frontmatter(tmp_path, make_skill):
    refs = refs_for(make_skill, tmp_path, "# Demo\n\npython scripts/extract.py\n")
    # frontmatter is 4 lines (---, name, description, ---)
    assert refs[0].line == 7


def test_links_outside_the_skill_are_not_followed(tmp_path, make_skill):
    (tmp_path / "secret.md").write_text("python scripts/extract.py\n")
    body = "See [x](../secret.md) and [web](https://example.com/scripts/x.py).\n"
    assert refs_for(make_skill, tmp_path / "skills", body) == []


@pytest.mark.parametrize(
    "text, expected",
    [
        ("`python3 scripts/extract.py`", ["scripts/extract.py"]),
        ("cd {baseDir} && python scripts/extract.py > out.json", ["scripts/extract.py"]),
        ("[run]: scripts/convert.sh", ["scripts/convert.sh"]),
        ("uv run --with pandas python scripts/extract.py", ["scripts/extract.py"]),
        ("See https://example.com/scripts/extract.py", []),
        ("python -c 'print(1)'", []),
    ],
)
def test_find_references_forms(tmp_path, text, expected, make_skill):
    skill_dir = make_skill(tmp_path, "demo", scripts=SCRIPTS, body="x")
    assert paths(find_references(text, skill_dir)) == expected


# -- false positives: URLs and longer names that merely start like a script ------------------

NOT_REFERENCES = [
    "Docs: https://example.com/view?file=scripts/extract.py",
    "Docs: https://example.com/page#scripts/convert.sh",
    "<https://example.com/a/scripts/lint.sh>",
    "git+https://host/scripts/extract.py",
    "The old scripts/convert.sh.orig is kept for history; never run it.",
    "never run `scripts/convert.sh.orig`",
    "scripts/lint.sh-legacy is gone",
    "Templates: `scripts/extract.py.j2` and scripts/extract.py.bak",
    "A backup lint.sh.bak is left in place.",
    "`python scripts/extract.py.bak`",  # a missing file: reported, see below, never extract.py
]


@pytest.mark.parametrize("text", NOT_REFERENCES)
def test_urls_and_longer_names_never_reference_a_script(tmp_path, text, make_skill):
    skill_dir = make_skill(tmp_path, "demo", scripts=SCRIPTS, body="x")
    refs = find_references(text, skill_dir)
    assert [r for r in refs if r.ok] == [], paths(refs)


def test_a_command_on_a_longer_name_is_a_missing_script_not_the_shorter_one(tmp_path, make_skill):
    skill_dir = make_skill(tmp_path, "demo", scripts=SCRIPTS, body="x")
    (ref,) = find_references("`python scripts/extract.py.bak`", skill_dir)
    assert ref.path == "scripts/extract.py.bak" and not ref.exists and "does not exist" in ref.error


TRUE_FORMS = [
    ("```\npython scripts/extract.py --flag\n```", ["scripts/extract.py"]),
    ("python3 scripts/utils/parser.py", ["scripts/utils/parser.py"]),
    ("bash scripts/convert.sh", ["scripts/convert.sh"]),
    ("node scripts/build.js", ["scripts/build.js"]),
    ("`uv run scripts/extract.py`", ["scripts/extract.py"]),
    ("Run `scripts/lint.sh` first.", ["scripts/lint.sh"]),
    ("[the parser](scripts/utils/parser.py)", ["scripts/utils/parser.py"]),
    ("{baseDir}/scripts/extract.py", ["scripts/extract.py"]),
    ("Finally run scripts/convert.sh.", ["scripts/convert.sh"]),
    ("Run scripts/convert.sh - then stop", ["scripts/convert.sh"]),
    ("See https://example.com first, then run scripts/lint.sh.", ["scripts/lint.sh"]),
    ("(scripts/report.rb), scripts/tally.pl; done", ["scripts/report.rb", "scripts/tally.pl"]),
]


@pytest.mark.parametrize("text, expected", TRUE_FORMS)
def test_true_reference_forms_stay_detected(tmp_path, text, expected, make_skill):
    skill_dir = make_skill(tmp_path, "demo", scripts=SCRIPTS, body="x")
    refs = find_references(text, skill_dir)
    assert paths(refs) == expected and all(r.ok for r in refs)


_SCRIPT_PATHS = sorted(p for p in SCRIPTS if p != "scripts/unused.py")


@pytest.fixture(scope="module")
def script_skill(tmp_path_factory, make_skill):
    """One skill for the property tests (examples only read it)."""
    return make_skill(tmp_path_factory.mktemp("props"), "demo", scripts=SCRIPTS, body="x")


@settings(max_examples=150, deadline=None)
@given(
    rel=st.sampled_from(_SCRIPT_PATHS),
    tail=st.from_regex(r"[.\-][A-Za-z0-9_]{1,8}", fullmatch=True),
    wrap=st.sampled_from(["{}", "`{}`", "see {} here", "{}.", "bash {}"]),
)
def test_property_a_longer_name_never_runs_the_shorter_script(script_skill, rel, tail, wrap):
    refs = find_references(wrap.format(rel + tail), script_skill)
    assert rel not in [r.path for r in refs if r.ok]


@settings(max_examples=150, deadline=None)
@given(
    rel=st.sampled_from(_SCRIPT_PATHS),
    scheme=st.sampled_from(["http", "https", "file", "git+ssh"]),
    glue=st.sampled_from(["/", "?file=", "#", "/x?a=1&p=", "/raw/main/"]),
)
def test_property_paths_inside_urls_are_not_references(script_skill, rel, scheme, glue):
    text = f"Docs at {scheme}://example.com{glue}{rel} (online)."
    assert find_references(text, script_skill) == []


def test_home_paths_are_reported_as_written(tmp_path, make_skill):
    body = "Use ~/.claude/skills/pdf/scripts/a.py or `python ~/tools/b.sh`.\n"
    refs = refs_for(make_skill, tmp_path, body, name="pdf")
    assert paths(refs) == ["~/.claude/skills/pdf/scripts/a.py", "~/tools/b.sh"]
    first, second = refs
    assert first.error.split(": ", 1)[1].startswith("~/.claude/skills/pdf/scripts/a.py points")
    assert "~/tools/b.sh points outside skill 'pdf'" in second.error
    assert " /.claude" not in first.error and not first.inside


def test_linked_markdown_lists_linked_files_inside_the_skill(tmp_path, make_skill):
    (tmp_path / "outside.md").write_text("# outside\n")
    files = {"FORMS.md": "# Forms\n", "REFERENCE.md": "# Ref\n", "references/guide.md": "#\n"}
    body = (
        "See [forms](FORMS.md), [ref](./REFERENCE.md#api), [guide](references/guide.md),\n"
        "[again](FORMS.md), [gone](MISSING.md) and [out](../outside.md).\n"
    )
    make_skill(tmp_path / "skills", "demo", scripts=SCRIPTS, files=files, body=body)
    skill = manager_for(tmp_path / "skills").get_skill("demo")
    assert linked_markdown(skill) == ["FORMS.md", "REFERENCE.md", "references/guide.md"]


def test_module_runs_name_the_skills_own_modules_only(tmp_path, make_skill):
    body = """\
    python -m scripts.extract --pages 1
    python3 -u -m scripts.utils.parser
    uv run python -m scripts.missing_one
    python -m markitdown file.pptx
    python -m pytest
    """
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.module, r.as_command, r.ok) for r in refs] == [
        ("scripts/extract.py", "scripts.extract", True, True),
        ("scripts/utils/parser.py", "scripts.utils.parser", True, True),
        # The skill's own package, the module missing: an error, never a silent skip.
        ("scripts/missing_one.py", "scripts.missing_one", True, False),
    ]
    assert "does not exist" in refs[2].error


def test_a_command_without_the_extension_names_the_script(tmp_path, make_skill):
    # pdf's forms.md: ``python scripts/check_fillable_fields <file.pdf>``.
    body = "Run `python scripts/extract <file.pdf>`, then `bash scripts/lint`.\n"
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.ok, r.as_command) for r in refs] == [
        ("scripts/extract.py", True, True),
        ("scripts/lint.sh", True, True),
    ]
    refs = refs_for(make_skill, tmp_path / "b", "Run `python scripts/nothing_here`.\n")
    assert [(r.path, r.ok) for r in refs] == [("scripts/nothing_here", False)]


def test_mentions_and_links_are_not_commands(tmp_path, make_skill):
    body = "See `scripts/extract.py` and [the linter](scripts/lint.sh); run `./scripts/convert.sh`."
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.as_command) for r in refs] == [
        ("scripts/extract.py", False),
        ("scripts/lint.sh", False),
        ("scripts/convert.sh", True),
    ]


def test_scan_markdown_reads_every_markdown_file_linked_or_not(tmp_path, make_skill):
    from skill_magics.core.catalog.references import markdown_signature, scan_markdown

    make_skill(
        tmp_path,
        "demo",
        scripts=SCRIPTS,
        files={
            "forms.md": "`python scripts/extract.py`\n",  # named in prose as FORMS.md only
            "references/deep/more.md": "python -m scripts.utils.parser\n",
            ".hidden/x.md": "`python scripts/unused.py`\n",
            "node_modules/pkg/README.md": "`bash scripts/lint.sh`\n",
        },
        body="Read FORMS.md to fill a form; `bash scripts/convert.sh`.\n",
    )
    skill = manager_for(tmp_path).get_skill("demo")
    scan = scan_markdown(skill)
    assert paths(scan.refs) == [
        "scripts/convert.sh",
        "scripts/extract.py",
        "scripts/utils/parser.py",
    ]
    assert scan.files == ("SKILL.md", "forms.md", "references/deep/more.md")
    assert scan.modules == {"scripts.utils.parser"}
    before = markdown_signature(skill.base_dir)
    (skill.base_dir / "references" / "deep" / "more.md").write_text("changed, longer\n")
    assert markdown_signature(skill.base_dir) != before


def test_a_placeholder_for_the_skills_path_names_the_skills_script(tmp_path, make_skill):
    # openai/skills: ``python "<path-to-skill>/scripts/x.py"``; anthropics/skills:
    # ``python <skill-creator-path>/...``. Other placeholders stay what they were.
    body = """\
    - `python "<path-to-skill>/scripts/extract.py" --repo "."`
    - nohup python <skill-creator-path>/scripts/lint.sh
    - python scripts/convert.sh <input_dir>/out.py
    """
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.ok, r.as_command) for r in refs] == [
        ("scripts/extract.py", True, True),
        ("scripts/lint.sh", True, True),
        ("scripts/convert.sh", True, True),
        ("/out.py", False, False),
    ]


def test_an_absolute_path_through_the_skills_folder_names_the_skills_file(tmp_path, make_skill):
    # vercel-labs/agent-skills: ``bash /mnt/skills/user/<skill>/resources/deploy.sh``.
    body = """\
    bash /mnt/skills/user/demo/scripts/convert.sh
    bash /mnt/skills/user/demo/scripts/gone.sh
    bash /mnt/skills/user/other/scripts/lint.sh
    """
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.ok) for r in refs] == [
        ("scripts/convert.sh", True),
        ("/mnt/skills/user/demo/scripts/gone.sh", False),
        ("/mnt/skills/user/other/scripts/lint.sh", False),
    ]
    assert "points outside" in refs[2].error


def test_a_fence_language_tag_is_not_a_command(tmp_path, make_skill):
    body = "```bash\nbash scripts/convert.sh\n```\n\n```sh\npython scripts/extract.py\n```\n"
    refs = refs_for(make_skill, tmp_path, body)
    assert [(r.path, r.as_command) for r in refs] == [
        ("scripts/convert.sh", True),
        ("scripts/extract.py", True),
    ]


def test_markdown_named_in_prose_or_with_another_case_is_read(tmp_path, make_skill):
    # Issue 31 item 7: Anthropic's pdf skill says "read FORMS.md" in prose; the file is
    # forms.md. It was left out of %skill_context (and --refs content) on Linux.
    from skill_magics.core.catalog.references import case_match, scan_skill
    from skill_magics.core.manager import SkillManager

    make_skill(
        tmp_path,
        "pdf",
        body="# PDF\nSee REFERENCE.md. To fill a form, read FORMS.md and follow it.\n"
        "Not here: NOTES.md. A URL: https://example.com/GUIDE.md\n",
        files={
            "forms.md": "# Forms\nRun `python scripts/fill.py`.\n",
            "reference.md": "# Ref\n",
            "guide.md": "# not named\n",
        },
        scripts={"scripts/fill.py": "print(1)\n"},
    )
    skill = SkillManager([tmp_path]).get_skill("pdf")
    refs, linked = scan_skill(skill)
    assert linked == ["reference.md", "forms.md"]  # on-disk names, in the order named
    assert [r.path for r in refs] == ["scripts/fill.py"]
    assert case_match(tmp_path / "pdf", "FORMS.md") == "forms.md"
    assert case_match(tmp_path / "pdf", "forms.md") == "forms.md"
    assert case_match(tmp_path / "pdf", "NOTES.md") is None


def test_two_files_differing_only_in_case_match_neither(tmp_path):
    # What must NOT happen: guessing between a.md and A.md.
    from skill_magics.core.catalog.references import case_match

    (tmp_path / "a.md").write_text("x")
    (tmp_path / "A.md").write_text("y")
    assert case_match(tmp_path, "a.md") == "a.md"  # exact wins
    assert case_match(tmp_path, "A.MD") is None
