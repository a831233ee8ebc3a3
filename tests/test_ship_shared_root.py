"""Processes of one user sharing the shipping root (core/run/batch/ship.py and ship_owner.py;
docs/architecture.md, *Batch runs*).

Two kernels, or two test suites, of the same user ship skills to their own batch workers
under the same ``$TMPDIR/skill-magics-shipped-<uid>``. One of them discarding its copy (a
copy that no longer has the approved code) or cleaning up at exit must never remove a copy
another live process is running items from; and nothing may be left behind, by processes
that exit or by processes that were killed.

Every process here is a real one: independent Python interpreters driving the worker entry
point (``run_shipped_item``, what a pool or Dask worker runs), real process pools and real
Dask ``LocalCluster`` workers, all with the same temp folder.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
from process_support import wait_for_text

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.batch import ship, ship_owner

# The item reads its copy's files at its end, after the other process did its worst.
SLOW = """
import json, os, pathlib, sys, time
d = json.load(sys.stdin)
here = pathlib.Path(__file__).resolve().parent.parent
if d.get("ready"):
    pathlib.Path(d["ready"]).write_text(str(here))
    deadline = time.monotonic() + 60
    while not os.path.exists(d["go"]) and time.monotonic() < deadline:
        time.sleep(0.02)
table = (here / "references" / "table.txt").read_text()
print(json.dumps({"n": d.get("n"), "copy": str(here), "cwd": os.getcwd(), "table": table}))
"""
TABLE = "a,b\n1,2\n"

# A worker process of its own: ships the skill and runs items through the worker entry point.
WORKER = """
import json, os, sys, time
from pathlib import Path
from skill_magics.core.run.batch import ship
from skill_magics.core.policy.runs import Shipped
from skill_magics.core.run.planning.settings import RunSettings

role, skill, ready, go = sys.argv[1:5]
bundle = ship.SkillBundle.pack(skill, "slowpoke", None)
flag = ship.new_file_flag()
batch = ship.ShippedBatch("b-" + role, bundle, "scripts/slow.py",
                          RunSettings(run_cwd="skill", timeout=60), flag, Shipped(()))

def item(n, **extra):
    out = ship.run_shipped_item(batch, n, {"n": n, **extra}, None)
    res = out.result
    return {"status": str(out.status), "message": out.message,
            "stdout": res.stdout if res else "", "stderr": res.stderr if res else ""}

if role == "runner":
    # Item 0 unpacks; item 1 runs while the other process discards and exits; item 2 after.
    done = [item(0), item(1, ready=ready, go=go), item(2)]
    print(json.dumps({"items": done, "copy": str(bundle.location())}))
elif role == "discarder":
    copy = bundle.unpack()
    Path(ready).write_text(str(copy))
    # Its copy no longer has the approved code (corrupted, tampered with): refused and removed.
    (copy / "scripts" / "slow.py").write_text("print('not what was approved')\\n")
    try:
        bundle.unpack()
    except ship.ShippedSkillMismatch as exc:
        print(json.dumps({"refused": str(exc), "copy": str(copy)}))
    # ...and then it exits normally: its own cleanup runs.
elif role == "killed":
    copy = bundle.unpack()
    Path(ready).write_text(str(copy))
    time.sleep(600)  # until the test kills it
"""


@pytest.fixture
def shared_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp folder every process of the test uses (this one and the ones it starts)."""
    folder = tmp_path / "shared-tmp"
    folder.mkdir(mode=0o700)
    monkeypatch.setenv("TMPDIR", os.fspath(folder))
    monkeypatch.setattr(tempfile, "tempdir", os.fspath(folder))
    return folder


@pytest.fixture
def slowpoke(make_skill, tmp_path: Path) -> Path:
    return make_skill(
        tmp_path / "skills",
        "slowpoke",
        scripts={"scripts/slow.py": SLOW},
        files={"references/table.txt": TABLE},
    )


def _root(tmp: Path) -> Path:
    return tmp / f"{ship.SHIP_DIR_NAME}-{os.geteuid()}"


def _owner_folders(tmp: Path) -> list[str]:
    root = _root(tmp)
    return sorted(os.listdir(root)) if root.exists() else []


