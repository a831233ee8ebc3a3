"""MCP skills in the notebook beyond adding a server (issue 32): the listing followed as the
server changes, and the other magics and the lab with an MCP skill named. Real processes: our
server (``python -m skill_magics.mcp serve``, over HTTP through core/mcp/serving.py or over
stdio), real runs through the one call site, the lab against tests/model_server.py.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_magics.core.mcp import serving

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(180)]

PY = sys.executable


def write_skill(root: Path, name: str, script: str = "print('hi')\n") -> Path:
    skill = root / name
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: The {name} skill. Use it in tests.\n---\n# {name}\n\n"
        "Run `scripts/run.py`.\n"
    )
    (skill / "scripts" / "run.py").write_text(script)
    return skill


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, str]]:
    """A folder served over HTTP by our server (the MCP cache in tmp): (folder, URL)."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    root = tmp_path / "served"
    write_skill(root, "hello-mcp")
    info = serving.serve([root])
    try:
        yield root, info.url
    finally:
        serving.stop(info.port)


# A server that goes away must not leave a traceback of the connection's thread behind.
@pytest.mark.filterwarnings("error::pytest.PytestUnhandledThreadExceptionWarning")
def test_skills_shows_the_servers_listing_now(
    ipython_shell: object, served: tuple[Path, str], tmp_path: Path
) -> None:
    root, url = served
    local = tmp_path / "local"
    write_skill(local, "local-one")
    shell = ipython_shell(local)  # type: ignore[operator]
    assert shell.run_cell(f"%skills add mcp team {url}").error_in_exec is None
    table = repr(shell.run_cell("%skills").result)
    assert "team/hello-mcp" in table and "--- from MCP servers ---" in table
    assert "do not run" not in table  # they do (tests/test_mcp_runs.py)
    # A skill added on the server: listed, and shown, without adding the server again.
    write_skill(root, "added-later")
    text = repr(shell.run_cell("%skills").result)
    assert "team/added-later" in text and "team/hello-mcp" in text and "local-one" in text
    shutil.rmtree(root / "hello-mcp")
    shown = shell.run_cell("%skills show team/added-later")
    assert shown.error_in_exec is None and "# added-later" in repr(shown.result)
    assert "scripts: run after approval bound to that value, from a verified copy " in repr(
        shown.result
    )
    # A skill removed on the server: gone from the table, and `show` says so.
    text = repr(shell.run_cell("%skills").result)
    assert "team/added-later" in text and "team/hello-mcp" not in text
    error = shell.run_cell("%skills show team/hello-mcp").error_in_exec
    assert error is not None and "lists no skill 'hello-mcp' (it lists: team/added-later)" in str(
        error
    )
    # The model-facing block follows the listing %skills read.
    block = shell.run_cell("%skills available").result
    assert "team/added-later" in str(block) and "team/hello-mcp" not in str(block)
    # The server goes away: the last listing stays, marked with why it is not current.
    serving.stop()
    table = shell.run_cell("%skills").result
    text = repr(table)
    assert "team/added-later" in text
    assert "MCP server 'team' could not be listed again (its last listing is shown)" in text
    assert "could not be listed again" in table._repr_html_()
    error = shell.run_cell("%skills show team/added-later").error_in_exec
    assert error is not None and "MCP server 'team'" in str(error) and "\n" not in str(error)
    assert shell.run_cell("%skills remove mcp team").error_in_exec is None
