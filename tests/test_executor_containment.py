"""Containment (issue 28): a run's main process dies on timeout, Stop and interrupt wherever
it moved itself (a process group not its own, a new session), cold and warm alike, and a
run whose warm server died says so and leaves no zombie in this process.

Real processes throughout (real pandas for the warm server); timings with margin for a busy
2-core machine.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from manager_support import manager_for, posix_only, run_plan

from skill_magics.core.run.launching import warm
from skill_magics.core.run.launching.cgroups import RUN_CGROUPS

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="pidfd and warm: Linux"),
]

pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def _stop_servers():
    warm.stop_servers()
    yield
    warm.stop_servers()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _wait_text(path: Path, within: float = 10.0) -> str:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} was never written")


def _gone(pid: int, within: float = 2.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    return not _alive(pid)


def _zombie_children() -> set[int]:
    out = set()
    for child in psutil.Process().children():
        try:
            if child.status() == psutil.STATUS_ZOMBIE:
                out.add(child.pid)
        except psutil.Error:
            continue
    return out


# The main process moves itself into its parent's process group (the kernel's, or the warm
# server's), so a kill of the run's own group finds nobody; it then sleeps far past the
# timeout.
JOIN_PARENTS_GROUP = """
import os, sys, time
os.setpgid(0, os.getpgid(os.getppid()))
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
import pandas  # the warm server preloads it (cold, the timeout may land in the import)
time.sleep(30)
print("still here")
"""

# Same, then off into a session of its own (no longer a group leader, it may setsid).
NEW_SESSION = JOIN_PARENTS_GROUP.replace(
    "os.setpgid(0, os.getpgid(os.getppid()))",
    "os.setpgid(0, os.getpgid(os.getppid()))\nos.setsid()",
)


@pytest.fixture
def leaver(tmp_path: Path, make_skill):
    make_skill(
        tmp_path / "skills",
        "leaver",
        scripts={"scripts/join.py": JOIN_PARENTS_GROUP, "scripts/session.py": NEW_SESSION},
    )
    return manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on", timeout=2)


def _check_dead(pid: int, start: str) -> None:
    try:
        assert _gone(pid), f"the {start} run's main process is still running"
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("script", ["join", "session"])
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_timeout_kills_a_main_process_that_left_its_group(
    tmp_path: Path, leaver, start: str, script: str
) -> None:
    if start == "warm":  # the server is up and has pandas before the timed run
        _warm_up(leaver)
    marker = tmp_path / f"{start}.pid"
    before = _zombie_children()
    began = time.monotonic()
    res = leaver.execute_skill_script(
        "leaver", script, argv=[str(marker)], approver=None, warm=start == "warm"
    )
    took = time.monotonic() - began
    pid = int(_wait_text(marker))
    try:
        assert res.start == start, res.start_note
        assert res.timed_out and "still here" not in res.stdout, res.stderr
        assert took < 5, f"the {start} run took {took:.1f} s to time out at 2 s"
    finally:
        _check_dead(pid, start)
    assert _zombie_children() - before == set()


def _warm_up(manager) -> None:
    """Start the skill's server (it imports pandas) with a run that exits at once."""
    res = manager.execute_skill_script(
        "leaver", "join", argv=["/nonexistent/x"], approver=None, warm=True, timeout=30
    )
    assert res.start == "warm", res.start_note


def _interrupt_when(marker: Path) -> None:
    """A kernel interrupt: KeyboardInterrupt raised in this thread once ``marker`` exists."""
    main = threading.get_ident()

    def later() -> None:
        _wait_text(marker, within=30)
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(main), ctypes.py_object(KeyboardInterrupt)
        )

    threading.Thread(target=later, daemon=True).start()


@pytest.mark.parametrize("how", ["stop", "interrupt"])
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_stop_and_interrupt_kill_a_main_process_that_left_its_group(
    tmp_path: Path, leaver, start: str, how: str
) -> None:
    if start == "warm":
        _warm_up(leaver)
    marker = tmp_path / f"{start}-{how}.pid"
    # The loop looks at a cancel Event every 50 ms, so an interrupt lands while it waits.
    cancel = threading.Event()
    began = time.monotonic()
    plan = leaver.plan("leaver", "join", argv=[str(marker)], warm=start == "warm", timeout=30)
    if how == "stop":
        threading.Thread(
            target=lambda: (_wait_text(marker, within=30), cancel.set()), daemon=True
        ).start()
        res = run_plan(leaver, plan, cancel=cancel)
        assert res.start == start and res.signal == "SIGTERM", res.stderr
    else:
        _interrupt_when(marker)
        with pytest.raises(KeyboardInterrupt):
            run_plan(leaver, plan, cancel=cancel)
    took = time.monotonic() - began
    _check_dead(int(_wait_text(marker)), start)
    assert took < 15, f"{how} took {took:.1f} s"


