"""Warm start between skills: two real skills side by side share nothing warm, a vendored
module is the skill's own, a package's random generators differ in every run, and no run's
order of events can end its server (issue 28; docs/architecture.md, *Warm start*).

Real processes, real pandas, real skills: each test fails on the server keyed by
environment alone (681ab28).
"""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

import pytest
from manager_support import manager_for, posix_only

from skill_magics.core.run.launching import warm

pytestmark = [
    posix_only,
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="warm start is Linux-only"),
]

pytest.importorskip("pandas")


@pytest.fixture(autouse=True)
def _stop_servers():
    warm.stop_servers()
    yield
    warm.stop_servers()


# -- defect 1: another skill's package never runs in this skill's run -----------------------

SPY = """
import atexit, os
def _leak():  # registered at import: runs at the end of every process that imported it
    with open(os.environ["SPY_OUT"], "a") as fh:
        fh.write(os.environ.get("SKILL_NAME", "?") + ":" + os.environ.get("B_TOKEN", "") + "\\n")
atexit.register(_leak)
"""


def test_two_skills_never_share_a_server_nor_its_packages(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "spy_pkg.py").write_text(SPY)
    out = tmp_path / "spy.txt"
    monkeypatch.setenv("PYTHONPATH", str(site))
    monkeypatch.setenv("SPY_OUT", str(out))
    skills = tmp_path / "skills"
    make_skill(skills, "skill-a", scripts={"scripts/a.py": "import spy_pkg, pandas\nprint('a')\n"})
    make_skill(
        skills,
        "skill-b",
        frontmatter={
            "name": "skill-b",
            "description": "Reads a token.",
            "metadata": {"secrets": "B_TOKEN"},
        },
        scripts={
            "scripts/b.py": "import sys, pandas\nprint('spy_pkg' in sys.modules)\n",
        },
    )
    manager = manager_for(
        skills, run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH,SPY_OUT"
    )
    # Each skill's own scripts' imports (the analysis reads this process's sys.path only).
    own = {"skill-a": ("spy_pkg", "pandas"), "skill-b": ("pandas",)}
    manager._executor.warm_launcher.preload = lambda prepared: own[prepared.skill_name]
    manager.provide_secret("skill-b", "B_TOKEN", "b-secret-value")
    a = manager.execute_skill_script("skill-a", "a", approver=None)
    assert (a.start, a.stdout) == ("warm", "a\n"), a.stderr
    for _ in range(2):
        b = manager.execute_skill_script("skill-b", "b", approver=None)
        assert (b.start, b.stdout) == ("warm", "False\n"), b.stderr
    assert "b-secret-value" not in out.read_text()
    assert out.read_text() == "skill-a:\n"  # only A's own run ran A's package
    servers = {s.key.skill: s for s in warm.POOL.servers()}
    assert len(servers) == 2
    assert "spy_pkg" not in servers[next(k for k in servers if "skill-b" in k[0])].report.loaded


