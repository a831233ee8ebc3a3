"""The example notebooks: they run top to bottom headless, and the saved copies stay readable.

Executed with nbclient (``allow_stdin=False``, as in CI, papermill or nbconvert), pre-approved
with SKILL_MAGICS_AUTO_APPROVE=* because nobody can click. The saved-copy checks need no
kernel: the committed notebooks must carry outputs with HTML/text fallbacks (what GitHub and
nbviewer show), no widget views or widget state, and no errors. Refresh the saved copies with
``.venv/bin/python scripts/run_notebooks.py --save``.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

import nbformat
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK_DIR = REPO_ROOT / "notebooks"
EXPECTED = [
    "01_quickstart.ipynb",
    "02_prompt_context.ipynb",
    "03_teaching_demo.ipynb",
    "04_batch.ipynb",
    "05_sandbox_secrets.ipynb",
    "06_real_skills.ipynb",
    "07_skill_lab.ipynb",
    "08_mcp_skills.ipynb",
]


def _runner():
    """scripts/run_notebooks.py as a module (the same code CI and `--save` use)."""
    spec = importlib.util.spec_from_file_location(
        "run_notebooks", REPO_ROOT / "scripts" / "run_notebooks.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_notebooks", module)
    spec.loader.exec_module(module)
    return module


def _kernel_python_version(python: str) -> str:
    """Python version of the kernel the notebooks run in."""
    import subprocess

    code = "import platform; print(platform.python_version())"
    return subprocess.run(
        [python, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture(scope="session")
def notebook_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The kernel's Python: the matrix's (SKILL_MAGICS_TEST_KERNEL_PYTHON) when set, else a
    venv like `make demo`'s (tests/demo_support.py): the [demo] extra must hold what every
    cell needs, lazy imports behind a magic included (issue 44), so the notebooks run there."""
    from kernel_fixtures import KERNEL_PYTHON_ENV

    if os.environ.get(KERNEL_PYTHON_ENV):
        return os.path.abspath(os.environ[KERNEL_PYTHON_ENV])
    from demo_support import build_demo_venv

    return str(build_demo_venv(tmp_path_factory.mktemp("demo-venv") / "venv"))


def _all_text(nb: nbformat.NotebookNode) -> str:
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            parts.append(str(out.get("data", {}).get("text/plain", "")))
            parts.extend(out.get("traceback", []))  # the one-line errors of tagged cells
    return "\n".join(parts)


