"""May this run? The approval gate: who is asked, what each answer means, what is audited.

- ApprovalGate.decide / decide_each / settle: "Yes once" asks every time, "Yes in session" is
  remembered per skill at the skill's current fingerprint, "No", an unavailable or a pending
  approval run nothing; a Yes for files that changed is refused; every decision is audited.
- Pre-approval: an approver that decides a request alone.
- Through the SkillManager: checks come before anyone is asked; declines and unavailable
  approvals are audited for every script; only Decision values count as answers.
- "Yes in session" lapses when anything a run may load changes (scripts, files they source, the
  venv's python, code the approved run wrote itself) and survives the data a run writes.
- The skill fingerprint, the key a session approval is stored under.

Real files and real processes; approvers are plain callables that record.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest
from manager_support import (
    RecordingApprover,
    manager_for,
    outcomes,
    posix_only,
    request_for,
    request_of,
)

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    ApprovalPending,
    ApprovalStale,
    ApprovalUnavailable,
    PathSecurityError,
    RunInterrupted,
    SkillMagicsError,
    ToolRestrictionError,
)
from skill_magics.core.base.fingerprint import MAX_HASHED_BYTES, skill_fingerprint
from skill_magics.core.base.status import AuditOutcome, RunStatus
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import (
    MANAGER_APPROVER,
    Answer,
    Caller,
    Decision,
    combine_requests,
    decides_alone,
)
from skill_magics.core.run.gating.gate import choose_approver
from skill_magics.core.run.gating.store import ApprovalStore

# -- the gate: what each decision means ------------------------------------------------------


class CountingApprover:
    def __init__(self, answer):
        self.answer = answer
        self.calls = 0

    def __call__(self, request):
        self.calls += 1
        if isinstance(self.answer, BaseException):
            raise self.answer
        return self.answer


@pytest.fixture
def manager(tmp_path, make_skill):
    for name in ("one", "two"):
        make_skill(tmp_path, name, scripts={"scripts/a.py": "print('a')\n"})
    return SkillManager([tmp_path])


def _request(manager, name="one"):
    return manager.plan(name, "a").request


def ask(manager, request, approver=MANAGER_APPROVER):
    """The gate's answer to a person's own call, as the Python API gives it: the decision
    (None: nobody asked), or the refusal raised."""
    verdict = manager._gate.decide(request, choose_approver(approver, manager.approver, "person"))
    verdict.raise_if_blocked()
    return verdict.decision


def _outcomes(manager):
    return [(r.skill, r.outcome) for r in manager.audit.records()]


def test_no_approver_means_the_caller_decided(manager):
    verdict = manager._gate.decide(_request(manager), None)
    assert verdict.allowed and verdict.decision is None
    assert manager.audit.records() == []


def test_yes_once_asks_every_time_and_is_audited(manager):
    approver = CountingApprover("yes_once")
    for _ in range(2):
        verdict = manager._gate.decide(_request(manager), approver)
        assert verdict.allowed and verdict.decision is Decision.YES_ONCE
    assert approver.calls == 2
    assert manager.approvals.approvals() == {}
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVED)] * 2
    assert manager.audit.records()[0].reason == "yes_once by approver"


def test_yes_in_session_is_remembered_until_a_file_changes(manager, tmp_path):
    approver = CountingApprover(Answer(Decision.YES_IN_SESSION, "button 'Yes in session'"))
    manager._gate.decide(_request(manager), approver)
    verdict = manager._gate.decide(_request(manager), approver)
    assert verdict.allowed and verdict.by == "session approval"
    assert approver.calls == 1
    assert manager.audit.records()[-1].reason == "yes_in_session by button 'Yes in session'"
    (tmp_path / "one/scripts/a.py").write_text("print('changed')\n")
    manager._gate.decide(_request(manager), approver)
    assert approver.calls == 2


def test_session_approval_is_per_skill(manager):
    approver = CountingApprover("yes_in_session")
    manager._gate.decide(_request(manager, "one"), approver)
    manager._gate.decide(_request(manager, "two"), approver)
    assert approver.calls == 2
    assert set(manager.approvals.approvals()) == {"one", "two"}


def test_no_is_declined_audited_and_names_the_fix(manager):
    verdict = manager._gate.decide(_request(manager), CountingApprover("no"))
    assert verdict.status is RunStatus.DECLINED
    assert "was declined: nothing ran" in verdict.message
    assert "asked again" in verdict.message
    assert _outcomes(manager) == [("one", AuditOutcome.DECLINED)]
    with pytest.raises(ApprovalDeclined, match="nothing ran"):
        verdict.raise_if_blocked()


def test_unavailable_is_a_verdict_and_audited(manager):
    approver = CountingApprover(ApprovalUnavailable("headless: set SKILL_MAGICS_AUTO_APPROVE"))
    verdict = manager._gate.decide(_request(manager), approver)
    assert verdict.status is RunStatus.APPROVAL_UNAVAILABLE
    assert verdict.message == "headless: set SKILL_MAGICS_AUTO_APPROVE"
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVAL_UNAVAILABLE)]
    with pytest.raises(ApprovalUnavailable):
        verdict.raise_if_blocked()


def test_pending_is_not_audited_until_it_is_settled(manager):
    panel = object()
    verdict = manager._gate.decide(
        _request(manager), CountingApprover(ApprovalPending("waiting for a click", panel))
    )
    assert verdict.status is RunStatus.PENDING and verdict.pending is panel
    assert manager.audit.records() == []
    later = manager._gate.settle(_request(manager), Decision.YES_ONCE, "button 'Yes once'")
    assert later.allowed
    assert _outcomes(manager) == [("one", AuditOutcome.APPROVED)]


def test_interrupted_wait_is_audited_and_raised(manager):
    with pytest.raises(RunInterrupted):
        manager._gate.decide(_request(manager), CountingApprover(RunInterrupted("stopped")))
    assert _outcomes(manager) == [("one", AuditOutcome.INTERRUPTED)]


def test_a_yes_for_files_that_changed_is_refused(manager, tmp_path):
    request = _request(manager)
    (tmp_path / "one/scripts/a.py").write_text("open('evil', 'w')\n")
    verdict = manager._gate.settle(request, Decision.YES_IN_SESSION, "button")
    assert verdict.status is RunStatus.REFUSED
    assert "changed after the approval was asked" in verdict.message
    assert manager.approvals.approvals() == {}  # nothing remembered for the old files
    assert _outcomes(manager) == [("one", AuditOutcome.REFUSED)]
    with pytest.raises(ApprovalStale):
        verdict.raise_if_blocked()


def test_decide_each_asks_once_and_skips_session_approved_skills(manager):
    approver = CountingApprover("yes_in_session")
    manager._gate.decide(_request(manager, "one"), approver)
    seen = []

    def recording(request):
        seen.append(request)
        return "yes_once"

    verdicts = manager._gate.decide_each(
        [_request(manager, "one"), _request(manager, "two")], recording
    )
    assert [v.allowed for v in verdicts] == [True, True]
    assert [r.skill_names for r in seen] == [("two",)]  # "one" was covered by the session


def test_combined_yes_in_session_approves_each_skill_at_its_own_hash(manager):
    approver = CountingApprover("yes_in_session")
    one, two = _request(manager, "one"), _request(manager, "two")
    verdicts = manager._gate.decide_each([one, two], approver)
    assert all(v.allowed for v in verdicts)
    assert manager.approvals.approvals() == {"one": one.content_hash, "two": two.content_hash}
    assert manager._gate.decide(one, approver).by == "session approval"  # as if separately
    assert approver.calls == 1
    manager.approvals.revoke("two")
    assert not manager.approvals.covers(combine_requests([one, two]))
    assert manager.approvals.covers(one)


def test_combined_no_declines_all_and_remembers_nothing(manager):
    verdicts = manager._gate.decide_each(
        [_request(manager, "one"), _request(manager, "two")], CountingApprover("no")
    )
    assert [v.status for v in verdicts] == [RunStatus.DECLINED] * 2
    assert "one, two (one/scripts/a.py, two/scripts/a.py) was declined" in verdicts[0].message
    assert manager.approvals.approvals() == {}
    assert sorted(_outcomes(manager)) == [
        ("one", AuditOutcome.DECLINED),
        ("two", AuditOutcome.DECLINED),
    ]


def test_a_model_call_without_any_approver_is_refused(manager):
    approver = choose_approver(None, None, Caller.MODEL)
    verdict = manager._gate.decide(_request(manager), approver)
    assert verdict.status is RunStatus.APPROVAL_UNAVAILABLE
    assert "No approver is configured" in verdict.message


def test_the_approver_rule(manager):
    """docs/architecture.md, *Who approves*: the default is the manager's approver; None is
    "I decided: run" for a person's own call and a refusal for a call a model made."""
    mine = RecordingApprover()
    for caller in Caller:
        assert choose_approver(mine, None, caller) is mine
        assert choose_approver(MANAGER_APPROVER, mine, caller) is mine
    assert choose_approver(None, mine, Caller.PERSON) is None
    assert choose_approver(MANAGER_APPROVER, None, Caller.PERSON) is None
    for refused in (
        choose_approver(None, mine, Caller.MODEL),
        choose_approver(MANAGER_APPROVER, None, "model"),
    ):
        with pytest.raises(ApprovalUnavailable, match="No approver is configured"):
            refused(_request(manager))
    assert repr(MANAGER_APPROVER) == "MANAGER_APPROVER"