def _worker(role: str, skill: Path, tmp: Path, ready: Path, go: Path) -> subprocess.Popen:
    script = tmp.parent / "worker.py"
    script.write_text(WORKER)
    env = {**os.environ, "TMPDIR": os.fspath(tmp)}
    return subprocess.Popen(
        [sys.executable, os.fspath(script), role, os.fspath(skill), os.fspath(ready), str(go)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _finish(proc: subprocess.Popen, timeout: float = 120) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def test_a_process_discarding_its_copy_never_pulls_one_from_under_another(
    slowpoke: Path, shared_tmp: Path, tmp_path: Path
) -> None:
    ready, go, other_ready = tmp_path / "ready", tmp_path / "go", tmp_path / "other-ready"
    runner = _worker("runner", slowpoke, shared_tmp, ready, go)
    try:
        running_in = Path(wait_for_text(ready))  # item 1 runs now, from the runner's copy
        # A second process of the same user ships the same skill, finds its copy changed,
        # discards it, and exits (cleaning up): all while the runner's item runs.
        discarder = _worker("discarder", slowpoke, shared_tmp, other_ready, tmp_path / "x")
        discarded = _finish(discarder)
        go.write_text("go")
        ran = _finish(runner)
    finally:
        if runner.poll() is None:
            runner.kill()
            runner.wait()
    assert "approved fingerprint" in discarded["refused"]
    # The runner's item saw its whole copy to the end, and so did the items around it.
    items = ran["items"]
    assert [i["status"] for i in items] == ["completed"] * 3, items
    middle = json.loads(items[1]["stdout"])
    assert middle["table"] == TABLE and middle["cwd"] == middle["copy"]
    # Both used the same per-user root, each its own copy.
    other = Path(discarded["copy"])
    assert middle["copy"] == os.fspath(running_in) == ran["copy"]
    assert running_in.parents[2] == other.parents[2] == _root(shared_tmp)
    assert running_in != other and running_in.name == other.name == "slowpoke"
    # Both exited normally: nothing of theirs is left.
    assert _owner_folders(shared_tmp) == []


def test_copies_of_killed_processes_are_swept_and_live_ones_never(
    slowpoke: Path, shared_tmp: Path, tmp_path: Path
) -> None:
    root = _root(shared_tmp)
    runner = _worker("runner", slowpoke, shared_tmp, tmp_path / "ready", tmp_path / "go")
    killed = _worker("killed", slowpoke, shared_tmp, tmp_path / "k-ready", tmp_path / "x")
    try:
        live_copy = Path(wait_for_text(tmp_path / "ready"))
        dead_copy = Path(wait_for_text(tmp_path / "k-ready"))
        killed.send_signal(signal.SIGKILL)  # no cleanup of its own
        killed.wait()
        assert dead_copy.exists()
        dead_folder = dead_copy.parents[1].name
        me = ship_owner.current()
        assert dead_folder.startswith(f"{killed.pid}-")
        # Names the sweep must and must not touch:
        planted = {
            # this very process's pid with another start time: a process that had our pid
            # before us (pid reuse), provably dead
            "reused": f"{me.pid}-{me.start - 1}-{me.host}",
            # a live pid of another boot or PID namespace (another container, another host
            # sharing the folder): nothing can be told, so it stays
            "foreign": f"{runner.pid}-{ship_owner.start_time(runner.pid)}-{'0' * 12}",
            # not an owner's name at all (e.g. an older version's layout): left alone
            "unknown": "0123456789abcdef01234567",
            # an aside folder whose remover died mid-removal
            "aside": f"{ship_owner.GONE_PREFIX}{killed.pid}-1-{me.host}.{'ab' * 16}",
        }
        for name in planted.values():
            (root / name / "copy").mkdir(parents=True)
        # A process that starts using the root sweeps what provably has no owner; the
        # runner is alive (its item is running), so its copy stays.
        bundle = ship.SkillBundle.pack(slowpoke, "slowpoke", None)
        mine = bundle.unpack()
        assert mine.parents[1].name == me.name
        left = set(os.listdir(root))
        assert dead_folder not in left and planted["reused"] not in left
        assert planted["aside"] not in left
        assert {planted["foreign"], planted["unknown"], live_copy.parents[1].name} <= left
        assert (live_copy / "references" / "table.txt").read_text() == TABLE
        (tmp_path / "go").write_text("go")
        ran = _finish(runner)
    finally:
        for proc in (runner, killed):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [i["status"] for i in ran["items"]] == ["completed"] * 3, ran["items"]
    assert live_copy.parents[1].name not in os.listdir(root)  # removed at its exit
    # This process's own folder goes at its exit (atexit), shown here by running it now.
    ship_owner._release(me.pid, mine.parents[1])
    assert sorted(os.listdir(root)) == sorted([planted["foreign"], planted["unknown"]])


def test_a_process_pool_leaves_nothing_behind(slowpoke: Path, shared_tmp: Path) -> None:
    manager = SkillManager([slowpoke.parent], run_cwd="skill")
    with ProcessPoolExecutor(2) as pool:
        res = manager.map(
            "slowpoke", "slow", [{"n": i} for i in range(6)], pool=pool, approver=None
        )
        assert res.counts() == {"completed": 6}, res.text()
        copies = {Path(item.json()["copy"]) for item in res}
        pids = {item.worker for item in res}
        # One copy per worker process, each in a folder named after that process.
        assert len(copies) == len(pids)
        assert all(c.parents[2] == _root(shared_tmp) for c in copies)
        assert all(c.exists() for c in copies)
    # The workers removed their copies when the pool shut down (multiprocessing's exit path).
    assert _owner_folders(shared_tmp) == []


def _cluster(tmp: Path):
    import distributed

    saved = os.environ.get("TMPDIR")
    os.environ["TMPDIR"] = os.fspath(tmp)  # the worker processes start with it
    try:
        cluster = distributed.LocalCluster(
            n_workers=1, threads_per_worker=2, processes=True, dashboard_address=None
        )
    finally:
        if saved is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved
    return cluster, distributed.Client(cluster)


def test_two_dask_clusters_of_one_user_side_by_side(
    slowpoke: Path, shared_tmp: Path, tmp_path: Path
) -> None:
    """What two test suites did: cluster A's items run while cluster B discards its copy and
    shuts down. A's items see their copy to the end; nothing is left after both."""
    a_cluster, a = _cluster(shared_tmp)
    b_cluster, b = _cluster(shared_tmp)
    ready, go = tmp_path / "ready", tmp_path / "go"
    found: dict = {}
    try:
        assert a.run(tempfile.gettempdir) == {
            addr: os.fspath(shared_tmp) for addr in a.run(tempfile.gettempdir)
        }
        manager = SkillManager([slowpoke.parent], run_cwd="skill")

        def run_on_a() -> None:
            try:
                found["res"] = manager.map(
                    "slowpoke",
                    "slow",
                    [{"n": 0, "ready": os.fspath(ready), "go": os.fspath(go)}, {"n": 1}],
                    pool=a,
                    approver=None,
                )
            except BaseException as exc:  # noqa: BLE001 - shown by the assertion below
                found["error"] = exc

        runs = threading.Thread(target=run_on_a)
        runs.start()
        a_copy = Path(wait_for_text(ready))
        # Cluster B's worker ships the same skill, finds its copy changed, discards it...
        other = SkillManager([slowpoke.parent], run_cwd="skill")  # the other suite
        first = other.map("slowpoke", "slow", [{"n": 2}], pool=b, approver=None)
        b_copy = Path(first[0].json()["copy"])
        (b_copy / "scripts" / "slow.py").write_text("print('not what was approved')\n")
        refused = other.map("slowpoke", "slow", [{"n": 3}], pool=b, approver=None)
        assert refused.counts() == {"refused": 1}, refused.text()
        # ...and shuts down, its worker cleaning up as it exits.
        b.close()
        b_cluster.close()
        go.write_text("go")
        runs.join(120)
        assert "res" in found, found
        res = found["res"]
        assert res.counts() == {"completed": 2}, res.text()
        assert json.loads(res[0].result.stdout)["table"] == TABLE
        # Each worker process had its own copy under the one root; B's went with B.
        assert b_copy != a_copy and b_copy.parents[2] == a_copy.parents[2]
        assert not b_copy.parents[1].exists() and a_copy.exists()
    finally:
        go.write_text("go")
        for client, cluster in ((b, b_cluster), (a, a_cluster)):
            client.close()
            cluster.close()
    deadline = time.monotonic() + 10
    while _owner_folders(shared_tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _owner_folders(shared_tmp) == []


def test_owner_names_come_from_the_process_table(tmp_path: Path) -> None:
    me = ship_owner.current()
    with open("/proc/self/stat", "rb") as fh:
        stat_line = fh.read()
    assert me.pid == os.getpid()
    assert me.start == int(stat_line[stat_line.rfind(b")") + 2 :].split()[19])
    assert ship_owner.Owner.parse(me.name) == me
    assert not ship_owner.is_dead(me)
    for bad in (
        "",
        "1-2",
        "1-2-XYZ",
        "../1-2-0123456789ab",
        "1-2-0123456789ab/x",
        "a-2-0123456789ab",
    ):
        assert ship_owner.Owner.parse(bad) is None
    # A command name with spaces and parentheses does not shift the fields.
    odd = tmp_path / "py) (x y"
    odd.symlink_to(sys.executable)
    proc = subprocess.Popen(
        [os.fspath(odd), "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        deadline = time.monotonic() + 10
        while b"py) (x" not in Path(f"/proc/{proc.pid}/stat").read_bytes():
            assert time.monotonic() < deadline
            time.sleep(0.01)
        start = ship_owner.start_time(proc.pid)
        assert start is not None and start >= me.start
        assert not ship_owner.is_dead(ship_owner.Owner(proc.pid, start, me.host))
        assert ship_owner.is_dead(ship_owner.Owner(proc.pid, start + 1, me.host))
        assert not ship_owner.is_dead(ship_owner.Owner(proc.pid, start + 1, "0" * 12))
    finally:
        proc.communicate(b"")
    assert ship_owner.start_time(proc.pid) is None
    assert ship_owner.is_dead(ship_owner.Owner(proc.pid, start, me.host))