def test_a_skills_server_is_replaced_when_its_code_changes(tmp_path: Path, make_skill) -> None:
    base = make_skill(
        tmp_path / "skills", "editable", scripts={"scripts/run.py": "import pandas\nprint(1)\n"}
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    first = manager.execute_skill_script("editable", "run", approver=None)
    assert first.start == "warm", first.start_note
    (old,) = warm.POOL.servers()
    (base / "scripts" / "helper.py").write_text("X = 2\n")  # new code in the skill
    second = manager.execute_skill_script("editable", "run", approver=None)
    assert second.start == "warm", second.start_note
    (new,) = warm.POOL.servers()
    assert new.pid != old.pid and new.key.code != old.key.code
    deadline = time.monotonic() + 10
    while old.alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not old.alive()
    # Data the run writes into the skill (not code) keeps the server.
    (base / "out.csv").write_text("a,b\n")
    third = manager.execute_skill_script("editable", "run", approver=None)
    assert third.start == "warm" and [s.pid for s in warm.POOL.servers()] == [new.pid]


# -- defect 2: a vendored module is the skill's own, warm as cold -----------------------------

VENDORED = """
import os, sys
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "vendor"))
import yaml, pandas
print(getattr(yaml, "VENDORED", "site"))
"""


def test_a_vendored_module_is_the_skills_own_in_a_warm_run(tmp_path: Path, make_skill) -> None:
    pytest.importorskip("yaml")
    make_skill(
        tmp_path / "skills",
        "vendors",
        scripts={
            "scripts/use.py": VENDORED,
            "scripts/vendor/yaml/__init__.py": "VENDORED = 'own'\n",
        },
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    manager._executor.warm_launcher.preload = lambda prepared: ("yaml", "pandas")  # what it imports
    # `%skills warm` (warm_up) imports what the scripts need: never the skill's own names.
    (up,) = manager.warm_up("vendors")
    assert up.server is not None and up.server.preloaded == ("pandas",), up.note
    cold = manager.execute_skill_script("vendors", "use", approver=None, warm=False)
    hot = manager.execute_skill_script("vendors", "use", approver=None)
    assert cold.stdout == "own\n", cold.stderr
    assert (hot.start, hot.stdout) == ("warm", "own\n"), hot.stderr
    (server,) = warm.POOL.servers()
    assert "pandas" in server.report.loaded and "yaml" not in server.report.loaded


def test_a_skill_shipping_an_unrelated_module_still_starts_warm(tmp_path: Path, make_skill) -> None:
    make_skill(
        tmp_path / "skills",
        "ships-helpers",
        scripts={
            "scripts/run.py": "import pandas\nprint('ok')\n",
            "scripts/lib/report_tools/__init__.py": "X = 1\n",
        },
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    res = manager.execute_skill_script("ships-helpers", "run", approver=None)
    assert (res.start, res.stdout) == ("warm", "ok\n"), res.start_note


# -- defect 3: every generator a preloaded package holds differs in each run ------------------

RNG_PKG = """
import random
import numpy as np
RNG = random.Random()             # seeded from the OS: differs per process
FIXED = random.Random(42)         # seeded by the package: the same in every process
NP_RNG = np.random.default_rng()  # a NumPy Generator seeded from the OS
NP_FIXED = np.random.default_rng(7)
"""

RNG_SCRIPT = """
import rng_pkg, pandas
print(rng_pkg.RNG.random(), rng_pkg.FIXED.random(), rng_pkg.NP_RNG.random(),
      rng_pkg.NP_FIXED.random())
"""


def test_a_preloaded_packages_own_generators_differ_in_every_run(
    tmp_path: Path, make_skill, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    (site / "rng_pkg.py").write_text(RNG_PKG)
    monkeypatch.setenv("PYTHONPATH", str(site))
    make_skill(
        tmp_path / "skills",
        "rng",
        scripts={"scripts/draw.py": RNG_SCRIPT, "scripts/first.py": "import pandas\n"},
    )
    manager = manager_for(
        tmp_path / "skills", run_cwd="skill", warm_start="on", env_passthrough="PYTHONPATH"
    )
    own = {"first.py": ("pandas",), "draw.py": ("rng_pkg", "pandas")}
    manager._executor.warm_launcher.preload = lambda prepared: own[prepared.script_rel.name]
    # NumPy imported by an earlier import than the package's (another script's preload).
    assert manager.execute_skill_script("rng", "first", approver=None).start == "warm"
    cold = manager.execute_skill_script("rng", "draw", approver=None, warm=False)
    runs = [manager.execute_skill_script("rng", "draw", approver=None) for _ in range(3)]
    assert all(r.start == "warm" for r in runs), [r.start_note for r in runs]
    (server,) = warm.POOL.servers()
    assert "rng_pkg" in server.report.loaded
    draws = [r.stdout.split() for r in runs]
    assert len({d[0] for d in draws}) == 3  # the package's own random.Random
    assert len({d[2] for d in draws}) == 3  # its NumPy Generator
    # A generator the package seeded itself reads as it does cold: the same every time.
    fixed = cold.stdout.split()
    assert {(d[1], d[3]) for d in draws} == {(fixed[1], fixed[3])}


# -- defect 5: no order of events between a run, its children and its client ends a server ----

LEAVES = """
import os, sys, time
import pandas
os.setpgid(0, os.getpgid(os.getppid()))  # leaves its own group for its server's
time.sleep(float(sys.argv[1]))
"""

LONG = """
import sys, time
import pandas
time.sleep(float(sys.argv[1]))
print("done")
"""


def test_a_run_that_left_its_group_never_ends_its_server_or_another_run(
    tmp_path: Path, make_skill
) -> None:
    make_skill(
        tmp_path / "skills",
        "leaver",
        scripts={"scripts/leave.py": LEAVES, "scripts/long.py": LONG},
    )
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    warmup = manager.execute_skill_script("leaver", "long", argv=["0"], approver=None)
    assert warmup.start == "warm", warmup.start_note
    (server,) = warm.POOL.servers()
    other: dict[str, object] = {}

    def long_run() -> None:
        other["res"] = manager.execute_skill_script(
            "leaver", "long", argv=["25"], approver=None, timeout=60
        )

    thread = threading.Thread(target=long_run)
    thread.start()
    started = time.monotonic()
    res = manager.execute_skill_script("leaver", "leave", argv=["18"], approver=None, timeout=2)
    assert res.start == "warm" and res.timed_out
    left = 20 - (time.monotonic() - started)
    if left > 0:
        time.sleep(left)  # the run that left its group has ended (or was killed) by now
    assert server.alive()
    thread.join(60)
    long_res = other["res"]
    assert long_res.start == "warm" and long_res.stdout == "done\n", long_res.stderr  # type: ignore[attr-defined]
    again = manager.execute_skill_script("leaver", "long", argv=["0"], approver=None)
    assert again.start == "warm" and [s.pid for s in warm.POOL.servers()] == [server.pid]


# -- defect 6: a warm run reads like a cold one ----------------------------------------------

READS_LIKE_COLD = {
    # stdout that cannot be flushed at exit: "Exception ignored in: ..." and exit 120
    "unflushable": ("import sys, pandas\nsys.stdout = open('/dev/full', 'w')\nprint('lost')\n"),
    # an excepthook that raises: its error, then the original one
    "hook_raises": (
        "import sys, pandas\n"
        "def hook(*args):\n"
        "    raise ValueError('in the hook')\n"
        "sys.excepthook = hook\n"
        "raise KeyError('original')\n"
    ),
    # an excepthook that exits: the run exits as it says
    "hook_exits": (
        "import sys, pandas\n"
        "def hook(*args):\n"
        "    sys.exit(7)\n"
        "sys.excepthook = hook\n"
        "raise KeyError('original')\n"
    ),
    # a custom unraisablehook sees a real UnraisableHookArgs
    "custom_unraisable": (
        "import sys, pandas\n"
        "def hook(args):\n"
        "    sys.stderr.write(f'{type(args).__name__} {args.exc_type.__name__} "
        "{args.err_msg} {args.exc_traceback}\\n')\n"
        "sys.unraisablehook = hook\n"
        "sys.stdout = open('/dev/full', 'w')\n"
        "print('lost')\n"
    ),
    # a file left open that cannot be flushed: finalized at exit (3.13 reports it, with no
    # traceback: the interpreter's teardown has no Python frame)
    "left_open": "import pandas\nf = open('/dev/full', 'w')\nf.write('lost')\n",
}


@pytest.mark.parametrize("case", sorted(READS_LIKE_COLD))
def test_a_warm_run_ends_as_a_cold_one(tmp_path: Path, make_skill, case: str) -> None:
    make_skill(tmp_path / "skills", "ends", scripts={"scripts/end.py": READS_LIKE_COLD[case]})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    cold = manager.execute_skill_script("ends", "end", approver=None, warm=False)
    hot = manager.execute_skill_script("ends", "end", approver=None)
    assert hot.start == "warm", hot.start_note
    assert (hot.exit_code, hot.stdout, hot.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
    assert "zygote" not in hot.stderr


# Where a warning past the outermost frame points: "sys:1" until 3.12, "<sys>:0" since 3.13.
NO_FRAME = "<sys>:0" if sys.version_info >= (3, 13) else "sys:1"

WARNS = """
import warnings, pandas
warnings.warn("at the top", stacklevel=2)
def deeper():
    warnings.warn("from a function", stacklevel=2)
deeper()
"""


def test_a_top_level_warning_points_where_a_cold_ones_does(tmp_path: Path, make_skill) -> None:
    make_skill(tmp_path / "skills", "warns", scripts={"scripts/warn.py": WARNS})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    cold = manager.execute_skill_script("warns", "warn", approver=None, warm=False)
    hot = manager.execute_skill_script("warns", "warn", approver=None)
    assert hot.start == "warm", hot.start_note
    assert cold.stderr.startswith(f"{NO_FRAME}: UserWarning: at the top")
    assert "warn.py:5: UserWarning: from a function" in cold.stderr
    assert hot.stderr == cold.stderr


def test_a_dev_mode_run_reports_a_failing_close_as_a_cold_one(tmp_path: Path, make_skill) -> None:
    """Under ``-X dev`` io's finalizer reports a file's failing close on every version (3.13
    always): warm, with no traceback, as the interpreter's own teardown has no frame."""
    script = "#!/usr/bin/python3 -X dev\nf = open('/dev/full', 'w')\nf.write('lost')\n"
    make_skill(tmp_path / "skills", "devmode", scripts={"scripts/closing": script})
    manager = manager_for(tmp_path / "skills", run_cwd="skill", warm_start="on")
    cold = manager.execute_skill_script("devmode", "closing", approver=None, warm=False)
    hot = manager.execute_skill_script("devmode", "closing", approver=None)
    assert hot.start == "warm", hot.start_note
    assert "Exception ignored in: <_io.TextIOWrapper name='/dev/full'" in cold.stderr
    assert (hot.exit_code, hot.stdout, hot.stderr) == (cold.exit_code, cold.stdout, cold.stderr)
