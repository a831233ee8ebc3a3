"""Where two MCP servers, two kernels or two runs meet (issue 32; the lesson of issue 28's
review: attack the seams). Real servers (``python -m skill_magics.mcp serve``) over stdio,
real runs through the one call site, one cache root shared as two kernels of one user share
it.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision

pytestmark = [pytest.mark.mcp, pytest.mark.timeout(180)]

PY = sys.executable

# Reads a file of its own skill after a pause: long enough for another kernel to fetch.
READER = """import os, sys, time
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 0)
here = os.path.dirname(os.path.abspath(__file__))
print(open(os.path.join(here, "..", "data.txt")).read().strip())
"""


def served_skill(root: Path, data: str) -> Path:
    skill = root / "shared-name"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: shared-name\ndescription: Reads its data. Use it for tests.\n---\n"
        "Run `scripts/read.py`.\n"
    )
    (skill / "scripts" / "read.py").write_text(READER)
    (skill / "data.txt").write_text(data + "\n")
    return skill


class Recorder:
    def __init__(self) -> None:
        self.asked: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return Decision.YES_IN_SESSION


def serve(manager: SkillManager, label: str, skill: Path) -> None:
    manager.add_mcp_server(
        label, command=[PY, "-m", "skill_magics.mcp", "serve", str(skill.parent)]
    )


@pytest.fixture
def two_servers(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, Path]]:
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    yield {
        "one": served_skill(tmp_path / "one", "from server one"),
        "two": served_skill(tmp_path / "two", "from server two"),
    }


def test_two_labels_with_a_skill_of_the_same_name_stay_apart(
    two_servers: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "local").mkdir()
    manager = SkillManager([tmp_path / "local"])
    serve(manager, "a", two_servers["one"])
    serve(manager, "b", two_servers["two"])
    try:
        approver = Recorder()
        first = manager.execute_skill_script("a/shared-name", "read", approver=approver)
        assert first.stdout.strip() == "from server one"
        # A Yes in session for a/shared-name says nothing about b's skill of that name.
        second = manager.execute_skill_script("b/shared-name", "read", approver=approver)
        assert second.stdout.strip() == "from server two"
        assert [r.skill_name for r in approver.asked] == ["a/shared-name", "b/shared-name"]
        # What must NOT be asked again: each one, unchanged, after its own Yes in session.
        again = manager.execute_skill_script("a/shared-name", "read", approver=approver)
        assert again.stdout.strip() == "from server one" and len(approver.asked) == 2
    finally:
        manager.remove_mcp_server("a")
        manager.remove_mcp_server("b")


def test_two_kernels_with_one_label_for_two_servers_each_run_their_own_bytes(
    two_servers: dict[str, Path], tmp_path: Path
) -> None:
    """One user, two notebooks, one cache root, the label 'team' given to two different
    servers: a run of one kernel never reads the other server's files, even when the other
    kernel fetches its copy while the run is going on."""
    (tmp_path / "local").mkdir()
    kernel_one, kernel_two = SkillManager([tmp_path / "local"]), SkillManager([tmp_path / "local"])
    serve(kernel_one, "team", two_servers["one"])
    serve(kernel_two, "team", two_servers["two"])
    try:
        one, two = Recorder(), Recorder()
        assert (
            kernel_one.execute_skill_script("team/shared-name", "read", approver=one).stdout
            == "from server one\n"
        )
        results: dict[str, str] = {}

        def slow_run() -> None:
            got = kernel_one.execute_skill_script(
                "team/shared-name", "read", argv=["2"], approver=one
            )
            results["one"] = got.stdout + got.stderr

        thread = threading.Thread(target=slow_run)
        thread.start()
        # Meanwhile the other kernel fetches and runs its server's skill under the same label.
        assert (
            kernel_two.execute_skill_script("team/shared-name", "read", approver=two).stdout
            == "from server two\n"
        )
        thread.join(60)
        assert results["one"] == "from server one\n"
        # What must NOT happen either: asking again when nothing changed on either server.
        assert len(one.asked) == 1 and len(two.asked) == 1
        assert (
            kernel_one.execute_skill_script("team/shared-name", "read", approver=one).stdout
            == "from server one\n"
        )
        assert len(one.asked) == 1
    finally:
        kernel_one.remove_mcp_server("team")
        kernel_two.remove_mcp_server("team")


def test_a_server_that_hangs_does_not_hold_the_skills_table_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ipython_shell: object
) -> None:
    """%skills lists every server again; one that stopped answering used to hold the table
    for its whole timeout, each time. Now it waits a few seconds for all servers together
    and shows a slow one's last listing, marked; what must NOT change: a server that answers
    shows its listing of now."""
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    (tmp_path / "local").mkdir()
    shell = ipython_shell(tmp_path / "local")  # type: ignore[operator]
    honest = served_skill(tmp_path / "one", "from server one")
    hostile = Path(__file__).resolve().parent / "mcp_servers" / "hostile.py"
    assert shell.run_cell(f"%skills add mcp slow -- {PY} {hostile}").error_in_exec is None
    assert (
        shell.run_cell(
            f"%skills add mcp quick -- {PY} -m skill_magics.mcp serve {honest.parent}"
        ).error_in_exec
        is None
    )
    from skill_magics.core.mcp.servers import servers_of
    from skill_magics.notebook.extension import get_magics

    servers = servers_of(get_magics(shell).manager)
    servers.get("slow").connection.request("test/mode", {"mode": "hang"})  # type: ignore[union-attr]
    (honest.parent / "added-later").mkdir()
    (honest.parent / "added-later" / "SKILL.md").write_text(
        "---\nname: added-later\ndescription: New on the server.\n---\nBody\n"
    )
    text = repr(shell.run_cell("%skills").result)
    assert "slow/demo" in text  # its last listing, marked
    assert "could not be listed again (its last listing is shown): it did not answer " in text
    assert "quick/added-later" in text and "quick/shared-name" in text
    shell.run_cell("%skills remove mcp slow")
    shell.run_cell("%skills remove mcp quick")


SECRET_SKILL = """---
name: keyed
description: Uses a token. Use it for tests.
metadata:
  secrets: "SEAM_TOKEN"
