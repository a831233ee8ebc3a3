"""Batch runs (core/run/batch/runner.py, manager.map): real processes, real files, a real DataFrame.

docs/architecture.md, *Batch runs*: one approval for the batch, every item checked and run by
the same executor as a single run, concurrent, input order, bounded audit, cancel kills every
process group and marks the rest cancelled.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import psutil
import pytest
from process_support import pid_alive, start_times

from skill_magics.core.base.errors import (
    ApprovalDeclined,
    BatchInterrupted,
    PathSecurityError,
)
from skill_magics.core.base.status import RunStatus
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.batch import ship
from skill_magics.core.run.batch.runner import ITEM_RECORDS

SQUARE = """
import json, os, sys, time
d = json.load(sys.stdin)
if d.get("fail"):
    print("bad input", d["n"], file=sys.stderr)
    sys.exit(3)
if d.get("sleep"):
    time.sleep(d["sleep"])
print(json.dumps({"square": d["n"] ** 2, "ppid": os.getppid(), "cwd": os.getcwd()}))
"""

# Each item starts a grandchild in the background, records both pids, then hangs.
HANG = """
sleep 300 &
echo "$$ $!" > "pids/$1.txt"
wait
"""

# Waits until `need` items are running at once (a file per item): passes only if concurrent.
TOGETHER = """
import os, sys, time
need = int(sys.argv[2])
open(os.path.join("meet", sys.argv[1]), "w").close()
deadline = time.time() + 20
while len(os.listdir("meet")) < need:
    if time.time() > deadline:
        sys.exit(9)
    time.sleep(0.02)
