"""Warm start (core/run/launching/warm/): a run forked from a server that imported pandas and NumPy
is the same process a cold run is.

Real pandas and NumPy, real processes, real files: every script runs cold and warm through
the production path (plan -> call site -> executor), and what the two print, return and
leave behind is compared. docs/architecture.md, *Warm start*.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
from manager_support import manager_for, posix_only
from process_support import assert_group_gone, wait_for_text

from skill_magics.core.base import paths
from skill_magics.core.run.launching import warm
from skill_magics.core.run.launching.warm import eligible, launch
from skill_magics.core.run.launching.warm.server import ServerState

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm start is Linux-only"),
]

pytest.importorskip("pandas")
pytest.importorskip("numpy")

INTROSPECT = """
import atexit, json, os, signal, sys, tempfile, threading, warnings
import numpy as np
import pandas as pd

def stream(s):
    raw = getattr(s.buffer, "raw", s.buffer)
    return [s.encoding, s.errors, s.line_buffering, s.write_through, s.isatty(), s.name,
            s.mode, type(s.buffer).__name__, type(raw).__name__, raw.name]

skipped = {signal.SIGKILL, signal.SIGSTOP}
out = {
    "name": __name__, "file": __file__, "doc": __doc__, "cached": __cached__,
    "spec": __spec__, "loader": type(__loader__).__name__,
    "builtins": type(__builtins__).__name__, "globals": sorted(globals()),
    "main": sys.modules["__main__"] is sys.modules[__name__],
    "argv": sys.argv, "orig_argv": sys.orig_argv, "path": sys.path, "flags": list(sys.flags),
    "executable": sys.executable, "cwd": os.getcwd(), "umask": os.umask(0o022),
    "env": dict(os.environ), "tmp": tempfile.gettempdir(),
    "signals": {s.name: repr(signal.getsignal(s)) for s in signal.Signals if s not in skipped},
    "mask": sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])),
    "fds": sorted(os.listdir("/proc/self/fd")),
    "group": os.getpgid(0) == os.getpid(), "sid": os.getsid(0),
    "threads": threading.active_count(), "atexit": atexit._ncallbacks(),
    "warnings": [repr(f) for f in warnings.filters],
    "stdin": stream(sys.stdin), "stdout": stream(sys.stdout), "stderr": stream(sys.stderr),
    "stdin_text": sys.stdin.read(), "pandas": pd.__version__, "numpy": np.__version__,
    "hooks": [repr(sys.excepthook), repr(sys.displayhook), repr(sys.unraisablehook)],
}
print(json.dumps(out, default=repr, sort_keys=True))
"""

OUTCOMES = """
import atexit, os, signal, sys, threading, time
import numpy as np
import pandas as pd

mode = sys.argv[1]
frame = pd.DataFrame({"x": np.arange(3)})
print("sum", int(frame.x.sum()))
print("to stderr", file=sys.stderr)
if mode == "exit3":
    sys.exit(3)
if mode == "exitmsg":
    sys.exit("bad thing happened")
if mode == "raise":
    def inner():
        raise ValueError(f"broken {frame.shape}")
    inner()
if mode == "kill":
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
if mode == "interrupt":
    raise KeyboardInterrupt
if mode == "atexit":
    atexit.register(print, "atexit ran")
if mode == "thread":
    threading.Thread(target=lambda: (time.sleep(0.2), print("thread done"))).start()
if mode == "unclosed":
    handle = open(sys.argv[2], "w")
    handle.write("kept after exit")
if mode == "bigexit":
    sys.exit(256 + 7)
print("end of", mode)
"""

STATE = """
import json, os, sys
import pandas as pd
seen = {
    "attr": getattr(pd, "_left_by_a_run", None),
    "env": os.environ.get("LEFT_BY_A_RUN"),
    "helper_loaded": "helper" in sys.modules,
    "cwd_file": os.path.exists("left.txt"),
}
pd._left_by_a_run = sys.argv[1]
os.environ["LEFT_BY_A_RUN"] = sys.argv[1]
import helper
helper.COUNT += 1
seen["count"] = helper.COUNT
print(json.dumps(seen))
"""

RNG = """
import json, random
import numpy as np
rng = np.random.default_rng()
print(json.dumps([float(np.random.rand()), random.random(), float(rng.random())]))
"""

BLAS = """
import json, os, threading
from concurrent.futures import ThreadPoolExecutor
import numpy as np

a = np.random.rand(300, 300)
def work(_):
    return float(np.linalg.norm(a @ a.T))
