"""Split one pytest run into shards of about equal time, so `make test` runs them side by side.

``SKILL_MAGICS_TEST_SHARD=K/N`` keeps the K-th of N shards of what is left after ``-m`` and
``-k`` deselected. A shard is a set of whole modules (module fixtures, a module's kernel or
server, are made once), balanced by the seconds each test took in a measured run
(``tests/durations.json``; ``make durations`` rewrites it from the last ``make test``): the
longest module goes first to the lightest shard. A test the file does not know counts as
``DEFAULT_SECONDS``, so a new module lands somewhere and is run; shards never overlap and
together are the whole run.

    SKILL_MAGICS_TEST_SHARD=1/2 pytest -m "not kernel"   # one half
    SKILL_MAGICS_TEST_SHARD=2/2 pytest -m "not kernel"   # the other
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path

import pytest

ENV = "SKILL_MAGICS_TEST_SHARD"
DURATIONS = Path(__file__).with_name("durations.json")
DEFAULT_SECONDS = 0.3  # a typical unit test; only tests slower than KEEP_OVER are stored
KEEP_OVER = 0.5


def parse_shard(text: str) -> tuple[int, int]:
    """``"2/3"`` -> ``(2, 3)``; anything else is a one-line error naming the form."""
    try:
        k_text, n_text = text.split("/")
        k, n = int(k_text), int(n_text)
    except ValueError:
        raise pytest.UsageError(f"{ENV}={text!r}: give K/N, e.g. 1/2") from None
    if not 1 <= k <= n:
        raise pytest.UsageError(f"{ENV}={text!r}: K must be between 1 and N")
    return k, n


def load_durations(path: Path = DURATIONS) -> dict[str, float]:
    """Seconds per test node id; an absent or unreadable file means every test is typical."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.items()} if isinstance(data, dict) else {}


def assign(weights: dict[str, float], n: int) -> list[set[str]]:
    """Longest first onto the lightest shard (ties by name, so every shard agrees)."""
    shards: list[set[str]] = [set() for _ in range(n)]
    loads = [0.0] * n
    for module in sorted(weights, key=lambda m: (-weights[m], m)):
        lightest = min(range(n), key=lambda i: (loads[i], i))
        shards[lightest].add(module)
        loads[lightest] += weights[module]
    return shards


def select(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Deselect every item outside this run's shard (no-op when the variable is unset)."""
    text = os.environ.get(ENV, "").strip()
    if not text:
        return
    k, n = parse_shard(text)
    seconds = load_durations()
    weights: dict[str, float] = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        weights[module] = weights.get(module, 0.0) + seconds.get(item.nodeid, DEFAULT_SECONDS)
    mine = assign(weights, n)[k - 1]
    keep = [item for item in items if item.nodeid.split("::", 1)[0] in mine]
    dropped = [item for item in items if item.nodeid.split("::", 1)[0] not in mine]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = keep


def pytest_configure(config: pytest.Config) -> None:
    """A malformed shard stops the run before anything is collected."""
    if text := os.environ.get(ENV, "").strip():
        parse_shard(text)


@pytest.hookimpl(trylast=True)  # after -m and -k have deselected
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    select(config, items)


def durations_from_junit(paths: Iterable[Path]) -> dict[str, float]:
    """Node id -> seconds from pytest's ``--junitxml`` reports (the slowest seen wins)."""
    out: dict[str, float] = {}
    for path in paths:
        for case in ET.parse(path).getroot().iter("testcase"):
            classname, name = case.get("classname", ""), case.get("name", "")
            # "tests.e2e.test_x.TestClass": folders, then the module (test_*), then classes
            parts = classname.split(".")
            cut = next((i + 1 for i, p in enumerate(parts) if p.startswith("test_")), len(parts))
            nodeid = "::".join(["/".join(parts[:cut]) + ".py", *parts[cut:], name])
            out[nodeid] = max(out.get(nodeid, 0.0), float(case.get("time", 0) or 0))
    return out


def write_durations(paths: Sequence[Path], target: Path = DURATIONS) -> int:
    """Rewrite ``target`` from junit reports; returns how many tests it now names."""
    seconds = {k: round(v, 1) for k, v in durations_from_junit(paths).items() if v > KEEP_OVER}
    target.write_text(json.dumps(dict(sorted(seconds.items())), indent=0) + "\n", "utf-8")
    return len(seconds)


if __name__ == "__main__":  # make durations
    import sys

    reports = [Path(p) for p in sys.argv[1:]]
    print(f"tests/durations.json: {write_durations(reports)} tests slower than {KEEP_OVER} s")