---
Run `scripts/use.py`.
"""
USE = """import hashlib, json, os, sys, time
args = json.load(sys.stdin)
if args.get("sleep"):
    time.sleep(args["sleep"])
token = os.environ.get("SEAM_TOKEN", "")
print("token:", token, "| sha:", hashlib.sha256(token.encode()).hexdigest()[:16])
"""


def sha(value: str) -> str:
    import hashlib

    return hashlib.sha256(value.encode()).hexdigest()[:16]


def keyed_skill(root: Path) -> Path:
    skill = root / "keyed"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text(SECRET_SKILL)
    (skill / "scripts" / "use.py").write_text(USE)
    return skill


def test_an_mcp_run_has_a_local_runs_secrets_timeout_and_warm_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 Deliver 2: everything a local run has. A secret is given per qualified name:
    the value provided for the local skill 'keyed' never reaches the server's 'team/keyed'
    (a server choosing a local skill's name and secret gets nothing), and it is masked."""
    from skill_magics.core.run.launching import warm

    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    served = keyed_skill(tmp_path / "served")
    local = tmp_path / "local"
    keyed_skill(local)
    manager = SkillManager([local], warm_start="on")
    serve(manager, "team", served)
    try:
        approver = Recorder()
        manager.provide_secret("keyed", "SEAM_TOKEN", "local-value-123456")
        with pytest.raises(SkillMagicsError, match="needs secret SEAM_TOKEN, not provided"):
            manager.execute_skill_script("team/keyed", "use", {}, approver=approver)
        manager.provide_secret("team/keyed", "SEAM_TOKEN", "remote-value-654321")
        ran = manager.execute_skill_script("team/keyed", "use", {}, approver=approver, warm=False)
        # Its own value (masked in the output), never the local skill's of the same name.
        assert ran.stdout.strip() == f"token: **** | sha: {sha('remote-value-654321')}"
        local_run = manager.execute_skill_script("keyed", "use", {}, approver=approver)
        assert local_run.stdout.strip() == f"token: **** | sha: {sha('local-value-123456')}"
        # A time limit kills an MCP run like a local one (exit 124, timed_out).
        slow = manager.execute_skill_script(
            "team/keyed", "use", {"sleep": 30}, approver=approver, timeout=1
        )
        assert slow.timed_out and slow.exit_code == 124
        # Warm start: the same run forked from a server that imported its packages.
        manager.warm_up("team/keyed")
        hot = manager.execute_skill_script("team/keyed", "use", {}, approver=approver, warm=True)
        assert hot.start == "warm", hot.start_note
        assert hot.stdout.strip() == f"token: **** | sha: {sha('remote-value-654321')}"
    finally:
        manager.remove_mcp_server("team")
        warm.stop_servers()


def test_closing_a_session_whose_loop_just_closed_raises_nothing() -> None:
    """The seam between a session ending on its own (its server went away: the loop closes,
    the thread is still finishing) and a close() from the listing thread: call_soon_threadsafe
    on the closed loop raised RuntimeError in that thread, and %skills lost its "could not be
    listed again" note."""
    import asyncio
    import tempfile

    from skill_magics.core.mcp.connection import ServerSpec, _Session

    with tempfile.TemporaryFile("w+") as errlog:
        session = _Session(ServerSpec("team", url="http://127.0.0.1:9/mcp"), errlog, 1)
        session.stop = asyncio.Event()
        session.loop.close()  # as _run's finally leaves it
        finishing = threading.Event()
        session.thread = threading.Thread(target=finishing.wait, args=(0.3,), daemon=True)
        session.thread.start()  # still alive for a moment: it has not returned from _run yet
        try:
            session.close(kill=False)
        finally:
            finishing.set()
            session.thread.join(5)
