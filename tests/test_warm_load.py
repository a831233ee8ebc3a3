"""Warm start keeps its promises under load (issue 39, Deliver 3): servers start side by side
(a stuck import holds up no other skill, nor an idle stop), the bound on servers holds when
skills start at once, shared memory and locks made while preloading never carry from one
run to the next, and the interpreter's internals read as a cold run's.

Real pandas, real processes, real threads; deadlines are generous (a busy 2-core machine),
never timing targets (those are bench/bench_warm.py's). docs/warm-start.md.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from manager_support import manager_for, posix_only

from skill_magics.core.run.launching import warm
from skill_magics.core.run.launching.warm import pool
from skill_magics.core.run.launching.warm.server import ServerState

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm start is Linux-only"),
]

pytest.importorskip("pandas")

FRAME = "import pandas\nprint(int(pandas.DataFrame({'x': [1, 2]}).x.sum()))\n"


@pytest.fixture(autouse=True)
def _stop_servers():
    warm.stop_servers()  # each test starts with only its own servers
    yield
    warm.stop_servers()


def _until(check, within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not check():
        assert time.monotonic() < deadline, f"waited {within:g} s for {what}"
        time.sleep(0.05)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _server_processes() -> list[psutil.Process]:
    """The warm servers this process started that still run."""
    out = []
    for proc in psutil.Process().children():
        try:
            if any("importlib_bootstrap_zygote" in part for part in proc.cmdline()):
                if proc.status() != psutil.STATUS_ZOMBIE:
                    out.append(proc)
        except psutil.Error:
            continue
    return out


# -- finding 9: servers start side by side ---------------------------------------------------


def test_a_stuck_import_holds_up_no_other_skills_start_nor_an_idle_stop(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "stuck_import.py").write_text("import time\ntime.sleep(600)  # never done\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    skills = tmp_path / "skills"
    make_skill(skills, "stuck", scripts={"scripts/hi.py": "print('hi')\n"})
    make_skill(skills, "quick", scripts={"scripts/frame.py": FRAME})
    stuck = manager_for(skills, run_cwd="skill", env_passthrough="PYTHONPATH")
    stuck._executor.warm_launcher.preload = lambda prepared: ("stuck_import",)
    # warm_start="auto": the run starts cold; its server starts in the background and its
    # import never ends.
    first = stuck.execute_skill_script("stuck", "hi", approver=None)
    assert (first.start, first.stdout) == ("cold", "hi\n")
    (held,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "stuck"]
    _until(lambda: held.pid != 0 and _alive(held.pid), 60, "the stuck server's process")
    quick = manager_for(skills, run_cwd="skill", warm_idle_timeout=2)
    # A batch waits for its server (up to launch.WAIT_S, 120 s): it must not wait for the
    # stuck one's import.
    res = quick.map("quick", "frame", argv=[[]] * 4, max_workers=2, approver=None, timeout=300)
    assert res.counts() == {"completed": 4}, res.text()
    assert [item.result.start for item in res] == ["warm"] * 4, [
        item.result.start_note for item in res
    ]
    (served,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "quick"]
    # Its idle stop comes (after 2 s) while the stuck server is still importing.
    _until(lambda: not served.alive(), 60, "the idle server's stop")
    assert held.state is ServerState.STARTING and _alive(held.pid)
    assert warm.stop_servers() == 1  # the stuck one: asked to quit, killed past STOP_S
    _until(lambda: not _alive(held.pid), 30, "the stuck server's end")
    keeper = held._keeper
    assert keeper is not None
    keeper.join(30)
    assert not keeper.is_alive(), "its thread ends with it"


# -- finding 10: the bound holds when skills start at once -----------------------------------


def test_the_bound_on_servers_holds_when_skills_start_at_once(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    count, bound = 4, 2  # pool.MAX_SERVERS is 8: lowered to keep the pandas starts few
    monkeypatch.setattr(pool, "MAX_SERVERS", bound)
    skills = tmp_path / "skills"
    for i in range(count):
        make_skill(skills, f"frames{i}", scripts={"scripts/frame.py": FRAME})
    manager = manager_for(skills, run_cwd="skill", warm_start="on")
    peak = {"servers": 0, "processes": 0}
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            peak["servers"] = max(peak["servers"], len(warm.POOL.servers()))
            peak["processes"] = max(peak["processes"], len(_server_processes()))
            time.sleep(0.05)

    results: dict[int, object] = {}
    barrier = threading.Barrier(count)

    def run(i: int) -> None:
        barrier.wait(60)
        results[i] = manager.execute_skill_script(f"frames{i}", "frame", approver=None, timeout=300)

    sampler = threading.Thread(target=sample)
    sampler.start()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    done.set()
    sampler.join(10)
    assert len(results) == count
    for res in results.values():
        assert res.exit_code == 0 and res.stdout == "3\n", res.stderr  # type: ignore[attr-defined]
    starts = sorted(res.start for res in results.values())  # type: ignore[attr-defined]
    assert starts.count("warm") >= 1
    notes = {res.start_note for res in results.values() if res.start == "cold"}  # type: ignore[attr-defined]
    assert all(pool.FULL_NOTE in note for note in notes), notes
    assert peak["servers"] <= bound and peak["processes"] <= bound, peak
    assert len(warm.POOL.servers()) <= bound and len(_server_processes()) <= bound


# -- finding 11: shared memory and locks made while preloading --------------------------------

SHARED_STATE = """\
import mmap, multiprocessing
COUNTER = mmap.mmap(-1, 16)  # shared with every fork of this process
LOCK = multiprocessing.Lock()  # a POSIX semaphore: shared memory too
PRIVATE = mmap.mmap(-1, 16, flags=mmap.MAP_PRIVATE)  # copied on write: each run its own

