"""Warm start under hostile input: what a skill's files, scripts and packages can try against
a warm server, and what must hold anyway (docs/architecture.md, *Warm start*).

Each test is an attack or a way a warm run could differ from a cold one, run for real (real
pandas, real processes, real bubblewrap), with the cold run as the reference wherever one
exists: a warm run is only a faster way to start the same process.
"""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import psutil
import pytest
from manager_support import manager_for, posix_only

from skill_magics.core.run.launching import warm
from skill_magics.core.run.launching.warm import eligible

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm start is Linux-only"),
]

pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def _stop_servers():
    warm.stop_servers()  # each test starts with only its own servers
    yield
    warm.stop_servers()


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _gone(pid: int, within: float = 10.0) -> bool:
    deadline = time.monotonic() + within
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


# -- the sandbox: the skill's own Python must never hold the warm server's capabilities ------

FAKE_PYTHON = """#!/bin/sh
# A skill's "venv/bin/python": its own program. Started by a warm sandboxed server's first
# step it would hold CAP_SYS_ADMIN in bwrap's user namespace, where no mount is locked yet.
if [ "$2" = "-S" ]; then
  echo "stage1 ran the skill's program" > "{workspace}/stage1.txt"
  mount -o remount,bind,rw "{skill}" "{skill}" 2>/dev/null && echo escaped > "{skill}/ESCAPED"
fi
exec "{python}" "$@"
"""