with ThreadPoolExecutor(4) as pool:
    values = list(pool.map(work, range(8)))
print(json.dumps({"ok": len(values), "os_threads": len(os.listdir("/proc/self/task"))}))
"""

HANG = """
import os, subprocess, sys, time
import pandas as pd
child = subprocess.Popen(["sleep", "300"])
escaped = subprocess.Popen(["sleep", "301"], start_new_session=True)
with open(sys.argv[1], "w") as fh:
    fh.write(f"{os.getpgid(0)} {child.pid} {escaped.pid}")
time.sleep(0.3)  # the tree snapshot sees the escaped child
print("started", flush=True)
time.sleep(300)
"""

USES_HELPER = """
import helper
import pandas as pd
print(helper.VALUE, "v1")
"""

UNBUFFERED = """#!/usr/bin/python3 -u
import sys, pandas
print(sys.flags.optimize, sys.stdout.write_through)
"""

MODULE_MAIN = """
import json, sys
import pandas as pd
from .lib import VALUE
print(json.dumps({"name": __name__, "file": __file__, "package": __package__,
                  "spec": __spec__.name, "argv": sys.argv, "path": sys.path[:4],
                  "value": VALUE}))
"""


@pytest.fixture(scope="module")
def skills(tmp_path_factory: pytest.TempPathFactory, make_skill) -> Path:
    write_skill = make_skill
    root = tmp_path_factory.mktemp("warm-skills")
    write_skill(
        root,
        "frames",
        scripts={
            "scripts/introspect.py": INTROSPECT,
            "scripts/outcome.py": OUTCOMES,
            "scripts/state.py": STATE,
            "scripts/helper.py": "COUNT = 0\nVALUE = 'helper one'\n",
            "scripts/rng.py": RNG,
            "scripts/blas.py": BLAS,
            "scripts/hang.py": HANG,
            "scripts/uses_helper.py": USES_HELPER,
            "scripts/syntax.py": "import pandas\nprint('never'\n",
            "scripts/unbuffered": UNBUFFERED,
            "scripts/traced": "#!/usr/bin/python3 -X importtime\nimport pandas\nprint('traced')\n",
            "scripts/modmain.py": MODULE_MAIN,
            "scripts/lib.py": "VALUE = 42\n",
        },
    )
    write_skill(  # its scripts/json.py is what a cold run imports as json
        root,
        "shadowing",
        scripts={
            "scripts/uses_json.py": "import json\nprint(json.WHO)\n",
            "scripts/json.py": "WHO = 'the skill'\n",
        },
    )
    return root


@pytest.fixture(scope="module")
def manager(skills: Path):
    """Runs start in the skill folder; every run's start is chosen per call (warm=...)."""
    m = manager_for(skills, run_cwd="skill", warm_start="on")
    yield m
    warm.stop_servers()


def both(manager, script: str, arguments=None, *, argv=None, skill: str = "frames", **kw):
    """The same run cold, then warm (the warm one asserted warm)."""
    cold = manager.execute_skill_script(
        skill, script, arguments, argv=argv, approver=None, warm=False, **kw
    )
    hot = manager.execute_skill_script(
        skill, script, arguments, argv=argv, approver=None, warm=True, **kw
    )
    assert cold.start == "cold"
    assert hot.start == "warm", hot.start_note
    return cold, hot


def same(cold, hot) -> None:
    assert (hot.stdout, hot.stderr) == (cold.stdout, cold.stderr)
    assert (hot.exit_code, hot.signal, hot.status) == (cold.exit_code, cold.signal, cold.status)


# -- 1. the same process ----------------------------------------------------------------------


def test_a_warm_run_is_the_process_a_cold_run_is(manager) -> None:
    cold, hot = both(manager, "introspect", {"rows": [1, 2, 3]})
    a, b = json.loads(cold.stdout), json.loads(hot.stdout)
    # Each run has an id of its own (run/launching/orphans.py): present in both, never the same.
    run_ids = [run["env"].pop("SKILL_MAGICS_RUN_ID") for run in (a, b)]
    assert run_ids[0] != run_ids[1]
    assert json.loads(a["stdin_text"]) == {"rows": [1, 2, 3]}
    differing = sorted(k for k in a if a[k] != b[k])
    assert differing == [], {k: (a[k], b[k]) for k in differing}
    # What the comparison covers, spelled out for the points of the issue:
    assert b["name"] == "__main__" and b["main"] and b["file"].endswith("scripts/introspect.py")
    assert b["path"][0] == str(Path(b["file"]).parent) and b["argv"] == [b["file"]]
    assert b["group"] and b["mask"] == [] and b["fds"] == ["0", "1", "2", "3"]
    assert b["signals"]["SIGINT"] == "<built-in function default_int_handler>"
    assert cold.stderr == hot.stderr == ""


