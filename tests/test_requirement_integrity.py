"""Requirements a skill's author wrote can only name distributions (issue 17, defects 9 and 10;
core/catalog/requirements.py, core/run/env/install.py, docs/architecture.md *Real skills*).

An author controls requirements.txt, pyproject.toml and PEP 723 headers. A line that is a
path (``x/../../../<folder>`` was read as the package ``x``), a URL (``foo @ file:///etc``),
a pip option or bad bytes must never reach the installer: the install is refused before
anyone is asked, in one line naming the file and line, and audited as a refusal. What real
skills write (pins, ranges, extras, markers, comments, continuations) is not refused. Names
with non-ASCII letters are marked wherever a person approves something.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from skill_magics.core.base import envdirs
from skill_magics.core.base.errors import EnvironmentBuildError
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.env import build as envbuild
from skill_magics.core.run.gating.approval import InstallInfo
from skill_magics.notebook.approval.panel import summary_html, summary_text
from skill_magics.notebook.render.skills import requirements_view

USES = """
import json, sys
print(json.dumps({"ok": True}))
"""


class Recorder:
    """An approver that says No and keeps what it was asked (nothing must be installed)."""

    def __init__(self) -> None:
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return "no"


@pytest.fixture
def env_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "envs"
    monkeypatch.setenv(envdirs.ENV_DIR_VAR, str(root))
    return root


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A folder outside the skill that an installer could build as a package."""
    folder = tmp_path / "outside" / "evil"
    folder.mkdir(parents=True)
    (folder / "setup.py").write_text(
        f"open({os.fspath(tmp_path / 'BUILT')!r}, 'w').close()\n"
        "from setuptools import setup\nsetup(name='x', version='1')\n"
    )
    return folder


def _skill(make_skill, root: Path, files: dict, scripts: dict | None = None) -> Path:
    return make_skill(root, "reqs", scripts=scripts or {"scripts/run.py": USES}, files=files)


def _refused(manager: SkillManager) -> list:
    return [r for r in manager.audit.records() if r.outcome == "refused"]


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("x/{rel}", "is a path"),
        ("{abs}", "is a path"),
        ("foo @ file://{abs}", "points at 'file://"),
        ("foo @ https://example.com/foo-1.0.tar.gz", "points at 'https://"),
        ("https://example.com/foo-1.0.tar.gz", "is a URL"),
        ("-e {abs}", "pip option"),
        ("--index-url https://evil.example/simple", "pip option"),
        ("./local-package", "is a path"),
    ],
)
def test_a_requirement_that_names_no_distribution_is_refused_before_anyone_is_asked(
    make_skill, tmp_path: Path, env_root: Path, outside: Path, line: str, reason: str
) -> None:
    skills = tmp_path / "skills"
    rel = os.path.relpath(outside, skills / "reqs")
    text = line.format(rel=rel, abs=os.fspath(outside))
    _skill(make_skill, skills, {"requirements.txt": f"# deps\npypdf>=4\n{text}\n"})
    manager = SkillManager([skills])
    reqs = manager.requirements("reqs")
    # Never a package under a false name ("x", "foo"), and the refusal is on record.
    assert [p.name for p in reqs.packages] == ["pypdf"]
    assert [(r.source, r.line, r.text) for r in reqs.refused] == [("requirements.txt", 3, text)]
    approver = Recorder()
    with pytest.raises(EnvironmentBuildError) as info:
        manager.prepare_env("reqs", approver=approver)
    message = str(info.value)
    assert "\n" not in message and "requirements.txt, line 3" in message and reason in message
    assert "write a package name such as 'pypdf>=4'" in message
    assert approver.requests == []  # refused before the panel
    assert [(r.script, r.outcome) for r in manager.audit.records()] == [("<install>", "refused")]
    assert not env_root.exists() and not (tmp_path / "BUILT").exists()


def test_pyproject_and_pep723_lines_are_refused_with_their_file_and_line(
    make_skill, tmp_path: Path, env_root: Path
) -> None:
    skills = tmp_path / "skills"
    pep = '# /// script\n# dependencies = ["rich>=13", "foo @ file:///etc"]\n# ///\nimport rich\n'
    _skill(make_skill, skills, {}, scripts={"scripts/run.py": USES, "scripts/pep.py": pep})
    manager = SkillManager([skills])
    (refused,) = manager.requirements("reqs").refused
    assert (refused.source, refused.line) == ("scripts/pep.py (PEP 723)", 2)
    with pytest.raises(EnvironmentBuildError, match=r"scripts/pep.py \(PEP 723\), line 2"):
        manager.prepare_env("reqs", approver=Recorder())

    other = tmp_path / "other"
    project = (
        '[project]\nname = "x"\nversion = "1"\n'
        'dependencies = [\n  "lxml>=5",\n  "y @ git+https://example.com/y.git",\n]\n'
    )
    _skill(make_skill, other, {"pyproject.toml": project})
    manager = SkillManager([other])
    reqs = manager.requirements("reqs")
    assert [p.name for p in reqs.packages] == ["lxml"]
    assert [(r.source, r.line) for r in reqs.refused] == [("pyproject.toml", 6)]
    with pytest.raises(EnvironmentBuildError, match=r"pyproject.toml, line 6: .* points at"):
        manager.prepare_env("reqs", approver=Recorder())


