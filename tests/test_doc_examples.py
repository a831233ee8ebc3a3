"""Every code example in README.md and docs/*.md runs, so none can rot.

Each Markdown file's fenced blocks are read in order. A `python` or `ipython` block is a cell:
all of a file's cells run in order in one real kernel (jupyter_client), started in an empty
folder with the example skills configured (`SKILL_MAGICS_PATH`, as `make demo` sets it), the
documented headless pre-approval (`SKILL_MAGICS_AUTO_APPROVE='*,examples/*'`: nobody can click
here; `*` is local skills only, docs/mcp.md's server is labelled `examples`) and the
extension loaded (`%load_ext skill_magics`, which every page assumes). A cell
passes when it raises nothing; at the end, every run result the file's examples kept (`-o`,
assignments) must have completed.

The only way out is explicit: a block that cannot run here (it needs an API key, the network,
Colab, or is a shell command, a diagram, a SKILL.md excerpt) has a line
`<!-- not-run: REASON -->` right above it. Any other block (another language, no language, a
python block that was forgotten) fails the structure test. MyST directives (```{toctree}```)
are the site's structure, not examples.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from kernel_fixtures import start_kernel

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
RUN_LANGS = {"python", "ipython"}
MARKER = re.compile(r"^<!-- not-run: (?P<reason>\S.*\S) -->$")
FENCE = re.compile(r"^(?P<indent> *)(?P<fence>`{3,}|~{3,})(?P<info>.*)$")

# Run in the kernel after a file's examples: every kept run result must have completed.
STATUS_CHECK = """
import json as _json
from skill_magics import BatchResult as _B, ScriptExecutionResult as _S, SkillRunResult as _R
_bad = {}
for _name, _value in list(globals().items()):
    if _name.startswith("_"):
        continue
    if isinstance(_value, (_R, _S)) and str(_value.status) != "completed":
        _bad[_name] = str(_value.status)
    elif isinstance(_value, _B):
        _failed = {str(i.status) for i in _value.items if str(i.status) != "completed"}
        if _failed:
            _bad[_name] = sorted(_failed)
print("STATUS " + _json.dumps(_bad))
"""


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    lang: str
    code: str
    skip_reason: str | None  # the not-run marker's reason, or None

    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page`` in order (MyST directives left out)."""
    lines = page.read_text(encoding="utf-8").splitlines()
    found: list[Block] = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, info = m["fence"], m["info"].strip()
        end = i + 1
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        body = "\n".join(line[len(m["indent"]) :] for line in lines[i + 1 : end])
        prev = lines[i - 1].strip() if i else ""
        marker = MARKER.match(prev)
        if not info.startswith("{"):
            lang = info.split()[0] if info else ""
            found.append(Block(page, i + 1, lang, body, marker["reason"] if marker else None))
        i = end + 1
    return found


def _ids(paths: list[Path]) -> list[str]:
    return [str(p.relative_to(REPO)) for p in paths]


def test_every_block_runs_or_says_why_not() -> None:
    """The marker is the only way out: no block is silently left unrun."""
    unmarked = [
        f"{b.where()}: ```{b.lang or '(no language)'} block"
        for page in PAGES
        for b in blocks(page)
        if b.lang not in RUN_LANGS and b.skip_reason is None
    ]
    assert not unmarked, (
        "blocks that are neither python/ipython (run by this test) nor marked with "
        "'<!-- not-run: REASON -->' on the line above:\n" + "\n".join(unmarked)
    )
    runnable = [b for page in PAGES for b in blocks(page) if b.skip_reason is None]
    assert len(runnable) >= 20, len(runnable)  # the README's tour alone has 12


def test_the_block_reader_sees_markers_and_skips_directives(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "```python\nx = 1\n```\n<!-- not-run: needs an API key -->\n```python\nclient()\n```\n"
        "```{toctree}\nindex\n```\n<!-- not-run: -->\n```bash\nls\n```\n",
        encoding="utf-8",
    )
    got = [(b.line, b.lang, b.code, b.skip_reason) for b in blocks(page)]
    assert got == [
        (1, "python", "x = 1", None),
        (5, "python", "client()", "needs an API key"),
        (12, "bash", "ls", None),  # a marker without a reason does not count
    ]


# Not marked `kernel`: the pages are checked once, in this venv's kernel (which has what the
# examples import: pandas for --eval), not again in each kernel-matrix venv, which holds the
# package's runtime and [lab] only (scripts/kernel-matrix.sh).
@pytest.mark.timeout(600)
@pytest.mark.parametrize("page", PAGES, ids=_ids(PAGES))
def test_examples_run_in_a_real_kernel(page: Path, tmp_path: Path) -> None:
    cells = [b for b in blocks(page) if b.lang in RUN_LANGS and b.skip_reason is None]
    if not cells:
        assert all(b.skip_reason for b in blocks(page))
        return
    examples = REPO / "skill_magics" / "examples" / "skills"
    env = {
        "SKILL_MAGICS_PATH": str(examples),
        "SKILL_MAGICS_AUTO_APPROVE": "*,examples/*",  # local skills, docs/mcp.md's server's
        "SKILL_MAGICS_ENV_DIR": str(tmp_path / "envs"),
        "SKILL_MAGICS_MCP_CACHE": str(tmp_path / "mcp-cache"),  # docs/mcp.md runs a script
    }
    work = tmp_path / "work"
    work.mkdir()
    with start_kernel(sys.executable, env=env, cwd=work) as kernel:
        # What every page after the README's tour assumes; a page that loads it says so again.
        prelude = kernel.execute("%load_ext skill_magics", timeout=120)
        assert prelude.ok, prelude.error_text
        for block in cells:
            result = kernel.execute(block.code, timeout=240)
            assert result.ok, f"{block.where()} failed: {result.error_text}\n{block.code}"
        check = kernel.execute(STATUS_CHECK, timeout=60)
        assert check.ok, check.error_text
        line = next(x for x in check.stdout.splitlines() if x.startswith("STATUS "))
        assert json.loads(line[len("STATUS ") :]) == {}, f"{page.name}: runs that did not complete"
