"""Running an MCP skill's scripts (SEP-2640, issue 32 Deliver 2), with real processes: our
server (``python -m skill_magics.mcp serve``) over stdio serving a folder this test changes,
the hostile test server (tests/mcp_servers/hostile.py) for a server that hangs and a dynamic
skill, and real runs through the one call site (plan -> gate -> execute).
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_magics.core.base.errors import McpCacheError, McpError, SkillMagicsError
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.approval import ApprovalRequest, Decision
from skill_magics.core.base.status import AuditOutcome
from skill_magics.notebook.approval.panel import summary_html, summary_text

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(120)]

PY = sys.executable
SERVERS = Path(__file__).resolve().parent / "mcp_servers"

HELLO = """import json, sys
data = json.load(sys.stdin)
print("hello v1", data.get("who"))
"""


def write_served(root: Path) -> Path:
    skill = root / "hello-mcp"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: hello-mcp\ndescription: Says hello. Use it for tests.\n"
        "allowed-tools: Bash Read\n---\n"
        "# Hello\n\nRun `scripts/hello.py`.\n"
    )
    (skill / "scripts" / "hello.py").write_text(HELLO)
    return skill


class Recorder:
    """An approver that answers ``decision`` and keeps every request it was asked."""

    def __init__(self, decision: Decision = Decision.YES_IN_SESSION) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decision


@pytest.fixture
def served(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[SkillManager, Path]]:
    """A manager with the server 'team' serving one skill folder (the cache in tmp)."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    skill = write_served(tmp_path / "served")
    local = tmp_path / "local"
    local.mkdir()
    manager = SkillManager([local])
    manager.add_mcp_server(
        "team", command=[PY, "-m", "skill_magics.mcp", "serve", str(skill.parent)]
    )
    try:
        yield manager, skill
    finally:
        manager.remove_mcp_server("team")


def refusals(manager: SkillManager) -> list[str]:
    return [
        r.reason or ""
        for r in manager.audit.records()
        if r.outcome is AuditOutcome.REFUSED and r.skill == "team/hello-mcp"
    ]


def test_mcp_script_runs_after_approval_bound_to_the_digest_set(
    served: tuple[SkillManager, Path], tmp_path: Path, bwrap: str
) -> None:
    manager, skill = served
    approver = Recorder()
    result = manager.execute_skill_script(
        "team/hello-mcp", "hello", {"who": "ann"}, approver=approver
    )
    assert result.exit_code == 0 and result.stdout.strip() == "hello v1 ann"
    (request,) = approver.asked  # allowed-tools (Bash) in its SKILL.md pre-approved nothing
    assert request.skill_name == "team/hello-mcp" and request.mcp is not None
    assert request.mcp.origin == "mcp:team" and "skill_magics.mcp serve" in request.mcp.server
    assert request.mcp.binding.startswith("mcp-sha256:") and request.mcp.changes == ()
    text = summary_text(request)
    assert "From MCP server: mcp:team (" in text and request.mcp.binding in text
    assert "From MCP server" in summary_html(request) and "mcp:team (" in summary_html(request)
    # The copy ran from the host-only cache, outside every skill folder.
    command = request.scripts[0].command
    assert command[-1].startswith(str(tmp_path / "cache" / "team" / "hello-mcp"))
    assert stat.S_IMODE((tmp_path / "cache").stat().st_mode) == 0o700
    # What must NOT be refused: the unchanged skill again, with Yes in session: not asked.
    again = manager.execute_skill_script(
        "team/hello-mcp", "hello", {"who": "bob"}, approver=approver
    )
    assert again.stdout.strip() == "hello v1 bob" and len(approver.asked) == 1
    # A batch through the same plan: the session approval covers it too.
    batch = manager.map("team/hello-mcp", "hello", [{"who": "c"}, {"who": "d"}], approver=approver)
    assert sorted(i.stdout.strip() for i in batch.items) == ["hello v1 c", "hello v1 d"]
    assert len(approver.asked) == 1
    # A sandboxed run is a weaker grant than the unsandboxed one approved: not asked again;
    # the run is confined like a local one (the cache copy read-only inside bubblewrap).
    boxed = manager.execute_skill_script(
        "team/hello-mcp", "hello", {"who": "box"}, approver=approver, sandbox="read-only"
    )
    assert boxed.stdout.strip() == "hello v1 box" and len(approver.asked) == 1
    assert manager.audit.records()[-1].sandbox is not None

    # The server changes a file: the session approval no longer applies, the panel is shown
    # again naming the file, and the new code runs only after that answer.
    (skill / "scripts" / "hello.py").write_text(HELLO.replace("v1", "v2"))
    (skill / "notes.txt").write_text("new\n")
    changed = manager.execute_skill_script(
        "team/hello-mcp", "hello", {"who": "eve"}, approver=approver
    )
    assert changed.stdout.strip() == "hello v2 eve" and len(approver.asked) == 2
    mcp = approver.asked[1].mcp
    assert mcp is not None and mcp.binding != request.mcp.binding
    assert mcp.changes == ("added notes.txt", "changed scripts/hello.py")
    assert "server changed: 2 file(s) since the copy fetched before: added notes.txt, " in (
        summary_text(approver.asked[1])
    )