def test_store_is_thread_safe():
    store = ApprovalStore()
    errors = []

    def worker(i):
        try:
            for _ in range(200):
                store.approve(f"s{i}", "h")
                store.is_approved(f"s{i}", "h")
                store.revoke(f"s{i}")
        except Exception as exc:  # pragma: no cover - the assertion below reports it
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and store.approvals() == {}


def test_decides_alone_is_an_optional_hint(skill_dir):
    request = request_for(skill_dir)

    class Configured:
        def __call__(self, request):
            return "yes_once"

        def decides_alone(self, request):
            return request.skill_name == "demo"

    class Broken(Configured):
        def decides_alone(self, request):
            raise RuntimeError("boom")

    assert decides_alone(Configured(), request) is True
    assert decides_alone(Configured(), request_for(skill_dir, "other")) is False
    assert decides_alone(lambda r: "yes_once", request) is False
    assert decides_alone(Broken(), request) is False
    assert decides_alone(None, request) is False


# -- through the manager: who is asked, what runs, what is audited ----------------------------


def test_no_means_nothing_ran(example_manager, tmp_path):
    marker = tmp_path / "marker"
    approver = RecordingApprover("no")
    with pytest.raises(ApprovalDeclined):
        example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
    assert not marker.exists()
    assert len(approver.requests) == 1
    record = example_manager.audit.records()[-1]
    assert (record.outcome, record.script, record.exit_code) == (
        "declined",
        "scripts/touch_marker.py",
        None,
    )
    assert str(marker) in record.arguments