print(sys.argv[1])
"""


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    make_skill(
        root,
        "mathx",
        scripts={
            "scripts/square.py": SQUARE,
            "scripts/hang.sh": HANG,
            "scripts/together.py": TOGETHER,
            "scripts/echo.sh": 'echo "$@"\n',
        },
        files={"pids/.keep": "", "meet/.keep": ""},
    )
    return root


@pytest.fixture
def manager(skills: Path) -> SkillManager:
    # The scripts here use folders of their skill (pids/, meet/): run them there.
    return SkillManager([skills], run_cwd="skill")


class Asker:
    """An approver that records what it was asked."""

    def __init__(self, answer: str = "yes_once") -> None:
        self.answer = answer
        self.requests: list = []

    def __call__(self, request):
        self.requests.append(request)
        return self.answer


def outcomes(manager: SkillManager) -> list[str]:
    return [str(r.outcome) for r in manager.audit.records()]


def test_200_items_with_failures_and_a_timeout_one_approval(manager: SkillManager) -> None:
    inputs = [{"n": i, "fail": i % 25 == 7} for i in range(200)]
    inputs[100]["sleep"] = 30  # killed at the 1 s limit
    asker = Asker()
    res = manager.map("mathx", "square", inputs, timeout=1, approver=asker)

    assert len(asker.requests) == 1
    request = asker.requests[0]
    assert request.batch.count == 200
    assert request.batch.sample == tuple(inputs[:3])
    assert request.scripts[0].path == "scripts/square.py"

    assert [item.index for item in res] == list(range(200))  # input order
    assert [item.input for item in res] == inputs
    counts = res.counts()
    assert counts == {"completed": 191, "failed": 8, "timeout": 1}
    assert res[100].status == RunStatus.TIMEOUT and res[100].exit_code == 124
    assert res[7].status == RunStatus.FAILED and res[7].exit_code == 3
    assert "bad input 7" in res[7].stderr
    assert res[199].json()["square"] == 199**2
    assert {item.index for item in res.failed()} == {100} | {i for i in range(200) if i % 25 == 7}
    assert not res.stopped and not res.ok

    # Audit: one approval, bounded item records tagged with the batch, one batch record.
    records = manager.audit.records()
    assert outcomes(manager).count("approved") == 1
    items = [r for r in records if r.reason and f"batch {res.batch_id} item" in r.reason]
    assert len(items) <= 2 * ITEM_RECORDS
    assert {r.outcome for r in items} >= {"completed", "failed", "timeout"}
    batch = [r for r in records if r.arguments == "batch of 200 items"]
    assert len(batch) == 1 and batch[0].outcome == "failed"
    assert "191 completed, 8 failed, 1 timeout" in batch[0].reason
    assert res.records_kept + res.records_dropped == 200
    assert "summarised" in batch[0].reason


def test_an_empty_input_says_there_is_nothing_to_run(manager: SkillManager) -> None:
    """Issue 44 item 8: not "0 items · 0.00 s · 0.0 items/s" but what happened."""
    from skill_magics.notebook.render.batch import batch_bundle

    skill, script = next(
        (s.name, s.scripts[0].name)
        for s in map(manager.get_skill, [m.name for m in manager.list_skills()])
        if s.scripts
    )
    res = manager.map(skill, script, [], approver=None)
    assert len(res) == 0
    assert res.summary_line().endswith(": nothing to run: 0 rows")
    assert "items/s" not in res.text()
    page = batch_bundle(res)["text/html"]
    assert "nothing to run: 0 rows" in page and "items/s" not in page


def test_a_dataframe_in_and_a_dataframe_out(manager: SkillManager) -> None:
    import pandas as pd

    df = pd.DataFrame({"n": [1, 2, 3], "label": ["a", None, "c"], "w": [0.5, float("nan"), 2]})
    res = manager.map("mathx", "square", df, approver=None)
    assert res.counts() == {"completed": 3}
    # Rows became JSON objects the way --eval converts values: NaN/None -> null.
    assert res[1].input == {"n": 2, "label": None, "w": None}
    out = res.to_pandas(json=True)
    assert list(out["n"]) == [1, 2, 3]
    assert list(out["square"]) == [1, 4, 9]
    assert list(out["status"]) == ["completed"] * 3
    assert list(out["exit_code"]) == [0, 0, 0]
    assert {"stdout", "stderr", "duration_ms"} <= set(out.columns)
    plain = res.to_pandas()
    assert "square" not in plain.columns


def test_argv_items_run_concurrently_with_the_default_worker_count(
    manager: SkillManager, skills: Path
) -> None:
    workers = os.cpu_count() or 1
    n = max(workers, 2)
    res = manager.map(
        "mathx",
        "together",
        argv=[[f"m{i}", str(min(workers, n))] for i in range(n)],
        approver=None,
    )
    assert res.workers == workers
    assert res.counts() == {"completed": n}, res.text()
    assert [item.stdout.strip() for item in res] == [f"m{i}" for i in range(n)]
    assert res[0].argv == ("m0", str(min(workers, n)))


def test_max_workers_and_a_callers_thread_pool(manager: SkillManager) -> None:
    with ThreadPoolExecutor(3) as pool:
        res = manager.map("mathx", "together", argv=[[f"p{i}", "3"] for i in range(3)], pool=pool)
    assert res.counts() == {"completed": 3}, res.text()
    assert res.pool == "ThreadPoolExecutor"


def test_pool_is_the_name_and_executor_its_deprecated_alias(manager: SkillManager) -> None:
    """map(pool=) and BatchResult.pool say nothing; the old spellings map(executor=) and
    BatchResult.executor still work and warn, naming the new one; both together run nothing."""
    with ThreadPoolExecutor(2) as pool:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            res = manager.map("mathx", "square", [{"n": 2}], pool=pool, approver=None)
            assert res.ok and res.pool == "ThreadPoolExecutor"
        with pytest.warns(DeprecationWarning, match=r"^executor= is deprecated .*use pool= ") as w:
            old = manager.map("mathx", "square", [{"n": 3}], executor=pool, approver=None)
        assert w[0].filename == __file__  # the warning points at the caller's line
        assert old.ok and old.pool == "ThreadPoolExecutor" and old[0].json()["square"] == 9
        with pytest.warns(DeprecationWarning, match=r"BatchResult.executor .*use BatchResult.pool"):
            assert old.executor == "ThreadPoolExecutor"
        before = len(manager.audit.records())
        both = r"^executor= is the old name of pool=: give pool= only$"
        with pytest.raises(ValueError, match=both):
            manager.map("mathx", "square", [{"n": 4}], pool=pool, executor=pool, approver=None)
        assert len(manager.audit.records()) == before  # nothing was planned, asked or run


def test_yes_in_session_covers_the_next_batch_and_no_runs_nothing(
    manager: SkillManager, skills: Path
) -> None:
    asker = Asker("yes_in_session")
    manager.map("mathx", "square", [{"n": 1}], approver=asker)
    manager.map("mathx", "square", [{"n": 2}, {"n": 3}], approver=asker)
    assert len(asker.requests) == 1
    manager = SkillManager([skills], run_cwd="skill")  # a new session: nothing approved
    with pytest.raises(ApprovalDeclined):
        manager.map("mathx", "echo", argv=[["x"]], approver=Asker("no"))
    assert "declined" in outcomes(manager)
    assert not any(
        r.script == "scripts/echo.sh" and r.outcome == "completed" for r in manager.audit.records()
    )


def test_a_bad_item_is_refused_and_the_others_run(manager: SkillManager) -> None:
    inputs = [{"n": 1}, {"n": 2, "blob": "x" * (11 * 1024 * 1024)}, {"n": 3}]
    res = manager.map("mathx", "square", inputs, approver=None)
    assert [str(i.status) for i in res] == ["completed", "refused", "completed"]
    assert "10 MiB" in res[1].message or "too large" in res[1].message.lower()
    assert any(r.outcome == "refused" for r in manager.audit.records())


def test_stop_on_error_cancels_what_has_not_started(manager: SkillManager) -> None:
    inputs = [{"n": i, "fail": i == 0} for i in range(30)]
    res = manager.map("mathx", "square", inputs, max_workers=1, stop_on_error=True, approver=None)
    assert res[0].status == RunStatus.FAILED
    assert res.counts()["cancelled"] >= 25
    assert "stop_on_error" in res.stopped
    rest = {str(i.status) for i in res[1:]}
    assert rest <= {"completed", "cancelled"}


def _pids(skills: Path) -> list[int]:
    pids = []
    for f in (skills / "mathx" / "pids").glob("*.txt"):
        text = f.read_text().split()
        if len(text) == 2:
            pids += [int(p) for p in text]
    return pids


def test_stop_mid_batch_kills_every_group_and_cancels_the_rest(
    manager: SkillManager, skills: Path
) -> None:
    cancel = threading.Event()
    pid_dir = skills / "mathx" / "pids"
    starts: dict[int, int | None] = {}

    def stop_when_running() -> None:
        deadline = time.monotonic() + 20
        while sum(_written(p) for p in pid_dir.glob("*.txt")) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)
        starts.update(start_times(_pids(skills)))  # while they surely run: pid reuse shows
        cancel.set()  # what the Stop button does

    threading.Thread(target=stop_when_running, daemon=True).start()
    started = time.monotonic()
    res = manager.map(
        "mathx",
        "hang",
        argv=[[str(i)] for i in range(20)],
        max_workers=2,
        cancel=cancel,
        approver=None,
    )
    assert time.monotonic() - started < 15
    counts = res.counts()
    assert counts.get("interrupted") == 2, res.text()
    assert counts.get("cancelled") == 18
    assert res.stopped == "cancelled"
    pids = _pids(skills)
    assert len(pids) == 4  # two items, each a script and its background grandchild
    assert sorted(starts) == sorted(pids) and None not in starts.values()
    assert not [p for p in pids if pid_alive(p, starts[p])], "orphans left running"
    batch = manager.audit.records()[-1]
    assert batch.arguments == "batch of 20 items" and batch.outcome == "interrupted"


def test_keyboard_interrupt_stops_the_batch_and_keeps_the_result(
    manager: SkillManager, skills: Path
) -> None:
    main = threading.main_thread().ident
    pid_dir = skills / "mathx" / "pids"

    def interrupt() -> None:
        deadline = time.monotonic() + 20
        while sum(_written(p) for p in pid_dir.glob("*.txt")) < 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        signal.pthread_kill(main, signal.SIGINT)

    # A background job of a non-interactive shell inherits SIGINT ignored: install Python's.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    threading.Thread(target=interrupt, daemon=True).start()
    try:
        with pytest.raises(BatchInterrupted) as info:
            manager.map(
                "mathx", "hang", argv=[[str(i)] for i in range(10)], max_workers=2, approver=None
            )
    finally:
        signal.signal(signal.SIGINT, previous)
    res = info.value.result
    assert len(res) == 10 and res.counts().get("cancelled", 0) >= 8
    assert not [p for p in _pids(skills) if pid_alive(p)]


def test_process_pool_runs_the_shipped_copy_and_refuses_a_tampered_one(
    manager: SkillManager, skills: Path
) -> None:
    with ProcessPoolExecutor(2) as pool:
        res = manager.map(
            "mathx", "square", [{"n": i} for i in range(6)], pool=pool, approver=Asker()
        )
        assert res.counts() == {"completed": 6}, res.text()
        # The scripts' parents are the warm servers of the pool's worker processes (one per
        # worker, a child of it); the workers are children of this process.
        ppids = {item.json()["ppid"] for item in res}
        assert {item.result.start for item in res} == {"warm"}
        assert os.getpid() not in ppids and len(ppids) <= 2
        workers = {psutil.Process(p).ppid() for p in ppids}
        assert {psutil.Process(w).ppid() for w in workers} == {os.getpid()}
        # They ran a copy of the skill, unpacked in the worker's temp directory: each worker
        # process its own (in a folder named after it).
        copies = {Path(item.json()["cwd"]) for item in res}
        assert len(copies) == len({item.worker for item in res})
        for copy in copies:
            assert copy != (skills / "mathx").resolve() and ship.SHIP_DIR_NAME in str(copy)
    with ProcessPoolExecutor(1) as pool:  # one worker: the next item finds the copy below
        res1 = manager.map("mathx", "square", [{"n": 2}], pool=pool, approver=Asker())
        copy = Path(res1[0].json()["cwd"])
        # A copy that differs from the approved files is refused, and audited here...
        (copy / "scripts" / "square.py").write_text("print('tampered')\n")
        before = len(manager.audit.records())
        res2 = manager.map("mathx", "square", [{"n": 1}], pool=pool, approver=Asker())
        assert res2.counts() == {"refused": 1}
        assert "approved fingerprint" in res2[0].message
        new = manager.audit.records()[before:]
        assert [r.outcome for r in new if "fingerprint" in (r.reason or "")] == ["refused"]
        # ...and removed: the next batch unpacks a fresh, verified copy.
        res3 = manager.map("mathx", "square", [{"n": 3}], pool=pool, approver=Asker())
    assert res3.counts() == {"completed": 1} and res3[0].json()["square"] == 9


def test_skills_that_cannot_travel_are_refused_before_running(
    manager: SkillManager, skills: Path
) -> None:
    (skills / "mathx" / "link.txt").symlink_to(skills / "mathx" / "SKILL.md")
    with ProcessPoolExecutor(1) as pool, pytest.raises(PathSecurityError, match="symlink"):
        manager.map("mathx", "square", [{"n": 1}], pool=pool, approver=None)


def test_bad_arguments_say_what_to_do(manager: SkillManager) -> None:
    with pytest.raises(ValueError, match="exactly one of inputs"):
        manager.map("mathx", "square", [{}], argv=[["a"]])
    with pytest.raises(ValueError, match="exactly one of inputs"):
        manager.map("mathx", "square")
    with pytest.raises(ValueError, match="not a dict"):
        manager.map("mathx", "square", {"n": 1})
    with pytest.raises(ValueError, match="list of strings"):
        manager.map("mathx", "echo", argv=["--flag"])
    with pytest.raises(ValueError, match="pool= must be"):
        manager.map("mathx", "square", [{"n": 1}], pool=object(), approver=None)
    with pytest.raises(ValueError, match="max_workers"):
        manager.map("mathx", "square", [{"n": 1}], max_workers=0, approver=None)
    assert len(manager.map("mathx", "square", [], approver=Asker())) == 0


def test_a_failing_callback_does_not_hang_or_stop_the_batch(manager: SkillManager) -> None:
    def broken(_item) -> None:
        raise RuntimeError("callback bug")

    res = manager.map(
        "mathx",
        "echo",
        argv=[[str(i)] for i in range(6)],
        on_result=broken,
        on_progress=broken,
        approver=None,
    )
    assert res.counts() == {"completed": 6}


def test_dask_is_imported_only_when_a_batch_uses_it(skills: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from skill_magics.core.manager import SkillManager\n"
        f"m = SkillManager([{str(skills)!r}])\n"
        "res = m.map('mathx', 'echo', argv=[['a'], ['b']], approver=None)\n"
        "assert res.ok, res.text()\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in ('dask', 'distributed'))\n"
        "assert not bad, bad\n"
    )
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr


def _written(path) -> bool:
    """The script wrote both pids (the file exists before echo has written into it)."""
    try:
        return len(path.read_text().split()) == 2
    except OSError:
        return False


WRITER = """
import json, sys
try:
    with open("written-by-item.txt", "w") as fh:
        fh.write("x")
    print(json.dumps({"wrote": True}))