def test_skill_context_of_an_mcp_skill_shows_its_origin_and_runs_its_scripts(
    served: tuple[SkillManager, Path],
) -> None:
    from skill_magics.core.prompt.context import build_skill_context

    manager, skill = served
    approver = Recorder(Decision.YES_ONCE)
    xml = build_skill_context(
        manager, "team/hello-mcp", arguments={"who": "ctx"}, approver=approver
    )
    assert '<skill_context id="team/hello-mcp" origin="mcp:team">' in xml
    assert "hello v1 ctx" in xml and "# Hello" in xml
    (request,) = approver.asked
    assert request.mcp is not None and request.mcp.origin == "mcp:team"
    # SKILL.md changed on the server: the context reads the new copy, verified.
    md = skill / "SKILL.md"
    md.write_text(md.read_text().replace("# Hello", "# Hello again"))
    xml = build_skill_context(manager, "team/hello-mcp", run_scripts=False)
    assert "# Hello again" in xml


def test_the_model_sees_mcp_skills_with_their_origin(served: tuple[SkillManager, Path]) -> None:
    from skill_magics.core.prompt.available_skills import available_skills
    from skill_magics.core.prompt.tools import handle_tool_call, tool_specs

    manager, _skill = served
    block = available_skills(manager)
    assert "<name>\nteam/hello-mcp\n</name>" in block and "<origin>\nmcp:team\n</origin>" in block
    assert "<location>\nskill://hello-mcp/SKILL.md\n</location>" in block
    guide = available_skills(manager, layout="guide")
    assert "<origin>mcp:team</origin>" in guide
    # Activatable from the listing alone: nothing fetched until the model activates it.
    (activation,) = [s for s in tool_specs(manager) if s.kind == "activation"]
    assert activation.enum == ("team/hello-mcp",)
    assert not (Path(os.environ["SKILL_MAGICS_MCP_CACHE"]) / "team").exists()
    got = handle_tool_call(manager, "activate_skill", {"name": "team/hello-mcp"}, "t1")
    assert not got.get("is_error") and "# Hello" in str(got["content"])
    # Named explicitly, its script tools run it behind the same approval.
    approver = Recorder(Decision.YES_ONCE)
    (tool,) = [s for s in tool_specs(manager, ["team/hello-mcp"]) if s.kind == "script"]
    ran = handle_tool_call(
        manager, tool.name, {"who": "model"}, "t2", approver=approver, skills=["team/hello-mcp"]
    )
    assert "hello v1 model" in str(ran["content"]) and len(approver.asked) == 1
    assert approver.asked[0].mcp is not None


def test_a_tampered_cache_is_refused_before_any_process_starts(
    served: tuple[SkillManager, Path], tmp_path: Path
) -> None:
    manager, _skill = served
    approver = Recorder()
    manager.execute_skill_script("team/hello-mcp", "hello", {"who": "a"}, approver=approver)
    cached = tmp_path / "cache" / "team" / "hello-mcp" / "files" / "scripts" / "hello.py"
    marker = tmp_path / "ran"
    cached.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    with pytest.raises(McpCacheError, match=r"hello-mcp, file 'scripts/hello.py': its bytes"):
        manager.execute_skill_script("team/hello-mcp", "hello", {"who": "b"}, approver=approver)
    assert not marker.exists() and len(approver.asked) == 1  # nobody asked, nothing ran
    assert any("its bytes changed since they were verified" in r for r in refusals(manager))
    # A file planted beside the verified ones is refused the same way.
    cached.write_text(HELLO)
    (cached.parent / "extra.py").write_text("print('planted')\n")
    with pytest.raises(McpCacheError, match="'scripts/extra.py': not in what was verified"):
        manager.execute_skill_script("team/hello-mcp", "hello", {"who": "b"}, approver=approver)
    assert len(approver.asked) == 1


