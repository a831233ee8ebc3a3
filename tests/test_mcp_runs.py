"""Running an MCP skill's scripts (SEP-2640, issue 32 Deliver 2), with real processes: our
server (``python -m skill_magics.mcp serve``) over stdio serving a folder this test changes,
the hostile test server (tests/mcp_servers/hostile.py) for a server that hangs and a dynamic
skill, and real runs through the one call site (plan -> gate -> execute).
"""

from __future__ import annotations

import json
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_magics.core.base.errors import ApprovalStale, McpCacheError, McpError, SkillMagicsError
from skill_magics.core.base.status import AuditOutcome, RunStatus
from skill_magics.core.manager import SkillManager
from skill_magics.core.mcp.cache import McpCache
from skill_magics.core.mcp.wire import sha256_digest
from skill_magics.core.run.batch.runner import RESOLVE_S
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision
from skill_magics.notebook.approval.panel import summary_html, summary_text
from skill_magics.notebook.extension import get_magics

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


def copy_folder(skill: Path) -> _CopyPath:
    """The files of a skill's only copy in the cache (one folder per digest set: cache.py),
    looked up at each use: a test names it before the copy exists."""
    return _CopyPath(skill)


class _CopyPath:
    """``skill/<the only copy>/files``, looked up each time it is used."""

    def __init__(self, skill: Path) -> None:
        self.skill = skill

    def _files(self) -> Path:
        (copy,) = [p for p in self.skill.iterdir() if not p.name.startswith(".")]
        return copy / "files"

    def __truediv__(self, other: str) -> Path:
        return self._files() / other

    @property
    def parent(self) -> Path:
        return self._files().parent


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
    assert "<name>\nteam/hello-mcp\n</name>" in block
    assert "<origin>\nmcp:team; unsigned (MCP server team)\n</origin>" in block
    assert "<location>\nskill://hello-mcp/SKILL.md\n</location>" in block
    guide = available_skills(manager, layout="guide")
    assert "<origin>mcp:team; unsigned (MCP server team)</origin>" in guide
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


def test_list_skills_lists_the_mcp_skills_that_run(served: tuple[SkillManager, Path]) -> None:
    """Issue 44 item 10: "every usable skill" includes an added server's, as the skills a
    run, %skills and the catalog use; local_skills() is the folders' alone."""
    manager, _skill = served
    listed = {m.name: m for m in manager.list_skills()}
    assert "team/hello-mcp" in listed
    assert getattr(listed["team/hello-mcp"], "origin", "") == "mcp:team"
    assert listed["team/hello-mcp"].description == "Says hello. Use it for tests."
    assert "team/hello-mcp" not in {m.name for m in manager.local_skills()}
    res = manager.execute_skill_script("team/hello-mcp", "hello", {"who": "x"}, approver=None)
    assert res.exit_code == 0
    manager.remove_mcp_server("team")
    assert "team/hello-mcp" not in {m.name for m in manager.list_skills()}