@posix_only
def test_decline_never_runs_and_is_audited_once(make_skill, tmp_path):
    marker = tmp_path / "ran"
    make_skill(tmp_path / "s", "no", scripts={"scripts/a.sh": f"touch {marker}\n"})
    manager = manager_for(tmp_path / "s", approver=RecordingApprover("no"))
    with pytest.raises(SkillMagicsError):
        manager.execute_skill_script("no", "a")
    assert not marker.exists()
    assert [r.outcome for r in manager.audit.records()] == ["declined"]


def test_unavailable_approval_runs_nothing(example_manager, tmp_path):
    marker = tmp_path / "marker"
    approver = RecordingApprover(error=ApprovalUnavailable("nobody can click in a headless run"))
    with pytest.raises(ApprovalUnavailable):
        example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
    assert not marker.exists()
    assert outcomes(example_manager)[-1] == "approval_unavailable"
    assert "headless" in example_manager.audit.records()[-1].reason


def test_yes_once_asks_every_time_through_the_manager(example_manager, tmp_path):
    approver = RecordingApprover(Decision.YES_ONCE)
    for i in range(2):
        marker = tmp_path / f"m{i}"
        result = example_manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=approver
        )
        assert result.success and marker.exists()
    assert len(approver.requests) == 2


def test_explicit_none_approver_overrides_default(examples_dir, tmp_path):
    approver = RecordingApprover("no")
    manager = SkillManager([examples_dir], approver=approver)
    marker = tmp_path / "marker"
    manager.execute_skill_script(
        "demo-behaviours", "touch_marker", {"path": str(marker)}, approver=None
    )
    assert marker.exists() and approver.requests == []