except OSError as exc:
    print(json.dumps({"wrote": False, "error": type(exc).__name__}))
"""


def test_the_callers_sandbox_reaches_the_workers(tmp_path: Path, make_skill) -> None:
    """docs/architecture.md, *Sandbox and secrets*: a shipped item is isolated like a local
    one (read-only here: its copy of the skill cannot be written)."""
    from sandbox_support import require_bwrap

    require_bwrap()
    make_skill(tmp_path, "writer", scripts={"scripts/write.py": WRITER})
    manager = SkillManager([tmp_path], sandbox="read-only", run_cwd="skill")
    local = manager.map("writer", "write", [{}], approver=None)
    assert local[0].json()["wrote"] is False, local.text()
    with ProcessPoolExecutor(1) as pool:
        shipped = manager.map("writer", "write", [{}], pool=pool, approver=None)
    assert shipped.ok, shipped.text()
    assert shipped[0].json()["wrote"] is False
    manager.configure(sandbox="off")
    with ProcessPoolExecutor(1) as pool:
        free = manager.map("writer", "write", [{}], pool=pool, approver=None)
    assert free[0].json()["wrote"] is True
    # A data file a run wrote into its copy is output, not a change of code: still verified.
    with ProcessPoolExecutor(1) as pool:
        again = manager.map("writer", "write", [{}], pool=pool, approver=None)
    assert again.ok, again.text()


def test_secret_values_never_travel_to_workers(tmp_path: Path, make_skill) -> None:
    fm = {"name": "keyed", "description": "Declares a key.", "metadata": {"secrets": "API_KEY"}}
    script = "import os\nprint(len(os.environ['API_KEY']))\n"
    make_skill(tmp_path, "keyed", fm, {"scripts/use.py": script})
    manager = SkillManager([tmp_path])
    manager.provide_secret("keyed", "API_KEY", "s3cret-value-long-enough")
    local = manager.map("keyed", "use", [{}], approver=None)
    assert local.ok and local[0].stdout.strip() == "24", local.text()
    with ProcessPoolExecutor(1) as pool:
        shipped = manager.map("keyed", "use", [{}], pool=pool, approver=None)
    assert shipped.counts() == {"refused": 1}, shipped.text()
    assert "API_KEY" in shipped[0].message
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert refused and "API_KEY" in (refused[-1].reason or "")


def test_items_get_the_working_directory_a_single_run_gets(skills: Path, tmp_path: Path) -> None:
    """Default: the caller's folder ("workspace"); cwd= per batch, like execute_skill_script."""
    manager = SkillManager([skills])
    res = manager.map("mathx", "square", [{"n": 1}], approver=None)
    assert res[0].json()["cwd"] == os.getcwd()
    res = manager.map("mathx", "square", [{"n": 1}], approver=None, cwd=tmp_path)
    assert res[0].json()["cwd"] == str(tmp_path)
    res = manager.map("mathx", "square", [{"n": 1}], approver=None, cwd="skill")
    assert res[0].json()["cwd"] == str((skills / "mathx").resolve())


