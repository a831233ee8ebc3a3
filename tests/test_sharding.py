"""The shards `make test` runs side by side: together the whole run, never a test twice."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sharding import assign, durations_from_junit

HERE = Path(__file__).resolve().parent


def _collect(root: Path, shard: str | None, *args: str) -> tuple[int, set[str], str]:
    # Only the plugin under test: the venv's others (a second each) are not what is tested.
    env = {**os.environ, "PYTHONPATH": str(HERE), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    env.pop("SKILL_MAGICS_TEST_SHARD", None)
    if shard is not None:
        env["SKILL_MAGICS_TEST_SHARD"] = shard
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "sharding", "-p",
         "no:cacheprovider", "--rootdir", str(root), *args, str(root)],
        cwd=root, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    ids = {line for line in proc.stdout.splitlines() if "::" in line}
    return proc.returncode, ids, proc.stdout + proc.stderr


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    for i in range(7):
        body = "".join(f"def test_{j}():\n    pass\n" for j in range(i + 1))
        (tmp_path / f"test_m{i}.py").write_text(body + "import pytest\n@pytest.mark.slow\n"
                                                 "def test_marked():\n    pass\n")  # fmt: skip
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: x\n")
    return tmp_path


@pytest.mark.parametrize("n", [2, 3])
def test_shards_are_disjoint_and_together_the_whole_run(suite: Path, n: int) -> None:
    rc, everything, _ = _collect(suite, None, "-m", "not slow")
    assert rc == 0 and len(everything) == sum(range(1, 8))
    parts = [_collect(suite, f"{k}/{n}", "-m", "not slow")[1] for k in range(1, n + 1)]
    assert all(parts)
    assert set().union(*parts) == everything
    assert sum(len(p) for p in parts) == len(everything)
    # whole modules: no module is split across shards
    modules = [{i.split("::")[0] for i in p} for p in parts]
    assert sum(len(m) for m in modules) == len({i.split("::")[0] for i in everything})


def test_a_bad_shard_is_a_one_line_error_naming_the_form(suite: Path) -> None:
    rc, ids, out = _collect(suite, "3/2")
    assert rc != 0 and not ids
    assert "SKILL_MAGICS_TEST_SHARD='3/2': K must be between 1 and N" in out
    rc, _, out = _collect(suite, "half")
    assert rc != 0 and "give K/N, e.g. 1/2" in out


def test_unset_runs_everything(suite: Path) -> None:
    rc, ids, _ = _collect(suite, None)
    assert rc == 0 and len(ids) == sum(range(1, 8)) + 7


def test_longest_module_first_onto_the_lightest_shard() -> None:
    weights = {"a": 10.0, "b": 6.0, "c": 5.0, "d": 4.0, "e": 1.0}
    shards = assign(weights, 2)
    loads = sorted(sum(weights[m] for m in s) for s in shards)
    assert loads == [12.0, 14.0]  # a -> 1; b, c -> 2; d -> 1; e -> 2
    assert assign(weights, 2) == shards  # every shard computes the same split


def test_durations_come_from_junit_reports(tmp_path: Path) -> None:
    report = tmp_path / "r.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.test_x" name="test_a[1]" time="2.5"/>'
        '<testcase classname="tests.e2e.test_y.TestZ" name="test_b" time="0.25"/>'
        "</testsuite></testsuites>"
    )
    assert durations_from_junit([report]) == {
        "tests/test_x.py::test_a[1]": 2.5,
        "tests/e2e/test_y.py::TestZ::test_b": 0.25,
    }


def test_the_committed_durations_name_tests_that_exist() -> None:
    """A stale file only unbalances the shards, but a name of no test is a file to refresh."""
    names = json.loads((HERE / "durations.json").read_text())
    files = {n.split("::")[0] for n in names}
    missing = sorted(f for f in files if not (HERE.parent / f).is_file())
    assert not missing, f"tests/durations.json names removed modules {missing}: make durations"