def test_tampered_cache_bytes_never_run(served: tuple[SkillManager, Path], tmp_path: Path) -> None:
    manager, _skill = served
    copy = copy_folder(tmp_path / "cache" / "team" / "hello-mcp")
    marker = tmp_path / "ran"
    evil = f"open({str(marker)!r}, 'w').write('x')\n"

    # Changed after the run was planned (while the panel was up): refused before any process
    # starts, whatever the answer.
    def tamper_then_yes(request: ApprovalRequest) -> Decision:
        (copy / "scripts" / "hello.py").write_text(evil)
        return Decision.YES_IN_SESSION

    with pytest.raises(ApprovalStale, match="files changed after the approval was asked"):
        manager.execute_skill_script(
            "team/hello-mcp", "hello", {"who": "a"}, approver=tamper_then_yes
        )
    assert not marker.exists()
    assert any("changed after the approval" in r for r in refusals(manager))

    # Changed or planted between runs (by anyone): the next run discards the copy, fetches it
    # again (every file verified) and runs the server's bytes, never the tampered ones.
    approver = Recorder()
    ran = manager.execute_skill_script("team/hello-mcp", "hello", {"who": "b"}, approver=approver)
    assert ran.stdout.strip() == "hello v1 b" and not marker.exists()
    (copy / "scripts" / "hello.py").write_text(evil)
    (copy / "scripts" / "extra.py").write_text("print('planted')\n")
    (copy / "scripts" / "json").symlink_to(tmp_path)  # would be imported by `import json`
    ran = manager.execute_skill_script("team/hello-mcp", "hello", {"who": "c"}, approver=approver)
    assert ran.stdout.strip() == "hello v1 c" and not marker.exists()
    assert len(approver.asked) == 1  # the verified bytes it approved: not asked again
    assert sorted(p.name for p in (copy / "scripts").iterdir()) == ["hello.py"]
    audited = [r for r in manager.audit.records() if r.outcome is AuditOutcome.COPY_REFETCHED]
    # Twice: the copy changed while the panel was up (run b), then between runs (run c).
    assert [r.skill for r in audited] == ["team/hello-mcp"] * 2
    assert audited[0].script == "<mcp copy>"
    assert "(changed scripts/hello.py)" in (audited[0].reason or "")
    reason = audited[1].reason or ""
    assert "added scripts/extra.py, added scripts/json, changed scripts/hello.py" in reason
    assert "nothing of the old copy ran" in reason
    # The record itself rewritten to vouch for changed bytes (sandbox off, a script can reach
    # it): it no longer matches the binding its files were verified under, so the copy is
    # fetched again and the server's bytes run.
    (copy / "scripts" / "hello.py").write_text(evil)
    record_path = copy.parent / "origin.json"
    record = json.loads(record_path.read_text())
    record["files"]["scripts/hello.py"].update(
        digest=sha256_digest(evil.encode()), size=len(evil.encode())
    )
    record_path.write_text(json.dumps(record))
    ran = manager.execute_skill_script("team/hello-mcp", "hello", {"who": "d"}, approver=approver)
    assert ran.stdout.strip() == "hello v1 d" and not marker.exists()
    audited = [r for r in manager.audit.records() if r.outcome is AuditOutcome.COPY_REFETCHED]
    assert len(audited) == 3 and "the origin record" in (audited[2].reason or "")
    # Digests swapped between two files keep the binding but not the paths: no record either.
    record = json.loads(record_path.read_text())
    files = record["files"]
    files["SKILL.md"], files["scripts/hello.py"] = (
        {**files["SKILL.md"], "uri": files["scripts/hello.py"]["uri"]},
        {**files["scripts/hello.py"], "uri": files["SKILL.md"]["uri"]},
    )
    record_path.write_text(json.dumps(record))
    with pytest.raises(McpCacheError, match="no valid origin record"):
        McpCache(discovery_dirs=[]).verify("team", "hello-mcp")
    ran = manager.execute_skill_script("team/hello-mcp", "hello", {"who": "e"}, approver=approver)
    assert ran.stdout.strip() == "hello v1 e" and len(approver.asked) == 1
    # The copy's check on its own still refuses what it did not verify (one line).
    (copy / "scripts" / "extra.py").write_text("print('planted')\n")
    with pytest.raises(McpCacheError, match="'scripts/extra.py': not in what was verified"):
        McpCache(discovery_dirs=[]).verify("team", "hello-mcp")


WRITER_SAW = "v1 ['SKILL.md', 'write.py']"  # what it prints from a copy nobody wrote into
WRITER = """import json, sys, time
from pathlib import Path
time.sleep(json.loads(sys.stdin.read() or "{}").get("sleep", 0))
here = Path(__file__).resolve()
top = here.parent.parent
print("v1", sorted(p.name for p in top.rglob("*") if p.is_file()))
(top / "out.txt").write_text("data")
(here.parent / "helper.py").write_text("print('planted')")
(here.parent / "json").mkdir()
(here.parent / "json" / "__init__.py").write_text("planted = True")
here.write_text(here.read_text().replace('"v1"', '"tampered"'))
"""


