"""%skills tables: skills list, skill detail, scripts, approvals, history (text + HTML)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from test_render_support import parse_html

from skill_magics.core.base.audit import AuditRecord
from skill_magics.core.base.models import ScriptMetadata, SkillMetadata
from skill_magics.core.run.gating.approval import scripts_content_hash
from skill_magics.notebook.render import (
    Display,
    approvals_table,
    display_path,
    history_table,
    markdown_html,
    scripts_table,
    skill_detail,
    skills_table,
)

EVIL = "<script>alert(1)</script>"
# A javascript: URL in an attribute (href/src/...), i.e. one a click or a load would run.
LIVE_JS = re.compile(r"""=\s*["']?\s*javascript:""", re.IGNORECASE)


def meta(name: str, description: str = "Does things.", base: Path | None = None, **kw):
    base = base or Path.cwd() / "skills" / name
    return SkillMetadata(name=name, description=description, path=base / "SKILL.md", **kw)


@dataclass
class SkillLike:
    """The duck type the renderers accept: what core.skill.Skill exposes."""

    metadata: SkillMetadata
    scripts: list[ScriptMetadata] = field(default_factory=list)
    content: str = ""
    references: list[Path] = field(default_factory=list)

    @property
    def base_dir(self) -> Path:
        return self.metadata.base_dir


def check_display(display: Display) -> str:
    """Both halves present, HTML balanced and script-free; returns the HTML's text."""
    assert isinstance(display, Display)
    assert repr(display) == str(display) == display.text
    bundle = display._repr_mimebundle_()
    assert bundle == {"text/plain": display.text, "text/html": display.html}
    assert display._repr_html_() == display.html
    return parse_html(display.html).text


def test_skills_table_text_is_aligned_and_html_escaped() -> None:
    long = "Word " * 60
    skills = [meta("pdf", long), meta("evil", EVIL, version="1")]
    table = skills_table(skills, ["skipped bad-name: invalid name <x>"], script_counts={"pdf": 3})
    lines = table.text.splitlines()
    assert lines[0].split() == ["name", "description", "scripts", "location"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].startswith("pdf ") and "…" in lines[2] and " 3 " in lines[2]
    assert "./skills/pdf" in lines[2]
    assert "–" in lines[3], "count unknown for bare metadata"
    assert table.text.endswith("warnings:\n  - skipped bad-name: invalid name <x>")
    text = check_display(table)
    assert EVIL in text and "<script>" not in table.html
    assert f'title="{long}"' in table.html, "the full description is the hover text"
    assert "skipped bad-name: invalid name <x>" in text


def test_skills_table_counts_scripts_of_skill_objects() -> None:
    scripts = [ScriptMetadata("a", Path("scripts/a.py"), "python", "python3")] * 2
    table = skills_table([SkillLike(meta("two"), scripts)])
    assert table.text.splitlines()[2].split()[:3] == ["two", "Does", "things."]
    assert " 2 " in table.text.splitlines()[2]


def test_empty_skills_table_says_where_it_looked() -> None:
    table = skills_table([], dirs=[Path.cwd() / "skills", Path.home() / ".claude/skills"])
    assert table.text == (
        "No skills found in ./skills, ~/.claude/skills. Add a directory with %skills add DIR."
    )
    check_display(table)


def test_skills_table_from_real_example_skills(example_manager) -> None:
    skills = [example_manager.get_skill(m.name) for m in example_manager.list_skills()]
    table = skills_table(skills, example_manager.warnings)
    names = [line.split()[0] for line in table.text.splitlines()[2:] if line.strip()]
    assert names[: len(skills)] == [s.metadata.name for s in skills]
    check_display(table)


def test_skill_detail_shows_metadata_markdown_scripts_and_references(tmp_path: Path) -> None:
    body = f"# Title\n\nUse `run.py` with **care**.\n\n{EVIL}\n\n[x](javascript:alert(1))\n"
    skill = SkillLike(
        meta(
            "pdf",
            "Extract text.",
            base=tmp_path / "pdf",
            license="MIT",
            allowed_tools=["Bash(python:*)", "Read"],
            metadata={"author": "me"},
            warnings=["description is long"],
        ),
        [ScriptMetadata("run", Path("scripts/run.py"), "python", "python3", "Run it.\n\nMore.")],
        body,
        [Path("references/guide.md")],
    )
    detail = skill_detail(skill, approved=True)
    text = detail.text
    assert "allowed-tools  Bash(python:*) Read" in text
    assert "metadata       author=me" in text
    assert "--- SKILL.md ---\n# Title" in text
    # Issue 31 item 12: scripts and what is missing before the long SKILL.md.
    assert text.index("--- scripts ---") < text.index("--- references ---")
    assert text.index("--- references ---") < text.index("--- SKILL.md ---")
    assert detail.html.index("<strong>scripts</strong>") < detail.html.index("SKILL.md (")
    assert "yes in session" in text and "Run it." in text and "More." not in text
    assert "references/guide.md" in text and "description is long" in text
    shown = check_display(detail)
    assert EVIL in shown, "raw HTML in SKILL.md is shown as text, not run"
    assert not LIVE_JS.search(detail.html), "a javascript: link must not become clickable"
    assert "<strong>care</strong>" in detail.html  # mistune is a test dependency


