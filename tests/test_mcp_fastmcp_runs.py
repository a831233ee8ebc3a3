"""Running the scripts of a skill served by an implementation we did not write: FastMCP's own
``SkillsDirectoryProvider`` (tests/mcp_servers/fastmcp_skills.py), end to end, through the
Python API (``manager.add_mcp_server`` + ``execute_skill_script``: approval, the sandbox,
the result, a change on the server asking again) and through a real kernel (``%skills add
mcp`` over streamable HTTP, ``%%skillrun``, a click on the approval panel).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_fixtures import start_kernel
from mcp_support import free_port, http_server

from skill_magics.core.base.errors import ApprovalDeclined
from skill_magics.core.base.status import AuditOutcome
from skill_magics.core.manager import SkillManager
from skill_magics.core.mcp.servers import servers_of
from skill_magics.core.mcp.wire import binding
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision
from skill_magics.core.run.launching.sandbox import unavailable_reason

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(180)]

PY = sys.executable
FASTMCP_SERVER = Path(__file__).resolve().parent / "mcp_servers" / "fastmcp_skills.py"

CONVERT = """import json, os, sys
data = json.load(sys.stdin)
here = os.path.dirname(os.path.abspath(__file__))
print(json.dumps({
    "version": 1,
    "miles": round(float(data["km"]) / 1.609344, 3),
    "can_write_own_folder": os.access(here, os.W_OK),
}))
"""


def write_served(root: Path) -> Path:
    """A skill in the shape of public ones (SKILL.md with license and metadata, scripts/,
    references/), written here: what FastMCP serves."""
    skill = root / "trip-math"
    (skill / "scripts").mkdir(parents=True)
    (skill / "references").mkdir()
    (skill / "SKILL.md").write_text(
        "---\nname: trip-math\ndescription: Converts trip distances. Use it when a user gives "
        "kilometres and wants miles.\nlicense: MIT\nmetadata:\n  author: Test Lab\n---\n\n"
        '# Trip math\n\nRun `scripts/convert.py` with `{"km": ...}` on stdin; see '
        "references/units.md.\n"
    )
    (skill / "references" / "units.md").write_text("# Units\n\n1 mile = 1.609344 km.\n")
    (skill / "scripts" / "convert.py").write_text(CONVERT)
    return root


class Recorder:
    """An approver that answers ``decision`` and keeps every request it was asked."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.decision


