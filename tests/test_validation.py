"""validate_skill: everything skills-ref's validator reports (the oracle), plus our checks."""

from __future__ import annotations

import itertools
import os
import re
from pathlib import Path

import pytest
import skills_ref.validator as skills_ref_validator
from manager_support import manager_for

from skill_magics.core.lab.validation import check_skill, validate_skill, validate_skills

# skills-ref's messages -> the code of the Problem that must report the same thing.
ORACLE = [
    (r"^Path does not exist", "missing-path"),
    (r"^Not a directory", "not-a-directory"),
    (r"^Missing required file: SKILL\.md", "missing-skill-md"),
    (r"must start with YAML frontmatter|not properly closed", "frontmatter"),
    (r"^Invalid YAML|must be a YAML mapping", "yaml"),
    (r"^Unexpected fields in frontmatter", "unknown-field"),
    (r"^Missing required field in frontmatter: name", "name-missing"),
    (r"^Field 'name' must be a non-empty string", "name-empty"),
    (r"exceeds 64 character limit", "name-length"),
    (r"must be lowercase", "name-lowercase"),
    (r"cannot start or end with a hyphen", "name-hyphen-edge"),
    (r"consecutive hyphens", "name-double-hyphen"),
    (r"contains invalid characters", "name-characters"),
    (r"^Directory name .* must match", "name-folder"),
    (r"^Missing required field in frontmatter: description", "description-missing"),
    (r"^Field 'description' must be a non-empty string", "description-empty"),
    (r"^Description exceeds 1024", "description-length"),
    (r"^Field 'compatibility' must be a string", "compatibility-type"),
    (r"^Compatibility exceeds 500", "compatibility-length"),
]


def _code(message: str) -> str:
    for pattern, code in ORACLE:
        if re.search(pattern, message):
            return code
    raise AssertionError(f"skills-ref message with no mapping: {message!r}")


NAMES = [
    "good-name",
    "Bad-Name",
    "-edge",
    "edge-",
    "dou--ble",
    "under_score",
    "with space",
    "x" * 70,
    "café",
    "CAFÉ",
    "",
    "123",
    "a.b",
    "ok",
]
DESCRIPTIONS = ["Does a thing.", "", "d" * 1100, None, "'quoted: colon'", "yes"]
EXTRAS = [
    "",
    "version: 1.0\n",
    "disable-model-invocation: true\n",
    "compatibility: " + "c" * 600 + "\n",
    "compatibility:\n  - a\n",
    "metadata:\n  author: me\n",
    "foo: 1\nbar: 2\n",
    "allowed-tools: Bash\n",
    "name2: x\n",
]
RAW = {  # whole SKILL.md texts that break the frontmatter itself
    "no-frontmatter": "# just markdown\n",
    "unclosed": "---\nname: unclosed\ndescription: d\n",
    "bad-yaml": "---\nname: bad-yaml\ndescription: [unclosed\n---\nbody\n",
    "list-yaml": "---\n- a\n- b\n---\nbody\n",
    "colon": "---\nname: colon\ndescription: Use when: the user asks\n---\nbody\n",
    "dup": "---\nname: dup\ndescription: a\ndescription: b\n---\nbody\n",
    "flow": "---\nname: flow\ndescription: d\nmetadata: {a: b}\n---\nbody\n",
    "bom": "\ufeff---\nname: bom\ndescription: d\n---\nbody\n",
    "dashes": "---\nname: dashes\ndescription: a --- b\n---\nbody\n",
    "empty-fm": "---\n---\nbody\n",
}


def _cases():
    """(folder name, SKILL.md text) for many bad skills."""
    out = []
    combos = itertools.product(NAMES, DESCRIPTIONS[:4], EXTRAS)
    for i, (name, description, extra) in enumerate(combos):
        if i % 7:  # a spread of the product keeps the suite fast
            continue
        lines = ["---"]
        if name != "" or i % 2:
            lines.append(f"name: {name!r}" if name else "name:")
        if description is not None:
            lines.append(f"description: {description!r}" if description else "description:")
        text = "\n".join(lines) + "\n" + extra + "---\n# Body\n"
        folder = name if (name and i % 3) else f"folder-{i}"
        out.append((folder.replace("/", "_") or f"folder-{i}", text))
    for folder, text in RAW.items():
        out.append((folder, text))
    for name in NAMES:
        for description in DESCRIPTIONS:
            if description is None:
                continue
            text = f"---\nname: {name!r}\ndescription: {description}\n---\nbody\n"
            out.append((f"n{len(out)}", text))
    return out