# Lines each notebook must produce: proof that the feature it teaches really happened.
MUST_SHOW = {
    "04_batch.ipynb": [
        "unit-converter.convert: 5 items, 5 completed",
        "(1, 'failed', 'cannot convert length (km) to mass (kg)')",
        "('completed', 'batch of 5 items')",
        "on dask (2 workers)",
        "ran on 2 workers; same results as locally: True",
        # warm start: the same batch cold and warm, same results, every item warm
        "same results: True",
        "cold: {'cold': 24}",
        "warm: {'warm': 24}",
        "preloaded: pandas",  # the batch waited for its server to import pandas
        "Stopped 2 warm servers",
    ],
    "01_quickstart.ipynb": [
        "A marathon is 26.22 miles (completed, exit code 0)",
        "('population', 'integer')",
        "{'the': 4, 'on': 2, 'sat': 2}",
        "auto_approve by env SKILL_MAGICS_AUTO_APPROVE",
    ],
    "02_prompt_context.ipynb": [
        "<available_skills>",
        '<skill_context id="csv-profiler">',
        "unit-converter__convert",
        '"result\\": 1.864114',
        "was declined: nothing ran",
        "Unknown tool 'unit-converter__convrt'",
        # issue 12: budgeted catalog, activation format, validation, token counts
        "left out: budget",
        "left out: disable-model-invocation: true",
        "Descriptions shortened to fit (ending in …): pdf-forms, pdf-tools.",
        "not listed to fit the catalog budget: release-notes.",
        "(estimate: characters / 4); budget: 180 tokens",
        '<skill_content name="csv-profiler">',
        "Relative paths in this skill are relative to the skill directory.",
        "activate_skill",
        "must be lowercase. Fix: rename it to 'broken-skill'",
        "scripts/missing.py is referenced but does not exist",
        "looks like an OpenAI API key (sk-p…L2)",
        "budgeted <available_skills> block always leaves this skill out",
    ],
    "03_teaching_demo.ipynb": [
        "('timeout', 124, True)",
        "('signaled', -11, 'SIGSEGV')",
        "PathSecurityError",
        "marker exists: False",
        "truncated: True",
        "showing first 2,000 of 1,000,000 characters",  # the view's cut, not only the capture's
        "secret-like variables the script saw: []",
    ],
    "05_sandbox_secrets.ipynb": [
        "read ~/.ssh/id_rsa: yes",
        "read ~/.ssh/id_rsa: no",
        "write into its own skill folder: no (Read-only file system)",
        "write ~/.bashrc: no (Read-only file system)",
        "write a report into the workspace: yes",
        "connect to 127.0.0.1: no",
        "connect to the agent socket: no",
        "read the kernel's connection file: no",
        "sandbox: workspace-write · network off · writable: <tmp>/work, <private /tmp>",
        "sandbox: workspace-write · network on",
        "'network_granted'",
        "WEATHER_API_KEY (not set; declared in ",
        "WEATHER_API_KEY (missing: enter it below)",
        "calling the API with key=****",
        "WEATHER_API_KEY (set; declared in ",
        "secret-like variables nosy sees: []",
    ],
    "06_real_skills.ipynb": [
        "Missing: tabulate, soffice. %skills env table-kit installs the missing packages.",
        "Built the environment of 'table-kit'",
        "Python: managed env | missing now: ['soffice']",
        "completed | -P -m scripts.show_table sales.csv",
        "north         120",
        "HelperScriptError: scripts/utils.py in skill 'table-kit' holds only imports, "
        "definitions and constants: running it does nothing; run one of "
        "scripts/show_table.py, scripts/to_pdf.py",
        "2 SKILL.md files under collection/skills lie in hidden folders",
        # issue 20: installed from a local repository, pinned by skills-lock.json
        "installing all of them: word-count, slugify",
        '"path": "skills/.curated/word-count",',
        "quarterly-sales-report",
        "lock            files match <tmp>/work/.agents/skills/skills-lock.json",
        "word-count: changed scripts/count.py",
        "Re-created 1 skill in <tmp>/work/.agents/skills: word-count",
        "All 2 skills in <tmp>/work/.agents/skills match its skills-lock.json",
        "changes: changed scripts/slugify.py",
        "| +print(re.sub(r'[^a-z0-9]+', '-', words).strip('-'))  # digits are kept now",
        "Updated 1 skill in <tmp>/work/.agents/skills: slugify (1 change); up to date: word-count",
        "q3-2025-sales",
    ],
    # issue 19: the skill lab, run against the scripted local server (tests/model_server.py)
    "07_skill_lab.ipynb": [
        "activated: unit-converter",
        "42.195 km is 26.2188 mi (computed by the unit-converter skill).",
        # issue 31: the scripted server's replies are labelled, never shown as a model's
        "Replies below are a recording or scripted, not a model's answers.",
        "[recorded/scripted reply, not a model · turn 1",
        "approval: yes once by auto_approve by env SKILL_MAGICS_AUTO_APPROVE",
        "unit-converter__convert | approval: no by approver | error: True",
        "5/8 queries passed · precision 67% · recall 50% · accuracy 62% · 0 errors · 24 calls",
        "test: 2/4 passed · precision 50% · recall 50% · accuracy 50%",
        "fixed in B: how many gallons are 20 litres of fuel",
        "max_calls=10 reached | 10 calls | 14 runs not sent",
        "scripts/convert.py approved for this evaluation",
        "12/12 runs · with_skill 100% · without_skill 0% · delta +1.00",
        "iteration-1/eval-marathon-in-miles/with_skill/run-1/grading.json",
        '"pass_rate": "+1.00"',
    ],
    # issue 32: skills over MCP, taken from a local server and served from the kernel
    "08_mcp_skills.ipynb": [
        "Added MCP server 'examples': 4 skills (examples/csv-profiler, examples/demo-behaviours, "
        "examples/text-tools, examples/unit-converter)",
        "--- from MCP servers ---",
        "examples/unit-converter: from MCP server 'examples' (",
        "approval binds to: mcp-sha256:",
        "26.2188 mi (completed, exit code 0)",
        # pre-approved by its full name, not by '*' (nobody can click headless)
        "yes_once by auto_approve by config SkillMagics.auto_approve",
        '<skill_context id="examples/unit-converter" origin="mcp:examples">',
        '"result": 6.213712',
        "<origin>\nmcp:examples; unsigned (MCP server examples)\n</origin>",
        "Serving 1 skill (greeting) at http://127.0.0.1:",
        "claude mcp add --transport http my-skills http://127.0.0.1:",
        "[mcp_servers.my-skills]",
        "Added MCP server 'mine': 1 skill (mine/greeting)",
        "mine/greeting: from MCP server 'mine' (http://127.0.0.1:",
        "Stopped 1 skills server",
    ],
}


