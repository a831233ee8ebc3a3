"""Discovery benchmark: listing 1,000 skills (frontmatter only) and detecting 50 scripts.

Prints figures; it is not a test. Targets (issue 2): 1,000 skills listed in <= 300 ms;
50 scripts detected in < 10 ms (aim < 2 ms).

    .venv/bin/python bench/bench_discovery.py [--skills 1000] [--scripts 50] [--repeat 15]
    .venv/bin/python bench/bench_discovery.py --pure-yaml   # as on a system without libyaml

Each skill gets a realistic SKILL.md: ~12 lines of frontmatter (folded description, metadata,
allowed-tools) and a ~20 KB body that listing must not read. Each script has a shebang, a
docstring and ~8 KB of code. Timings are medians of fresh runs (new SkillManager / detector
each time, so no cache helps) with the files in the OS page cache.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from skill_magics.core.catalog import frontmatter  # noqa: E402
from skill_magics.core.catalog.detect import ScriptDetector  # noqa: E402
from skill_magics.core.manager import SkillManager  # noqa: E402

BODY = "# Instructions\n\n" + "Follow these steps carefully and report the results.\n" * 400


def make_skills(root: Path, count: int) -> None:
    for i in range(count):
        name = f"skill-{i:04d}"
        d = root / f"group-{i % 10}" / name
        d.mkdir(parents=True)
        (d / "SKILL.md").write_text(
            "---\n"
            f"name: {name}\n"
            "description: >\n"
            f"  Skill number {i} does something useful with files and data.\n"
            "  Use it when the user asks for that something.\n"
            "license: MIT\n"
            "compatibility: Python 3.10+\n"
            "allowed-tools: Bash(python:*) Read Write\n"
            "metadata:\n"
            "  author: bench\n"
            f"  version: 1.{i % 10}\n"
            "  tags: data, files\n"
            "---\n" + BODY,
            encoding="utf-8",
        )


def make_scripts(skill: Path, count: int) -> None:
    code = "value = compute(value)\n" * 350  # ~8 KB after the docstring
    (skill / "SKILL.md").write_text("---\nname: many\ndescription: x\n---\n")
    for i in range(count):
        sub = skill / "scripts" / ("utils" if i % 3 == 0 else "")
        sub.mkdir(parents=True, exist_ok=True)
        ext = (".py", ".sh", ".js")[i % 3]
        head = {
            ".py": f'#!/usr/bin/env python3\n"""Script {i}: transforms things."""\n',
            ".sh": f"#!/usr/bin/env bash\n# Script {i}: transforms things.\n",
            ".js": f"// Script {i}: transforms things.\n",
        }[ext]
        (sub / f"s{i:02d}{ext}").write_text(head + code, encoding="utf-8")
    data = skill / "data"
    data.mkdir()
    for i in range(10):
        (data / f"table{i}.csv").write_text("a,b\n1,2\n" * 100)


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def report(label: str, samples: list[float], target: float) -> None:
    med = statistics.median(samples)
    p95 = sorted(samples)[max(0, int(len(samples) * 0.95) - 1)]
    verdict = "OK" if med <= target else "OVER TARGET"
    print(
        f"{label:<44} median {med:8.2f} ms  min {min(samples):8.2f}  p95 {p95:8.2f}"
        f"  (target {target:g} ms: {verdict})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--scripts", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument(
        "--pure-yaml", action="store_true", help="use yaml.SafeLoader (as without libyaml)"
    )
    args = parser.parse_args()
    if args.pure_yaml:
        import yaml

        frontmatter._Loader = yaml.SafeLoader

    print(f"python {sys.version.split()[0]}, YAML loader {frontmatter._Loader.__name__}")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        make_skills(root / "skills", args.skills)
        many = root / "many"
        many.mkdir()
        make_scripts(many, args.scripts)

        def list_all() -> None:
            skills = SkillManager([root / "skills"]).list_skills()
            assert len(skills) == args.skills, len(skills)

        list_all()  # warm the page cache and imports
        report(f"list {args.skills} skills (frontmatter only)", timed(list_all, args.repeat), 300)

        def detect() -> None:
            found = ScriptDetector().detect(many)
            assert len(found) == args.scripts, len(found)

        detect()
        report(f"detect {args.scripts} scripts", timed(detect, args.repeat * 4), 10)

        manager = SkillManager([many])
        skill = manager.get_skill("many")
        skill.scripts  # noqa: B018 - first scan

        def cached() -> None:
            skill.scripts  # noqa: B018 - re-stat only

        report(f"Skill.scripts cache check ({args.scripts})", timed(cached, args.repeat * 4), 10)


if __name__ == "__main__":
    main()