def test_session_approval_is_keyed_to_the_digest_set() -> None:
    from skill_magics.core.run.approval import McpOriginInfo
    from skill_magics.core.run.store import ApprovalStore

    def request(binding: str) -> ApprovalRequest:
        origin = McpOriginInfo("mcp:team", "srv", binding)
        return ApprovalRequest("team/x", (), content_hash="f", mcp=origin)

    store = ApprovalStore()
    store.approve("team/x", "f", binding="mcp-sha256:a")
    assert store.covers(request("mcp-sha256:a"))
    # Same files on disk (same fingerprint), another listed set: not covered.
    assert not store.covers(request("mcp-sha256:b"))
    assert not store.covers(ApprovalRequest("team/x", (), content_hash="f"))


def test_mcp_names_never_reach_local_skills_and_need_their_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    local = tmp_path / "local"
    (local / "x").mkdir(parents=True)
    (local / "x" / "SKILL.md").write_text("---\nname: team/x\ndescription: D. Use it.\n---\n")
    manager = SkillManager([local])
    with pytest.raises(SkillMagicsError, match="no MCP server is labelled 'team'"):
        manager.execute_skill_script("team/x", "run", approver=None)


def test_unreachable_server_and_dynamic_skill_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    manager = SkillManager([])
    manager.add_mcp_server("evil", command=[PY, str(SERVERS / "hostile.py")], timeout=3)
    from skill_magics.core.mcp.servers import servers_of

    server = servers_of(manager).get("evil")
    assert server is not None
    approver = Recorder()
    try:
        ran = manager.execute_skill_script("evil/demo", "run", approver=approver)
        assert ran.stdout.strip() == "run" and len(approver.asked) == 1
        # The server hangs: the verified copy and the session approval exist, yet nothing
        # runs (a copy runs only while the server still lists exactly it).
        server.connection.request("test/mode", {"mode": "hang"})
        with pytest.raises(McpError) as caught:
            manager.execute_skill_script("evil/demo", "run", approver=approver)
        message = str(caught.value)
        assert "'evil'" in message and "nothing ran" in message and "\n" not in message
        assert len(approver.asked) == 1
        server.connection.request("test/mode", {"mode": "with-pycache"})
        with pytest.raises(McpError, match=r"ships 'scripts/__pycache__/run.cpython-312.pyc'"):
            manager.execute_skill_script("evil/demo", "run", approver=approver)
        assert len(approver.asked) == 1
        server.connection.request("test/mode", {"mode": "with-dynamic"})
        with pytest.raises(McpError, match="'dynamic-one' is dynamic .* never run"):
            manager.execute_skill_script("evil/dynamic-one", "run", approver=approver)
        assert len(approver.asked) == 1
        assert not (tmp_path / "cache" / "evil" / "dynamic-one").exists()
    finally:
        manager.remove_mcp_server("evil")


def test_skillrun_magic_runs_an_mcp_script(
    ipython_shell: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    skill = write_served(tmp_path / "served")
    local = tmp_path / "local"
    local.mkdir()
    shell = ipython_shell(local, auto_approve=True)  # type: ignore[operator]
    added = shell.run_cell(f"%skills add mcp team -- {PY} -m skill_magics.mcp serve {skill.parent}")
    assert added.error_in_exec is None
    try:
        ran = shell.run_cell('%%skillrun team/hello-mcp.hello\n{"who": "nb"}')
        assert ran.error_in_exec is None, ran.error_in_exec
        assert "hello v1 nb" in str(ran.result.stdout)
        shell.user_ns["people"] = [{"who": "p1"}, {"who": "p2"}]
        mapped = shell.run_cell("%%skillrun team/hello-mcp.hello --map people -o out\n")
        assert mapped.error_in_exec is None, mapped.error_in_exec
        outs = sorted(i.stdout.strip() for i in shell.user_ns["out"].items)
        assert outs == ["hello v1 p1", "hello v1 p2"]
    finally:
        shell.run_cell("%skills remove mcp team")
    assert os.path.isdir(tmp_path / "cache" / "team" / "hello-mcp")