def test_checks_come_before_approval(tmp_path, make_skill):
    make_skill(
        tmp_path,
        "locked",
        {"name": "locked", "description": "x", "allowed-tools": "Read Write"},
        scripts={"scripts/run.py": "print('ran')\n"},
    )
    approver = RecordingApprover("yes_once")
    manager = SkillManager([tmp_path])
    with pytest.raises(ToolRestrictionError):
        manager.execute_skill_script("locked", "run", approver=approver)
    assert approver.requests == []  # nobody is asked about a run that cannot happen
    assert outcomes(manager) == ["refused"]


@posix_only
def test_decision_values_are_the_only_accepted_answers(make_skill, tmp_path):
    marker = tmp_path / "ran"
    make_skill(tmp_path / "s", "ans", scripts={"scripts/a.sh": f"touch {marker}\n"})
    for answer in ("yes", "YES_ONCE", "", "y", True):
        manager = manager_for(tmp_path / "s", approver=lambda _r, a=answer: a)
        with pytest.raises((ValueError, SkillMagicsError)):
            manager.execute_skill_script("ans", "a")
    assert not marker.exists()
    assert Decision("yes_once") is Decision.YES_ONCE


def test_ask_approval_audits_declines_for_every_script_then_raises(tmp_path, make_skill):
    make_skill(
        tmp_path, "two", scripts={"scripts/a.py": "print(1)\n", "scripts/b.py": "print(2)\n"}
    )
    manager = SkillManager([tmp_path])
    skill = manager.get_skill("two")
    request = request_of(manager, "two", skill.scripts, {"k": 1}, argv=["--v"])
    assert ask(manager, request, None) is None, "None: the caller decided"
    assert manager.audit.records() == []
    with pytest.raises(ApprovalDeclined):
        ask(manager, request, RecordingApprover("no"))
    with pytest.raises(ApprovalUnavailable):
        ask(manager, request, RecordingApprover(error=ApprovalUnavailable("nobody there")))
    records = manager.audit.records()
    assert [(r.script, r.outcome) for r in records] == [
        ("scripts/a.py", "declined"),
        ("scripts/b.py", "declined"),
        ("scripts/a.py", "approval_unavailable"),
        ("scripts/b.py", "approval_unavailable"),
    ]
    assert records[0].arguments == '{"k": 1} argv: --v'
    assert records[-1].reason == "ApprovalUnavailable: nobody there"
    manager.approver = RecordingApprover("yes_in_session")
    assert ask(manager, request) is Decision.YES_IN_SESSION
    assert ask(manager, request, RecordingApprover("no")) is Decision.YES_IN_SESSION, (
        "a stored Yes in session for the same scripts counts"
    )


# -- "Yes in session": what lapses it and what does not ---------------------------------------


@pytest.fixture
def examples_copy(tmp_path, examples_dir) -> Path:
    """A private copy of the examples, for tests that edit scripts."""
    dest = tmp_path / "examples"
    shutil.copytree(examples_dir, dest)
    return dest


def test_yes_in_session_until_a_script_changes(examples_copy, tmp_path):
    approver = RecordingApprover("yes_in_session")
    manager = SkillManager([examples_copy], approver=approver)  # the manager's default approver
    for i in range(3):
        assert manager.execute_skill_script(
            "demo-behaviours", "touch_marker", {"path": str(tmp_path / f"m{i}")}
        ).success
    assert len(approver.requests) == 1
    # Editing any script of the skill changes the hash: the session approval lapses.
    script = examples_copy / "demo-behaviours" / "scripts" / "sleepy.py"
    script.write_text(script.read_text() + "# edited\n")
    manager.execute_skill_script("demo-behaviours", "touch_marker", {"path": str(tmp_path / "m")})
    assert len(approver.requests) == 2
    assert approver.requests[0].content_hash != approver.requests[1].content_hash