# -- a warm run whose server died ------------------------------------------------------------

SLEEPER = """
import os, sys, time
import pandas
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
time.sleep(30)
"""


def test_a_run_whose_warm_server_was_killed_says_so_and_leaves_no_zombie(
    tmp_path: Path, make_skill
) -> None:
    make_skill(tmp_path / "skills", "sleepy", scripts={"scripts/sleep.py": SLEEPER})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on", timeout=60)
    marker = tmp_path / "run.pid"
    before = _zombie_children()

    def kill_the_server() -> None:
        _wait_text(marker, within=60)
        for server in warm.POOL.servers():  # this skill's only: others' are other tests'
            if server.key.skill[0] == "sleepy":
                os.kill(server.pid, signal.SIGKILL)

    killer = threading.Thread(target=kill_the_server, daemon=True)
    killer.start()
    began = time.monotonic()
    res = manager.execute_skill_script(
        "sleepy", "sleep", argv=[str(marker)], approver=None, warm=True
    )
    killer.join(5)
    assert res.start == "warm", res.start_note
    assert time.monotonic() - began < 30
    line = (
        "the warm server stopped (signal 9) while this ran: rerun it, it will start cold "
        "or on a new server"
    )
    assert line in res.stderr, res.stderr
    assert "Signal: SIGKILL" not in res.stderr  # it does not read as if the script was killed
    assert res.signal is None and res.exit_code != 0
    _check_dead(int(marker.read_text()), "warm")
    deadline = time.monotonic() + 2
    while _zombie_children() - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _zombie_children() - before == set(), "a killed child stays a zombie here"
    # The next run starts (on a new server or cold) and works.
    again = manager.execute_skill_script(
        "sleepy", "sleep", argv=[str(tmp_path / "again.pid")], approver=None, timeout=3
    )
    assert again.timed_out, again.stderr


def test_an_idle_warm_server_killed_from_outside_is_reaped_and_replaced(
    tmp_path: Path, make_skill
) -> None:
    # The OOM killer or a person kills an idle server: it must not stay a zombie of the
    # kernel until its idle timeout, and the next run must not take it for alive.
    make_skill(tmp_path / "skills", "idler", scripts={"scripts/hi.py": "print('hi')\n"})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on", timeout=60)
    first = manager.execute_skill_script("idler", "hi", approver=None, warm=True)
    assert first.start == "warm" and first.stdout == "hi\n", first.start_note
    (server,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "idler"]
    before = _zombie_children()
    os.kill(server.pid, signal.SIGKILL)
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and (
        server.pid in _zombie_children() or server.state.value != "stopped"
    ):
        time.sleep(0.05)
    assert server.pid not in _zombie_children() - before, "the killed server stays a zombie"
    assert server.state.value == "stopped"
    again = manager.execute_skill_script("idler", "hi", approver=None, warm=True)
    assert again.exit_code == 0 and again.stdout == "hi\n", again.stderr


# -- kernel exit -----------------------------------------------------------------------------

KERNEL = """
import os, sys, threading, time
sys.path.insert(0, {repo!r})
from skill_magics.core.manager import SkillManager

manager = SkillManager([{skills!r}], run_cwd="skill", warm_start={warm!r})
run = lambda: manager.execute_skill_script(
    "leaver", "join", argv=[{marker!r}], approver=None, timeout=60, warm={warm_on}
)
threading.Thread(target=run, daemon=True).start()  # a run in flight in a worker thread
while not os.path.exists({marker!r}):
    time.sleep(0.01)
sys.exit(0)  # the kernel exits (a shutdown request) while the run sleeps
"""


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_kernel_exit_kills_a_run_in_flight(tmp_path: Path, leaver, start: str) -> None:
    import subprocess

    marker = tmp_path / f"{start}-exit.pid"
    code = KERNEL.format(
        repo=str(Path(__file__).resolve().parent.parent),
        skills=str(tmp_path / "skills"),
        marker=str(marker),
        warm="on" if start == "warm" else "off",
        warm_on=start == "warm",
    )
    kernel = subprocess.run([sys.executable, "-c", code], timeout=120, capture_output=True)
    assert kernel.returncode == 0, kernel.stderr.decode()
    _check_dead(int(_wait_text(marker)), start)