# Shapes of requirement files in public skills (anthropics/skills xlsx and pptx,
# K-Dense-AI scientific skills, openai/skills): comments, blank lines, pins and ranges,
# extras, markers, dotted and underscored names, continuations. None of it is refused.
REAL = """\
# Primer design - dependencies
# Install: pip install -r requirements.txt

mcp>=1.0.0
biopython>=1.79        # bioinformatics
openpyxl>=3.0.0
python-dateutil>=2.8.2
requests[socks]>=2.31.0,<3
ruamel.yaml==0.18.6
zope_interface~=6.0
tomli>=2.0; python_version < "3.11"
numpy (>=1.24)
pandas>=2.0.0 \\
    ; platform_system != "Emscripten"
typing-extensions===4.12.2
"""


def test_what_real_skills_write_is_not_refused(make_skill, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    _skill(make_skill, skills, {"requirements.txt": REAL})
    reqs = SkillManager([skills]).requirements("reqs")
    assert reqs.refused == () and not [w for w in reqs.warnings if "line" in w]
    names = {p.name for p in reqs.packages}
    assert {"mcp", "biopython", "openpyxl", "python-dateutil", "requests", "ruamel.yaml"} <= names
    assert {"zope_interface", "numpy", "pandas", "typing-extensions"} <= names
    assert "tomli" not in names  # its marker (python_version < "3.11") is false on 3.11+
    specs = {p.name: p.spec for p in reqs.packages}
    assert specs["requests"] == "requests[socks]>=2.31.0,<3"
    assert specs["pandas"].startswith("pandas>=2.0.0")


# -- defect 10: bad bytes -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"pypdf>=4\nlxml\x00\n", "NUL byte"),
        (b"pypdf>=4\ncaf\xe9-tools\n", "not UTF-8"),  # Latin-1, not UTF-8
        (b"pypdf>=4\nlxml\x1b[2K\n", "control character"),
    ],
    ids=["nul", "latin1", "escape"],
)
def test_bad_bytes_in_a_requirement_give_one_line_naming_it_audited_as_refused(
    make_skill, tmp_path: Path, env_root: Path, data: bytes, reason: str
) -> None:
    skills = tmp_path / "skills"
    _skill(make_skill, skills, {"requirements.txt": data})
    manager = SkillManager([skills])
    with pytest.raises(EnvironmentBuildError) as info:
        manager.prepare_env("reqs", approver=None)  # the caller decided: still refused
    message = str(info.value)
    assert "\n" not in message and "\x00" not in message and "\x1b" not in message
    assert "requirements.txt, line 2" in message and reason in message
    assert [(r.script, r.outcome) for r in manager.audit.records()] == [("<install>", "refused")]
    assert not env_root.exists()


def test_the_builder_refuses_a_spec_that_names_no_distribution(tmp_path: Path) -> None:
    """In depth: build_env itself never hands the installer a path, a URL or a NUL byte."""
    for spec in ("lxml\x00", "x/../../etc", "foo @ file:///etc", "--index-url=https://x"):
        with pytest.raises(EnvironmentBuildError, match="pass package names"):
            envbuild.build_env(tmp_path / "home", [spec], skill="reqs")
    assert not (tmp_path / "home").exists()


# -- lookalike names ----------------------------------------------------------------------------


def test_a_cyrillic_lookalike_is_refused_and_named_marked(make_skill, tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    _skill(make_skill, skills, {"requirements.txt": "requ\u0435sts>=2\n"})
    manager = SkillManager([skills])
    reqs = manager.requirements("reqs")
    assert reqs.packages == () and "requ" not in {p.name for p in reqs.packages}
    # %skills show says so, marked.
    shown = requirements_view(reqs).text
    assert "Refused: requirements.txt, line 1: 'requ⟨U+0435⟩sts>=2' has non-ASCII" in shown
    with pytest.raises(EnvironmentBuildError) as info:
        manager.prepare_env("reqs", approver=Recorder())
    assert "requ⟨U+0435⟩sts>=2" in str(info.value) and "non-ASCII" in str(info.value)


def test_the_panel_marks_non_ascii_letters_in_names(
    make_skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    skills = tmp_path / "skills"
    make_skill(
        skills,
        "pdf-tools",
        {"name": "\u0440df-tools", "description": "A skill whose name imitates another."},
        scripts={"scripts/run.py": USES},
    )
    manager = SkillManager([skills])
    request = manager.plan("\u0440df-tools", "run").request
    # Packages to install and what a script lacks are names too (a request is a public
    # value: any approver may get one built elsewhere).
    (script,) = request.scripts
    request = dataclasses.replace(
        request,
        scripts=(dataclasses.replace(script, missing=("g\u0456t",)),),
        install=InstallInfo(packages=("requ\u0435sts>=2",)),
    )
    text = summary_text(request)
    assert "skill '⟨U+0440⟩df-tools'" in text and "\u0440" not in text
    assert "missing (it may fail): g⟨U+0456⟩t" in text
    assert "Install first: requ⟨U+0435⟩sts>=2" in text
    warnings = [line for line in text.splitlines() if "WARNING" in line]
    assert len(warnings) == 3 and all("it may imitate another name" in w for w in warnings)
    assert "CYRILLIC SMALL LETTER ER" in warnings[0]
    html = summary_html(request)
    assert "<mark>⟨U+0440⟩</mark>df-tools" in html and "g<mark>⟨U+0456⟩</mark>t" in html
    assert "requ<mark>⟨U+0435⟩</mark>sts" in html and html.count("Warning") == 3
    for lookalike in ("\u0440", "\u0435", "\u0456"):
        assert lookalike not in text and lookalike not in html
    # ASCII names get no warning at all.
    make_skill(skills, "plain", scripts={"scripts/run.py": USES})
    plain = SkillManager([skills]).plan("plain", "run").request
    assert plain.name_notes == () and "WARNING" not in summary_text(plain)
    assert "Warning" not in summary_html(plain)