@posix_only
def test_session_approval_lapses_when_scripts_change(make_skill, tmp_path):
    outside = tmp_path / "outside.sh"
    outside.write_text("echo outside\n")
    skill = make_skill(tmp_path / "s", "sess", scripts={"scripts/a.sh": "echo v1\n"})
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path / "s", approver=recorder)
    manager.execute_skill_script("sess", "a")
    manager.execute_skill_script("sess", "a")
    assert len(recorder.requests) == 1
    (skill / "scripts" / "a.sh").write_text("echo v2\n")  # edit
    manager.execute_skill_script("sess", "a")
    assert len(recorder.requests) == 2
    (skill / "scripts" / "b.sh").write_text("echo new\n")  # new script
    manager.execute_skill_script("sess", "a")
    assert len(recorder.requests) == 3
    (skill / "scripts" / "data.sh").write_text("echo v3\n")
    (skill / "scripts" / "a.sh").unlink()
    os.symlink(skill / "scripts" / "data.sh", skill / "scripts" / "a.sh")  # symlink swap
    assert manager.execute_skill_script("sess", "a").stdout == "v3\n"
    assert len(recorder.requests) == 4
    (skill / "scripts" / "a.sh").unlink()
    os.symlink(outside, skill / "scripts" / "a.sh")  # swap to a link outside: refused
    with pytest.raises(PathSecurityError):
        manager.execute_skill_script("sess", "a")


@posix_only
def test_session_approval_lapses_when_code_a_script_loads_changes(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "sess",
        scripts={"scripts/run.sh": 'source "$SKILL_BASE_DIR/scripts/lib.inc"\n'},
        files={"scripts/lib.inc": "echo lib v1\n"},
    )
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path, approver=recorder)
    assert manager.execute_skill_script("sess", "run").stdout == "lib v1\n"
    (skill / "scripts" / "lib.inc").write_text("echo lib v2 EVIL\n")
    manager.execute_skill_script("sess", "run")
    assert len(recorder.requests) == 2


@posix_only
def test_session_approval_lapses_when_venv_python_changes(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "sess",
        scripts={"scripts/p.py": "print(1)\n", "venv/bin/python": "#!/bin/sh\necho v1\n"},
    )
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path, approver=recorder)
    assert manager.execute_skill_script("sess", "p").stdout == "v1\n"
    (skill / "venv" / "bin" / "python").write_text("#!/bin/sh\necho v2 EVIL\n")
    manager.execute_skill_script("sess", "p")
    assert len(recorder.requests) == 2


@posix_only
def test_session_approval_survives_files_the_approved_run_writes_but_not_edits_between(
    make_skill, tmp_path
):
    skill = make_skill(
        tmp_path,
        "out",
        scripts={"scripts/w.sh": 'date +%s%N > "$SKILL_BASE_DIR/output.txt"\necho ok\n'},
    )
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    for _ in range(3):  # each run rewrites output.txt inside the skill
        assert manager.execute_skill_script("out", "w").stdout == "ok\n"
    assert len(asked) == 1
    (skill / "output.txt").write_text("source me\n")  # changed by someone else
    manager.execute_skill_script("out", "w")
    assert len(asked) == 2