# -- every item runs the approved code (issue 17, defect 7) -----------------------------------

V1 = "print('approved v1')\n"
EVIL = "print('EVIL v2 !!!')\n"  # same size as V1: only the contents differ
assert len(V1) == len(EVIL)
# Rewrites itself (same size) once it has run: the next item must not run the new text.
SELF_REWRITE = """\
import os, sys
print("approved v1")
path = os.path.abspath(sys.argv[0])
text = open(path).read()
open(path, "w").write(text.replace('"approved v1"', '"EVIL  v2 !!"'))
"""


@pytest.fixture
def mutable(tmp_path: Path, make_skill) -> SkillManager:
    root = tmp_path / "mutable"
    make_skill(
        root,
        "mut",
        scripts={"scripts/run.py": V1, "scripts/self.py": SELF_REWRITE},
        body="Run `scripts/run.py` or `scripts/self.py`.\n",
    )
    return SkillManager([root], run_cwd="skill")


def _stale_records(manager: SkillManager) -> list:
    return [r for r in manager.audit.records() if "ApprovalStale" in (r.reason or "")]


def test_code_rewritten_from_on_result_never_runs(mutable: SkillManager) -> None:
    script = mutable.get_skill("mut").base_dir / "scripts" / "run.py"

    def rewrite(item) -> None:
        if item.index == 0:
            st = script.stat()
            script.write_text(EVIL)  # same size, mtime put back: only ctime moves
            os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))

    res = mutable.map("mut", "run", [{}] * 10, max_workers=1, on_result=rewrite, approver=Asker())
    assert [str(i.status) for i in res] == ["completed"] + ["refused"] * 9
    assert res[0].stdout == "approved v1\n"
    assert not any("EVIL" in item.stdout for item in res)
    assert "code changed during the batch" in res[1].message
    assert len(_stale_records(mutable)) == 1