def bump(area):
    value = area[0]
    area[0] = value + 1
    return value
"""

SHARED_SCRIPT = """\
import json
import pandas, private_state, shared_state
print(json.dumps([
    shared_state.bump(shared_state.COUNTER),
    shared_state.LOCK.acquire(timeout=1),  # and exits holding it
    private_state.bump(private_state.AREA),
]))
"""


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_shared_memory_made_while_preloading_never_carries_to_the_next_run(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    if sandbox != "off":
        from sandbox_support import require_bwrap

        require_bwrap()
    site = tmp_path / "site"
    site.mkdir()
    (site / "shared_state.py").write_text(SHARED_STATE)
    # What must NOT be refused: a private mapping (each fork writes its own copy).
    (site / "private_state.py").write_text(
        "import mmap\nAREA = mmap.mmap(-1, 16, flags=mmap.MAP_PRIVATE)\n"
        "def bump(area):\n    value = area[0]\n    area[0] = value + 1\n    return value\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    skills = tmp_path / "skills"
    make_skill(skills, "counter", scripts={"scripts/count.py": SHARED_SCRIPT})
    manager = manager_for(skills, warm_start="on", sandbox=sandbox, env_passthrough="PYTHONPATH")
    wanted = ("shared_state", "private_state", "pandas")
    manager._executor.warm_launcher.preload = lambda prepared: wanted
    cold = manager.execute_skill_script("counter", "count", approver=None, warm=False)
    assert cold.exit_code == 0 and cold.stdout == "[0, true, 0]\n", cold.stderr
    for _ in range(3):
        hot = manager.execute_skill_script("counter", "count", approver=None, timeout=120)
        assert (hot.start, hot.stdout) == ("warm", cold.stdout), (hot.start_note, hot.stderr)
    (server,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "counter"]
    assert "memory shared" in server.excluded.get("shared_state", "")
    assert {"private_state", "pandas"} <= set(server.report.loaded)
    assert "shared_state" not in server.report.loaded
    (info,) = [i for i in warm.servers() if i.pid == server.pid]
    assert "not preloaded: shared_state: it makes memory shared" in info.line()  # %skills warm


# -- finding 12: the interpreter's internals read as a cold run's ----------------------------

INTERNALS = """\
import ctypes, json, os
import pandas, psutil
libc = ctypes.CDLL(None, use_errno=True)
signal_number = ctypes.c_int(-1)
libc.prctl(2, ctypes.byref(signal_number), 0, 0, 0)  # PR_GET_PDEATHSIG
seen = psutil.Process().environ()  # the block /proc/self/environ shows
print(json.dumps({
    "pdeathsig": signal_number.value,
    "environ_is_os_environ": seen == dict(os.environ),
    "skill_name": seen.get("SKILL_NAME"),
    "secret": seen.get("LOAD_TOKEN") == os.environ["LOAD_TOKEN"] != "",
}))
"""


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_parent_death_signal_and_environ_block_read_as_a_cold_runs(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch, sandbox: str
) -> None:
    if sandbox != "off":
        from sandbox_support import require_bwrap

        require_bwrap()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    monkeypatch.chdir(workspace)
    make_skill(
        tmp_path / "skills",
        "internals",
        frontmatter={
            "name": "internals",
            "description": "Looks at itself.",
            "metadata": {"secrets": "LOAD_TOKEN"},
        },
        scripts={"scripts/look.py": INTERNALS},
    )
    manager = manager_for(tmp_path / "skills", warm_start="on", sandbox=sandbox)
    # A run's own variables (a secret, the skill's name) are never in its server's.
    manager.provide_secret("internals", "LOAD_TOKEN", "s3cret-value")
    cold = manager.execute_skill_script("internals", "look", approver=None, warm=False)
    assert cold.exit_code == 0, cold.stderr
    expected = {
        "pdeathsig": 9 if sandbox != "off" else 0,  # bwrap --die-with-parent gives it one
        "environ_is_os_environ": True,
        "skill_name": "internals",
        "secret": True,
    }
    assert json.loads(cold.stdout) == expected
    for _ in range(2):
        hot = manager.execute_skill_script("internals", "look", approver=None, timeout=120)
        assert hot.start == "warm", hot.start_note
        assert json.loads(hot.stdout) == expected, hot.stderr


KERNEL = """
import os, sys
sys.path.insert(0, {repo!r})
from skill_magics.core.manager import SkillManager

