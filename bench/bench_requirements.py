"""Real-skills benchmark: ``manager.requirements()`` on a 50-script skill, and the cost of
choosing a skill's Python (skill venv / managed env / kernel) on every run.

Prints figures; it is not a test. Targets (issue 13): requirements() on a 50-script skill in
< 20 ms cold, cached after that; choosing the environment adds < 0.1 ms to a run.

    .venv/bin/python bench/bench_requirements.py [--scripts 50] [--repeat 15]

The skill is written like the public ones: a package ``scripts/`` whose CLIs import
``scripts.utils`` and a helper package, ~150 lines each with stdlib, third-party (installed
and not), optional (try/except ImportError) imports and subprocess calls in all three forms.

- cold: a NEW copy of the skill (new paths: nothing of it is cached) and a new SkillManager,
  so every script is read and parsed, kinds and requirements computed, the fingerprint
  hashed. Process-wide caches of installed metadata (per site-packages folder) stay warm,
  as they do in a kernel after the first skill; ``first`` is the very first call of the
  process, which builds those too.
- cached: the same manager asked again (the fingerprint and the folders' mtimes are checked).
- choose: ``envdirs.choose_python`` (what the executor adds per run) with a managed env.

On a shared machine wall times depend on the load; the cold figure is also given as CPU time
of the process (``time.process_time``), which other processes cannot inflate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skill_magics.core.base import envdirs, interpreters# noqa: E402
from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.run.env import build as envbuild  # noqa: E402

BODY = """
import argparse, json, os, re, subprocess, shutil, sys
from pathlib import Path
import yaml
import requests_not_installed_{i}
try:
    import lxml.etree as etree
except ImportError:
    etree = None
from scripts.utils import helper_{u}
from scripts.lib import shared

def convert(args):
    cmd = ["soffice", "--headless", "--convert-to", "pdf"]
    subprocess.run(cmd + args, check=True)

def pages(path):
    return subprocess.check_output(["qpdf", "--show-npages", path])

def gh():
    if shutil.which("gh") is None:
        raise SystemExit("gh missing")
    subprocess.run(["gh", "pr", "list"])
"""
FILLER = "\ndef f_{n}(x):\n    y = [i * 2 for i in range(x)]\n    return sum(y) + len(str(x))\n"


def make_skill(root: Path, scripts: int) -> Path:
    base = root / "big-skill"
    (base / "scripts" / "lib").mkdir(parents=True)
    (base / "SKILL.md").write_text(
        "---\nname: big-skill\ndescription: Many scripts.\n---\n"
        "Run `python -m scripts.tool_000 --help`.\n"
    )
    (base / "scripts" / "__init__.py").write_text("")
    (base / "scripts" / "lib" / "__init__.py").write_text("from .core import shared\n")
    (base / "scripts" / "lib" / "core.py").write_text("def shared():\n    return 1\n")
    utils = "".join(f"def helper_{u}():\n    return {u}\n" for u in range(10))
    (base / "scripts" / "utils.py").write_text(utils)
    for i in range(scripts - 4):
        text = BODY.format(i=i % 7, u=i % 10) + "".join(FILLER.format(n=n) for n in range(25))
        text += "\nif __name__ == '__main__':\n    convert(sys.argv[1:])\n"
        (base / "scripts" / f"tool_{i:03d}.py").write_text(text)
    return base


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.2f} ms (min {min(values) * 1000:.2f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scripts", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        os.environ[envdirs.ENV_DIR_VAR] = str(tmp / "envs")
        first = cold = None
        colds: list[float] = []
        cached: list[float] = []
        cpu: list[float] = []  # CPU time of this process: what a shared machine cannot steal
        for r in range(args.repeat):
            root = tmp / f"copy-{r}"
            base = make_skill(root, args.scripts)
            manager = SkillManager([root])
            manager.list_skills()
            t0, c0 = time.perf_counter(), time.process_time()
            cold = manager.requirements("big-skill")
            elapsed = time.perf_counter() - t0
            if first is None:
                first = elapsed
            else:
                colds.append(elapsed)
                cpu.append(time.process_time() - c0)
            for _ in range(20):
                t0 = time.perf_counter()
                again = manager.requirements("big-skill")
                cached.append(time.perf_counter() - t0)
                assert again is cold
        assert cold is not None
        scripts = manager.get_skill("big-skill").scripts
        print(
            f"skill: {len(scripts)} scripts "
            f"({sum(s.offered for s in scripts)} offered), "
            f"{len(cold.packages)} packages, {len(cold.programs)} programs, "
            f"missing {cold.missing}"
        )
        print(f"requirements() first call of the process: {first * 1000:.2f} ms")
        print(f"requirements() cold, new skill copy ({len(colds)} runs): {median_ms(colds)}")
        print(f"requirements() cold, CPU time of the process: {median_ms(cpu)}")
        print(f"requirements() cached ({len(cached)} calls): {median_ms(cached)}")
        # Choosing the Python per run, with a managed env published for the skill.
        home = envdirs.skill_env_home(base)
        env = home / "env-bench"
        (env / "bin").mkdir(parents=True)
        os.symlink(sys.executable, env / "bin" / "python")
        envbuild._publish(home, env)
        assert envdirs.choose_python(base)[1] == envdirs.MANAGED_ENV
        n = 20_000
        for label in ("managed env", "kernel (no env)"):
            if label.startswith("kernel"):
                (home / envdirs.CURRENT).unlink()
            t0 = time.perf_counter()
            for _ in range(n):
                envdirs.choose_python(base)
            per = (time.perf_counter() - t0) / n
            print(f"choose_python per run, {label}: {per * 1e6:.1f} us")
        # What the executor did before managed envs existed (skill venv, else kernel).
        t0 = time.perf_counter()
        for _ in range(n):
            venv = interpreters.skill_venv_python(base)
            str(venv) if venv is not None else sys.executable
        per = (time.perf_counter() - t0) / n
        print(f"for comparison, the previous lookup (skill venv, else kernel): {per * 1e6:.1f} us")


if __name__ == "__main__":
    main()