@posix_only
@pytest.mark.parametrize(
    "writes",
    [
        'printf "echo rewritten\\n" > "$SKILL_BASE_DIR/scripts/w.sh"',  # the script itself
        'printf "x = 1\\n" > "$SKILL_BASE_DIR/helpers.py"',  # a module it may import
        'printf "#!/bin/sh\\n" > "$SKILL_BASE_DIR/tool"',  # a new program (shebang)
        'rm -f "$SKILL_BASE_DIR/SKILL.md.bak"; printf "x" >> "$SKILL_BASE_DIR/SKILL.md"',
        # outside the fingerprint, but code all the same: a .pth runs at the next start
        'mkdir -p "$SKILL_BASE_DIR/venv/lib/site-packages"; '
        'printf "import os\n" > "$SKILL_BASE_DIR/venv/lib/site-packages/zz.pth"',
        'mkdir -p "$SKILL_BASE_DIR/scripts/__pycache__"; '
        'printf "x" > "$SKILL_BASE_DIR/scripts/__pycache__/helper.cpython-311.pyc"',
        'mkdir -p "$SKILL_BASE_DIR/node_modules/pkg"; '
        'printf "x" > "$SKILL_BASE_DIR/node_modules/pkg/index.js"',
    ],
)
def test_session_approval_lapses_when_the_approved_run_changes_code(make_skill, tmp_path, writes):
    make_skill(tmp_path, "selfmod", scripts={"scripts/w.sh": f"{writes}\necho ok\n"})
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    manager.execute_skill_script("selfmod", "w")
    assert len(asked) == 1
    manager.execute_skill_script("selfmod", "w")  # the code changed: ask again
    assert len(asked) == 2
    lapsed = [r for r in manager.audit.records() if r.outcome == "approval_lapsed"]
    assert lapsed and "the run changed code in the skill" in lapsed[0].reason


@posix_only
def test_session_approval_survives_a_bundler_cache_in_node_modules(make_skill, tmp_path):
    writes = (
        'mkdir -p "$SKILL_BASE_DIR/node_modules/.cache/x"; '
        'date +%s%N > "$SKILL_BASE_DIR/node_modules/.cache/x/stamp"'
    )
    make_skill(tmp_path, "cache", scripts={"scripts/w.sh": f"{writes}\necho ok\n"})
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    for _ in range(3):
        assert manager.execute_skill_script("cache", "w").stdout == "ok\n"
    assert len(asked) == 1


@posix_only
def test_session_approval_counts_as_approval_for_agent_calls_only_when_given(make_skill, tmp_path):
    # A "Yes in session" a person gave for the skill's current files also covers a tool call
    # (that is what it means); without one and without an approver nothing runs.
    from skill_magics.core.prompt.tools import handle_tool_call

    make_skill(tmp_path, "sess", scripts={"scripts/a.sh": "echo ran\n"})
    manager = SkillManager([tmp_path])
    assert handle_tool_call(manager, "sess__a", {}, "t")["is_error"] is True
    manager.execute_skill_script("sess", "a", approver=lambda r: "yes_in_session")
    assert handle_tool_call(manager, "sess__a", {}, "t") == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": "ran\n",
        "is_error": False,
    }


# -- the skill fingerprint: the key a session approval is stored under ------------------------


