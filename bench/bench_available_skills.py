"""How long the budgeted <available_skills> block takes for many skills (prints figures,
not a test).

    .venv/bin/python bench/bench_available_skills.py [--skills 1000] [--repeat 5]

Builds N skills (descriptions 150-400 characters) in a temp dir, lists them once, then times
``available_skills`` with no budget, a budget that only shortens, and a budget that drops most
skills, with the default counter (the estimate unless a tiktoken encoding is cached).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from skill_magics.core.prompt.available_skills import available_skills
from skill_magics.core.manager import SkillManager

WORDS = "extract tables forms merge split rotate pages watermark documents scanned files".split()


def build(root: Path, count: int) -> None:
    for i in range(count):
        folder = root / f"skill-{i:04}"
        folder.mkdir(parents=True)
        words = " ".join(WORDS[(i + j) % len(WORDS)] for j in range(20 + i % 40))
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{i:04}\ndescription: Use it to {words}.\n---\n# Body\n"
        )


def timed(fn, repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--skills", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp), args.skills)
        manager = SkillManager([tmp])
        manager.list_skills()
        full = available_skills(manager)
        print(f"{args.skills} skills, full block {full.tokens:,} tokens ({full.counter})")
        cases = {
            "no budget": {},
            "budget 80% (shortens)": {"max_tokens": int(full.tokens * 0.8)},
            "budget 4,000 tokens (drops)": {"max_tokens": 4000},
        }
        for label, options in cases.items():
            times = timed(lambda o=options: available_skills(manager, **o), args.repeat)
            cat = available_skills(manager, **options)
            print(
                f"{label:<30} median {statistics.median(times):8.1f} ms  min {min(times):8.1f} ms"
                f"  listed {len(cat.entries)}, shortened {len(cat.shortened)}, "
                f"dropped {len(cat.dropped)}"
            )


if __name__ == "__main__":
    main()