def test_a_script_that_rewrites_itself_runs_once(mutable: SkillManager) -> None:
    res = mutable.map("mut", "self", [{}] * 8, max_workers=1, approver=Asker())
    assert [str(i.status) for i in res] == ["completed"] + ["refused"] * 7
    assert not any("EVIL" in item.stdout for item in res)
    assert len(_stale_records(mutable)) == 1


def test_data_written_during_a_batch_does_not_stop_it(tmp_path: Path, make_skill) -> None:
    """What the check must not refuse: items writing their output into the skill folder."""
    root = tmp_path / "writer"
    write = (
        "import json, sys\nn = json.load(sys.stdin)['n']\nopen(f'out-{n}.json', 'w').write('1')\n"
    )
    make_skill(root, "w", scripts={"scripts/write.py": write}, body="Run `scripts/write.py`.\n")
    manager = SkillManager([root], run_cwd="skill")
    res = manager.map("w", "write", [{"n": n} for n in range(12)], approver=Asker())
    assert res.ok, res.text()
    assert len(list((root / "w").glob("out-*.json"))) == 12


def test_the_check_before_each_item_is_a_stat_while_nothing_changed(
    mutable: SkillManager, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gate.CodeWatch: once files are older than the racy window, unchanged files cost a stat
    each (no walk, no read); a same-size in-place edit is still seen."""
    from skill_magics.core.base import fingerprint

    monkeypatch.setattr(fingerprint, "RACY_NS", 50_000_000)  # 50 ms instead of 2.5 s
    time.sleep(0.1)  # the skill's files are now older than that window
    request = mutable.plan_map("mut", "run", [{}] * 3).request
    watch = mutable._gate.watch(request)
    assert all(watch.current() for _ in range(50))
    assert watch.full_checks == 1  # the first look; the other 49 were the stat fast path
    script = mutable.get_skill("mut").base_dir / "scripts" / "run.py"
    st = script.stat()
    script.write_text(EVIL)
    os.utime(script, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert watch.current() is False and watch.current() is False
    assert watch.full_checks == 2
    # A new file where scripts look for modules is seen too (its folder moved).
    script.write_text(V1)
    time.sleep(0.1)
    watch = mutable._gate.watch(mutable.plan_map("mut", "run", [{}]).request)
    assert watch.current() and watch.full_checks == 1
    (script.parent / "json.py").write_text("raise SystemExit('shadowed')\n")
    assert watch.current() is False
