"""The Skills side panel's channel with real kernels (core/panel/, notebook/sidepanel.py).

A cell blocks its kernel waiting for approval (``%autoawait off``: the relay on 7.x, pumping
on 6.x); the test, standing where the Jupyter server stands (it holds each kernel's
connection file and key), reads the question over the kernel's socket and answers it there.
A request signed with another key, or one kernel's question asked of another, decides
nothing. Nothing is mocked: real kernels, real sockets, real scripts.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kernel_fixtures import KernelSession, kernel_ipykernel_version, start_kernel

from skill_magics.core.base.errors import SidePanelError
from skill_magics.core.panel import channel
from skill_magics.notebook.compat import WIDGET_MIME

pytestmark = pytest.mark.kernel

SKILL = "demo-behaviours.touch_marker"
TIMEOUT_S = 120


class Side:
    """The server's view of one kernel: its connection file and key."""

    def __init__(self, session: KernelSession) -> None:
        self.session = session
        self.cf = session.km.connection_file
        self.key = session.km.session.key

    def ask(self, op: str, **args: object) -> dict:
        return channel.ask(self.cf, self.key, op, args)

    def wait_question(self, timeout: float = 60, placed: bool = False) -> dict:
        """The newest waiting question; ``placed``: once it names its cell (the panel is
        listed as it is made, and placed once the cell has displayed it: a state read
        between the two names no cell, and the page's next look does)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            waiting = self.ask("state")["waiting"]
            if waiting and (not placed or waiting[-1]["cell"] is not None):
                return waiting[-1]
            time.sleep(0.1)
        raise AssertionError("no question appeared in the side panel's state")


def _kernel(root: Path) -> Iterator[KernelSession]:
    with start_kernel(cwd=root) as session:
        setup = (
            "%load_ext skill_magics\n%skills add --examples\n"
            f"%config SkillMagics.approval_timeout = {TIMEOUT_S}"
        )
        r = session.execute(setup)
        assert r.ok, r.error_text
        if kernel_ipykernel_version() >= (7, 4):
            assert session.execute("%autoawait off").ok  # the cell blocks its main thread
        yield session


@pytest.fixture(scope="module")
def a(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    yield from (Side(s) for s in _kernel(tmp_path_factory.mktemp("side-a")))


@pytest.fixture(scope="module")
def b(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Side]:
    yield from (Side(s) for s in _kernel(tmp_path_factory.mktemp("side-b")))


def _cell(marker: Path) -> str:
    return f"%%skillrun {SKILL}\n" + json.dumps({"path": str(marker)})


def _running(side: Side, msg_id: str) -> bool:
    """Has the cell not replied yet (it still blocks the kernel)?"""
    side.session.drain(0.2)
    return not side.session._idle_seen(msg_id)


def test_a_blocked_cell_is_decided_from_the_side_panel(a: Side, tmp_path: Path) -> None:
    marker = tmp_path / "once"
    msg_id = a.session.submit(_cell(marker), allow_stdin=True)
    question = a.wait_question()
    assert "touch_marker.py" in question["summary"], "the same content as the cell's panel"
    assert question["skills"] == ["demo-behaviours"]
    assert _running(a, msg_id) and not marker.exists(), "nothing runs before the answer"
    assert a.ask("decide", id=question["id"], choice="yes_once") == {"decided": "yes_once"}
    r = a.session.collect(msg_id, timeout=TIMEOUT_S + 60)
    assert r.ok, r.error_text
    assert marker.exists(), "Yes once ran the script"
    assert "decided in the side panel" in r.text(), "the cell's panel says who decided"
    state = a.ask("state")
    assert state["waiting"] == [], "a decided question leaves the list"
    outcomes = [(run["skill"], run["outcome"]) for run in state["runs"]]
    assert ("demo-behaviours", "completed") in outcomes, outcomes
    assert any(
        run["outcome"] == "approved" and "side panel" in run["reason"] for run in state["runs"]
    ), "the gate audited the side panel's answer"
    # The first answer won: a second one is refused and changes nothing.
    with pytest.raises(SidePanelError, match="already decided|no such question"):
        a.ask("decide", id=question["id"], choice="no")


def test_no_from_the_side_panel(a: Side, tmp_path: Path) -> None:
    marker = tmp_path / "declined"
    msg_id = a.session.submit(_cell(marker), allow_stdin=True)
    question = a.wait_question()
    a.ask("decide", id=question["id"], choice="no")
    r = a.session.collect(msg_id, timeout=TIMEOUT_S + 60)
    assert "declined" in r.text().lower(), r.text()
    assert not marker.exists(), "No means the script never ran"


def _submit_from_cell(session: KernelSession, code: str, cell_id: str) -> str:
    """An execute_request as JupyterLab 4 and Notebook 7 send it: the cell's id in its
    metadata (``cellId``)."""
    content = {
        "code": code,
        "silent": False,
        "store_history": True,
        "user_expressions": {},
        "allow_stdin": True,
        "stop_on_error": True,
    }
    msg = session.kc.session.msg("execute_request", content, metadata={"cellId": cell_id})
    session.kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def _displayed_panel(session: KernelSession, msg_id: str) -> bool:
    """Has the cell of ``msg_id`` displayed a widget (its approval panel)?"""
    return any(
        m["msg_type"] == "display_data"
        and m["parent_header"].get("msg_id") == msg_id
        and WIDGET_MIME in m["content"]["data"]
        for m in session.iopub
    )


def test_a_waiting_question_says_which_cell_shows_it(a: Side, tmp_path: Path) -> None:
    """Issue 44, Deliver 4: the state carries the cell id of the request, its msg_id, the
    panel's display id and widget model id, so a page reloaded meanwhile can show the live
    panel in that cell again (labextension/src/reattach.ts); a request without a cell id
    (VS Code, Colab, nbclassic) is shown nowhere but in the side panel."""
    marker = tmp_path / "placed"
    msg_id = _submit_from_cell(a.session, _cell(marker), "cell-7f3a")
    question = a.wait_question(placed=True)
    where = question["cell"]
    assert where["cell_id"] == "cell-7f3a"
    assert where["request"] == msg_id

    def panel_output() -> list[dict]:
        return [
            m
            for m in a.session.iopub
            if m["msg_type"] == "display_data"
            and m["parent_header"].get("msg_id") == msg_id
            and m["content"]["data"].get(WIDGET_MIME, {}).get("model_id") == where["model_id"]
        ]

    deadline = time.monotonic() + 60
    while not panel_output():  # the model id is the one of the panel the cell displayed
        a.session._pump(deadline, "the panel's output with the model id the state names")
    assert panel_output()[0]["content"]["transient"]["display_id"] == where["display_id"]
    (started,) = [
        m
        for m in a.session.iopub
        if m["msg_type"] == "execute_input" and m["parent_header"].get("msg_id") == msg_id
    ]
    assert where["execution_count"] == started["content"]["execution_count"]
    a.ask("decide", id=question["id"], choice="no")
    r = a.session.collect(msg_id, timeout=TIMEOUT_S + 60)
    assert "declined" in r.text().lower(), r.text()

    # Sent without a cell id: the side panel lists it, no cell is named.
    msg_id = a.session.submit(_cell(marker), allow_stdin=True)
    question = a.wait_question()
    deadline = time.monotonic() + 60
    while not _displayed_panel(a.session, msg_id):  # shown: would be placed by now
        a.session._pump(deadline, "the panel of the cell sent without a cell id")
    time.sleep(0.5)  # what the cell does right after displaying it (it places nothing)
    assert a.wait_question()["cell"] is None
    a.ask("decide", id=question["id"], choice="no")
    a.session.collect(msg_id, timeout=TIMEOUT_S + 60)

    # Left open when its cell returned (a pending result): that request ended, so no page
    # may attach a cell to it (it would wait for an end that already came).
    assert a.session.execute("%config SkillMagics.approval_ui = 'nonblocking'").ok
    try:
        msg_id = _submit_from_cell(a.session, _cell(marker), "cell-pending")
        assert a.session.collect(msg_id, timeout=TIMEOUT_S).ok
        question = a.wait_question()
        assert question["cell"] is None
        a.ask("decide", id=question["id"], choice="no")
    finally:
        assert a.session.execute("%config SkillMagics.approval_ui = 'auto'").ok
    assert not marker.exists()


def test_yes_in_session_then_revoke(a: Side, tmp_path: Path) -> None:
    msg_id = a.session.submit(_cell(tmp_path / "s1"), allow_stdin=True)
    a.ask("decide", id=a.wait_question()["id"], choice="yes_in_session")
    assert a.session.collect(msg_id, timeout=TIMEOUT_S + 60).ok
    grants = a.ask("state")["grants"]
    assert [g["skill"] for g in grants] == ["demo-behaviours"]
    # Covered by the grant: runs without a question.
    r = a.session.execute(_cell(tmp_path / "s2"), allow_stdin=True, timeout=TIMEOUT_S)
    assert r.ok and (tmp_path / "s2").exists(), r.error_text
    assert a.ask("revoke", skill="demo-behaviours") == {"revoked": "demo-behaviours"}
    assert a.ask("state")["grants"] == []
    # Revoked: the next run asks again (answered No here).
    msg_id = a.session.submit(_cell(tmp_path / "s3"), allow_stdin=True)
    a.ask("decide", id=a.wait_question()["id"], choice="no")
    a.session.collect(msg_id, timeout=TIMEOUT_S + 60)
    assert not (tmp_path / "s3").exists()
    with pytest.raises(SidePanelError, match="no session approval"):
        a.ask("revoke", skill="demo-behaviours")


def test_forged_and_other_kernels_requests_decide_nothing(a: Side, b: Side, tmp_path: Path) -> None:
    marker = tmp_path / "forged"
    msg_id = a.session.submit(_cell(marker), allow_stdin=True)
    question = a.wait_question()
    # Signed with another kernel's key: refused before anything is read.
    with pytest.raises(SidePanelError, match="not signed with this kernel's key"):
        channel.ask(a.cf, b.key, "decide", {"id": question["id"], "choice": "yes_once"})
    with pytest.raises(SidePanelError, match="not signed"):
        channel.ask(a.cf, b"guessed", "state", {})
    # Kernel B sees none of A's questions, and cannot answer them.
    assert b.ask("state")["waiting"] == []
    with pytest.raises(SidePanelError, match="no such question"):
        b.ask("decide", id=question["id"], choice="yes_once")
    assert _running(a, msg_id) and not marker.exists(), "A's cell still waits"
    assert [q["id"] for q in a.ask("state")["waiting"]] == [question["id"]]
    # A question answered in the cell (its button) leaves the side panel.
    yes = a.session.buttons_all("Yes once")[-1]
    a.session.click(yes, subshell=False)
    assert a.session.collect(msg_id, timeout=TIMEOUT_S + 60).ok
    assert marker.exists()
    assert a.ask("state")["waiting"] == []
    with pytest.raises(SidePanelError, match="already decided"):
        a.ask("decide", id=question["id"], choice="no")


def test_a_recent_runs_result_over_the_channel(a: Side, b: Side, tmp_path: Path) -> None:
    """Recent runs: a row carries the id of its run's result; ``result`` answers the cell's
    tabs (stdout, stderr, exit code, signal, timing); another kernel knows no such id."""
    marker = tmp_path / "result"
    msg_id = a.session.submit(_cell(marker), allow_stdin=True)
    a.ask("decide", id=a.wait_question()["id"], choice="yes_once")
    assert a.session.collect(msg_id, timeout=TIMEOUT_S + 60).ok
    (row,) = [
        r
        for r in a.ask("state")["runs"]
        if r["outcome"] == "completed" and str(marker) in r["arguments"]
    ]
    assert row["result"], row
    shown = a.ask("result", id=row["result"])
    assert (shown["name"], shown["exit_code"]) == ("demo-behaviours.touch_marker", "exit 0")
    tabs = {t["title"]: t["text"] for t in shown["sections"]}
    assert list(tabs) == ["stdout", "stderr", "exit code", "signal", "timing"]
    assert json.loads(tabs["stdout"]) == {"marker": str(marker)}, "the script's own stdout"
    assert tabs["exit code"] == "0 (success)" and tabs["signal"] == "none"
    # Another kernel's side panel, an unknown id, a read with no id: refused, one line each.
    for side, run_id in ((b, row["result"]), (a, "0" * 16)):
        with pytest.raises(SidePanelError, match="no result .* in this kernel"):
            side.ask("result", id=run_id)
    with pytest.raises(SidePanelError, match="no result '' in this kernel"):
        a.ask("result")


def test_skills_list_and_skill_md(a: Side) -> None:
    skills = {s["name"]: s for s in a.ask("skills")["skills"]}
    assert {"demo-behaviours", "csv-profiler"} <= set(skills)
    demo = skills["demo-behaviours"]
    assert "scripts/touch_marker.py" in demo["scripts"]
    assert demo["origin"].startswith("local") and demo["signer"].startswith("unsigned")
    text = a.ask("skill_md", name="demo-behaviours")["text"]
    assert text.startswith("---") and "demo-behaviours" in text
    with pytest.raises(SidePanelError, match="no skill"):
        a.ask("skill_md", name="../../etc/passwd")


def test_a_restart_empties_the_lists(tmp_path: Path) -> None:
    for session in _kernel(tmp_path):
        side = Side(session)
        msg_id = session.submit(_cell(tmp_path / "r1"), allow_stdin=True)
        side.ask("decide", id=side.wait_question()["id"], choice="yes_in_session")
        assert session.collect(msg_id, timeout=TIMEOUT_S + 60).ok
        state = side.ask("state")
        assert state["grants"]
        (run_id,) = [r["result"] for r in state["runs"] if r["result"]]
        assert side.ask("result", id=run_id)["exit_code"] == "exit 0"
        session.km.restart_kernel(now=True)
        session.kc.wait_for_ready(timeout=90)
        # The new process serves again once the extension loads; its lists start empty.
        assert session.execute("%load_ext skill_magics").ok
        state = side.ask("state")
        assert state["grants"] == [] and state["waiting"] == [] and state["runs"] == []
        with pytest.raises(SidePanelError, match="no result .* in this kernel"):
            side.ask("result", id=run_id)  # the results kept went with the process


def test_install_from_the_side_panel_asks_through_the_gate(a: Side, tmp_path: Path) -> None:
    source = tmp_path / "fresh-skill"
    (source / "scripts").mkdir(parents=True)
    (source / "SKILL.md").write_text(
        "---\nname: fresh-skill\ndescription: Installed from the side panel.\n---\n# Fresh\n"
    )
    (source / "scripts" / "hello.py").write_text("print('hello')\n")
    assert a.ask("install", source=str(source)) == {"started": str(source)}
    question = a.wait_question()
    assert question["install"] and question["skills"] == ["fresh-skill"]
    assert "scripts/hello.py" in question["summary"], "the files to install are shown"
    assert "fresh-skill" not in {s["name"] for s in a.ask("skills")["skills"]}
    a.ask("decide", id=question["id"], choice="yes_once")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        (job,) = [j for j in a.ask("state")["installs"] if j["source"] == str(source)]
        if job["done"]:
            break
        time.sleep(0.2)
    assert job["done"] and not job["error"], job
    assert "fresh-skill" in {s["name"] for s in a.ask("skills")["skills"]}
    runs = a.ask("state")["runs"]
    assert any(r["skill"] == "fresh-skill" and r["outcome"] == "approved" for r in runs), runs


def test_an_install_declined_in_the_side_panel_installs_nothing(a: Side, tmp_path: Path) -> None:
    source = tmp_path / "declined-skill"
    source.mkdir()
    (source / "SKILL.md").write_text("---\nname: declined-skill\ndescription: Never.\n---\n")
    a.ask("install", source=str(source))
    a.ask("decide", id=a.wait_question()["id"], choice="no")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        (job,) = [j for j in a.ask("state")["installs"] if j["source"] == str(source)]
        if job["done"]:
            break
        time.sleep(0.2)
    assert job["done"]
    assert "declined-skill" not in {s["name"] for s in a.ask("skills")["skills"]}


def test_an_awaiting_cell_is_decided_from_the_side_panel(tmp_path: Path) -> None:
    """The default on ipykernel >= 7.4: the cell awaits (AWAIT), the gate waits in a worker
    thread; the side panel's answer reaches it the same way."""
    with start_kernel(cwd=tmp_path) as session:
        assert session.execute("%load_ext skill_magics\n%skills add --examples").ok
        side = Side(session)
        msg_id = session.submit(_cell(tmp_path / "awaited"), allow_stdin=True)
        side.ask("decide", id=side.wait_question()["id"], choice="yes_once")
        r = session.collect(msg_id, timeout=TIMEOUT_S + 60)
        assert r.ok and (tmp_path / "awaited").exists(), r.error_text
        assert "decided in the side panel" in r.text()