def test_everything_skills_ref_reports_is_reported(tmp_path):
    cases = _cases()
    assert len(cases) > 100
    checked = 0
    for i, (folder, text) in enumerate(cases):
        skill_dir = tmp_path / f"c{i}" / folder
        skill_dir.mkdir(parents=True)
        (skill_dir / "SKILL.md").write_text(text, encoding="utf-8")
        expected = {_code(m) for m in skills_ref_validator.validate(skill_dir)}
        ours = check_skill(skill_dir)
        got = {p.code for p in ours}
        assert expected <= got, (text, skills_ref_validator.validate(skill_dir), ours)
        for line in map(str, ours):
            assert "\n" not in line and ". Fix: " in line
        checked += bool(expected)
    assert checked > 80  # most cases are really broken


def test_unknown_fields_one_line_each(tmp_path, make_skill):
    d = make_skill(tmp_path, "x", "name: x\ndescription: d\nfoo: 1\ndisable-model-invocation: true")
    lines = [line for line in validate_skill(d) if "not in the Agent Skills spec" in line]
    assert len(lines) == 2
    assert any("Claude Code reads it" in line for line in lines)
    assert all(
        line.startswith("SKILL.md: ") and "Fix: move it under metadata:" in line for line in lines
    )


def test_path_problems_match_skills_ref(tmp_path):
    f = tmp_path / "file.txt"
    f.write_text("x")
    for path in (tmp_path / "nowhere", f, tmp_path):
        expected = {_code(m) for m in skills_ref_validator.validate(path)}
        assert expected == {p.code for p in check_skill(path)}


def test_valid_skill_has_no_problems(tmp_path, make_skill, examples_dir):
    d = make_skill(
        tmp_path,
        "fine",
        scripts={"scripts/run.py": "print(1)\n"},
        body="Run `python scripts/run.py`.\n",
    )
    assert validate_skill(d) == [] == skills_ref_validator.validate(d)
    assert validate_skill(d / "SKILL.md") == []
    for skill in sorted(Path(examples_dir).iterdir()):
        assert validate_skill(skill) == [], skill


def test_missing_referenced_files(tmp_path, make_skill):
    d = make_skill(
        tmp_path,
        "refs",
        body="# Refs\n\nRun `python scripts/gone.py`.\nSee [guide](references/guide.md) and\n"
        "`assets/template.docx`. [web](https://example.com/x.md) is fine.\n"
        "Also ../outside/data.md and [ok](references/here.md).\n",
        files={"references/here.md": "x"},
    )
    lines = validate_skill(d)
    assert (
        "SKILL.md:7: scripts/gone.py is referenced but does not exist. "
        "Fix: fix the path or add the file" in lines
    )
    assert any(
        line.startswith("SKILL.md:8: references/guide.md is referenced but does not exist")
        for line in lines
    )
    assert any("assets/template.docx is referenced but does not exist" in line for line in lines)
    assert not any("example.com" in line or "here.md" in line for line in lines)


def test_scripts_an_agent_cannot_run(tmp_path, make_skill):
    d = make_skill(
        tmp_path,
        "scripty",
        scripts={
            "scripts/tool": "echo no shebang\n",  # executable, no interpreter
            "scripts/crlf.sh": "#!/bin/bash\r\necho hi\r\n",
            "scripts/deno.ts2": "#!/usr/bin/env deno-not-installed\nconsole.log(1)\n",
            "scripts/data.json": "{}",  # data next to scripts: fine
        },
        body="Run ./scripts/direct.sh first.\n",
        files={"scripts/direct.sh": "#!/bin/sh\necho direct\n"},
    )
    os.chmod(d / "scripts" / "data.json", 0o644)
    os.chmod(d / "scripts" / "direct.sh", 0o644)
    codes = {(p.file, p.code) for p in check_skill(d)}
    assert ("scripts/tool", "no-interpreter") in codes
    assert ("scripts/crlf.sh", "shebang-crlf") in codes
    assert ("scripts/deno.ts2", "interpreter-not-allowed") in codes
    assert ("scripts/deno.ts2", "interpreter-missing") in codes
    assert ("scripts/direct.sh", "not-executable") in codes
    assert not any(f == "scripts/data.json" for f, _ in codes)
    assert (
        "scripts/direct.sh: SKILL.md runs it as ./scripts/direct.sh but it is not executable. "
        "Fix: chmod +x scripts/direct.sh" in validate_skill(d)
    )


