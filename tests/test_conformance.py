"""The conformance corpus: small skills in the shapes of public ones, run for real.

``tests/conformance/skills`` holds one folder per shape (its SKILL.md's description names
the public skill it follows: anthropics/skills, openai/skills, K-Dense-AI's scientific
skills, obra/superpowers, vercel-labs/agent-skills). Every script is our own, tiny and fast;
none needs the network, and none needs a package or program that is missing unless that is
the shape (names with ``skill-magics-absent`` / ``skill_magics_absent``).

What is expected is written here, script by script, not derived from the rule under test
(catalog/kinds.py): which scripts are offered (tools, completion, ``%skills show``'s main
table), which run but are not offered, which are refused; and for every script that may run,
the exact outcome of running it through the public API with an approver that says yes.

The corpus is copied to a temporary folder first: runs must not write ``__pycache__`` or
outputs into the repository.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from skill_magics.core.base.errors import HelperScriptError
from skill_magics.core.base.status import ScriptRole
from skill_magics.core.lab.validation import check_skill
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.tools import tool_specs

CORPUS = Path(__file__).resolve().parent / "conformance" / "skills"
HIDDEN = (".system", ".curated")  # openai/skills keeps its skills in hidden folders

# skill -> script -> what it is. OFF: offered; RUN: runs when asked, not offered; LIB: refused.
OFF, RUN, LIB = ScriptRole.OFFERED, ScriptRole.RUNNABLE, ScriptRole.LIBRARY
ROLES: dict[str, dict[str, ScriptRole]] = {
    "brainstorming": {
        "scripts/helper.js": OFF,
        "scripts/server.cjs": OFF,
        "scripts/start-server.sh": OFF,
        "scripts/stop-server.sh": OFF,
    },
    "codex-skill-creator": {
        "scripts/init_skill.py": OFF,
        "scripts/package_skill.py": OFF,
        "scripts/quick_validate.py": RUN,  # package_skill.py imports it
    },
    "deploy-vercel": {"resources/deploy.sh": OFF},  # run by an absolute /mnt/skills/... path
    "docx-office": {
        "scripts/__init__.py": LIB,
        "scripts/accept_changes.py": OFF,
        "scripts/comment.py": OFF,
        "scripts/office/helpers/__init__.py": LIB,
        "scripts/office/helpers/merge_runs.py": LIB,
        "scripts/office/pack.py": OFF,
        "scripts/office/soffice.py": OFF,  # imported, but SKILL.md runs it
        "scripts/office/unpack.py": OFF,
        "scripts/office/validate.py": OFF,
        "scripts/office/validators/__init__.py": LIB,
        "scripts/office/validators/base.py": RUN,
        "scripts/office/validators/docx.py": RUN,
    },
    "exec-bit": {
        "scripts/cli.py": OFF,
        "scripts/constants.py": LIB,
        "scripts/mathlib.py": RUN,  # definitions only, but checked in with the exec bit
    },
    "forecasting": {"scripts/check_system.py": OFF},
    "gh-comments": {"scripts/fetch_comments.py": OFF},
    "gh-fix-ci": {"scripts/inspect_pr_checks.py": OFF},
    "json-echo": {"scripts/show.py": OFF},
    "mcp-builder": {"scripts/connections.py": LIB, "scripts/evaluation.py": OFF},
    "node-tools": {
        "scripts/count.js": OFF,
        "scripts/format.mjs": OFF,
        "scripts/lib/text.mjs": RUN,
        "scripts/lib/util.js": RUN,
    },
    "notebook-client": {"scripts/test_skill.py": OFF},
    "opentrons-protocols": {
        # A shebang: it runs when asked, but holds only definitions (the robot's app imports
        # it and calls run()): no tool for a model (issue 44 item 11)
        "scripts/basic_protocol_template.py": RUN,
        "scripts/dilution_template.py": LIB,
    },
    "package-main": {
        "scripts/__init__.py": LIB,
        "scripts/tool/__init__.py": LIB,
        "scripts/tool/__main__.py": OFF,
        "scripts/tool/core.py": LIB,
    },
    "pdf-forms": {
        "scripts/check_boxes.py": OFF,
        "scripts/check_fillable.py": OFF,
        "scripts/extract_fields.py": OFF,  # fill_fields.py imports it; forms.md runs it
        "scripts/fill_fields.py": OFF,
    },
    "pep723-missing": {"scripts/report.py": OFF},
    "pep723-yaml": {"scripts/to_yaml.py": OFF},
    "pptx-deck": {
        "scripts/__init__.py": LIB,
        "scripts/add_slide.py": OFF,
        "scripts/clean.py": OFF,
        "scripts/office/soffice.py": RUN,
        "scripts/office/unpack.py": OFF,
        "scripts/thumbnail.py": OFF,
    },
    "pymoo-examples": {
        "scripts/multi_objective_example.py": OFF,
        "scripts/single_objective_example.py": OFF,
    },
    "rdkit-tools": {"scripts/molecular_properties.py": OFF, "scripts/similarity_search.py": OFF},
    "relative-imports": {
        "scripts/pkg/__init__.py": LIB,
        "scripts/pkg/cli.py": OFF,
        "scripts/pkg/helpers.py": LIB,
    },
    "root-scripts": {"extract.py": OFF, "helpers.py": LIB},
    "scientific-schematics": {
        "scripts/example_usage.sh": OFF,
        "scripts/generate_schematic.py": OFF,
    },
    "shell-tools": {
        "scripts/greet.sh": OFF,
        "scripts/lib/common.sh": RUN,  # sourced by greet.sh
        "scripts/status": OFF,
    },
    "skill-creator": {
        "eval-viewer/generate_review.py": OFF,  # outside scripts/, run by SKILL.md
        "scripts/__init__.py": LIB,
        "scripts/aggregate_benchmark.py": OFF,
        "scripts/generate_report.py": RUN,
        "scripts/package_skill.py": OFF,
        "scripts/quick_validate.py": RUN,
        "scripts/run_eval.py": RUN,
        "scripts/run_loop.py": OFF,
        "scripts/utils.py": LIB,
    },
    "skill-installer": {
        "scripts/github_utils.py": RUN,  # a shebang; both other scripts import it
        "scripts/install-skill-from-github.py": OFF,
        "scripts/list-curated-skills.py": OFF,
    },
    "slack-gif": {},  # library code in core/, no scripts
    "systematic-debugging": {"find-polluter.sh": OFF},
    "top-level-cli": {"scripts/fetch_async.py": OFF, "scripts/summarize.py": OFF},
    "typed-helpers": {"scripts/compat.py": LIB, "scripts/main.py": OFF, "scripts/typed.py": LIB},
    "web-artifacts": {"scripts/bundle-artifact.sh": OFF, "scripts/init-artifact.sh": OFF},
    "webapp-testing": {"scripts/with_server.py": OFF},  # examples/ are read, not run
    "writing-skills": {"render-graphs.js": OFF},
    "xlsx-recalc": {"scripts/office/soffice.py": RUN, "scripts/recalc.py": OFF},
}

# ``python -m`` modules: the rest run as files.
MODULES = {
    ("docx-office", "scripts/office/validators/docx.py"): "scripts.office.validators.docx",
    ("package-main", "scripts/tool/__main__.py"): "scripts.tool",
    ("relative-imports", "scripts/pkg/cli.py"): "scripts.pkg.cli",
    ("skill-creator", "scripts/aggregate_benchmark.py"): "scripts.aggregate_benchmark",
    ("skill-creator", "scripts/package_skill.py"): "scripts.package_skill",
    ("skill-creator", "scripts/run_eval.py"): "scripts.run_eval",
    ("skill-creator", "scripts/run_loop.py"): "scripts.run_loop",
}


@dataclass(frozen=True)
class Run:
    """One run: argv (None: JSON ``arguments`` on stdin), and what must come out."""

    argv: tuple[str, ...] | None = None
    arguments: Any = None
    exit: int = 0
    out: str = ""  # in stdout
    err: str = ""  # in stderr


NOT_INSTALLED = "is not installed"
RUNS: dict[tuple[str, str], Run] = {
    ("brainstorming", "scripts/helper.js"): Run(),
    ("brainstorming", "scripts/server.cjs"): Run(("--once",), out='"helper":"server.cjs"'),
    ("brainstorming", "scripts/start-server.sh"): Run(("--project-dir", "."), out='"url"'),
    ("brainstorming", "scripts/stop-server.sh"): Run(out='{"stopped": true}'),
    ("codex-skill-creator", "scripts/init_skill.py"): Run(
        ("my-skill", "--path", "out"), out="would create out/my-skill"
    ),
    ("codex-skill-creator", "scripts/package_skill.py"): Run(("target",), out="packaged"),
    ("codex-skill-creator", "scripts/quick_validate.py"): Run(("target",), out="valid"),
    ("deploy-vercel", "resources/deploy.sh"): Run(("site",), out="deploying site"),
    ("docx-office", "scripts/accept_changes.py"): Run(
        ("in.docx", "out.docx"), exit=127, err=NOT_INSTALLED
    ),
    ("docx-office", "scripts/comment.py"): Run(
        ("unpacked", "0", "Hi"), out='{"paragraph": 0, "author": "Claude"}'
    ),
    ("docx-office", "scripts/office/pack.py"): Run(("unpacked",), out="packed"),
    ("docx-office", "scripts/office/soffice.py"): Run(("--headless",), exit=127, err=NOT_INSTALLED),
    ("docx-office", "scripts/office/unpack.py"): Run(
        ("doc.docx",), out="unpacked doc.docx (1 runs merged)"
    ),
    ("docx-office", "scripts/office/validate.py"): Run(("out.docx",), out="valid"),
    ("docx-office", "scripts/office/validators/base.py"): Run(out="run validate.py instead"),
    ("docx-office", "scripts/office/validators/docx.py"): Run(out="True"),
    ("exec-bit", "scripts/cli.py"): Run(("2", "3"), out="5"),
    ("exec-bit", "scripts/mathlib.py"): Run(),
    ("forecasting", "scripts/check_system.py"): Run(out="CPUs: ok"),
    ("gh-comments", "scripts/fetch_comments.py"): Run(exit=1, err=NOT_INSTALLED),
    ("gh-fix-ci", "scripts/inspect_pr_checks.py"): Run(
        ("--pr", "123"), out="PR 123: no failing checks"
    ),
    ("json-echo", "scripts/show.py"): Run(arguments={"a": [1, 2]}, out="{'a': [1, 2]}"),
    ("mcp-builder", "scripts/evaluation.py"): Run(
        ("-t", "stdio", "-c", "python", "evaluation.xml"), out="stdio:python evaluation.xml"
    ),
    ("node-tools", "scripts/count.js"): Run(("a", "b", "c"), out='{"count":3}'),
    ("node-tools", "scripts/format.mjs"): Run(("some text",), out="Some Text"),
    ("node-tools", "scripts/lib/text.mjs"): Run(),
    ("node-tools", "scripts/lib/util.js"): Run(),
    ("notebook-client", "scripts/test_skill.py"): Run(("-v",), err="OK"),
    ("opentrons-protocols", "scripts/basic_protocol_template.py"): Run(
        exit=1, err="No module named 'skill_magics_absent_robot_api'"
    ),
    ("package-main", "scripts/tool/__main__.py"): Run(("--count", "2"), out="tool tool"),
    ("pdf-forms", "scripts/check_boxes.py"): Run(("boxes.json",), out="no overlaps"),
    ("pdf-forms", "scripts/check_fillable.py"): Run(
        ("form.txt",), out="This form has 2 fillable fields"
    ),
    ("pdf-forms", "scripts/extract_fields.py"): Run(
        ("form.txt", "fields.json"), out="wrote fields.json"
    ),
    ("pdf-forms", "scripts/fill_fields.py"): Run(
        ("form.txt", "values.json", "filled.txt"), out="filled 2 fields"
    ),
    ("pep723-missing", "scripts/report.py"): Run(
        exit=1, err="No module named 'skill_magics_absent_report_kit'"
    ),
    ("pep723-yaml", "scripts/to_yaml.py"): Run(arguments={"b": 1, "a": [1]}, out="a:\n- 1\nb: 1\n"),
    ("pptx-deck", "scripts/add_slide.py"): Run(
        ("unpacked", "slide2.xml"), out="added a slide from slide2.xml"
    ),
    ("pptx-deck", "scripts/clean.py"): Run(("unpacked",), out="removed 0 files from unpacked"),
    ("pptx-deck", "scripts/office/soffice.py"): Run(exit=127, err=NOT_INSTALLED),
    ("pptx-deck", "scripts/office/unpack.py"): Run(
        ("deck.pptx", "unpacked"), out="unpacked deck.pptx into unpacked"
    ),
    ("pptx-deck", "scripts/thumbnail.py"): Run(
        ("deck.pptx",), out="thumbnails of deck.pptx with SAL_USE_VCLPLUGIN=svp"
    ),
    ("pymoo-examples", "scripts/multi_objective_example.py"): Run(
        out="pareto front: [(1, 5), (2, 3), (4, 1)]"
    ),
    ("pymoo-examples", "scripts/single_objective_example.py"): Run(out="best x = 0.5"),
    ("rdkit-tools", "scripts/molecular_properties.py"): Run(("molecules.smi",), out="CCO\t3"),
    ("rdkit-tools", "scripts/similarity_search.py"): Run(
        ("CCO", "db.smi"), exit=1, out="toolkit is not installed"
    ),
    ("relative-imports", "scripts/pkg/cli.py"): Run(out="hello from a package"),
    ("root-scripts", "extract.py"): Run(("notes.txt",), out="3"),
    ("scientific-schematics", "scripts/example_usage.sh"): Run(out="wrote figures/b.png"),
    ("scientific-schematics", "scripts/generate_schematic.py"): Run(
        ("A diagram", "-o", "figures/x.png"), out="wrote figures/x.png"
    ),
    ("shell-tools", "scripts/greet.sh"): Run(("Ada",), out="hello, Ada"),
    ("shell-tools", "scripts/lib/common.sh"): Run(),
    ("shell-tools", "scripts/status"): Run(out="status: ok"),
    ("skill-creator", "eval-viewer/generate_review.py"): Run(
        ("ws", "--static", "review.html"), out="wrote review.html"
    ),
    ("skill-creator", "scripts/aggregate_benchmark.py"): Run(
        ("ws", "--skill-name", "demo"), out='{"skill": "demo", "runs": 0}'
    ),
    ("skill-creator", "scripts/generate_report.py"): Run(("a",), out="<ul><li>a</li></ul>"),
    ("skill-creator", "scripts/package_skill.py"): Run(("target",), out="would package 1 files"),
    ("skill-creator", "scripts/quick_validate.py"): Run(("target",), out="Skill is valid!"),
    ("skill-creator", "scripts/run_eval.py"): Run(
        ("target",), out="{'name': 'target', 'passed': 0}"
    ),
    ("skill-creator", "scripts/run_loop.py"): Run(
        ("--skill-path", "target"), out="&#x27;name&#x27;: &#x27;target&#x27;"
    ),
    ("skill-installer", "scripts/github_utils.py"): Run(),
    ("skill-installer", "scripts/install-skill-from-github.py"): Run(
        ("--repo", "o/r", "--path", "skills/x"),
        out="https://api.example.invalid/repos/o/r/contents/skills/x",
    ),
    ("skill-installer", "scripts/list-curated-skills.py"): Run(
        ("--format", "json"), out='["gh-comments", "gh-fix-ci"]'
    ),
    ("systematic-debugging", "find-polluter.sh"): Run(exit=1, out="Usage:"),
    ("top-level-cli", "scripts/fetch_async.py"): Run(("3",), out="[0, 1, 4]"),
    ("top-level-cli", "scripts/summarize.py"): Run(("data.csv",), out="2 rows"),
    ("typed-helpers", "scripts/main.py"): Run(out="3 values, numpy"),
    ("web-artifacts", "scripts/bundle-artifact.sh"): Run(exit=1, err=NOT_INSTALLED),
    ("web-artifacts", "scripts/init-artifact.sh"): Run(("demo",), out="initialised demo"),
    ("webapp-testing", "scripts/with_server.py"): Run(
        ("--server", "true", "--", sys.executable, "-c", "print('served')"), out="served"
    ),
    ("writing-skills", "render-graphs.js"): Run((".",), out="0 diagrams in ."),
    ("xlsx-recalc", "scripts/office/soffice.py"): Run(exit=127, err=NOT_INSTALLED),
    ("xlsx-recalc", "scripts/recalc.py"): Run(
        ("out.xlsx",), exit=1, out='{"status": "error"}', err=NOT_INSTALLED
    ),
}

# Files the runs read from the workspace (the caller's folder, where runs start).
WORKSPACE = {
    "form.txt": "field:name\nfield:date\nsome text\n",
    "values.json": '{"name": "Ada", "date": "2024-01-01", "other": 1}',
    "boxes.json": "[[0, 0, 1, 1], [2, 2, 3, 3]]",
    "target/SKILL.md": "---\nname: target\ndescription: A skill to validate.\n---\nBody.\n",
    "molecules.smi": "CCO\n",
    "data.csv": "a,b\n1,2\n3,4\n",
    "notes.txt": "one two three\n",
}


def _pairs(role: ScriptRole) -> set[tuple[str, str]]:
    return {
        (skill, rel) for skill, scripts in ROLES.items() for rel, r in scripts.items() if r == role
    }


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[SkillManager, Path]:
    """A manager over a copy of the corpus (hidden folders added, as a user would) that
    approves every run, and the workspace the runs start in."""
    root = tmp_path_factory.mktemp("corpus") / "skills"
    shutil.copytree(CORPUS, root)  # copy2: the exec bits come along
    work = tmp_path_factory.mktemp("work")
    for rel, text in WORKSPACE.items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text, encoding="utf-8")
    dirs = [root, *(root / h for h in HIDDEN)]
    manager = SkillManager(dirs, approver=lambda request: "yes_once", sandbox="off")
    return manager, work


def test_the_corpus_has_every_shape(corpus: tuple[SkillManager, Path]) -> None:
    manager, _ = corpus
    assert len(ROLES) >= 30
    assert {m.name for m in manager.list_skills()} == set(ROLES)
    # Skills in hidden folders are not searched unless added; the manager says where.
    (warning,) = SkillManager([CORPUS]).warnings
    assert "lie in hidden folders" in warning and ".curated (2), .system (2)" in warning


def test_what_may_run_and_what_is_offered(corpus: tuple[SkillManager, Path]) -> None:
    manager, _ = corpus
    for skill, expected in ROLES.items():
        got = {s.path.as_posix(): s.role for s in manager.get_skill(skill).scripts}
        assert got == expected, skill
        modules = {
            s.path.as_posix(): s.module for s in manager.get_skill(skill).scripts if s.module
        }
        assert modules == {rel: m for (sk, rel), m in MODULES.items() if sk == skill}, skill


def test_every_runnable_script_has_a_run(corpus: tuple[SkillManager, Path]) -> None:
    assert set(RUNS) == _pairs(OFF) | _pairs(RUN)


@pytest.mark.parametrize(("skill", "script"), sorted(RUNS), ids=lambda v: str(v))
def test_every_runnable_script_runs(
    corpus: tuple[SkillManager, Path], skill: str, script: str
) -> None:
    manager, work = corpus
    run = RUNS[(skill, script)]
    result = manager.execute_skill_script(
        skill, script, run.arguments, argv=run.argv, cwd=work, timeout=60
    )
    detail = f"exit {result.exit_code}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    assert result.exit_code == run.exit, detail
    assert run.out in result.stdout, detail
    assert run.err in result.stderr, detail
    if run.exit == 0 and not run.err:
        assert "Traceback" not in result.stderr, detail


@pytest.mark.parametrize(("skill", "script"), sorted(_pairs(LIB)), ids=lambda v: str(v))
def test_modules_that_do_nothing_are_refused_before_a_process_starts(
    corpus: tuple[SkillManager, Path], skill: str, script: str
) -> None:
    manager, work = corpus
    with pytest.raises(HelperScriptError) as info:
        manager.execute_skill_script(skill, script, cwd=work)
    message = str(info.value)
    assert "\n" not in message and "running it does nothing" in message
    record = manager.audit.records()[-1]
    assert record.outcome == "refused" and record.script == script
    runnable = sorted(rel for rel, r in ROLES[skill].items() if r != LIB)
    assert all(rel in message for rel in runnable[:8]), message


def test_tools_offer_exactly_the_offered_scripts(corpus: tuple[SkillManager, Path]) -> None:
    manager, _ = corpus
    specs = [s for s in tool_specs(manager, sorted(ROLES)) if s.kind == "script"]
    assert {(s.skill, s.script) for s in specs} == _pairs(OFF)


def test_completion_offers_exactly_the_offered_scripts(corpus: tuple[SkillManager, Path]) -> None:
    from skill_magics.notebook.completion import candidates

    manager, _ = corpus
    expected = {f"{skill}.{Path(rel).stem}" for skill, rel in _pairs(OFF)}
    assert set(candidates(manager)) == expected


def test_show_lists_offered_runnable_and_refused_apart(corpus: tuple[SkillManager, Path]) -> None:
    from skill_magics.notebook.render.skills import LIBRARY_TITLE, RUNNABLE_TITLE, skill_detail

    manager, _ = corpus
    for skill, roles in ROLES.items():
        text = skill_detail(manager.get_skill(skill)).text
        main = text.split("--- scripts ---", 1)[1].split("\n--- ", 1)[0]
        runnable = _section(text, RUNNABLE_TITLE)
        library = _section(text, LIBRARY_TITLE)
        for rel, role in roles.items():
            where = {OFF: main, RUN: runnable, LIB: library}[role]
            assert rel in where, (skill, rel, role)
            for other in {main, runnable, library} - {where}:
                assert f" {rel} " not in f" {other} ".replace("\n", " "), (skill, rel)


def _section(text: str, title: str) -> str:
    head = f"--- {title} ---"
    return text.split(head, 1)[1].split("\n--- ", 1)[0] if head in text else ""


def test_validation_reports_the_missing_reference_only(corpus: tuple[SkillManager, Path]) -> None:
    manager, _ = corpus
    found = {}
    for meta in manager.list_skills():
        codes = {p.code for p in check_skill(meta.base_dir)} & {"missing-reference", "not-runnable"}
        if codes:
            found[meta.name] = codes
    # timesfm's shape: SKILL.md names a script the skill does not ship.
    assert found == {"forecasting": {"missing-reference"}}
