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


# -- %skills env, %%skillpy, %skills validate and the lab with an MCP skill named ---------

NEEDS_TABULATE = """# /// script
# dependencies = ["tabulate>=0.9"]
# ///
import json, sys
import tabulate
print(json.dumps({"python": sys.executable, "table": tabulate.tabulate([[1, 2]])}))
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[object, Path]]:
    """A manager with server 'team' (stdio) serving ``needs-pkg`` (its script imports
    tabulate, which the kernel lacks) and ``greeter``; the cache and envs in tmp."""
    from skill_magics.core.manager import SkillManager

    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("SKILL_MAGICS_ENV_DIR", str(tmp_path / "envs"))
    root = tmp_path / "served"
    write_skill(root, "needs-pkg", NEEDS_TABULATE)
    write_skill(
        root,
        "greeter",
        "import json, sys\nprint('hello ' + json.load(sys.stdin).get('who', '?'))\n",
    )
    local = tmp_path / "local"
    write_skill(local, "local-one")
    manager = SkillManager([local])
    manager.add_mcp_server("team", command=[PY, "-m", "skill_magics.mcp", "serve", str(root)])
    try:
        yield manager, root
    finally:
        manager.remove_mcp_server("team")


def test_skills_env_builds_an_mcp_skills_environment(
    ipython_shell: object, team: tuple[object, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """The install is asked with the MCP origin (it was refused as stale: the request carried
    no digest set, the skill's copy did), then the skill's runs use the environment."""
    from manager_support import RecordingApprover

    from skill_magics.core.manager import SkillManager

    manager, _root = team
    assert isinstance(manager, SkillManager)
    asked = RecordingApprover("yes_once")
    report = manager.prepare_env("team/needs-pkg", approver=asked)
    assert report.status == "built", report.message
    (request,) = asked.requests
    assert request.install is not None and request.install.packages == ("tabulate>=0.9",)
    assert request.mcp is not None and request.mcp.origin == "mcp:team"
    result = manager.execute_skill_script("team/needs-pkg", "run", approver=asked)
    assert result.exit_code == 0, result.stderr
    assert "/current/bin/python" in result.stdout and "-  -" in result.stdout
    assert request.mcp.binding == asked.requests[-1].mcp.binding  # the same digest set
    # The magic, pre-approved by the explicit LABEL/NAME (nobody can click here): up to date.
    shell = ipython_shell(Path(manager.skill_dirs[0]))  # type: ignore[operator]
    add = f"%skills add mcp team -- {PY} -m skill_magics.mcp serve {_root}"
    assert shell.run_cell(add).error_in_exec is None
    shell.run_cell('%config SkillMagics.auto_approve = ["team/needs-pkg"]')
    assert shell.run_cell("%skills env team/needs-pkg").error_in_exec is None
    assert "The environment of 'team/needs-pkg' is up to date" in capsys.readouterr().out


def test_skillpy_refuses_an_mcp_skill_in_one_line(
    ipython_shell: object, team: tuple[object, Path]
) -> None:
    from skill_magics.core.run.env.skillpy import run_python_in_skill

    manager, _root = team
    got = run_python_in_skill(manager, "team/greeter", "print(1)", approver=None)  # type: ignore[arg-type]
    assert got == {
        "skill_name": "team/greeter",
        "error": "'team/greeter' is an MCP server's skill: code runs only in a skill's own "
        "venv, and a skill from a server never brings one; run its scripts instead "
        "(%%skillrun team/greeter.SCRIPT, or manager.execute_skill_script)",
    }
    assert manager.audit.records() == []  # nothing was planned, fetched or run
    # What must NOT change: a LABEL/NAME of no added server is the invalid name it was.
    assert run_python_in_skill(manager, "nobody/greeter", "1", approver=None)["error"].startswith(  # type: ignore[arg-type]
        "Invalid skill name: 'nobody/greeter'"
    )
    shell = ipython_shell(Path(manager.skill_dirs[0]))  # type: ignore[operator, attr-defined]
    add = f"%skills add mcp team -- {PY} -m skill_magics.mcp serve {_root}"
    assert shell.run_cell(add).error_in_exec is None
    shown = shell.run_cell("%%skillpy team/greeter\nprint(1)\n").result
    assert "is an MCP server's skill" in repr(shown) and "\n" not in repr(shown).strip()


def test_validate_an_mcp_skill_checks_its_copy(
    ipython_shell: object,
    team: tuple[object, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from skill_magics.core.lab.validation import validate_skills

    manager, root = team
    (root / "greeter" / "SKILL.md").write_text(
        "---\nname: greeter\ndescription: Greets. Use it in tests.\n---\n# greeter\n\n"
        "Run `scripts/run.py`; see `scripts/gone.py`.\n"
    )
    got = validate_skills(manager, ["team/greeter", "team/needs-pkg"])  # type: ignore[arg-type]
    # Its real problem is found; the cache's folder name is not one (it said 'files').
    assert got == {
        "team/greeter": [
            "SKILL.md:7: scripts/gone.py is referenced but does not exist. Fix: fix the path "
            "or add the file"
        ],
        "team/needs-pkg": [],
    }
    # What must NOT change: a path that looks like LABEL/NAME with no such server is a path.
    monkeypatch.chdir(tmp_path)
    write_skill(tmp_path / "skills", "folder-one")
    assert validate_skills(manager, ["skills/folder-one"]) == {"skills/folder-one": []}  # type: ignore[arg-type]
    shell = ipython_shell(Path(manager.skill_dirs[0]))  # type: ignore[operator, attr-defined]
    add = f"%skills add mcp team -- {PY} -m skill_magics.mcp serve {root}"
    assert shell.run_cell(add).error_in_exec is None
    report = shell.run_cell("%skills validate team/greeter").result
    assert "scripts/gone.py is referenced" in repr(report) and "folder" not in repr(report)


def test_the_lab_offers_and_runs_an_mcp_skill_named(
    server: object, team: tuple[object, Path]
) -> None:
    from lab_support import by_turn, make_client
    from manager_support import RecordingApprover
    from model_server import call, say

    from skill_magics import run_agent
    from skill_magics.core.prompt.tools import tool_specs

    manager, _root = team
    (tool,) = [
        s.name
        for s in tool_specs(manager, ["team/greeter"])  # type: ignore[arg-type]
        if s.kind == "script"
    ]
    server.script = by_turn(  # type: ignore[attr-defined]
        call("activate_skill", {"name": "team/greeter"}),
        call(tool, {"who": "ann"}),
        lambda c: say("said: " + c.tool_results[-1]["content"].strip()),
    )
    asked = RecordingApprover("yes_once")
    transcript = run_agent(
        make_client("anthropic", server.url),  # type: ignore[attr-defined]
        manager,
        "greet ann",
        model="m-1",
        skills=["team/greeter"],
        approver=asked,
    )
    first = server.calls[0]  # type: ignore[attr-defined]
    origin = "<origin>\nmcp:team; unsigned (MCP server team)\n</origin>"
    assert origin in first.system and "local-one" not in first.system
    assert sorted(first.tools) == ["activate_skill", tool]
    assert "# greeter" in server.calls[1].tool_results[-1]["content"]  # type: ignore[attr-defined]
    assert transcript.final_text == "said: hello ann"
    (request,) = asked.requests  # the script call passed the gate with the MCP origin
    assert request.skill_name == "team/greeter" and request.mcp is not None


def test_the_lab_evaluates_an_mcp_skill(
    server: object, team: tuple[object, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its evals/evals.json from the verified copy; the default workspace is named after the
    label and the skill (it was ./files-workspace, the cache folder's name, for every one)."""
    import json

    from lab_support import make_client
    from model_server import Call, Scripted, call, say

    from skill_magics import evaluate_triggers, run_evals
    from skill_magics.core.prompt.tools import tool_specs

    manager, root = team
    evals = root / "greeter" / "evals"
    evals.mkdir()
    (evals / "evals.json").write_text(
        json.dumps(
            {
                "skill_name": "greeter",
                "evals": [{"id": 1, "prompt": "greet ann", "expected_output": "hello ann"}],
            }
        )
    )
    (tool,) = [
        s.name
        for s in tool_specs(manager, ["team/greeter"])  # type: ignore[arg-type]
        if s.kind == "script"
    ]

    def script(c: Call) -> Scripted:
        if "<available_skills>" not in c.system:
            return say("no skill here")
        done = [name for name, _ in c.calls_made]
        if not done:
            return call("activate_skill", {"name": "team/greeter"})
        if len(done) == 1:
            return call(tool, {"who": "ann"})
        return say(c.tool_results[-1]["content"].strip())

    server.script = script  # type: ignore[attr-defined]
    client = make_client("anthropic", server.url)  # type: ignore[attr-defined]
    monkeypatch.chdir(tmp_path)
    report = run_evals(
        client, manager, "team/greeter", model="m", runs=1, approver=lambda r: "yes_once"
    )
    assert report.workspace == tmp_path / "team.greeter-workspace"
    with_skill = next(r for r in report.runs if r.configuration == "with_skill")
    assert (with_skill.run_dir / "outputs" / "response.md").read_text().startswith("hello ann")
    assert not (tmp_path / "files-workspace").exists()
    # Triggers: the MCP skill offered (with its origin) beside the others.
    server.script = lambda c: (  # type: ignore[attr-defined]
        call("activate_skill", {"name": "team/greeter"}) if "greet" in c.prompt else say("no")
    )
    triggers = evaluate_triggers(
        client,
        manager,
        "team/greeter",
        [
            {"query": "greet bob", "should_trigger": True},
            {"query": "sum 2", "should_trigger": False},
        ],
        model="m",
        runs=1,
    )
    assert [r.passed for r in triggers.results] == [True, True]


def test_add_mcp_takes_a_connect_timeout(
    ipython_shell: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 39: a server that never finishes its handshake held `%skills add mcp` for 65 s;
    `--connect-timeout S` (``connect_timeout=`` from Python) bounds that, and `--timeout S`
    each call."""
    import time

    from skill_magics.core.base.errors import McpError
    from skill_magics.core.mcp.servers import servers_of
    from skill_magics.notebook.extension import get_magics

    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    (tmp_path / "local").mkdir()
    shell = ipython_shell(tmp_path / "local")  # type: ignore[operator]
    manager = get_magics(shell).manager
    silent = Path(__file__).resolve().parent / "mcp_servers" / "silent.py"
    started = time.monotonic()
    err = shell.run_cell(f"%skills add mcp slow --connect-timeout 2 -- {PY} {silent}").error_in_exec
    assert time.monotonic() - started < 30  # 2 s and the stop of the server, under load
    assert "did not answer the handshake within 2 s" in str(err) and "\n" not in str(err)
    with pytest.raises(McpError, match="did not answer the handshake within 2 s"):
        manager.add_mcp_server("slow", command=[PY, str(silent)], connect_timeout=2)
    for bad, why in (
        ("--connect-timeout 0", "connect_timeout must be more than 0"),
        ("--connect-timeout soon", "takes seconds (a number), not 'soon'"),
        ("--wait 3", "Unknown option '--wait'"),
    ):
        err = shell.run_cell(f"%skills add mcp slow {bad} -- {PY} {silent}").error_in_exec
        assert why in str(err), str(err)
    assert servers_of(manager).get("slow") is None
    # What must NOT be refused: both options, before a server that answers.
    root = tmp_path / "served"
    write_skill(root, "hello-mcp")
    add = f"%skills add mcp team --timeout 20 --connect-timeout=90 -- {PY} -m skill_magics.mcp"
    assert shell.run_cell(f"{add} serve {root}").error_in_exec is None
    server = servers_of(manager).get("team")
    assert server is not None and [e.name for e in server.skills] == ["hello-mcp"]
    assert (server.connection.spec.timeout, server.connection.spec.connect_timeout) == (20, 90)
    shell.run_cell("%skills remove mcp team")