def test_a_command_running_a_module_of_definitions_is_reported(tmp_path, make_skill):
    d = make_skill(
        tmp_path,
        "defs",
        scripts={
            "scripts/utils.py": "import re\nPAT = re.compile('x')\ndef f():\n    return 1\n",
            "scripts/__init__.py": "",
            "scripts/plain.py": "import json, sys\nprint(json.load(sys.stdin))\n",
        },
        body="Run `python scripts/utils.py`, then `python scripts/plain.py`.\n"
        "Helpers live in `scripts/utils.py`.\n",
        executable=False,
    )
    problems = [p for p in check_skill(d) if p.code == "not-runnable"]
    assert [(p.file, p.line) for p in problems] == [("SKILL.md", 5)]
    assert str(problems[0]) == (
        "SKILL.md:5: runs scripts/utils.py, which is a module holding only imports, "
        "definitions and constants: running it does nothing, so it is refused. Fix: run the "
        "script that imports it, or give it an `if __name__ == '__main__':` block that does "
        "the work"
    )


def test_secrets_are_found_and_masked(tmp_path, make_skill):
    key = "AKIA" + "ABCDEFGHIJKLMNOP"
    openai = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    d = make_skill(
        tmp_path,
        "leaky",
        scripts={"scripts/call.py": f"API_KEY = '{openai}'\nprint(1)\n"},
        files={
            "references/notes.md": f"aws: {key}\n",
            "assets/key.pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIB\n",
            "references/example.md": "api_key = 'your-api-key-goes-here-xxxxxx'\n",
        },
    )
    found = [p for p in check_skill(d) if p.code == "secret"]
    assert {(p.file, p.line) for p in found} == {
        ("scripts/call.py", 1),
        ("references/notes.md", 1),
        ("assets/key.pem", 1),
    }
    text = "\n".join(map(str, found))
    assert key not in text and openai not in text  # never echoed in full
    assert "AKIA…OP" in text and "rotate the key" in text


def test_description_over_the_available_skills_budget(tmp_path, make_skill):
    d = make_skill(tmp_path, "wordy", {"name": "wordy", "description": "word " * 150})
    assert not any("budget" in line for line in validate_skill(d))
    lines = [line for line in validate_skill(d, max_tokens=100) if "budget" in line]
    assert len(lines) == 1 and "always leaves this skill out" in lines[0]
    assert "Fix: shorten the description (now 749 characters)" in lines[0]
    assert [line for line in validate_skill(d, max_chars=2000) if "budget" in line] == []


def test_validate_skills_by_name_path_and_all(tmp_path, make_skill):
    make_skill(tmp_path, "good")
    make_skill(tmp_path, "broken", "name: broken")  # no description: discovery skips it
    manager = manager_for(tmp_path)
    everything = validate_skills(manager)
    assert everything["good"] == []
    broken_key = str(tmp_path / "broken")
    assert any("missing required field 'description'" in line for line in everything[broken_key])
    by_path = validate_skills(manager, [str(tmp_path / "broken")])
    assert list(by_path) == [str(tmp_path / "broken")]
    from skill_magics.core.base.errors import SkillNotFoundError

    with pytest.raises(SkillNotFoundError):
        validate_skills(manager, ["goood"])


def test_a_reference_named_with_another_case_is_a_warning(tmp_path, make_skill):
    # Issue 31 item 7: "read FORMS.md" with forms.md on disk said "no problems found".
    d = make_skill(
        tmp_path,
        "pdf",
        body="# PDF\nRead FORMS.md and [the reference](REFERENCE.md); see guide.md too.\n",
        files={"forms.md": "# Forms\n", "reference.md": "# Ref\n", "guide.md": "# Guide\n"},
    )
    problems = check_skill(d)
    mismatch = {p.message for p in problems if p.code == "case-mismatch"}
    assert mismatch == {
        "FORMS.md is named but the file is forms.md",
        "REFERENCE.md is named but the file is reference.md",
    }
    # What must NOT be reported: a name with the file's own case, or a prose .md name that
    # is no file of the skill (it may be another project's README.md).
    assert not any("guide.md" in str(p) or "missing-reference" == p.code for p in problems)
