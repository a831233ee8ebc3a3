"""The side panel's board (core/panel/board.py) over a real SkillManager: what it lists,
what it masks, and that it decides only through the question objects (no kernel here: the
kernel tests drive the same board through the channel)."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skill_magics.core.base.errors import SidePanelError
from skill_magics.core.panel.board import BY_SIDE_PANEL, Board, BoardQuestion
from skill_magics.core.run.gating.approval import ApprovalRequest, Decision

PY = sys.executable
EXAMPLES = Path(__file__).resolve().parent.parent / "skill_magics" / "examples" / "skills"


def _board(manager, questions: list) -> Board:
    return Board(lambda: manager, lambda: questions, describe=lambda r: f"run {r.skill_name}")


@pytest.fixture
def manager(tmp_path: Path) -> Iterator[object]:
    from skill_magics.core.manager import SkillManager

    local = tmp_path / "skills"
    shutil.copytree(EXAMPLES, local)
    yield SkillManager([local])


def test_decide_goes_into_the_question_first_answer_wins(manager) -> None:
    question = BoardQuestion(ApprovalRequest("csv-profiler", ()))
    board = _board(manager, [question])
    (waiting,) = board.handle("state", {})["waiting"]
    assert waiting["summary"] == "run csv-profiler" and waiting["skills"] == ["csv-profiler"]
    with pytest.raises(SidePanelError, match="not an answer"):
        board.handle("decide", {"id": waiting["id"], "choice": "maybe"})
    assert question.decision is None, "a bad answer decides nothing"
    assert board.handle("decide", {"id": waiting["id"], "choice": "no"}) == {"decided": "no"}
    assert (question.decision, question.decided_by) == (Decision.NO, BY_SIDE_PANEL)
    assert question.decide("yes_once", "button") is False, "the first answer won"
    assert board.handle("state", {})["waiting"] == []
    with pytest.raises(SidePanelError, match="already decided: No"):
        board.handle("decide", {"id": waiting["id"], "choice": "yes_once"})
    with pytest.raises(SidePanelError, match="unknown side panel request"):
        board.handle("run", {})


def test_secret_values_are_masked_in_every_answer(manager) -> None:
    from skill_magics.core.base.secrets import SecretStore

    secret = "s3cr3t-value-for-the-panel"
    store = SecretStore()  # every live store's values are masked in every view
    store.provide("csv-profiler", "PANEL_TOKEN", secret)
    question = BoardQuestion(ApprovalRequest("csv-profiler", ()))
    board = Board(lambda: manager, lambda: [question], describe=lambda r: f"token={secret}")
    text = str(board.handle("state", {}))
    assert secret not in text and "****" in text
    store.forget()


@pytest.mark.mcp  # starts `python -m skill_magics.mcp serve`
def test_skills_lists_local_and_mcp_skills(manager, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKILL_MAGICS_MCP_CACHE", str(tmp_path / "cache"))
    served = tmp_path / "served"
    shutil.copytree(EXAMPLES / "text-tools", served / "text-tools")
    manager.add_mcp_server("team", command=[PY, "-m", "skill_magics.mcp", "serve", str(served)])
    try:
        rows = {row["name"]: row for row in _board(manager, []).handle("skills", {})["skills"]}
    finally:
        manager.remove_mcp_server("team")
    assert {"csv-profiler", "demo-behaviours", "team/text-tools"} <= set(rows)
    assert rows["team/text-tools"]["origin"].startswith("mcp: team")
    assert rows["csv-profiler"]["scripts"] == ["scripts/profile.py"]