# -- processes forked during the kill, and pid-hoppers (issue 39) ----------------------------

# The main process and a daemon it set off (its own session) both fork a sleeper into a
# session of its own when SIGTERM comes, and go on: the kill's first look saw neither sleeper.
FORK_ON_TERM = """
import os, signal, sys, time
def term(*_):
    if os.fork() == 0:
        os.setsid()
        time.sleep(30)
        os._exit(0)
signal.signal(signal.SIGTERM, term)
if os.fork() == 0:
    os.setsid()
    time.sleep(30)
    os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
import pandas  # the warm server preloads it (cold, the timeout may land in the import)
time.sleep(30)
"""

# A daemon that changes pid every 2 ms (fork, the parent exits), SIGTERM ignored; it counts
# its hops in a file (a look at the process list misses a pid that lives 2 ms).
HOPPER = """
import os, signal, sys, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
if os.fork() == 0:
    os.setsid()
    with open(sys.argv[1] + ".sid", "w") as fh:  # for the test's own clean-up: killpg
        fh.write(str(os.getsid(0)))
    fd = os.open(sys.argv[1] + ".hops", os.O_WRONLY | os.O_CREAT, 0o600)
    n, end = 0, time.time() + 25  # an escaped hopper stops by itself at worst
    while time.time() < end:
        if os.fork():
            os._exit(0)
        n += 1
        os.pwrite(fd, b"%012d" % n, 0)
        time.sleep(0.002)
    os._exit(0)
with open(sys.argv[1] + ".tmp", "w") as fh:
    fh.write(str(os.getpid()))
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
import pandas  # the warm server preloads it (cold, the timeout may land in the import)
time.sleep(30)
"""


def _still_hopping(hops: Path, within: float = 3.0) -> bool:
    """Does the hopper still count, ``within`` s after its run ended?"""
    deadline = time.monotonic() + within
    last = hops.read_bytes()
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = hops.read_bytes()
        if now == last:
            return False
        last = now
    return True


def _stop_hoppers(tag: str, within: float = 5.0) -> None:
    """Stop then kill every process whose command line holds ``tag``, reading /proc again
    and again (a stopped process forks no more; a pid-hopper's pid lives 2 ms). A hopper
    that escaped is killed by its session's group first: one kill(-pgid) reaches every
    member at once, which no scan of /proc does (an escaped hopper burned a core for the
    rest of a CI run)."""
    for sid_file in Path(tag).parent.glob("*.sid"):
        try:
            os.killpg(int(sid_file.read_text()), signal.SIGKILL)
        except (OSError, ValueError):
            pass
    deadline = time.monotonic() + within
    quiet = 0
    while quiet < 20 and time.monotonic() < deadline:
        found = 0
        for name in os.listdir("/proc"):
            if not name.isdigit():
                continue
            try:
                with open(f"/proc/{name}/cmdline", "rb") as fh:
                    if tag.encode() not in fh.read():
                        continue
                os.kill(int(name), signal.SIGSTOP)
                os.kill(int(name), signal.SIGKILL)
                found += 1
            except OSError:
                continue
        quiet = 0 if found else quiet + 1


def _tagged(tag: str) -> list[psutil.Process]:
    """Live processes whose command line holds ``tag`` (forks without exec keep it)."""
    out = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        try:
            if proc.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            if any(tag in arg for arg in proc.info["cmdline"] or ()):
                out.append(proc)
        except psutil.Error:
            continue
    return out


def _left_running(tag: str, within: float = 3.0) -> list[int]:
    """The pids still running with ``tag`` after ``within`` s; they are then killed (stopped
    first, so a pid-hopper cannot fork away meanwhile)."""
    deadline = time.monotonic() + within
    while (left := _tagged(tag)) and time.monotonic() < deadline:
        time.sleep(0.05)
    pids = [proc.pid for proc in left]
    end = time.monotonic() + 5
    while (left := _tagged(tag)) and time.monotonic() < end:
        for sig in (signal.SIGSTOP, signal.SIGKILL):
            for proc in left:
                try:
                    proc.send_signal(sig)
                except psutil.Error:
                    pass
        time.sleep(0.01)
    return pids


@pytest.fixture
def escapers(tmp_path: Path, make_skill):
    make_skill(
        tmp_path / "skills",
        "escapers",
        scripts={
            "scripts/forkterm.py": FORK_ON_TERM,
            "scripts/hopper.py": HOPPER,
            "scripts/sessionhopper.py": SESSION_HOPPER,
        },
    )
    return manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on", timeout=2)