def test_skill_md_without_mistune_is_escaped_preformatted_text() -> None:
    """The fallback when mistune is missing: the whole body as inert, escaped text."""
    from skill_magics.notebook.render.markdown import preformatted_html

    rendered = preformatted_html(f"# T\n{EVIL}\n[x](javascript:alert(1))\n<img src=x onerror=y>")
    assert rendered.startswith("<pre") and rendered.count("<") == 2  # <pre ...> and </pre>
    assert "&lt;script&gt;" in rendered and not LIVE_JS.search(rendered)


def test_skill_detail_of_a_real_skill(example_manager) -> None:
    skill = example_manager.get_skill("csv-profiler")
    approved = example_manager.approvals.is_approved(skill.metadata.name, skill.content_hash())
    detail = skill_detail(skill, approved=approved)
    assert "asks before running" in detail.text
    assert "scripts/profile.py" in detail.text
    check_display(detail)


def test_markdown_falls_back_to_escaped_pre_text() -> None:
    from skill_magics.notebook.render.markdown import preformatted_html

    assert preformatted_html("<b>") == '<pre style="white-space:pre-wrap">&lt;b&gt;</pre>'
    parse_html(markdown_html(f"## h\n\n{EVIL}\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"))


def test_scripts_table_without_scripts_and_unknown_approval() -> None:
    assert scripts_table([]).text == "No scripts in this skill."
    table = scripts_table([ScriptMetadata("b", Path("b.sh"), "bash", "bash", EVIL)])
    assert table.text.splitlines()[2].split()[:3] == ["b", "b.sh", "bash"]
    assert EVIL in check_display(table)


def test_approvals_table_marks_stale_hashes(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("print(1)\n")
    digest = scripts_content_hash(tmp_path, ["a.py"])
    table = approvals_table(
        {"zeta": digest, "alpha": "0" * 64}, current={"zeta": digest, "alpha": "f" * 64}
    )
    rows = table.text.splitlines()[2:]
    assert rows[0].split()[0] == "alpha" and "stale: scripts changed" in rows[0]
    assert rows[1].split() == ["zeta", digest[:12], "valid"]
    check_display(table)
    empty = approvals_table({})
    assert empty.text.startswith("No session approvals.")
    check_display(empty)


def test_history_table_from_audit_records() -> None:
    records = [
        AuditRecord("2025-01-02T03:04:05+00:00", "pdf", "scripts/run.py", '{"q": 1}', "completed",
                    0, None, 12.5),
        AuditRecord("2025-01-02T03:05:00+00:00", "pdf", "../../etc/passwd", "{}", "refused",
                    None, f"path escapes the skill directory {EVIL}", None),
        AuditRecord("not a time", "pdf", "scripts/run.py", "x" * 300, "approval_unavailable"),
    ]  # fmt: skip
    table = history_table(records)
    lines = table.text.splitlines()
    assert lines[0].split() == [
        "time", "skill", "script", "arguments", "outcome", "exit", "code", "duration", "reason"
    ]  # fmt: skip
    assert "completed" in lines[2] and "12 ms" in lines[2] and " 0 " in lines[2]
    assert "refused" in lines[3] and "path escapes" in lines[3]
    assert "not a time" in lines[4] and "approval unavailable" in lines[4]
    shown = check_display(table)
    assert EVIL in shown
    assert history_table([]).text == "No skill runs in this session yet."


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        (Path.cwd() / "skills" / "x", "./skills/x"),
        (Path.cwd(), "."),
        (Path.home() / "zz-not-cwd", None),
        (Path("/opt/other"), "/opt/other"),
        (None, ""),
    ],
)
def test_display_path(path: Path | None, expected: str | None) -> None:
    if expected is None:  # home, unless the test runs from inside home
        shown = display_path(path)
        assert shown.endswith("zz-not-cwd") and shown.startswith(("~/", "./"))
    else:
        assert display_path(path) == expected


def test_markdown_headings_are_demoted_inside_outputs() -> None:
    rendered = markdown_html("# Big\n\ntext <h1>raw</h1>\n")  # mistune: a test dependency
    assert "<h4>Big</h4>" in rendered and "<h1" not in rendered
    assert "&lt;h1&gt;raw&lt;/h1&gt;" in rendered