@pytest.mark.parametrize(
    "mode",
    ["ok", "exit3", "exitmsg", "raise", "kill", "interrupt", "atexit", "thread", "bigexit"],
)
def test_same_output_exit_code_and_signal_as_cold(manager, mode: str) -> None:
    cold, hot = both(manager, "outcome", argv=[mode])
    same(cold, hot)
    expected = {
        "ok": (0, None),
        "exit3": (3, None),
        "exitmsg": (1, None),
        "raise": (1, None),
        "kill": (-signal.SIGTERM, "SIGTERM"),
        "interrupt": (-signal.SIGINT, "SIGINT"),
        "atexit": (0, None),
        "thread": (0, None),
        "bigexit": (7, None),
    }[mode]
    assert (hot.exit_code, hot.signal) == expected
    if mode == "raise":
        assert "Traceback (most recent call last):" in hot.stderr
        assert "zygote" not in hot.stderr and "ValueError: broken (3, 1)" in hot.stderr
    if mode == "exitmsg":
        assert hot.stderr.endswith("bad thing happened\n")
    if mode == "thread":
        assert hot.stdout.endswith("end of thread\nthread done\n")


def test_a_syntax_error_reads_the_same(manager) -> None:
    cold, hot = both(manager, "syntax")
    same(cold, hot)
    assert "SyntaxError" in hot.stderr and hot.exit_code == 1


def test_objects_left_open_are_finalized_at_exit(manager, tmp_path: Path) -> None:
    for warm_start, name in ((False, "cold.txt"), (True, "warm.txt")):
        res = manager.execute_skill_script(
            "frames",
            "outcome",
            argv=["unclosed", str(tmp_path / name)],
            approver=None,
            warm=warm_start,
        )
        assert res.exit_code == 0 and res.start == ("warm" if warm_start else "cold")
    assert (tmp_path / "warm.txt").read_text() == (tmp_path / "cold.txt").read_text()
    assert (tmp_path / "warm.txt").read_text() == "kept after exit"


def test_interpreter_flags_start_the_server_alike(manager) -> None:
    cold, hot = both(manager, "unbuffered")
    same(cold, hot)
    assert hot.stdout == "0 True\n"
    # A flag whose effect shows at the interpreter's start cannot be had warm: cold, and why.
    traced = manager.execute_skill_script("frames", "traced", approver=None, warm=True)
    assert traced.start == "cold" and "-X importtime" in traced.start_note
    assert "import time:" in traced.stderr


def test_module_scripts_run_as_python_m(manager, tmp_path: Path) -> None:
    for cwd in ("skill", tmp_path):  # -m from the skill; -P -m with PYTHONPATH elsewhere
        cold, hot = both(manager, "modmain", cwd=cwd)
        same(cold, hot)
        out = json.loads(hot.stdout)
        assert out["name"] == "__main__" and out["spec"] == "scripts.modmain"
        assert out["value"] == 42 and out["argv"][0].endswith("scripts/modmain.py")


def test_a_skill_module_named_like_a_server_module_runs_cold(manager) -> None:
    res = manager.execute_skill_script("shadowing", "uses_json", approver=None, warm=True)
    assert res.stdout == "the skill\n"
    assert res.start == "cold" and "'json'" in res.start_note


# -- 2. nothing of one run is seen by the next -----------------------------------------------


def test_nothing_of_one_run_is_seen_by_the_next(manager) -> None:
    first = manager.execute_skill_script("frames", "state", argv=["one"], approver=None, warm=True)
    second = manager.execute_skill_script("frames", "state", argv=["two"], approver=None, warm=True)
    assert first.start == second.start == "warm"
    fresh = {"attr": None, "env": None, "helper_loaded": False, "cwd_file": False, "count": 1}
    assert json.loads(first.stdout) == json.loads(second.stdout) == fresh


def test_every_run_gets_its_own_random_numbers(manager) -> None:
    runs = [
        json.loads(manager.execute_skill_script("frames", "rng", approver=None, warm=True).stdout)
        for _ in range(3)
    ]
    for column in zip(*runs, strict=True):  # NumPy's global RNG, Python's, a default_rng
        assert len(set(column)) == 3, runs