@posix_only
def test_fingerprint_covers_every_file_but_not_venv_contents(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "fp",
        scripts={"scripts/a.sh": "echo a\n"},
        files={".hidden.rc": "x=1\n", "lib/helper.py": "X = 1\n", "venv/lib/site.py": "a\n"},
    )
    first = skill_fingerprint(skill)
    assert skill_fingerprint(skill) == first  # stable
    (skill / "venv" / "lib" / "site.py").write_text("pip rewrote me\n")
    (skill / "__pycache__").mkdir()
    (skill / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert skill_fingerprint(skill) == first  # installed packages and caches do not count
    for rel in (".hidden.rc", "lib/helper.py"):
        (skill / rel).write_text("changed\n")
        changed = skill_fingerprint(skill)
        assert changed != first
        first = changed
    (skill / "lib" / "link.py").symlink_to(skill / "lib" / "helper.py")
    assert skill_fingerprint(skill) != first


@posix_only
def test_fingerprint_counts_big_files_by_identity_without_reading_them(make_skill, tmp_path):
    skill = make_skill(tmp_path, "big", files={"data/big.bin": b"\0" * (MAX_HASHED_BYTES + 1)})
    first = skill_fingerprint(skill)
    path = skill / "data" / "big.bin"
    st = path.stat()
    with open(path, "r+b") as fh:  # same size, mtime put back: ctime still moves
        fh.write(b"\1")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert skill_fingerprint(skill) != first


def test_data_written_meanwhile_keeps_the_request_current_code_does_not(manager, tmp_path):
    """Concurrent tool calls: another run's output file in the skill folder does not make
    an approval stale; a changed script, a new module or an edited SKILL.md does."""
    request = _request(manager)
    (tmp_path / "one/out.json").write_text('{"rows": 3}\n')
    assert manager._gate.is_current(request)
    assert manager._gate.settle(request, Decision.YES_ONCE, "button").allowed
    (tmp_path / "one/helper.py").write_text("import os\n")
    assert not manager._gate.is_current(request)
    request = _request(manager)
    (tmp_path / "one/SKILL.md").write_text((tmp_path / "one/SKILL.md").read_text() + "\nmore\n")
    assert not manager._gate.is_current(request)


def test_a_code_request_built_through_the_manager_is_current(manager):
    request = request_of(manager, "one", [], None, code="print(1)")
    assert manager._gate.is_current(request)
    assert ask(manager, request, lambda r: "yes_in_session") is Decision.YES_IN_SESSION
    again = request_of(manager, "one", [], None, code="print(1)")
    assert ask(manager, again, lambda r: "no") is Decision.YES_IN_SESSION  # covered
    other = request_of(manager, "one", [], None, code="print(2)")
    with pytest.raises(ApprovalDeclined):
        ask(manager, other, lambda r: "no")  # other code is asked about


def test_a_stale_approval_is_a_permission_error(manager, tmp_path):
    request = _request(manager)
    (tmp_path / "one/scripts/a.py").write_text("print('other')\n")
    with pytest.raises(PermissionError):
        ask(manager, request, lambda r: "yes_once")


# -- every folder, whatever its depth (issue 17, defect 6) ------------------------------------

# A script that runs a module kept deep in the skill (vendored packages nest like this).
DEEP_RUNNER = """\
    import os, runpy, sys
    deep = os.path.join(os.environ["SKILL_BASE_DIR"], sys.argv[1])
    runpy.run_path(os.path.join(deep, "mod.py"))
    """


def _deep_rel(levels: int, name: str = "d") -> str:
    return "/".join(f"{name}{i}" for i in range(levels))


@posix_only
@pytest.mark.parametrize("levels", [17, 40, 64])
def test_session_approval_lapses_after_an_in_place_edit_at_any_depth(make_skill, tmp_path, levels):
    """An edit that keeps size and mtime, deep in the skill, lapses "Yes in session"."""
    rel = _deep_rel(levels)
    skill = make_skill(
        tmp_path,
        "deep",
        scripts={"scripts/run.py": DEEP_RUNNER},
        files={f"{rel}/mod.py": "print('v1')\n"},
    )
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path, approver=recorder)
    assert manager.execute_skill_script("deep", "run", argv=[rel]).stdout == "v1\n"
    assert manager.execute_skill_script("deep", "run", argv=[rel]).stdout == "v1\n"
    assert len(recorder.requests) == 1  # a deep skill is approved and runs like any other
    target = skill / rel / "mod.py"
    st = target.stat()
    with open(target, "r+b") as fh:  # same size, in place; the folders do not change
        fh.write(b"print('v2')\n")
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns))
    recorder.decision = Decision.NO
    with pytest.raises(ApprovalDeclined):
        manager.execute_skill_script("deep", "run", argv=[rel])
    assert len(recorder.requests) == 2  # asked again: the new code never ran unapproved


