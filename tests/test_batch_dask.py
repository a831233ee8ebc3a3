"""Batch runs on Dask (core/run/batch/dask_backend.py, core/run/batch/ship.py): a real
``distributed.LocalCluster`` with 2 worker processes, one per module.

docs/architecture.md, *Batch runs*: each item runs on a worker through the core executor, on a
copy of the approved skill shipped to the worker and verified there; audit records come back;
Stop kills the running process groups on the workers.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import distributed
import psutil
import pytest
from process_support import pid_alive, start_times

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.batch import ship, ship_owner

SCRIPT = """
import json, os, sys
d = json.load(sys.stdin)
if d.get("fail"):
    sys.exit(5)
print(json.dumps({"double": d["n"] * 2, "ppid": os.getppid(), "cwd": os.getcwd()}))
"""

HANG = """
sleep 300 &
echo "$$ $!" > "$1"
wait
"""


@pytest.fixture(scope="module")
def cluster():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=2, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield cluster, client


@pytest.fixture(scope="module")
def skills(tmp_path_factory, make_skill) -> Path:
    root = tmp_path_factory.mktemp("dask-skills")
    make_skill(root, "doubler", scripts={"scripts/double.py": SCRIPT, "scripts/hang.sh": HANG})
    return root


def test_items_run_on_the_workers_through_the_core_executor(cluster, skills: Path) -> None:
    _, client = cluster
    manager = SkillManager([skills], run_cwd="skill")
    asked = []
    inputs = [{"n": i, "fail": i == 5} for i in range(24)]
    res = manager.map(
        "doubler",
        "double",
        inputs,
        pool=client,
        approver=lambda r: asked.append(r) or "yes_once",
    )
    assert len(asked) == 1 and asked[0].batch.count == 24
    assert res.counts() == {"completed": 23, "failed": 1}, res.text()
    assert [item.index for item in res] == list(range(24))
    assert res[7].json()["double"] == 14 and res[5].exit_code == 5
    assert res.pool == "dask (2 workers)"

    # Process parents: every script was forked by its worker's warm server (a Python batch
    # starts warm: one server per worker process, a child of that worker), never by this one.
    worker_pids = set(client.run(os.getpid).values())
    parents = {item.json()["ppid"] for item in res if item.ok}
    assert {item.result.start for item in res} == {"warm"}
    assert len(parents) <= len(worker_pids) and os.getpid() not in parents
    assert {psutil.Process(p).ppid() for p in parents} <= worker_pids
    assert {item.worker for item in res} <= set(client.run(os.getpid).keys())
    # They ran the shipped copy in the workers' temp directory, not the caller's folder.
    cwd = Path(res[0].json()["cwd"])
    assert ship.SHIP_DIR_NAME in str(cwd) and cwd != (skills / "doubler").resolve()

    # The workers' audit records came back to the caller's log, tagged with the batch.
    records = manager.audit.records()
    tagged = [r for r in records if f"batch {res.batch_id} item" in (r.reason or "")]
    assert len(tagged) == 24
    assert {r.outcome for r in tagged} == {"completed", "failed"}
    assert records[-1].arguments == "batch of 24 items"


def test_a_copy_that_differs_on_a_worker_is_refused_and_audited(cluster, skills: Path) -> None:
    _, client = cluster
    manager = SkillManager([skills], run_cwd="skill")
    # Each worker process keeps its own copy: have every worker unpack it, then change them all.
    bundle = ship.SkillBundle.pack(skills / "doubler", "doubler", None)
    copies = client.run(bundle.unpack)
    assert len(set(copies.values())) == len(copies) == 2
    for copy in copies.values():
        (copy / "scripts" / "double.py").write_text("print('not what was approved')\n")
    res = manager.map("doubler", "double", [{"n": 2}], pool=client, approver=None)
    assert res.counts() == {"refused": 1}, res.text()
    assert "approved fingerprint" in res[0].message
    refused = [r for r in manager.audit.records() if r.outcome == "refused"]
    assert refused and "fingerprint" in refused[-1].reason
    assert res[0].worker in client.run(os.getpid).keys()
    # The refused copy was removed; the other worker's goes too, so later tests unpack afresh.
    for address, copy in copies.items():
        client.run(ship_owner.remove, copy, workers=[address])
    assert not any(copy.exists() for copy in copies.values())


def test_a_scheduler_address_works_too(cluster, skills: Path) -> None:
    local, _ = cluster
    manager = SkillManager([skills], run_cwd="skill")
    res = manager.map(
        "doubler",
        "double",
        [{"n": 20}, {"n": 21}],
        pool=local.scheduler_address,
        approver=None,
    )
    assert [item.json()["double"] for item in res] == [40, 42]


def test_stop_kills_the_running_groups_on_the_workers(cluster, skills: Path, tmp_path) -> None:
    _, client = cluster
    manager = SkillManager([skills], run_cwd="skill")
    cancel = threading.Event()
    pid_files = [tmp_path / f"{i}.pids" for i in range(12)]
    starts: dict[int, int | None] = {}

    def stop_when_running() -> None:
        deadline = time.monotonic() + 30
        while sum(_written(p) for p in pid_files) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.2)
        running = [int(x) for p in pid_files if _written(p) for x in p.read_text().split()]
        starts.update(start_times(running))  # while they surely run: pid reuse shows
        cancel.set()

    threading.Thread(target=stop_when_running, daemon=True).start()
    res = manager.map(
        "doubler",
        "hang",
        argv=[[str(p)] for p in pid_files],
        pool=client,
        cancel=cancel,
        approver=None,
    )
    counts = res.counts()
    assert counts.get("interrupted", 0) >= 2, res.text()
    assert counts.get("interrupted", 0) + counts.get("cancelled", 0) == 12
    pids = [int(x) for p in pid_files if p.exists() for x in p.read_text().split()]
    assert pids
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and any(pid_alive(p, starts.get(p)) for p in pids):
        time.sleep(0.1)
    assert not [p for p in pids if pid_alive(p, starts.get(p))], "orphans left on the workers"


def _written(path) -> bool:
    """The script wrote both pids (the file exists before echo has written into it)."""
    try:
        return len(path.read_text().split()) == 2
    except OSError:
        return False