manager = SkillManager([{skills!r}], run_cwd="skill", warm_start="on")
manager.execute_skill_script("sleepy", "sleep", argv=[{marker!r}], approver=None, timeout=300)
"""

SLEEPER = """\
import os, sys, time
import pandas
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(120)
"""


def test_a_warm_run_dies_with_a_killed_kernel_without_a_parent_death_signal(
    tmp_path: Path, make_skill
) -> None:
    """The run has no parent-death signal now (as cold): its server's guard kills it."""
    import signal
    import subprocess

    make_skill(tmp_path / "skills", "sleepy", scripts={"scripts/sleep.py": SLEEPER})
    marker = tmp_path / "run.pid"
    code = KERNEL.format(
        repo=str(Path(__file__).resolve().parent.parent),
        skills=str(tmp_path / "skills"),
        marker=str(marker),
    )
    kernel = subprocess.Popen([sys.executable, "-c", code])
    try:
        _until(marker.exists, 180, "the warm run's start")
        run = psutil.Process(int(marker.read_text()))
        server = run.parent()
        assert server is not None and any("zygote" in p for p in server.cmdline())
        kernel.send_signal(signal.SIGKILL)  # no atexit, no stop: only what the kernel enforces
        kernel.wait(30)
        _until(lambda: not _alive(run.pid), 30, "the run's end")
        _until(lambda: not _alive(server.pid), 30, "the server's end")
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.wait(30)
