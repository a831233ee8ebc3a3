"""Recent runs' results for the Skills side panel (core/base/recent.py, the board's ``result``
request, notebook/sidepanel.py's ``result_view``): the store's bounds, its redaction, and
refusals. Real scripts run through a real SkillManager; the kernel tests
(test_sidepanel_kernel.py) ask the same board over the channel."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from skill_magics.core.base.audit import AuditLog, AuditRecord
from skill_magics.core.base.errors import SidePanelError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.recent import RESULTS_KEPT, STREAM_BYTES, RecentResults
from skill_magics.core.panel.board import Board
from skill_magics.notebook.sidepanel import result_view

SCRIPT = """\
import json, sys
args = json.loads(sys.stdin.read() or "{}")
sys.stdout.write(args.get("out", ""))
sys.stderr.write(args.get("err", ""))
sys.exit(args.get("code", 0))
"""


@pytest.fixture
def manager(tmp_path: Path):
    from skill_magics.core.manager import SkillManager

    for name, meta in (("echo-skill", ""), ("secret-echo", 'metadata:\n  secrets: "TOKEN"\n')):
        skill = tmp_path / "skills" / name
        (skill / "scripts").mkdir(parents=True)
        (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Echoes.\n{meta}---\n")
        (skill / "scripts" / "echo.py").write_text(SCRIPT)
    return SkillManager([tmp_path / "skills"])


def _run(manager, skill: str = "echo-skill", **args: object) -> ScriptExecutionResult:
    return manager.execute_skill_script(skill, "echo", args, approver=lambda _request: "yes_once")


def _board(manager) -> Board:
    return Board(lambda: manager, lambda: [], describe=str, show_result=result_view)


def _record(n: int) -> AuditRecord:
    return AuditRecord.now("s", f"scripts/{n}.py", "", "completed", exit_code=0)


def _result(stdout: str = "", stderr: str = "") -> ScriptExecutionResult:
    return ScriptExecutionResult(stdout, stderr, 0, 1.0, Path("scripts/x.py"))


def test_the_store_keeps_the_last_runs_only() -> None:
    store = RecentResults(keep=3)
    records = [_record(n) for n in range(5)]
    ids = [store.keep(rec, _result(f"run {n}")) for n, rec in enumerate(records)]
    assert len(store) == 3 and len(set(ids)) == 5
    assert [store.get(i) for i in ids[:2]] == [None, None], "the oldest are forgotten"
    assert [store.id_of(rec) for rec in records[:2]] == ["", ""]
    assert [store.get(i).result.stdout for i in ids[2:]] == ["run 2", "run 3", "run 4"]
    assert store.id_of(records[4]) == ids[4]
    assert store.id_of(_record(9)) == "", "a record of no kept run has no id"
    store.clear()
    assert len(store) == 0 and store.get(ids[4]) is None


def test_each_stream_is_cut_to_its_bytes_and_the_cut_is_counted() -> None:
    store = RecentResults(keep=2, stream_bytes=10)
    small = _result("héllo", "")
    run_id = store.keep(_record(0), small)
    assert store.get(run_id).result is small, "a result under the cap is kept as it is"
    # "é" and "€" are 2 and 3 bytes: the cut never leaves half a character.
    run_id = store.keep(_record(1), _result("ab€€€€", "x" * 25))
    kept = store.get(run_id)
    assert kept.result.stdout == "ab€€" and kept.result.stderr == "x" * 10
    assert kept.dropped == {"stdout": 2, "stderr": 15}, "characters dropped"
    assert (kept.result.exit_code, kept.result.script_path) == (0, Path("scripts/x.py"))


def test_a_log_that_is_not_a_kernels_keeps_no_results() -> None:
    log = AuditLog()  # a batch's or a worker's log: keep_results defaults to 0
    assert log.keep_result(_record(0), _result("x")) == "" and len(log.results) == 0
    kernel_log = AuditLog(keep_results=RESULTS_KEPT)
    rec = kernel_log.event("s", "scripts/x.py", "", "completed", exit_code=0)
    assert kernel_log.keep_result(rec, _result("x"))
    kernel_log.clear()  # %skills history --clear: the results go with the records
    assert len(kernel_log.results) == 0


def test_the_board_shows_a_runs_result_tabs(manager) -> None:
    _run(manager, out="hello <img src=x onerror=alert(1)>\n", err="careful\n", code=3)
    board = _board(manager)
    rows = board.handle("state", {})["runs"]
    (run,) = [r for r in rows if r["outcome"] == "failed"]
    assert [r["result"] for r in rows if r["outcome"] == "approved"] == [""], "not a run"
    shown = board.handle("result", {"id": run["result"]})
    assert shown["name"] == "echo-skill.echo" and shown["exit_code"] == "exit 3"
    tabs = {t["title"]: t for t in shown["sections"]}
    assert list(tabs) == ["stdout", "stderr", "exit code", "signal", "timing"]
    assert tabs["stdout"]["text"] == "hello <img src=x onerror=alert(1)>\n", "text, as written"
    assert tabs["stderr"]["text"] == "careful\n"
    assert tabs["exit code"]["text"] == "3 (failure: see stderr)"
    assert tabs["signal"]["text"] == "none"
    assert "execution time" in tabs["timing"]["text"]
    assert json.loads(json.dumps(shown)) == shown, "JSON for the channel"


def test_a_stream_over_the_cap_says_what_was_dropped(manager) -> None:
    big = "y" * (STREAM_BYTES + 5000)
    _run(manager, out=big)
    board = _board(manager)
    run_id = board.handle("state", {})["runs"][0]["result"]
    stdout = board.handle("result", {"id": run_id})["sections"][0]
    assert len(stdout["text"]) <= STREAM_BYTES
    assert any("5,000 more characters of stdout were dropped here" in n for n in stdout["notes"])


def test_unknown_and_other_kernels_ids_are_refused(manager, tmp_path: Path) -> None:
    from skill_magics.core.manager import SkillManager

    _run(manager, out="mine\n")
    run_id = _board(manager).handle("state", {})["runs"][0]["result"]
    other = _board(SkillManager([tmp_path / "skills"]))  # another kernel, or after a restart
    for board, asked in ((other, run_id), (_board(manager), "0123456789abcdef")):
        with pytest.raises(SidePanelError, match="no result .* in this kernel"):
            board.handle("result", {"id": asked})
    with pytest.raises(SidePanelError, match="no result '' in this kernel"):
        _board(manager).handle("result", {})
    no_view = Board(lambda: manager, lambda: [], describe=str)
    with pytest.raises(SidePanelError, match="shows no run results"):
        no_view.handle("result", {"id": run_id})


def test_secrets_stay_masked_in_a_kept_result(manager) -> None:
    from skill_magics.core.base.secrets import SecretStore

    secret, later = "s3cr3t-in-the-output", "given-after-the-run"
    manager.provide_secret("secret-echo", "TOKEN", secret)
    _run(manager, "secret-echo", out=f"token={secret} next={later}\n")
    kept = manager.audit.results.get(manager.audit.results.id_of(manager.audit.records()[-1]))
    assert secret not in kept.result.stdout and "****" in kept.result.stdout, "stored redacted"
    store = SecretStore()  # a value known only after the run: masked when it is sent
    store.provide("secret-echo", "LATER", later)
    try:
        shown = str(_board(manager).handle("result", {"id": kept.id}))
    finally:
        store.forget()
    assert secret not in shown and later not in shown and "next=****" in shown
