"""What one warm server per skill costs in memory (prints figures; not a test).

    .venv/bin/python bench/bench_warm_servers.py            # 3 skills importing pandas
    .venv/bin/python bench/bench_warm_servers.py --skills 5

Each skill gets its own server (docs/architecture.md, *Warm start*): N skills that import
pandas hold N servers that each imported it. Prints, per server, its RSS and PSS (PSS splits
pages shared between processes: the servers share the interpreter's and the libraries'
file-backed pages, not the heap each built by importing), then the totals and the LRU bound
(pool.MAX_SERVERS idle servers at most).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.run.launching import warm  # noqa: E402
from skill_magics.core.run.launching.warm import pool  # noqa: E402

SCRIPT = "import pandas as pd\nprint(int(pd.Series([1, 2]).sum()))\n"
# A skill whose script imports nothing third-party: its server (warm_start="on") preloads
# nothing, the baseline a pandas server is compared with.
BARE = "import json\nprint(json.dumps(3))\n"


def smaps_field(pid: int, name: str) -> int:
    with open(f"/proc/{pid}/smaps_rollup") as fh:
        for line in fh:
            if line.startswith(name):
                return int(line.split()[1]) * 1024
    return 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--skills", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for i in range(args.skills):
            base = root / f"skill-{i}"
            (base / "scripts").mkdir(parents=True)
            (base / "SKILL.md").write_text(f"---\nname: skill-{i}\ndescription: bench\n---\n")
            (base / "scripts" / "frame.py").write_text(SCRIPT)
        bare = root / "bare"
        (bare / "scripts").mkdir(parents=True)
        (bare / "SKILL.md").write_text("---\nname: bare\ndescription: bench\n---\n")
        (bare / "scripts" / "frame.py").write_text(BARE)
        manager = SkillManager([root], run_cwd="skill", warm_start="on")
        try:
            for i in range(args.skills):
                res = manager.execute_skill_script(f"skill-{i}", "frame", approver=None)
                assert res.start == "warm" and res.stdout == "3\n", res.start_note
            res = manager.execute_skill_script("bare", "frame", approver=None)
            assert res.start == "warm" and res.stdout == "3\n", res.start_note
            (plain,) = [s for s in warm.POOL.servers() if s.key.skill[0] == "bare"]
            print(
                f"bare: server pid {plain.pid}, nothing preloaded: RSS "
                f"{smaps_field(plain.pid, 'Rss:') / 2**20:.1f} MiB, PSS "
                f"{smaps_field(plain.pid, 'Pss:') / 2**20:.1f} MiB"
            )
            servers = [s for s in warm.POOL.servers() if s is not plain]
            rss_total = pss_total = 0
            for server in servers:
                rss = smaps_field(server.pid, "Rss:")
                pss = smaps_field(server.pid, "Pss:")
                rss_total += rss
                pss_total += pss
                print(
                    f"{server.key.skill[0]}: server pid {server.pid}, preloaded "
                    f"{', '.join(server.report.loaded)}: RSS {rss / 2**20:.1f} MiB, "
                    f"PSS {pss / 2**20:.1f} MiB"
                )
            print(
                f"{len(servers)} skills -> {len(servers)} servers: RSS {rss_total / 2**20:.1f} "
                f"MiB, PSS {pss_total / 2**20:.1f} MiB in all; at most {pool.MAX_SERVERS} "
                "servers per process (the least recently used idle one stops first)"
            )
        finally:
            warm.stop_servers()


if __name__ == "__main__":
    main()