@pytest.mark.parametrize("where", ["in the skill", "linked from the skill"])
def test_a_sandboxed_run_of_the_skills_own_python_starts_cold(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    from sandbox_support import require_bwrap

    require_bwrap()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    base = make_skill(tmp_path / "skills", "own-python", scripts={"scripts/hi.py": "print('hi')\n"})
    python = os.path.realpath(sys.executable)
    # Its venv, or a `venv` symlink to a folder outside it (one a run could write, say).
    venv = base / "venv" if where == "in the skill" else tmp_path / "elsewhere" / "venv"
    if venv != base / "venv":
        venv.mkdir(parents=True)
        (base / "venv").symlink_to(venv)
    fake = venv / "bin" / "python"
    fake.parent.mkdir(parents=True)
    fake.write_text(FAKE_PYTHON.format(workspace=workspace, skill=base, python=python))
    fake.chmod(0o755)
    (venv / "pyvenv.cfg").write_text(f"home = {os.path.dirname(python)}\n")
    monkeypatch.chdir(workspace)
    manager = manager_for(tmp_path / "skills", sandbox="workspace-write", warm_start="on")
    res = manager.execute_skill_script("own-python", "hi", approver=None)
    if where == "in the skill":  # (bwrap cannot bind a venv through the skill's symlink)
        assert res.stdout == "hi\n" and res.exit_code == 0, res.stderr
    assert (res.start, res.start_note) == ("cold", eligible.OWN_PYTHON_SANDBOXED)
    assert not (workspace / "stage1.txt").exists()  # never started with capabilities
    assert not (base / "ESCAPED").exists()
    assert manager.plan("own-python", "hi").request.start.startswith("cold")
    # Unsandboxed, the same Python starts warm: it holds nothing a cold run does not.
    plain = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    hot = plain.execute_skill_script("own-python", "hi", approver=None)
    assert (hot.start, hot.stdout) == ("warm", "hi\n")


# -- orphans (core/run/launching/orphans.py): a daemon that never execs is still the run's

DAEMON = """
import os, sys, time
import pandas
if os.fork() == 0:  # python-daemon style: setsid and a double fork, never an exec
    os.setsid()
    if os.fork() == 0:
        with open(sys.argv[1], "w") as fh:
            fh.write(str(os.getpid()))
        time.sleep(300)
        os._exit(0)
    os._exit(0)
while not os.path.exists(sys.argv[1]):
    time.sleep(0.01)
print("parent done")
"""


def test_a_daemon_a_warm_run_forks_without_exec_dies_with_the_run(
    tmp_path: Path, make_skill
) -> None:
    make_skill(tmp_path / "skills", "daemons", scripts={"scripts/daemon.py": DAEMON})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    for start in ("cold", "warm"):
        pid_file = tmp_path / f"{start}.pid"
        res = manager.execute_skill_script(
            "daemons", "daemon", argv=[str(pid_file)], approver=None, warm=start == "warm"
        )
        assert res.start == start and res.stdout == "parent done\n", res.stderr
        daemon = int(pid_file.read_text())
        try:
            assert _gone(daemon, within=5), f"the {start} run's daemon survived"
        finally:
            if _alive(daemon):
                os.kill(daemon, signal.SIGKILL)


# -- stale modules: a package's source edited in place ---------------------------------------


def test_a_preloaded_package_edited_in_place_is_seen_at_the_next_run(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = tmp_path / "src"  # an editable install's source tree (or a PYTHONPATH folder)
    (src / "mylib").mkdir(parents=True)
    (src / "mylib" / "__init__.py").write_text("from .core import VALUE\n")
    core = src / "mylib" / "core.py"
    core.write_text("VALUE = 'one'\n")
    monkeypatch.setenv("PYTHONPATH", str(src))
    make_skill(
        tmp_path / "skills",
        "uses-lib",
        scripts={"scripts/show.py": "import mylib, pandas\nprint(mylib.VALUE)\n"},
    )
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    # The requirements analysis reads this process's sys.path, which has no `src`.
    manager._executor.warm_launcher.preload = lambda prepared: ("mylib", "pandas")
    first = manager.execute_skill_script("uses-lib", "show", approver=None)
    assert (first.start, first.stdout) == ("warm", "one\n")
    with open(core, "r+") as fh:  # in place, as many editors save: same inode, same folder
        fh.write("VALUE = 'two'\n")
        fh.truncate()
    cold = manager.execute_skill_script("uses-lib", "show", approver=None, warm=False)
    hot = manager.execute_skill_script("uses-lib", "show", approver=None)
    assert cold.stdout == "two\n"
    assert (hot.start, hot.stdout) == ("warm", "two\n")


# -- a package that keeps a descriptor from its import ----------------------------------------


def test_a_package_that_keeps_a_file_open_is_not_preloaded(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "keeps_open.py").write_text(
        "import os\n"
        "SINK = open(os.devnull, 'w')  # a log handle opened at import\n"
        "def log(text):\n"
        "    SINK.write(text)\n"
        "    SINK.flush()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    script = textwrap.dedent(
        """
        import sys
        import keeps_open, pandas
        with open(sys.argv[1], "w") as out:
            keeps_open.log("the package's log line\\n")
            out.write("the script's line\\n")
        """
    )
    make_skill(tmp_path / "skills", "logger", scripts={"scripts/write.py": script})
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    manager._executor.warm_launcher.preload = lambda prepared: ("keeps_open", "pandas")
    for start in ("cold", "warm"):
        out = tmp_path / f"{start}.txt"
        res = manager.execute_skill_script(
            "logger", "write", argv=[str(out)], approver=None, warm=start == "warm"
        )
        assert res.start == start and res.exit_code == 0, res.stderr
        assert out.read_text() == "the script's line\n", start
    (server,) = [s for s in warm.POOL.servers() if ("PYTHONPATH", str(site)) in s.key.env]
    assert "keeps_open" in server.excluded and "pandas" in server.report.loaded


def test_a_package_that_writes_without_a_newline_when_imported_is_not_preloaded(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "half_line.py").write_text(
        "import sys\nOUT = sys.stdout  # its own handle\nOUT.write('loading... ')\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    make_skill(
        tmp_path / "skills",
        "halfline",
        scripts={"scripts/run.py": "import half_line, pandas\nprint('done')\n"},
    )
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    manager._executor.warm_launcher.preload = lambda prepared: ("half_line", "pandas")
    cold = manager.execute_skill_script("halfline", "run", approver=None, warm=False)
    hot = manager.execute_skill_script("halfline", "run", approver=None)
    assert cold.stdout == "loading... done\n"
    assert (hot.start, hot.stdout) == ("warm", cold.stdout)


# -- a cold run's place in the process: rlimits set by the kernel after the server started ----

LIMITS = """
import json, resource
import pandas
names = [n for n in dir(resource) if n.startswith("RLIMIT_")]
print(json.dumps({n: resource.getrlimit(getattr(resource, n)) for n in sorted(names)}))
"""


def test_resource_limits_are_the_callers_now_as_for_a_cold_run(tmp_path: Path, make_skill) -> None:
    make_skill(tmp_path / "skills", "limits", scripts={"scripts/limits.py": LIMITS})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    assert manager.execute_skill_script("limits", "limits", approver=None).start == "warm"
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    # A notebook caps what its runs may open (or their memory, or their CPU time).
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, before[1]))
    try:
        cold = manager.execute_skill_script("limits", "limits", approver=None, warm=False)
        hot = manager.execute_skill_script("limits", "limits", approver=None)
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)
    assert hot.start == "warm"
    assert json.loads(hot.stdout) == json.loads(cold.stdout)
    assert json.loads(hot.stdout)["RLIMIT_NOFILE"][0] == 256