@pytest.fixture
def fastmcp_served(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[SkillManager, Path]]:
    """A manager with FastMCP's skills server (stdio) labelled 'fm' (the cache in tmp)."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    root = write_served(tmp_path / "served")
    local = tmp_path / "local"
    local.mkdir()
    manager = SkillManager([local])
    manager.add_mcp_server("fm", command=[PY, str(FASTMCP_SERVER), str(root)], timeout=30)
    try:
        yield manager, root
    finally:
        manager.remove_mcp_server("fm")


def test_a_fastmcp_served_script_runs_after_approval(
    fastmcp_served: tuple[SkillManager, Path], tmp_path: Path
) -> None:
    manager, root = fastmcp_served
    declined = Recorder(Decision.NO)
    with pytest.raises(ApprovalDeclined, match="declined"):
        manager.execute_skill_script("fm/trip-math", "convert", {"km": 1}, approver=declined)
    assert len(declined.asked) == 1
    assert not any(r.outcome is AuditOutcome.COMPLETED for r in manager.audit.records())

    approver = Recorder(Decision.YES_IN_SESSION)
    result = manager.execute_skill_script(
        "fm/trip-math", "convert", {"km": 42.195}, approver=approver
    )
    assert result.exit_code == 0, result.stderr
    out = json.loads(result.stdout)
    assert out == {"version": 1, "miles": 26.219, "can_write_own_folder": True}
    (request,) = approver.asked
    server = servers_of(manager).get("fm")
    assert server is not None and request.mcp is not None
    (entry,) = server.skills
    assert request.skill_name == "fm/trip-math" and request.mcp.origin == "mcp:fm"
    assert str(FASTMCP_SERVER) in request.mcp.server
    assert request.mcp.binding == binding(entry)  # bound to FastMCP's own digests
    assert request.scripts[0].command[-1].startswith(str(tmp_path / "cache" / "fm"))
    outcomes = [r.outcome for r in manager.audit.records() if r.skill == "fm/trip-math"]
    assert outcomes[-2:] == [AuditOutcome.APPROVED, AuditOutcome.COMPLETED]

    # Unchanged: not asked again. Changed on FastMCP's side: asked again, naming the file.
    again = manager.execute_skill_script("fm/trip-math", "convert", {"km": 1}, approver=approver)
    assert json.loads(again.stdout)["miles"] == 0.621 and len(approver.asked) == 1
    script = root / "trip-math" / "scripts" / "convert.py"
    script.write_text(CONVERT.replace('"version": 1', '"version": 2'))
    changed = manager.execute_skill_script("fm/trip-math", "convert", {"km": 1}, approver=approver)
    assert json.loads(changed.stdout)["version"] == 2 and len(approver.asked) == 2
    assert approver.asked[1].mcp is not None
    assert approver.asked[1].mcp.changes == ("changed scripts/convert.py",)


def test_a_fastmcp_served_script_runs_in_the_sandbox(
    fastmcp_served: tuple[SkillManager, Path], bwrap: str
) -> None:
    manager, _root = fastmcp_served
    approver = Recorder(Decision.YES_ONCE)
    result = manager.execute_skill_script(
        "fm/trip-math", "convert", {"km": 10}, approver=approver, sandbox="read-only"
    )
    assert result.exit_code == 0, result.stderr
    # Confined like a local run: the cached copy is read-only inside bubblewrap.
    assert json.loads(result.stdout) == {
        "version": 1,
        "miles": 6.214,
        "can_write_own_folder": False,
    }
    assert len(approver.asked) == 1 and approver.asked[0].sandbox is not None
    assert manager.audit.records()[-1].sandbox is not None


def test_a_fastmcp_served_script_runs_from_a_real_kernel(tmp_path: Path) -> None:
    """%skills add mcp over streamable HTTP, %%skillrun, a click on "Yes once"; sandboxed
    when bubblewrap can sandbox here (else the run is checked unsandboxed)."""
    root = write_served(tmp_path / "served")
    (tmp_path / "local").mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {
        "SKILL_MAGICS_PATH": str(tmp_path / "local"),
        "SKILL_MAGICS_MCP_CACHE": str(tmp_path / "cache"),
    }
    sandboxed = not unavailable_reason()
    port = free_port()
    argv = [PY, str(FASTMCP_SERVER), str(root), "--http", str(port)]
    with http_server(argv, port) as url, start_kernel(env=env, cwd=work) as k:
        for cell in (
            "%load_ext skill_magics",
            f"%skills add mcp fm {url}",
            f"%config SkillMagics.sandbox = {'read-only' if sandboxed else 'off'!r}",
        ):
            r = k.execute(cell, allow_stdin=False)
            assert r.ok, r.error_text
        listed = k.execute("%skills", allow_stdin=False)
        assert "fm/trip-math" in listed.text_plain + listed.stdout
        msg_id = k.submit('%%skillrun fm/trip-math.convert -o res\n{"km": 5}', allow_stdin=True)
        k.click(k.wait_for_button("Yes once", timeout=90))
        r = k.collect(msg_id, timeout=120)
        assert r.ok, r.error_text
        r = k.execute("print(res.status); print(res.stdout)", allow_stdin=False)
        assert r.ok, r.error_text
        status, stdout = r.stdout.strip().split("\n", 1)
        assert status == "completed", r.stdout
        assert json.loads(stdout) == {
            "version": 1,
            "miles": 3.107,
            "can_write_own_folder": not sandboxed,
        }
        r = k.execute(
            "m = get_ipython().find_magic('skills').__self__.manager\n"
            "print([(x.skill, x.outcome.value, x.sandbox is not None)"
            " for x in m.audit.records()][-2:])",
            allow_stdin=False,
        )
        assert r.ok, r.error_text
        assert r.stdout.strip() == str(
            [("fm/trip-math", "approved", False), ("fm/trip-math", "completed", sandboxed)]
        )