# A pid-hopper that makes a session of its own at every hop: no process group holds it for
# long (the look-and-kill's one kill(-pgid) reaches only the hops of one session); only a
# cgroup (or a PID namespace) holds every hop.
SESSION_HOPPER = HOPPER.replace("        n += 1\n", "        n += 1\n        os.setsid()\n")


@pytest.fixture(params=["cgroup", "looks"])
def containment(request, monkeypatch) -> str:
    """How the kill finds the run's processes: its cgroup where one can be made here
    (core/run/launching/cgroups.py), or the look-and-kill alone (as where none can)."""
    if request.param == "looks":
        monkeypatch.setattr(RUN_CGROUPS, "enabled", False)
    elif RUN_CGROUPS.base() is None:  # nothing to test here but that it says why
        assert RUN_CGROUPS.why_not
    return request.param


# The pid-hopper cases run on the main venv's Python only (main_only): a hop is a fork and
# an exit of the kernel's, 500 a second, whatever Python forks (the look-and-kill and the
# cgroup are the same code on each); they cost about 100 s of CPU, mostly system time, of a
# two-core CI machine per Python that runs them (measured with /proc/stat around this
# module's hopper cases). The other Python keeps the forks in a SIGTERM handler.
HOPPERS_ON_MAIN = pytest.mark.main_only


@pytest.mark.parametrize("script", ["forkterm", pytest.param("hopper", marks=HOPPERS_ON_MAIN)])
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_timeout_kills_what_forks_during_the_kill_and_pid_hoppers(
    tmp_path: Path, escapers, containment: str, start: str, script: str
) -> None:
    """Issue 39, findings 6 and 7: the run's cgroup is killed whole; and without one the
    kill looks again until a look finds nothing new, stops what it finds before it kills
    (a stopped process forks no more) and kills the groups of the sessions the run made."""
    _kill_whole(tmp_path, escapers, start, script, runs=2 if script == "hopper" else 1)


@HOPPERS_ON_MAIN
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_cgroup_kills_a_hopper_that_changes_session_at_every_hop(
    tmp_path: Path, escapers, start: str
) -> None:
    """Where a cgroup per run can be made (root here, a delegated user cgroup): a hopper that
    no process group holds dies too. Where none can, the run says nothing of one."""
    if RUN_CGROUPS.base() is None:
        assert RUN_CGROUPS.why_not and RUN_CGROUPS.new() is None
        return
    _kill_whole(tmp_path, escapers, start, "sessionhopper", runs=2)


def _kill_whole(tmp_path: Path, escapers, start: str, script: str, runs: int) -> None:
    tag = str(tmp_path / "skills")
    for n in range(runs):  # the hopper escaped 1 run in 4 before
        marker = tmp_path / f"{start}-{script}-{n}.pid"
        try:
            res = escapers.execute_skill_script(
                "escapers", script, argv=[str(marker)], approver=None, warm=start == "warm"
            )
            assert res.start == start, res.start_note
            assert marker.exists(), res.stderr
            if script != "forkterm":
                hops = Path(f"{marker}.hops")
                assert hops.exists(), res.stderr
                assert not _still_hopping(hops), f"the hopper ({start}, run {n}) lives on"
            left = _left_running(tag, within=2.0)
            assert left == [], f"{script} ({start}, run {n}) left {left} running"
        finally:
            _stop_hoppers(tag)


# -- the run's own cgroup (core/run/launching/cgroups.py) -------------------------------------

WHERE = """
import os
print(open("/proc/self/cgroup").read().splitlines()[-1], os.getpid() == os.getpgid(0))
"""


@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_run_is_in_a_cgroup_of_its_own_that_goes_with_it(
    tmp_path: Path, make_skill, start: str
) -> None:
    """Where one can be made: the run's process is in ``skill-magics-PID/run-N`` from its
    first line (what else it sees is as without: its own process group here), and the
    cgroup is removed when the run ends. Where none can, it is in this process's cgroup."""
    make_skill(tmp_path / "skills", "where", scripts={"scripts/where.py": WHERE})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on", timeout=60)
    res = manager.execute_skill_script("where", "where", approver=None, warm=start == "warm")
    assert res.start == start and res.exit_code == 0, res.stderr
    line, leader = res.stdout.split()
    assert leader == "True"
    mine = Path("/proc/self/cgroup").read_text().splitlines()[-1]
    base = RUN_CGROUPS.base()
    if base is None:
        assert line == mine and RUN_CGROUPS.why_not
        return
    own = mine.removeprefix("0::").rstrip("/")
    folder = line.removeprefix("0::")
    assert folder.startswith(f"{own}/skill-magics-{os.getpid()}/run-"), (line, mine)
    assert not os.path.exists(os.path.join(base, os.path.basename(folder)))