# What 07 must show when run without any key (issue 31): the one line naming the fix, the
# real offer where a model would answer, the skill copy and its evals made for real.
KEYLESS_07 = [
    "No ANTHROPIC_API_KEY: set it before starting Jupyter",
    "No model answered here: a model would get this prompt with a system prompt of",
    "the tools activate_skill, ",
    "unit-converter__convert",
    "No Anthropic API key: set ANTHROPIC_API_KEY before starting Jupyter (or pass api_key= "
    "to the client), or use a local OpenAI-compatible server such as Ollama or vLLM",
    "No key: here a model would be asked each query 3 times",
    "No model answered here: a model would be asked each of the 8 queries 3 times with "
    "'unit-converter' offered, at most 10 requests.",
    "No model answered here: a model would work on each prompt of unit-converter's "
    "evals/evals.json, 2 runs each with and without the skill, at most 80 requests.",
    "lab-skills: 1 skill from it (unit-converter)",
]


def test_the_notebooks_exist() -> None:
    assert sorted(p.name for p in NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb")) == EXPECTED


@pytest.mark.parametrize("name", EXPECTED)
def test_saved_copy_is_readable(name: str) -> None:
    """Committed with outputs, HTML/text fallbacks only: readable on GitHub and nbviewer."""
    nb = nbformat.read(NOTEBOOK_DIR / name, as_version=4)
    nbformat.validate(nb)
    assert _runner().problems(nb) == []
    assert any(c.get("outputs") for c in nb.cells), f"{name} was saved without outputs"
    assert any(
        "text/html" in out.get("data", {}) for c in nb.cells for out in c.get("outputs", [])
    ), f"{name} has no HTML outputs: the results' fallbacks are missing"
    for line in MUST_SHOW[name]:
        assert line in _all_text(nb), f"saved {name} lacks {line!r}: re-run --save"


@pytest.mark.notebooks
def test_the_secret_never_reaches_the_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    """05 with a known key: the run got it (32 characters), yet neither the executed notebook
    (widget state included) nor its saved form holds it anywhere."""
    import json
    import secrets

    key = "nb-" + secrets.token_hex(16)
    monkeypatch.setenv("DEMO_WEATHER_API_KEY", key)
    runner = _runner()
    executed = runner.execute(NOTEBOOK_DIR / "05_sandbox_secrets.ipynb")
    saved = runner.readable(executed)
    assert f"key length: {len(key)}" in _all_text(saved)  # the value did reach the run
    assert key not in json.dumps(executed) and key not in json.dumps(saved)


@pytest.mark.notebooks
@pytest.mark.parametrize("name", EXPECTED)
def test_notebook_runs_headless(
    name: str, notebook_python: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Top to bottom in a fresh kernel of the demo venv (or the matrix's), no errors, and the
    expected results appear."""
    from kernel_fixtures import KERNEL_PYTHON_ENV

    monkeypatch.setenv(KERNEL_PYTHON_ENV, notebook_python)
    runner = _runner()
    executed = runner.execute(NOTEBOOK_DIR / name)
    nb = runner.readable(executed)
    assert runner.problems(nb) == []
    # The kernel was the one asked for (scripts/kernel-matrix.sh colab: its venv's Python).
    assert executed.metadata.language_info.version == _kernel_python_version(notebook_python)
    text = _all_text(nb)
    for line in MUST_SHOW[name]:
        assert line in text, f"{name} did not show {line!r}"


@pytest.mark.notebooks
def test_the_lab_notebook_runs_without_a_key() -> None:
    """07 for a reader without a key (issue 31): top to bottom, no error, no traceback; each
    step shows what it can and says where a model would answer, naming the fix once."""
    runner = _runner()
    nb = runner.readable(runner.execute(NOTEBOOK_DIR / "07_skill_lab.ipynb", keyless=True))
    assert runner.problems(nb) == []
    text = _all_text(nb)
    for line in KEYLESS_07:
        assert line in text, f"07 without a key did not show {line!r}"
    assert "Traceback" not in text and "TypeError" not in text
    assert "26.2188" not in text, "no answer may appear where no model answered"
