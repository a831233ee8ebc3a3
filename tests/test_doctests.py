"""Every ``>>>`` example in the package runs here: a docstring that stops being true fails
the suite (``make test`` runs this file, and so does each Python of the matrix).

The examples run in a fresh working folder holding ``skills/`` (copies of three bundled
example skills: csv-profiler, demo-behaviours, text-tools, and a hidden ``.system/`` one) and
``layouts/`` (the shapes some examples describe: a skill whose script imports the skill's
modules, a plugin), with ``manager``, a SkillManager over ``skills/``, and ``Path`` in their
namespace; no example starts a process. Examples that need one (a run, a kernel, a warm
server, pip, git, the network, a model API, a widget) are code blocks without prompts, headed
``Example (not run as a doctest: why)::``: so a ``>>>`` anywhere in the package is a claim,
and :func:`test_every_prompt_is_in_the_list` keeps the list whole.
"""

from __future__ import annotations

import builtins
import doctest
import importlib
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

import skill_magics

PACKAGE = Path(skill_magics.__file__).parent
EXAMPLE_SKILLS = ("csv-profiler", "demo-behaviours", "text-tools")
LAYOUTS = {
    "skills/.system/installer/SKILL.md": "---\nname: installer\ndescription: Installs.\n---\n",
    "layouts/eval-skill/SKILL.md": (
        "---\nname: eval-skill\ndescription: Evaluates.\n---\nRun `scripts/run_eval.py`.\n"
    ),
    "layouts/eval-skill/scripts/run_eval.py": (
        "import subprocess\n\nimport lxml\n\nfrom scripts.utils import score\n\n"
        "if __name__ == '__main__':\n    subprocess.run(['soffice', '--version'])\n"
    ),
    "layouts/eval-skill/scripts/utils.py": "def score():\n    return 1\n",
    "layouts/my-plugin/plugin.json": '{"name": "my-plugin", "version": "1.0.0"}\n',
    "layouts/my-plugin/mcp.json": '{"mcpServers": {"github": {"command": "gh-mcp"}}}\n',
}

DOCTESTED = (
    "skill_magics.core.base.audit",
    "skill_magics.core.base.deprecation",
    "skill_magics.core.base.envdirs",
    "skill_magics.core.base.envsetting",
    "skill_magics.core.base.errors",
    "skill_magics.core.base.fingerprint",
    "skill_magics.core.base.interpreters",
    "skill_magics.core.base.jsonable",
    "skill_magics.core.base.namelist",
    "skill_magics.core.base.paths",
    "skill_magics.core.base.loaded",
    "skill_magics.core.base.recent",
    "skill_magics.core.base.registry",
    "skill_magics.core.base.secrets",
    "skill_magics.core.base.status",
    "skill_magics.core.base.steps",
    "skill_magics.core.base.trustfile",
    "skill_magics.core.base.version",
    "skill_magics.core.base.visible",
    "skill_magics.core.catalog.detect",
    "skill_magics.core.catalog.discovery",
    "skill_magics.core.catalog.distnames",
    "skill_magics.core.catalog.frontmatter",
    "skill_magics.core.catalog.hidden",
    "skill_magics.core.catalog.includes",
    "skill_magics.core.catalog.kinds",
    "skill_magics.core.catalog.plugins",
    "skill_magics.core.catalog.pysource",
    "skill_magics.core.catalog.references",
    "skill_magics.core.catalog.requirements",
    "skill_magics.core.catalog.requirements_cache",
    "skill_magics.core.catalog.skill",
    "skill_magics.core.catalog.toplevel",
    "skill_magics.core.providers",
    "skill_magics.core.providers.base",
    "skill_magics.core.lab.validation",
    "skill_magics.core.mcp.cache",
    "skill_magics.core.moved",
    "skill_magics.core.panel.summary",
    "skill_magics.core.prompt.activation",
    "skill_magics.core.prompt.available_skills",
    "skill_magics.core.prompt.context",
    "skill_magics.core.prompt.tokens",
    "skill_magics.core.prompt.xmltext",
    "skill_magics.core.run.gating.approval",
    "skill_magics.core.run.batch.ship_owner",
    "skill_magics.core.run.planning.checks",
    "skill_magics.core.run.gating.gate",
    "skill_magics.core.run.planning.payload",
    "skill_magics.core.run.launching.sandbox",
    "skill_magics.core.run.launching.sandbox_mounts",
    "skill_magics.core.run.launching.sandbox_profiles",
    "skill_magics.core.run.launching.launchers",
    "skill_magics.core.run.planning.settings",
    "skill_magics.core.run.gating.store",
    "skill_magics.core.policy.rules",
    "skill_magics.core.installed.signature",
    "skill_magics.core.trust.signers",
    "skill_magics.core.run.planning.template",
    "skill_magics.core.run.launching.warm.skillcode",
    "skill_magics.core.run.launching.warm.wire",
    "skill_magics.core.run.planning.workdir",
    "skill_magics.core.sources.members",
    "skill_magics.core.installed.names",
    "skill_magics.core.sources.kinds",
    "skill_magics.core.sources.spec",
    "skill_magics.core.trace.switch",
    "skill_magics.core.usage",
    "skill_magics.notebook.approval.preapproval",
    "skill_magics.notebook.cmd",
    "skill_magics.notebook.magics.runline",
    "skill_magics.notebook.names",
    "skill_magics.notebook.render.ansi",
    "skill_magics.notebook.render.display",
)

FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
PROMPT = re.compile(r"^\s*>>>", re.MULTILINE)


def _modules_with_prompts() -> set[str]:
    found = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent)
        if rel.parts[1] == "examples":  # skills' scripts, not the package's code
            continue
        if PROMPT.search(path.read_text(encoding="utf-8")):
            parts = rel.with_suffix("").parts
            found.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def test_every_prompt_is_in_the_list() -> None:
    """A module with a ``>>>`` line not in DOCTESTED would never run it: add it (or make the
    example a code block without prompts, saying why it cannot run)."""
    assert _modules_with_prompts() == set(DOCTESTED)


_ABSENT = object()


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in EXAMPLE_SKILLS:
        shutil.copytree(PACKAGE / "examples" / "skills" / name, tmp_path / "skills" / name)
    for rel, text in LAYOUTS.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    monkeypatch.chdir(tmp_path)
    # doctest shows values with sys.__displayhook__, which sets builtins._; IPython's
    # displayhook then stops setting the shell's "_" (tests/test_magics.py reads it).
    before = builtins.__dict__.get("_", _ABSENT)
    yield tmp_path
    if before is _ABSENT:
        builtins.__dict__.pop("_", None)
    else:
        builtins._ = before  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", DOCTESTED)
def test_doctests(name: str, workdir: Path) -> None:
    from skill_magics.core.manager import SkillManager

    module = importlib.import_module(name)
    tests = [t for t in doctest.DocTestFinder().find(module) if t.examples]
    assert tests, f"{name} has no examples: take it out of DOCTESTED"
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    report: list[str] = []
    for test in tests:
        test.globs.update(manager=SkillManager([workdir / "skills"]), Path=Path)
        runner.run(test, out=report.append)
    assert runner.failures == 0, "".join(report)