# -- a SIGKILLed kernel takes its pid-hoppers along ----------------------------------------------

KILLED_KERNEL = """
import sys, threading, time
sys.path.insert(0, {repo!r})
from skill_magics.core.manager import SkillManager

manager = SkillManager([{skills!r}], run_cwd="skill", warm_start={warm!r})
run = lambda: manager.execute_skill_script(
    "escapers", "hopper", argv=[{marker!r}], approver=None, timeout=120, warm={warm_on}
)
threading.Thread(target=run, daemon=True).start()
time.sleep(120)
"""


@HOPPERS_ON_MAIN
@pytest.mark.parametrize("cgroups", ["1", "0"])
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_sigkilled_kernel_takes_a_pid_hopper_along(
    tmp_path: Path, escapers, start: str, cgroups: str
) -> None:
    """The watcher kills the kernel's cgroups whole; without them (``0``) its looks go on
    until five in a row find nothing new, newest pids first, and it kills the groups of
    the sessions the run made (before: one look that missed the hopper's pid ended it)."""
    import subprocess

    marker = tmp_path / f"{start}-killed.pid"
    code = KILLED_KERNEL.format(
        repo=str(Path(__file__).resolve().parent.parent),
        skills=str(tmp_path / "skills"),
        marker=str(marker),
        warm="on" if start == "warm" else "off",
        warm_on=start == "warm",
    )
    env = {**os.environ, "SKILL_MAGICS_RUN_CGROUPS": cgroups}
    kernel = subprocess.Popen([sys.executable, "-c", code], env=env)
    hops = Path(f"{marker}.hops")
    try:
        deadline = time.monotonic() + 120
        while not (hops.exists() and hops.read_bytes()) and kernel.poll() is None:
            assert time.monotonic() < deadline, "the hopper never started"
            time.sleep(0.05)
        assert kernel.poll() is None, "the kernel ended before the kill"
        time.sleep(0.5)  # a few hundred hops
        kernel.kill()
        kernel.wait(10)
        # The watcher is a process of its own and goes on after the kernel died: on a busy
        # machine its looks take seconds. One that gave up leaves the hopper counting for good.
        assert not _still_hopping(hops, within=30.0), (
            f"the hopper ({start}, cgroups {cgroups}) lives on"
        )
        assert _left_running(str(tmp_path / "skills"), within=3.0) == []
    finally:
        if kernel.poll() is None:
            kernel.kill()
            kernel.wait(10)
        _stop_hoppers(str(tmp_path / "skills"))


@HOPPERS_ON_MAIN
@pytest.mark.parametrize("start", ["cold", "warm"])
def test_a_pid_hoppers_exited_hops_are_reaped_while_it_runs(
    tmp_path: Path, escapers, start: str
) -> None:
    """This process is the subreaper of a run's orphans, so each hop of a pid-hopper that
    exits is a zombie here; they were reaped only at the run's end: 500 a second fill the
    pid table within a minute. Now they are reaped as the run's tree is looked at."""
    marker = tmp_path / f"{start}-zombies.pid"
    before = _zombie_children()
    most = 0
    done = threading.Event()

    def count() -> None:
        nonlocal most
        while not done.is_set():
            most = max(most, len(_zombie_children() - before))
            time.sleep(0.05)

    counter = threading.Thread(target=count, daemon=True)
    counter.start()
    try:
        res = escapers.execute_skill_script(
            "escapers", "hopper", argv=[str(marker)], approver=None, warm=start == "warm"
        )
        assert res.start == start and res.timed_out, res.start_note
    finally:
        done.set()
        counter.join(5)
        _stop_hoppers(str(tmp_path / "skills"))
    hops = int(Path(f"{marker}.hops").read_bytes() or b"0")
    assert hops > 50, hops
    # Reaped only at the end, nearly every hop is a zombie at once (most ~ hops, less the
    # counter's last 50 ms); reaped as the tree is looked at, a third at most at load 10,
    # 0.38 at load 17, 0.505 in a fresh-clone run whose hopper made only 192 hops in 2 s (a
    # look delayed by the load holds a larger share of fewer hops): two thirds tells the two
    # apart on a busy machine.
    assert most < hops * 2 / 3, f"{most} zombies at once for {hops} hops"