@posix_only
def test_a_change_past_path_max_is_seen(make_skill, tmp_path):
    """The walk goes by folder descriptors: a file whose path is longer than PATH_MAX (a
    script can still open it step by step) is seen like any other."""
    skill = make_skill(tmp_path, "long", scripts={"scripts/a.py": "print(1)\n"})
    fd = os.open(skill, os.O_RDONLY)
    try:
        for i in range(30):  # 30 x 200 characters: about 6,000, past PATH_MAX (4,096)
            name = f"{i:02d}" + "x" * 198
            os.mkdir(name, dir_fd=fd)
            child = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = child
        leaf = os.open("mod.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(leaf, b"A = 1\n")
        os.close(leaf)
        first = skill_fingerprint(skill)
        leaf = os.open("mod.py", os.O_WRONLY, dir_fd=fd)
        os.write(leaf, b"A = 2\n")
        os.close(leaf)
    finally:
        os.close(fd)
    assert skill_fingerprint(skill) != first


@posix_only
def test_a_skill_deeper_than_the_walk_is_refused_before_anything_runs(make_skill, tmp_path):
    from skill_magics.core.base.errors import SkillTooDeepError
    from skill_magics.core.base.fingerprint import MAX_DEPTH

    rel = _deep_rel(MAX_DEPTH + 1)
    skill = make_skill(
        tmp_path,
        "abyss",
        scripts={"scripts/touch.py": "open('ran', 'w').close()\n"},
        files={f"{rel}/mod.py": "X = 1\n"},
    )
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path, approver=recorder, run_cwd="skill")
    for call in (
        lambda: manager.execute_skill_script("abyss", "touch"),
        lambda: manager.map("abyss", "touch", [{}, {}]),
        lambda: manager.plan_map("abyss", "touch", [{}]),
    ):
        with pytest.raises(SkillTooDeepError) as err:
            call()
        message = str(err.value)
        assert "\n" not in message and f"more than {MAX_DEPTH} deep" in message
        assert "move that data out of the skill" in message and "d0/d1/d2/…/d64" in message
    assert recorder.requests == [] and not (skill / "ran").exists()
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert len(refused) == 3 and all("SkillTooDeepError" in (r.reason or "") for r in refused)
    assert {r.script for r in refused} == {"scripts/touch.py"}
    # Listing and showing it still work (it is refused, not broken).
    assert "abyss" in [m.name for m in manager.list_skills()]
    assert manager.requirements("abyss") is not None


@posix_only
def test_a_run_that_nests_folders_too_deep_ends_its_session_approval(make_skill, tmp_path):
    from skill_magics.core.base.errors import SkillTooDeepError
    from skill_magics.core.base.fingerprint import MAX_DEPTH

    rel = _deep_rel(MAX_DEPTH + 3)
    make_skill(
        tmp_path,
        "digger",
        scripts={"scripts/dig.py": f"import os\nos.makedirs({rel!r}, exist_ok=True)\n"},
    )
    recorder = RecordingApprover("yes_in_session")
    manager = manager_for(tmp_path, approver=recorder, run_cwd="skill")
    assert manager.execute_skill_script("digger", "dig").exit_code == 0
    assert manager.approvals.approvals() == {}  # revoked: its files cannot be compared
    assert "approval_lapsed" in outcomes(manager)
    with pytest.raises(SkillTooDeepError):
        manager.execute_skill_script("digger", "dig")


@posix_only
def test_symlink_loops_are_not_followed(make_skill, tmp_path):
    skill = make_skill(tmp_path, "loops", scripts={"scripts/a.py": "print(1)\n"})
    (skill / "lib").mkdir()
    (skill / "lib" / "up").symlink_to("..")
    (skill / "lib" / "self").symlink_to(".")
    (skill / "root").symlink_to("/")
    first = skill_fingerprint(skill)
    assert skill_fingerprint(skill) == first
    assert SkillManager([tmp_path]).execute_skill_script("loops", "a").stdout == "1\n"


def test_a_rewrite_within_one_clock_tick_is_seen(make_skill, tmp_path):
    """File times move once per kernel tick (2 s on FAT): a same-size rewrite right after a
    file was hashed can keep its stat identity there. A digest is not trusted for a file that
    changed that recently (fingerprint.RACY_NS), so the rewrite is always seen. (Kernels with
    multigrain time stamps, 6.13+ on tmpfs/ext4/xfs, give an observed file a new ctime on the
    next write anyway: there this passes without the rule too.)"""
    skill = make_skill(tmp_path, "tick", files={"lib/mod.py": "A = 1\n"})
    path = skill / "lib" / "mod.py"
    for i in range(40):
        path.write_text(f"A = {i % 10}\n")
        first = skill_fingerprint(skill)
        st = path.stat()
        path.write_text(f"B = {i % 10}\n")  # same size, same tick (most likely)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert skill_fingerprint(skill) != first, i