@pytest.fixture
def writer(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SkillManager]:
    """A manager with the server 'team' serving 'writer-mcp', whose script writes beside
    itself: data, a module, a package, and an edit of its own code."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    skill = tmp_path / "served" / "writer-mcp"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: writer-mcp\ndescription: Writes. Use it.\n---\n")
    (skill / "scripts" / "write.py").write_text(WRITER)
    manager = SkillManager([])
    serve = [PY, "-m", "skill_magics.mcp", "serve", str(skill.parent)]
    manager.add_mcp_server("team", command=serve)
    try:
        yield manager
    finally:
        manager.remove_mcp_server("team")


def test_a_script_that_writes_into_its_own_copy_runs_again_from_verified_bytes(
    writer: SkillManager, tmp_path: Path
) -> None:
    """A script writing beside itself (sandbox off: same uid, the copy is writable) used to
    leave its copy failing the re-hash for good; now the next run discards the copy, fetches
    every file again (verified) and runs those bytes, audited as copy_refetched."""
    manager = writer
    approver = Recorder()
    for _ in range(3):
        ran = manager.execute_skill_script("team/writer-mcp", "write", approver=approver)
        # Every run starts from the verified bytes: nothing an earlier run wrote is there
        # (not its data, not the module it planted, not its edit of its own script).
        assert ran.exit_code == 0 and ran.stdout.strip() == WRITER_SAW, ran.stderr
    assert len(approver.asked) == 1  # the same verified bytes: "Yes in session" holds
    refetched = [r for r in manager.audit.records() if r.outcome is AuditOutcome.COPY_REFETCHED]
    assert len(refetched) == 2 and {r.skill for r in refetched} == {"team/writer-mcp"}
    reason = refetched[0].reason or ""
    for found in (
        "added out.txt",
        "added scripts/helper.py",
        "added scripts/json/",
        "changed scripts/write.py",
    ):
        assert found in reason, reason
    assert "fetched again from the server, every file verified" in reason
    from skill_magics.notebook.render.history import history_table

    shown = history_table(manager.audit.records())  # %skills history
    assert "copy fetched again" in shown.text and "the cached copy held what was not" in shown.text
    assert not any(r.outcome is AuditOutcome.APPROVAL_LAPSED for r in manager.audit.records())
    # The old copies are gone whole, nothing left aside in the cache.
    assert sorted(p.name for p in (tmp_path / "cache" / "team").iterdir()) == ["writer-mcp"]


def test_a_batch_never_runs_an_item_on_a_copy_an_earlier_item_wrote_into(
    writer: SkillManager,
) -> None:
    """A batch's items share one verified copy: once an item wrote into it, the rest are
    refused (never run on unverified files, never swapped under a running item), with a
    message naming the likely cause and the fix; the next run fetches the copy again."""
    manager, approver = writer, Recorder()
    # Items slower than a batch's re-resolve (RESOLVE_S): it must not fetch the copy again.
    slow = [{"sleep": RESOLVE_S + 0.15}] * 3
    batch = manager.map("team/writer-mcp", "write", slow, approver=approver, max_workers=1)
    first, *rest = batch.items
    assert first.stdout.strip() == WRITER_SAW
    assert [i.status for i in rest] == [RunStatus.REFUSED] * 2
    # Refused by the copy's re-hash when the batch resolves again, or by its watch of the
    # code before each item: either way the message names the likely cause.
    for item in rest:
        assert "team/writer-mcp" in item.message and "writes beside itself" in item.message
        assert "next run fetches" in item.message
    ran = manager.execute_skill_script("team/writer-mcp", "write", approver=approver)
    assert ran.stdout.strip() == WRITER_SAW and len(approver.asked) == 1


def test_session_approval_is_keyed_to_the_digest_set() -> None:
    from skill_magics.core.run.gating.approval import McpOriginInfo
    from skill_magics.core.run.gating.store import ApprovalStore

    def request(binding: str) -> ApprovalRequest:
        origin = McpOriginInfo("mcp:team", "srv", binding)
        return ApprovalRequest("team/x", (), content_hash="f", mcp=origin)

    store = ApprovalStore()
    store.approve("team/x", "f", binding="mcp-sha256:a")
    assert store.covers(request("mcp-sha256:a"))
    # Same files on disk (same fingerprint), another listed set: not covered.
    assert not store.covers(request("mcp-sha256:b"))
    assert not store.covers(ApprovalRequest("team/x", (), content_hash="f"))


def test_the_gate_binds_yes_in_session_to_the_digest_set_beside_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The binding alone decides, through the real gate with real requests: the server lists
    the same bytes at the same paths under other URIs (percent-encoded), so the copy's
    fingerprint is unchanged and only the {uri, digest} set differs."""
    from skill_magics.core.mcp.servers import servers_of
    from skill_magics.core.run.gating.gate import SESSION

    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    manager = SkillManager([])
    manager.add_mcp_server("evil", command=[PY, str(SERVERS / "hostile.py")], timeout=5)
    server = servers_of(manager).get("evil")
    assert server is not None
    gate, approver = manager._gate, Recorder()

    def mode(name: str) -> None:
        assert server is not None
        server.connection.request("test/mode", {"mode": name})

    try:
        first = manager.plan("evil/demo", "run").request
        assert gate.decide(first, approver).allowed and len(approver.asked) == 1
        # Nothing changed: covered by the session approval, nobody asked, and it runs.
        same = manager.plan("evil/demo", "run").request
        assert same.mcp == first.mcp and same.content_hash == first.content_hash
        assert gate.decide(same, approver).by == SESSION and len(approver.asked) == 1
        ran = manager.execute_skill_script("evil/demo", "run", approver=approver)
        assert ran.stdout.strip() == "run" and len(approver.asked) == 1

        mode("encoded-uris")
        moved = manager.plan("evil/demo", "run").request
        assert moved.content_hash == first.content_hash  # the copy would match...
        assert moved.mcp is not None and first.mcp is not None
        assert moved.mcp.binding != first.mcp.binding  # ...the listed set does not
        assert moved.mcp.changes == ("changed scripts/run.py",)
        verdict = gate.decide(moved, approver)
        assert verdict.allowed and verdict.by != SESSION and len(approver.asked) == 2
        assert approver.asked[1] is moved

        # A Yes given for one set after the copy moved to another (same bytes) is refused.
        mode("honest")
        earlier = manager.plan("evil/demo", "run").request  # back to the first set
        assert earlier.mcp is not None and earlier.mcp.binding == first.mcp.binding
        mode("encoded-uris")
        manager.get_skill("evil/demo")  # the copy now holds the other set
        assert manager.plan("evil/demo", "run").request.content_hash == earlier.content_hash
        late = gate.settle(earlier, Decision.YES_ONCE, "a late click")
        assert late.status is RunStatus.REFUSED and "changed after the approval" in late.message
    finally:
        manager.remove_mcp_server("evil")


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
    shell = ipython_shell(local)  # type: ignore[operator]
    # An MCP server's skills are pre-approved by their label's wildcard (or their name).
    monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", "team/*")
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


def _write_local(local: Path) -> None:
    (local / "local-hello" / "scripts").mkdir(parents=True)
    (local / "local-hello" / "SKILL.md").write_text(
        "---\nname: local-hello\ndescription: Says hello locally. Use it for tests.\n---\n"
    )
    (local / "local-hello" / "scripts" / "hello.py").write_text("print('local hello')\n")


def unavailable(cell: object) -> str:
    """The message of a %%skillrun nobody could approve (its result says why)."""
    result = getattr(cell, "result", None)
    assert getattr(cell, "error_in_exec", None) is None and result is not None
    assert result.status.value == "approval_unavailable", result.status
    return str(result.message)


@pytest.mark.parametrize("where", ["env", "config"])
def test_auto_approve_star_is_for_local_skills_and_label_star_for_one_server(
    ipython_shell: object, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """``*`` pre-approves local skills only: a remote server's skill (one it adds tomorrow
    included) needs ``LABEL/*`` or ``LABEL/NAME``; ``LABEL/*`` approves that label only."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    skill = write_served(tmp_path / "served")
    local = tmp_path / "local"
    _write_local(local)
    shell = ipython_shell(local)  # type: ignore[operator]

    def pre_approve(value: str) -> None:
        if where == "env":
            monkeypatch.setenv("SKILL_MAGICS_AUTO_APPROVE", value)
        else:
            shell.run_cell(f"%config SkillMagics.auto_approve = {value.split(',')!r}")

    serve = f"{PY} -m skill_magics.mcp serve {skill.parent}"
    for label in ("team", "other"):
        assert shell.run_cell(f"%skills add mcp {label} -- {serve}").error_in_exec is None
    try:
        pre_approve("*")
        # What `*` must still approve: a local skill.
        ran = shell.run_cell("%%skillrun local-hello.hello\n")
        assert ran.error_in_exec is None and "local hello" in str(ran.result.stdout)
        # What it must not: an MCP server's skill (nobody can click here: unavailable).
        refused = shell.run_cell('%%skillrun team/hello-mcp.hello\n{"who": "x"}')
        message = unavailable(refused)
        assert "Approval unavailable" in message and "nothing ran" in message
        assert "SKILL_MAGICS_AUTO_APPROVE=team/hello-mcp (or team/*)" in message
        pre_approve("other/*")  # another label's wildcard approves only that label
        refused = shell.run_cell('%%skillrun team/hello-mcp.hello\n{"who": "x"}')
        assert "Approval unavailable" in unavailable(refused)
        ran = shell.run_cell('%%skillrun other/hello-mcp.hello\n{"who": "o"}')
        assert ran.error_in_exec is None and "hello v1 o" in str(ran.result.stdout)
        refused = shell.run_cell("%%skillrun local-hello.hello\n")  # not a local wildcard
        assert "Approval unavailable" in unavailable(refused)
        pre_approve("team/hello-mcp,*")  # by name, beside the local wildcard
        ran = shell.run_cell('%%skillrun team/hello-mcp.hello\n{"who": "t"}')
        assert ran.error_in_exec is None and "hello v1 t" in str(ran.result.stdout)
    finally:
        shell.run_cell("%skills remove mcp team")
        shell.run_cell("%skills remove mcp other")
    by = {
        r.skill: r.reason
        for r in get_magics(shell).manager.audit.records()
        if r.outcome is AuditOutcome.APPROVED
    }
    assert set(by) == {"local-hello", "other/hello-mcp", "team/hello-mcp"}
