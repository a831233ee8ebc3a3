"""The docs site shows the notebooks' saved outputs whole (issue 44 item 9): long output lines
wrap instead of ending in a horizontal scroll box. Built from docs/ as `make docs` builds it,
opened in Chromium. `make test` builds the site once, in its docs stage, and runs this test
there on that build (SKILL_MAGICS_DOCS_SITE); run alone, the test builds it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
CLIPPED = """() => [...document.querySelectorAll('div.cell_output pre')]
    .filter(pre => pre.scrollWidth > pre.clientWidth + 1)
    .map(pre => pre.innerText.split('\\n').sort((a, b) => b.length - a.length)[0].slice(0, 80))"""
LONGEST = """() => Math.max(0, ...[...document.querySelectorAll('div.cell_output pre')]
    .flatMap(pre => pre.innerText.split('\\n').map(line => line.length)))"""


def test_notebook_outputs_on_the_docs_site_are_not_clipped(
    browser_context: Any, tmp_path: Path
) -> None:
    out = _site(tmp_path)
    page = browser_context.new_page()
    page.set_viewport_size({"width": 1000, "height": 800})
    longest = 0
    for html in sorted((out / "notebooks").glob("*.html")):
        page.goto(html.as_uri())
        clipped = page.evaluate(CLIPPED)
        assert not clipped, f"{html.name}: output lines in a scroll box: {clipped[:3]}"
        longest = max(longest, page.evaluate(LONGEST))
    assert longest > 120, "no long output line was looked at: the check proves nothing"
    page.close()


def _site(tmp_path: Path) -> Path:
    """The site `make test`'s docs stage built (-W: it built without a warning), else a new
    build."""
    if given := os.environ.get("SKILL_MAGICS_DOCS_SITE"):
        site = Path(given).resolve()
        assert (site / "index.html").is_file(), f"SKILL_MAGICS_DOCS_SITE={given}: no site there"
        return site
    out = tmp_path / "site"
    sphinx = Path(sys.executable).parent / "sphinx-build"
    built = subprocess.run(
        [str(sphinx), "-W", "--keep-going", "-q", "-b", "html", "docs", str(out)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    return out