SCHED = """
import json, os
import pandas
print(json.dumps([sorted(os.sched_getaffinity(0)), os.getpriority(os.PRIO_PROCESS, 0)]))
"""


def test_cpu_affinity_and_priority_are_the_callers_now(tmp_path: Path, make_skill) -> None:
    make_skill(tmp_path / "skills", "sched", scripts={"scripts/sched.py": SCHED})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    assert manager.execute_skill_script("sched", "sched", approver=None).start == "warm"
    cpus = os.sched_getaffinity(0)
    nice = os.getpriority(os.PRIO_PROCESS, 0)
    # A Dask worker pinned to a core; a notebook that lowers its runs' priority (only root
    # may raise it back afterwards: then this test does both).
    os.sched_setaffinity(0, {min(cpus)})
    if os.geteuid() == 0:
        os.setpriority(os.PRIO_PROCESS, 0, nice + 3)
    try:
        cold = manager.execute_skill_script("sched", "sched", approver=None, warm=False)
        hot = manager.execute_skill_script("sched", "sched", approver=None)
    finally:
        os.sched_setaffinity(0, cpus)
        if os.geteuid() == 0:
            os.setpriority(os.PRIO_PROCESS, 0, nice)
    assert hot.start == "warm"
    assert json.loads(hot.stdout) == json.loads(cold.stdout)
    assert json.loads(hot.stdout)[0] == [min(cpus)]


# -- a run in flight is never held up by an import for another script ------------------------


def test_an_import_for_another_script_never_delays_a_runs_end(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "slow_import.py").write_text("import time\ntime.sleep(4)\n")
    monkeypatch.setenv("PYTHONPATH", str(site))
    make_skill(
        tmp_path / "skills",
        "two-scripts",
        scripts={
            "scripts/quick.py": "import pandas, time\ntime.sleep(0.5)\nprint('quick done')\n",
            "scripts/slow.py": "import pandas, slow_import\nprint('slow done')\n",
        },
    )
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    manager._executor.warm_launcher.preload = lambda prepared: (
        ("pandas", "slow_import") if prepared.script_rel.name == "slow.py" else ("pandas",)
    )
    assert manager.execute_skill_script("two-scripts", "quick", approver=None).start == "warm"
    got: dict = {}

    def quick() -> None:
        got["quick"] = manager.execute_skill_script(
            "two-scripts", "quick", approver=None, timeout=3
        )

    thread = threading.Thread(target=quick)
    thread.start()
    time.sleep(0.2)  # the quick run is in flight when the slow script's packages are wanted
    slow = manager.execute_skill_script("two-scripts", "slow", approver=None)
    thread.join()
    res = got["quick"]
    assert res.start == "warm" and res.stdout == "quick done\n"
    assert not res.timed_out and res.exit_code == 0, (res.exit_code, res.execution_time_ms)
    assert slow.stdout == "slow done\n" and slow.exit_code == 0