def test_numpy_thread_pools_do_not_deadlock_a_child(manager) -> None:
    res = manager.execute_skill_script("frames", "blas", approver=None, warm=True, timeout=60)
    assert res.start == "warm" and res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)["ok"] == 8
    server = next(s for s in warm.POOL.servers() if "numpy" in s.report.loaded)
    assert server.report.os_threads >= 1  # OpenBLAS's own threads were there at fork time


# -- 3. the gate's promises: timeout, Stop, fresh code ----------------------------------------


def test_timeout_kills_a_warm_runs_whole_group(manager, tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    res = manager.execute_skill_script(
        "frames", "hang", argv=[str(pids)], approver=None, warm=True, timeout=3
    )
    assert res.start == "warm" and res.timed_out and res.exit_code == 124
    pgid, child, escaped = map(int, pids.read_text().split())
    assert_group_gone(pgid, [child, escaped])


def test_stop_kills_a_warm_runs_whole_group(manager, tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    cancel = threading.Event()
    plan = manager.plan("frames", "hang", argv=[str(pids)], warm=True, timeout=60)

    def stop_when_started() -> None:
        wait_for_text(pids)
        time.sleep(0.2)  # the tree snapshot sees the escaped child
        cancel.set()

    threading.Thread(target=stop_when_started, daemon=True).start()
    outcome = manager.run_planned(plan, None, cancel=cancel)
    res = outcome.result
    assert res is not None and res.start == "warm" and res.signal == "SIGTERM"
    assert outcome.status == "interrupted"
    pgid, child, escaped = map(int, pids.read_text().split())
    assert_group_gone(pgid, [child, escaped])


def test_an_edited_script_or_skill_module_is_seen_at_the_next_run(manager, skills: Path) -> None:
    scripts = skills / "frames" / "scripts"
    first = manager.execute_skill_script("frames", "uses_helper", approver=None, warm=True)
    assert first.stdout == "helper one v1\n" and first.start == "warm"
    (scripts / "helper.py").write_text("COUNT = 0\nVALUE = 'helper two'\n")
    second = manager.execute_skill_script("frames", "uses_helper", approver=None, warm=True)
    assert second.stdout == "helper two v1\n" and second.start == "warm"
    (scripts / "uses_helper.py").write_text(USES_HELPER.replace('"v1"', '"v2"'))
    third = manager.execute_skill_script("frames", "uses_helper", approver=None, warm=True)
    assert third.stdout == "helper two v2\n" and third.start == "warm"
    (scripts / "helper.py").write_text("COUNT = 0\nVALUE = 'helper one'\n")
    (scripts / "uses_helper.py").write_text(USES_HELPER)


def test_results_and_audit_records_say_how_a_run_started(manager) -> None:
    res = manager.execute_skill_script("frames", "rng", approver=None, warm=True)
    record = manager.audit.records()[-1]
    assert res.start == record.start == "warm" and record.to_dict()["start"] == "warm"
    res = manager.execute_skill_script("frames", "rng", approver=None, warm=False)
    record = manager.audit.records()[-1]
    assert res.start == record.start == "cold" and "start_note" not in record.to_dict()


# -- secrets, environment changes, idle servers ----------------------------------------------


def test_secrets_reach_only_their_runs_child(skills: Path, make_skill) -> None:
    make_skill(
        skills,
        "secretive",
        frontmatter={
            "name": "secretive",
            "description": "Reads a token.",
            "metadata": {"secrets": "WARM_TOKEN"},
        },
        scripts={"scripts/show.py": "import os, pandas\nprint(os.environ.get('WARM_TOKEN'))\n"},
    )
    make_skill(
        skills,
        "plain",
        scripts={"scripts/show.py": "import os, pandas\nprint(os.environ.get('WARM_TOKEN'))\n"},
    )
    manager = manager_for(skills, run_cwd="skill", warm_start="on")
    value = f"tok-{uuid.uuid4().hex}"
    manager.provide_secret("secretive", "WARM_TOKEN", value)
    res = manager.execute_skill_script("secretive", "show", approver=None)
    assert res.start == "warm" and res.stdout == "****\n"  # masked in the output, as cold
    other = manager.execute_skill_script("plain", "show", approver=None)
    assert other.start == "warm" and other.stdout == "None\n"
    for server in warm.POOL.servers():
        environ = Path(f"/proc/{server.pid}/environ").read_bytes()
        assert value.encode() not in environ


def test_a_changed_environment_restarts_the_server(
    skills: Path, make_skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.setenv("PYTHONPATH", str(site))
    make_skill(
        skills,
        "installs",
        scripts={
            "scripts/probe.py": """
            import importlib.util, os
            import pandas
            print(importlib.util.find_spec("freshly_installed") is not None, os.getppid())
            """
        },
    )
    manager = manager_for(skills, run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH")
    before = manager.execute_skill_script("installs", "probe", approver=None)
    assert before.start == "warm" and before.stdout.startswith("False")
    (site / "freshly_installed.py").write_text("X = 1\n")  # "pip install" into the env
    after = manager.execute_skill_script("installs", "probe", approver=None)
    assert after.start == "warm" and after.stdout.startswith("True")
    old, new = int(before.stdout.split()[1]), int(after.stdout.split()[1])
    assert old != new
    deadline = time.monotonic() + 10
    while psutil.pid_exists(old) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(old) or psutil.Process(old).status() == psutil.STATUS_ZOMBIE


def test_idle_servers_stop(skills: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WARM_IDLE_KEY", uuid.uuid4().hex)  # a server of its own
    manager = manager_for(
        skills,
        run_cwd="skill",
        warm_start="on",
        warm_idle_timeout=1,
        env_passthrough="WARM_IDLE_KEY",
    )
    # warm_up waits for the server however long a busy machine takes to load it (a run with
    # warm_start="on" would start cold past its own wait, and the test would prove nothing).
    (ready,) = manager.warm_up("frames", ["scripts/rng.py"])
    assert ready.server is not None
    (server,) = [s for s in warm.POOL.servers() if s.pid == ready.server.pid]
    assert ("WARM_IDLE_KEY", os.environ["WARM_IDLE_KEY"]) in server.key.env
    deadline = time.monotonic() + 15
    while server.alive() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not server.alive() and server not in warm.POOL.servers()


def test_a_server_that_died_is_reaped_and_closed_when_replaced(
    skills: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A READY server killed from outside (the OOM killer, a person's kill) is replaced at the
    next run, and the dead one is reaped and its socket and log closed (it was only dropped:
    a zombie and two descriptors left in the kernel until garbage collection). The test
    looks once the server's main thread is a zombie: its other thread may still be going
    away, when the process cannot be reaped yet; a server taken for alive then was given to
    the next run and stayed READY, unreaped (3 runs in 10 on a busy machine)."""
    monkeypatch.setenv("WARM_DEAD_KEY", uuid.uuid4().hex)  # a server of its own
    manager = manager_for(skills, run_cwd="skill", warm_start="on", env_passthrough="WARM_DEAD_KEY")
    (ready,) = manager.warm_up("frames", ["scripts/rng.py"])
    assert ready.server is not None
    (dead,) = [s for s in warm.POOL.servers() if s.pid == ready.server.pid]
    assert dead.proc is not None
    os.killpg(dead.proc.pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while psutil.Process(dead.proc.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the killed server never exited"
        time.sleep(0.05)
    assert manager.warm_up("frames", ["scripts/rng.py"])[0].server is not None
    # The dead one was stopped by that call (it was dead, so at once: never behind a start);
    # its reaping waits at most for its last thread: a wait for the event, not a time target.
    deadline = time.monotonic() + 120
    while dead.proc.returncode is None or dead._ctl is not None or dead._log is not None:
        pool = [(s.pid, s.state, s.key == dead.key) for s in warm.POOL.servers()]
        assert time.monotonic() < deadline, (dead.proc.returncode, dead.state, pool)
        time.sleep(0.05)
    assert dead.state is ServerState.STOPPED
    assert not psutil.pid_exists(dead.proc.pid)
    after = manager.execute_skill_script("frames", "rng", approver=None)
    assert after.start == "warm", after.start_note


def test_auto_starts_the_server_after_a_cold_run_and_warm_up_waits(
    skills: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WARM_AUTO_KEY", uuid.uuid4().hex)
    manager = manager_for(skills, run_cwd="skill", env_passthrough="WARM_AUTO_KEY")
    assert manager.settings.warm_start == "auto"
    first = manager.execute_skill_script("frames", "rng", approver=None)
    assert first.start == "cold" and first.start_note == "warm server starting"
    ready = manager.warm_up("frames", ["scripts/rng.py"])
    assert ready[0].server is not None and "numpy" in ready[0].server.preloaded
    second = manager.execute_skill_script("frames", "rng", approver=None)
    assert second.start == "warm"
    off = manager.execute_skill_script("frames", "rng", approver=None, warm=False)
    assert off.start == "cold" and off.start_note == ""


def test_a_batch_waits_for_packages_its_busy_server_lacks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_skill
) -> None:
    """A server started for a script that imports nothing (warm=True) is asked for pandas by
    a batch of another script: the batch's items wait for the import instead of each
    importing pandas again in a server that, never idle, would never load it."""
    make_skill(
        tmp_path,
        "mixed",
        scripts={
            "scripts/plain.py": "print('plain')\n",
            "scripts/frame.py": (
                "import json, sys\n"
                "preloaded = 'pandas' in sys.modules\n"
                "import pandas as pd\n"
                "print(json.dumps({'preloaded': preloaded, 'n': int(pd.Series([1, 2]).sum())}))\n"
            ),
        },
    )
    monkeypatch.setenv("WARM_DRAIN_KEY", uuid.uuid4().hex)  # a server of this test's own
    manager = manager_for(tmp_path, env_passthrough="WARM_DRAIN_KEY")
    first = manager.execute_skill_script("mixed", "plain", approver=None, warm=True)
    assert first.start == "warm", first.start_note

    def ours() -> list[warm.WarmServer]:
        return [s for s in warm.POOL.servers() if dict(s.key.env).get("WARM_DRAIN_KEY")]

    (server,) = ours()
    assert "pandas" not in server.report.loaded
    res = manager.map("mixed", "frame", [{"i": i} for i in range(12)], max_workers=2, approver=None)
    assert res.counts() == {"completed": 12}
    assert {item.result.start for item in res} == {"warm"}
    assert [item.json()["preloaded"] for item in res] == [True] * 12
    assert [s.report.loaded for s in ours()] == [["pandas"]]


def test_a_long_run_in_flight_holds_a_batch_back_only_briefly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, make_skill
) -> None:
    """The import a batch asks for waits for the runs in flight; a long one holds the batch
    back only DRAIN_S (then items go on without the package) and the import happens once the
    server is idle."""
    make_skill(
        tmp_path,
        "slowmix",
        scripts={
            # Naps until the test says so (at most 120 s): however slow a busy machine makes
            # the batch, the long run is still in flight when the batch ends.
            "scripts/nap.py": (
                "import os, sys, time\nend = time.monotonic() + 120\n"
                "while not os.path.exists(sys.argv[1]) and time.monotonic() < end:\n"
                "    time.sleep(0.05)\n"
            ),
            "scripts/frame.py": "import pandas as pd\nprint(int(pd.Series([1, 2]).sum()))\n",
        },
    )
    wake = tmp_path / "wake-up"
    monkeypatch.setenv("WARM_LONG_KEY", uuid.uuid4().hex)
    monkeypatch.setattr(launch, "DRAIN_S", 1.0)
    manager = manager_for(tmp_path, env_passthrough="WARM_LONG_KEY")

    def ours() -> list[warm.WarmServer]:
        return [s for s in warm.POOL.servers() if dict(s.key.env).get("WARM_LONG_KEY")]

    napping: list = []
    sleeper = threading.Thread(
        target=lambda: napping.append(
            manager.execute_skill_script(
                "slowmix", "nap", argv=[str(wake)], approver=None, warm=True, timeout=150
            )
        )
    )
    sleeper.start()
    deadline = time.monotonic() + 60
    while not (ours() and ours()[0].in_flight) and time.monotonic() < deadline:
        time.sleep(0.05)
    res = manager.map(
        "slowmix", "frame", [{"i": i} for i in range(6)], max_workers=2, approver=None
    )
    assert res.counts() == {"completed": 6}
    assert {item.result.start for item in res} == {"warm"}
    assert [item.result.stdout for item in res] == ["3\n"] * 6
    assert ours()[0].in_flight == 1, "the batch waited for the long run to end"
    wake.touch()
    sleeper.join(30)
    assert napping and napping[0].start == "warm" and napping[0].exit_code == 0
    deadline = time.monotonic() + 30
    while "pandas" not in ours()[0].report.loaded and time.monotonic() < deadline:
        time.sleep(0.1)
    assert ours()[0].report.loaded == ["pandas"]


def test_packages_that_print_or_start_threads_are_not_preloaded(
    skills: Path, make_skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "noisy.py").write_text("import sys\nprint('noisy imported', file=sys.stderr)\n")
    (site / "threader.py").write_text(
        "import threading, time\n"
        "threading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\n"
    )
    monkeypatch.setenv("PYTHONPATH", str(site))
    make_skill(
        skills,
        "awkward",
        scripts={
            "scripts/use.py": "import noisy, threader, threading, pandas\n"
            "print(threading.active_count())\n"
        },
    )
    manager = manager_for(skills, run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH")
    # The requirements analysis reads this process's sys.path, which has no `site`: name the
    # packages to preload here (what the analysis would give for an installed package).
    manager._executor.warm_launcher.preload = lambda prepared: ("noisy", "threader", "pandas")
    cold, hot = both(manager, "use", skill="awkward")
    same(cold, hot)
    assert hot.stderr == "noisy imported\n" and hot.stdout == "2\n"
    (server,) = [s for s in warm.POOL.servers() if ("PYTHONPATH", str(site)) in s.key.env]
    assert set(server.excluded) == {"noisy", "threader"}
    assert "pandas" in server.report.loaded


def test_flags_a_server_can_and_cannot_start_with() -> None:
    assert eligible._bad_flags(["-u", "-B", "-W", "ignore", "-X", "utf8", "-P"]) == ""
    assert eligible._bad_flags(["-X", "importtime"]) == "-X importtime"
    assert eligible._bad_flags(["-i"]) == "-i"
    assert eligible.env_problem({"PYTHONVERBOSE": "1"}).startswith("PYTHONVERBOSE")


# -- sandboxed warm runs ----------------------------------------------------------------------

SANDBOX_PROBE = """
import json, os, socket, sys, tempfile
import pandas as pd
def attempt(fn):
    try:
        fn()
        return "ok"
    except OSError as exc:
        return type(exc).__name__
def write(path):
    with open(path, "w") as fh:
        fh.write("x")
def connect():
    with socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2):
        pass
tmp = os.environ["TMPDIR"]
seen = sorted(os.listdir(tmp)), sorted(os.listdir("/dev/shm"))
write(os.path.join(tmp, "left-in-tmp"))
write("/dev/shm/left-in-shm")
out = {
    "pid": os.getpid(),
    "procs": sorted(int(p) for p in os.listdir("/proc") if p.isdigit()),
    "caps": [l.split()[1] for l in open("/proc/self/status") if l.startswith("CapEff")],
    "tmp_at_start": seen,
    "outside": attempt(lambda: write(sys.argv[2])),
    "host": attempt(lambda: write(sys.argv[5])),
    "etc": attempt(lambda: write("/etc/skill-magics-warm-probe")),
    "skill": attempt(lambda: write(os.path.join(os.environ["SKILL_BASE_DIR"], "x"))),
    "workspace": attempt(lambda: write(os.path.join(sys.argv[3], "from-run.txt"))),
    "denied": attempt(lambda: open(os.path.join(sys.argv[4], "secret.txt")).read()),
    "dev": attempt(lambda: write("/dev/left-in-dev")),
    "local_server": attempt(connect),
}
print(json.dumps(out))
"""


@pytest.fixture
def sandboxed(tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch):
    from sandbox_support import require_bwrap

    require_bwrap()
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    denied = tmp_path / "denied"
    denied.mkdir()
    (denied / "secret.txt").write_text("do not read")
    skills = tmp_path / "skills"
    make_skill(skills, "boxed", scripts={"scripts/probe.py": SANDBOX_PROBE})
    monkeypatch.chdir(workspace)
    manager = manager_for(
        skills, sandbox="workspace-write", warm_start="on", sandbox_deny_read=str(denied)
    )
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    # A folder the host can write that lies outside both /tmp and the workspace, wherever
    # pytest's TMPDIR is.
    host = Path(tempfile.mkdtemp(prefix="skill-magics-host-", dir="/var/tmp"))
    argv = [
        str(listener.getsockname()[1]),
        str(tmp_path / "outside.txt"),
        str(workspace),
        str(denied),
        str(host / "outside.txt"),
    ]
    yield manager, argv, tmp_path
    listener.close()
    warm.stop_servers()
    assert not (host / "outside.txt").exists()
    shutil.rmtree(host)


def test_a_sandboxed_warm_run_keeps_every_guarantee_of_a_cold_one(sandboxed) -> None:
    manager, argv, tmp_path = sandboxed
    cold, hot = both(manager, "probe", argv=argv, skill="boxed")
    again = manager.execute_skill_script("boxed", "probe", argv=argv, approver=None, warm=True)
    assert again.start == "warm"
    a, b, c = (json.loads(r.stdout) for r in (cold, hot, again))
    assert a == b == c, (a, b, c)
    # PID 2 under its own init, alone in its PID namespace, no capability left.
    assert b["pid"] == 2 and b["procs"] == [1, 2] and b["caps"] == ["0000000000000000"]
    # Its own /tmp (TMPDIR) and /dev/shm: nothing left there by the run before.
    assert "left-in-tmp" not in b["tmp_at_start"][0] and b["tmp_at_start"][1] == []
    assert {".cache", ".config"} <= set(b["tmp_at_start"][0])
    # Writes go to the workspace and the run's own /tmp (a path under the host's /tmp is the
    # run's /tmp: nothing reaches the host there; elsewhere it is refused); the system
    # folders and the skill are read-only; the deny list is hidden; /dev is the run's own.
    under_tmp = paths.inside(str(tmp_path.resolve()), "/tmp")
    assert (b["outside"] == "ok") is under_tmp
    assert b["host"] != "ok" and b["etc"] == b["skill"] == "OSError"
    assert b["workspace"] == b["dev"] == "ok" and b["denied"] == "FileNotFoundError"
    # Its own loopback: a server on the host's 127.0.0.1 is not there.
    assert b["local_server"] == "ConnectionRefusedError"
    assert not (tmp_path / "outside.txt").exists()
    assert (tmp_path / "workspace" / "from-run.txt").read_text() == "x"
    assert hot.sandbox == cold.sandbox and hot.sandbox["mode"] == "workspace-write"


def test_concurrent_sandboxed_warm_runs_see_only_themselves(sandboxed) -> None:
    manager, argv, _ = sandboxed
    res = manager.map("boxed", "probe", argv=[argv] * 6, max_workers=3, approver=None)
    assert res.counts() == {"completed": 6}, res.text()
    assert {item.result.start for item in res} == {"warm"}
    for item in res:
        out = item.json()
        assert out["procs"] == [1, 2] and out["tmp_at_start"][1] == []
        assert "left-in-tmp" not in out["tmp_at_start"][0]


def test_an_interrupt_kills_a_warm_runs_group(manager, tmp_path: Path) -> None:
    pids = tmp_path / "pids.txt"
    plan = manager.plan("frames", "hang", argv=[str(pids)], warm=True, timeout=60)

    def interrupt(stream: str, text: str) -> None:
        raise KeyboardInterrupt  # what a kernel interrupt raises while the run is driven

    with pytest.raises(KeyboardInterrupt):
        manager.run_planned(plan, None, on_output=interrupt)
    record = manager.audit.records()[-1]
    assert record.outcome == "interrupted" and record.start == "warm"
    pgid, child, escaped = map(int, pids.read_text().split())
    assert_group_gone(pgid, [child, escaped])


def test_warm_up_leaves_a_skills_own_venv_to_its_first_approved_run(
    tmp_path: Path, make_skill
) -> None:
    import subprocess

    base = make_skill(
        tmp_path / "skills",
        "own-env",
        scripts={"scripts/where.py": "import sys\nprint(sys.prefix)\n"},
    )
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(base / "venv")], check=True)
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    before = {s.pid for s in warm.POOL.servers()}
    (got,) = manager.warm_up("own-env")
    assert got.server is None and "own venv" in got.note
    assert {s.pid for s in warm.POOL.servers()} == before  # nothing of the skill was started
    res = manager.execute_skill_script("own-env", "where", approver=None)
    assert res.start == "warm" and res.stdout.strip() == str(base / "venv")


def test_servers_are_bounded_the_least_recently_used_idle_one_stops(
    skills: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skill_magics.core.run.launching.warm import pool

    for i in range(3):
        make_skill(skills, f"tiny{i}", scripts={"scripts/hi.py": "import json\nprint('hi')\n"})
    warm.stop_servers()  # only this test's servers: the oldest is the one to go
    monkeypatch.setattr(pool, "MAX_SERVERS", 2)
    started = []
    monkeypatch.setenv("WARM_BOUND_KEY", uuid.uuid4().hex)
    manager = manager_for(
        skills, run_cwd="skill", warm_start="on", env_passthrough="WARM_BOUND_KEY"
    )
    for i in range(3):  # three skills: three servers (one per skill)
        assert manager.execute_skill_script(f"tiny{i}", "hi", approver=None).start == "warm"
        (server,) = [s for s in warm.POOL.servers() if s.key.skill[0] == f"tiny{i}"]
        started.append(server)
    deadline = time.monotonic() + 10
    while started[0].alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not started[0].alive() and started[0] not in warm.POOL.servers()
    assert started[1].alive() and started[2].alive()