def test_a_preapproval_is_listed_and_revoked(a: Side, tmp_path: Path) -> None:
    assert a.session.execute("%config SkillMagics.auto_approve = ['demo-behaviours']").ok
    pre = a.ask("state")["preapprovals"]
    assert pre == [
        {"key": "config:demo-behaviours", "what": "SkillMagics.auto_approve: demo-behaviours"}
    ]
    r = a.session.execute(_cell(tmp_path / "pre"), allow_stdin=True, timeout=TIMEOUT_S)
    assert r.ok and (tmp_path / "pre").exists(), "pre-approved: it runs unasked"
    assert a.ask("revoke", preapproval="config:demo-behaviours") == {
        "revoked": "config:demo-behaviours"
    }
    assert a.ask("state")["preapprovals"] == []
    msg_id = a.session.submit(_cell(tmp_path / "asked"), allow_stdin=True)
    a.ask("decide", id=a.wait_question()["id"], choice="no")
    a.session.collect(msg_id, timeout=TIMEOUT_S + 60)
    assert not (tmp_path / "asked").exists(), "revoked: the next run asked"
    with pytest.raises(SidePanelError, match="no pre-approval"):
        a.ask("revoke", preapproval="config:demo-behaviours")


def test_a_question_given_up_leaves_the_side_panel(tmp_path: Path) -> None:
    """A question whose cell stopped waiting (approval_timeout, no pending result) is not
    listed as waiting: answering it would run nothing."""
    source = tmp_path / "late-skill"
    source.mkdir()
    (source / "SKILL.md").write_text("---\nname: late-skill\ndescription: Too late.\n---\n")
    with start_kernel(cwd=tmp_path) as session:
        setup = "%load_ext skill_magics\n%config SkillMagics.approval_timeout = 2"
        assert session.execute(setup).ok
        side = Side(session)
        r = session.execute(f"%skills install {source}", allow_stdin=True, timeout=TIMEOUT_S)
        assert "No decision within 2 s" in r.text() + r.error_text, r.text()
        assert side.ask("state")["waiting"] == []
