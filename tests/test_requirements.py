"""manager.requirements(name): packages and programs named before anything runs
(catalog/requirements.py, distnames.py), shown in the approval request."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from skill_magics.core.catalog import distnames
from skill_magics.core.catalog.requirements import parse_pyproject, parse_requirements_txt
from skill_magics.core.manager import SkillManager
from tests.real_layouts import MISSING_PROGRAM, add_distribution, write_all


@pytest.fixture
def manager(tmp_path: Path) -> SkillManager:
    return SkillManager([write_all(tmp_path / "skills")])


def by_name(items):
    return {item.name: item for item in items}


def test_requirement_file_packages_and_programs(
    manager: SkillManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # defusedxml installed for the kernel's Python, whatever extras the test run has.
    monkeypatch.syspath_prepend(add_distribution(tmp_path / "site", "defusedxml", "0.7.1"))
    reqs = manager.requirements("office")
    packages = by_name(reqs.packages)
    assert set(packages) == {"defusedxml", "skill-magics-test-absent-pkg"}
    defused = packages["defusedxml"]
    assert defused.installed and defused.version == "0.7.1"
    assert defused.source == "requirements.txt"
    assert defused.spec == "defusedxml>=0.7" and defused.imports == ("defusedxml",)
    # base.py imports it; validators/__init__.py and validate.py import base.py.
    assert set(defused.scripts) >= {
        "scripts/office/validators/base.py",
        "scripts/office/validate.py",
    }
    absent = packages["skill-magics-test-absent-pkg"]
    assert not absent.installed and not absent.optional
    programs = by_name(reqs.programs)
    assert set(programs) == {"soffice", "qpdf", "gh", MISSING_PROGRAM}
    # soffice: a list assigned to a variable first, in a helper convert.py imports.
    assert programs["soffice"].scripts == ("scripts/office/soffice.py", "scripts/convert.py")
    assert programs["qpdf"].scripts == ("scripts/convert.py",)  # ["qpdf"] + args
    for name, prog in programs.items():
        assert prog.found == (shutil.which(name) is not None)
    assert not programs[MISSING_PROGRAM].found
    assert "skill-magics-test-absent-pkg" in reqs.missing and MISSING_PROGRAM in reqs.missing
    assert "defusedxml" not in reqs.missing
    assert reqs.python == sys.executable and reqs.python_source == "kernel"


def test_imports_stdlib_own_modules_and_optional(manager: SkillManager) -> None:
    reqs = manager.requirements("creator")
    # json/os/sys are stdlib; scripts.utils is the skill's own; PIL sits in try/except.
    assert [(p.name, p.imports, p.optional, p.source) for p in reqs.packages] == [
        ("pillow", ("PIL",), True, "imports")
    ]
    assert reqs.missing == []  # optional packages are never "missing"


def test_pep723_header(manager: SkillManager) -> None:
    (pkg,) = manager.requirements("pep").packages
    assert (pkg.name, pkg.spec, pkg.source) == (
        "tabulate",
        "tabulate>=0.9",
        "PEP 723 scripts/table.py",
    )
    assert pkg.scripts == ("scripts/table.py",) and pkg.imports == ("tabulate",)


def test_installed_versions_are_compared(tmp_path: Path, make_skill) -> None:
    make_skill(
        tmp_path,
        "pinned",
        scripts={"scripts/x.py": "import yaml\nif __name__ == '__main__':\n    pass\n"},
        files={"requirements.txt": "pyyaml>=999\n"},
        body="x",
    )
    (pkg,) = SkillManager([tmp_path]).requirements("pinned").packages
    assert pkg.name == "pyyaml" and pkg.imports == ("yaml",) and not pkg.installed
    assert pkg.version  # it is there, just too old


def test_cached_by_fingerprint(manager: SkillManager, tmp_path: Path) -> None:
    first = manager.requirements("pep")
    assert manager.requirements("pep") is first
    script = tmp_path / "skills" / "pep" / "scripts" / "table.py"
    script.write_text(script.read_text().replace("tabulate>=0.9", "tabulate>=0.8"))
    again = manager.requirements("pep")
    assert again is not first and again.packages[0].spec == "tabulate>=0.8"


def test_the_approval_request_lists_what_is_missing(
    manager: SkillManager, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    request = manager.plan("office", "convert", argv=["a.docx"]).request
    (script,) = request.scripts
    assert MISSING_PROGRAM in script.missing and "skill-magics-test-absent-pkg" in script.missing
    assert script.cwd == str(tmp_path.resolve())
    from skill_magics.notebook.approval.panel import summary_html, summary_text

    text = summary_text(request)
    assert f"working directory: {tmp_path.resolve()}" in text
    assert "missing (it may fail):" in text and MISSING_PROGRAM in text
    assert "Missing (it may fail)" in summary_html(request)


def test_distribution_names() -> None:
    assert distnames.distribution_for("PIL") == "pillow"
    assert distnames.distribution_for("docx.shared") == "python-docx"
    assert distnames.distribution_for("sklearn") == "scikit-learn"
    # From installed metadata: the folder where IPython is installed says "ipython".
    import IPython

    folder = str(Path(IPython.__file__).resolve().parent.parent)
    assert distnames.normalize(distnames.distribution_for("IPython", [], folder)) == "ipython"
    assert distnames.distribution_for("not_installed_anywhere") == "not_installed_anywhere"


def test_requirement_file_parsers() -> None:
    # Only lines that name a distribution are specs: options, URLs (a direct reference
    # included: issue 17) are not (manager.requirements refuses them, tests/
    # test_requirement_integrity.py).
    assert parse_requirements_txt(
        "# c\npypdf>=4  # pdf\n-r dev.txt\n--index-url https://x\nlxml\n"
        "https://example.com/x.whl\npkg @ https://example.com/pkg.whl\n"
    ) == ["pypdf>=4", "lxml"]
    assert parse_pyproject(
        '[project]\nname="x"\ndependencies=["a>=1"]\n[project.optional-dependencies]\ndev=["b"]\n'
    ) == [("a>=1", False), ("b", True)]
    assert parse_pyproject("not = [toml") is None


def test_a_script_that_does_not_parse_is_a_warning(tmp_path: Path, make_skill) -> None:
    broken = "import yaml\nfrom os import (path,\n"  # an import that never closes
    make_skill(tmp_path, "broken", scripts={"scripts/x.py": broken}, body="x")
    reqs = SkillManager([tmp_path]).requirements("broken")
    assert [p.name for p in reqs.packages] == ["pyyaml"]  # the other imports still count
    assert "does not parse" in reqs.warnings[0] and "from os import" in reqs.warnings[0]
    assert os.path.basename(reqs.python)