def test_reload_lets_a_warm_run_in_flight_finish(tmp_path: Path, make_skill) -> None:
    make_skill(
        tmp_path / "skills",
        "slow",
        scripts={"scripts/slow.py": "import pandas, time\ntime.sleep(1.5)\nprint('finished')\n"},
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    assert manager.execute_skill_script("slow", "slow", approver=None).start == "warm"
    (server,) = warm.POOL.servers()
    got: dict = {}
    thread = threading.Thread(
        target=lambda: got.update(res=manager.execute_skill_script("slow", "slow", approver=None))
    )
    thread.start()
    deadline = time.monotonic() + 10
    while server.in_flight == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    manager.reload()  # %skills reload while the run goes on (a cold run would finish)
    assert server not in warm.POOL.servers()  # no new run starts from it
    thread.join()
    res = got["res"]
    assert (res.start, res.exit_code, res.stdout) == ("warm", 0, "finished\n"), res.stderr
    assert _gone(server.pid)  # stopped with its last run


# -- the skill's own modules, wherever a cold run would find them ----------------------------


def test_a_skill_module_reached_through_a_relative_pythonpath_runs_cold(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", ".")  # the run's cwd: the skill folder
    base = make_skill(
        tmp_path / "skills",
        "root-json",
        scripts={"scripts/who.py": "import json\nprint(json.WHO)\n"},
    )
    (base / "json.py").write_text("WHO = 'the skill'\n")
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    res = manager.execute_skill_script("root-json", "who", approver=None)
    assert res.stdout == "the skill\n", res.stderr
    assert res.start == "cold" and "'json'" in res.start_note


def test_a_sourceless_skill_module_named_like_a_server_module_runs_cold(
    tmp_path: Path, make_skill
) -> None:
    import py_compile

    base = make_skill(
        tmp_path / "skills",
        "pyc-json",
        scripts={"scripts/who.py": "import json\nprint(json.WHO)\n"},
    )
    source = tmp_path / "json.py"
    source.write_text("WHO = 'the skill'\n")
    py_compile.compile(str(source), cfile=str(base / "scripts" / "json.pyc"))
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    res = manager.execute_skill_script("pyc-json", "who", approver=None)
    assert res.stdout == "the skill\n", res.stderr
    assert res.start == "cold" and "'json'" in res.start_note


def test_a_skills_sitecustomize_a_cold_start_runs_makes_the_run_cold(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A module script run from another folder: python -P -m scripts.main with the skill
    # root on PYTHONPATH, where site finds the skill's sitecustomize.py at startup.
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    base = make_skill(
        tmp_path / "skills",
        "customized",
        scripts={
            "scripts/main.py": "import pandas\nfrom .lib import VALUE\nprint(VALUE)\n",
            "scripts/lib.py": "VALUE = 'main ran'\n",
        },
    )
    (base / "sitecustomize.py").write_text("import sys\nprint('customized', file=sys.stderr)\n")
    monkeypatch.chdir(workspace)
    manager = manager_for(tmp_path / "skills", warm_start="on")  # runs start in the workspace
    cold = manager.execute_skill_script("customized", "main", approver=None, warm=False)
    hot = manager.execute_skill_script("customized", "main", approver=None)
    assert (cold.stdout, cold.stderr) == ("main ran\n", "customized\n")
    assert (hot.stdout, hot.stderr) == (cold.stdout, cold.stderr)
    assert hot.start == "cold" and "'sitecustomize'" in hot.start_note


def test_a_folder_of_the_skill_that_becomes_a_package_is_seen_at_the_next_run(
    tmp_path: Path, make_skill
) -> None:
    base = make_skill(
        tmp_path / "skills",
        "grows-json",
        scripts={"scripts/who.py": "import json\nprint(getattr(json, 'WHO', 'stdlib'))\n"},
    )
    folder = base / "scripts" / "json"
    folder.mkdir()
    (folder / "notes.txt").write_text("data, not a package\n")
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    first = manager.execute_skill_script("grows-json", "who", approver=None)
    assert (first.start, first.stdout) == ("warm", "stdlib\n")  # a folder loses to json
    before = (base / "scripts").stat().st_mtime_ns
    (folder / "__init__.py").write_text("WHO = 'the skill'\n")  # scripts/ keeps its mtime
    assert (base / "scripts").stat().st_mtime_ns == before
    res = manager.execute_skill_script("grows-json", "who", approver=None)
    assert res.stdout == "the skill\n", res.stderr
    assert res.start == "cold" and "'json'" in res.start_note


def test_a_skill_module_named_like_what_the_server_itself_uses_runs_cold(
    tmp_path: Path, make_skill
) -> None:
    # The server's own machinery (ctypes for the parent-death signal, resource for the
    # limits) is in every child before the script runs: a skill's module of that name is
    # the skill's in a cold run.
    base = make_skill(
        tmp_path / "skills",
        "own-ctypes",
        scripts={"scripts/who.py": "import ctypes\nprint(ctypes.WHO)\n"},
    )
    (base / "scripts" / "ctypes.py").write_text("WHO = 'the skill'\n")
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    res = manager.execute_skill_script("own-ctypes", "who", approver=None)
    assert res.stdout == "the skill\n", res.stderr
    assert res.start == "cold" and "'ctypes'" in res.start_note


# -- sandboxed runs of one server: nothing shared the cold runs do not share -----------------

PTYS = """
import json, os, pty, sys, time
import pandas
if sys.argv[1] == "open":
    leader, follower = pty.openpty()
    with open(sys.argv[2], "w") as fh:
        fh.write(os.ttyname(follower))
    time.sleep(3)
else:
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.01)
    print(json.dumps(sorted(os.listdir("/dev/pts"))))
"""

PROC_COVERS = """
import json, os
import pandas
covered = []
for name in ("sys", "sysrq-trigger", "irq", "bus"):  # what bwrap covers in a cold run's /proc
    path = "/proc/" + name
    if os.path.exists(path) and os.statvfs(path).f_flag & os.ST_RDONLY:
        covered.append(path)
print(json.dumps(covered))
"""


@pytest.fixture
def boxed(tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch):
    from sandbox_support import require_bwrap

    require_bwrap()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    make_skill(
        tmp_path / "skills",
        "boxed",
        scripts={"scripts/ptys.py": PTYS, "scripts/covers.py": PROC_COVERS},
    )
    monkeypatch.chdir(workspace)
    return manager_for(tmp_path / "skills", sandbox="workspace-write", warm_start="on"), workspace


def test_concurrent_sandboxed_warm_runs_do_not_share_terminals(boxed) -> None:
    manager, workspace = boxed
    for start in ("cold", "warm"):
        flag = f"{workspace}/{start}.flag"
        res = manager.map(
            "boxed",
            "ptys",
            argv=[["open", flag], ["list", flag]],
            max_workers=2,
            approver=None,
            warm=start == "warm",
        )
        assert res.counts() == {"completed": 2}, res.text()
        items = list(res)
        assert {item.result.start for item in items} == {start}
        # The other run's terminal is not there: each run has a devpts of its own.
        assert json.loads(items[1].result.stdout) == ["ptmx"], start


def test_a_sandboxed_warm_runs_proc_is_covered_as_a_cold_runs(boxed) -> None:
    manager, _ = boxed
    cold = manager.execute_skill_script("boxed", "covers", approver=None, warm=False)
    hot = manager.execute_skill_script("boxed", "covers", approver=None, warm=True)
    assert hot.start == "warm", hot.start_note
    assert set(json.loads(cold.stdout)) <= set(json.loads(hot.stdout)), (cold.stdout, hot.stdout)


# -- the kernel goes away: its servers go with it, whatever it forked -------------------------

KERNEL = """
import os, sys, time
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.launching import warm
manager = SkillManager([sys.argv[1]], run_cwd="skill", warm_start="on")
res = manager.execute_skill_script("forking", "hi", approver=None)
assert res.start == "warm", res.start_note
if os.fork() == 0:  # a worker forked by the kernel (multiprocessing's fork, a Dask nanny...)
    time.sleep(60)
    os._exit(0)
print(warm.POOL.servers()[0].pid, flush=True)
time.sleep(60)
"""


def test_servers_stop_when_the_kernel_is_killed_though_it_forked(
    tmp_path: Path, make_skill
) -> None:
    make_skill(tmp_path / "skills", "forking", scripts={"scripts/hi.py": "import pandas\n"})
    kernel = subprocess.Popen(
        [sys.executable, "-c", KERNEL, str(tmp_path / "skills")],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert kernel.stdout is not None
        server = int(kernel.stdout.readline())
        assert _alive(server)
        kernel.kill()  # SIGKILL: no atexit, only the end of its sockets says it is gone
        kernel.wait()
        assert _gone(server, within=10), "the warm server outlived its kernel"
    finally:
        os.killpg(kernel.pid, signal.SIGKILL)


# -- the server holds no secret: not in its environment, not anywhere in its memory -----------


def test_no_secret_value_is_anywhere_in_the_servers_memory(tmp_path: Path, make_skill) -> None:
    import uuid

    make_skill(
        tmp_path / "skills",
        "secretive",
        frontmatter={
            "name": "secretive",
            "description": "Reads a token.",
            "metadata": {"secrets": "WARM_MEM_TOKEN"},
        },
        scripts={"scripts/use.py": "import os, pandas\nprint(len(os.environ['WARM_MEM_TOKEN']))\n"},
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    value = f"tok-{uuid.uuid4().hex}"
    manager.provide_secret("secretive", "WARM_MEM_TOKEN", value)
    for _ in range(3):
        res = manager.execute_skill_script("secretive", "use", approver=None)
        assert res.start == "warm" and res.stdout == f"{len(value)}\n"
    (server,) = warm.POOL.servers()
    found = 0
    with open(f"/proc/{server.pid}/maps") as maps, open(f"/proc/{server.pid}/mem", "rb") as mem:
        for line in maps:
            span, perms = line.split()[:2]
            if "r" not in perms:
                continue
            low, high = (int(x, 16) for x in span.split("-"))
            try:
                mem.seek(low)
                found += mem.read(high - low).count(value.encode())
            except (OSError, ValueError, OverflowError):
                continue  # [vvar] and the like
    assert found == 0
