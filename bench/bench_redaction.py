"""Redaction benchmark (prints figures; not a test).

    .venv/bin/python bench/bench_redaction.py            # 10 MiB outputs, 5 rounds
    .venv/bin/python bench/bench_redaction.py --mib 2    # smaller

Measures what masking secret values costs (core/base/secrets.py, docs/architecture.md *Sandbox and
secrets*):

1. ``SecretStore.redact`` throughput in MiB/s with 1 and 3 values, on plain text (no
   backslash: the literal pattern) and on JSON full of escapes (the escaped-forms pattern);
2. a real run of a script printing ``--mib`` MiB of JSON lines (``\\n`` and ``\\u`` escapes in
   every line), from a skill that declares a secret with its value set (the capture redacts
   every chunk before the cap) against the same script in a skill that declares none, run by
   a manager holding no value (nothing to redact), interleaved A B B A; median wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from skill_magics.core.manager import SkillManager  # noqa: E402
from skill_magics.core.base.secrets import SecretStore  # noqa: E402

VALUES = ["sk-live-4f3e2d1c0b9a8877", 'pä"ss\\wörd/€-tok', "ключ-секрет-7781"]
PRINTER = """\
import json, sys
line = json.dumps({"text": "caf\\u00e9 line\\nwith escapes", "n": 12345}) + "\\n"
need = int(sys.argv[1]) * 1024 * 1024
out = sys.stdout
written = 0
while written < need:
    out.write(line * 1000)
    written += len(line) * 1000
"""


def throughput(values: list[str], text: str, rounds: int = 3) -> float:
    store = SecretStore()
    for i, value in enumerate(values):
        store.provide("s", f"K{i}", value)
    store.redact(text[:1000])
    best = min(_timed(lambda: store.redact(text)) for _ in range(rounds))
    return len(text) / 2**20 / best


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"Python {platform.python_version()}, {os.cpu_count()} CPUs, load {os.getloadavg()}")
    plain = "an ordinary line of output with words and 12345 numbers\n" * 20000
    escaped = (json.dumps({"text": 'caf\u00e9 line\nwith "escapes"', "n": 1}) + "\n") * 20000
    for label, text in (("plain", plain), ("JSON with escapes", escaped)):
        one, three = throughput(VALUES[:1], text), throughput(VALUES, text)
        print(f"redact {label:18} {one:7.0f} MiB/s with 1 value, {three:7.0f} MiB/s with 3")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = root / "printer"
        (base / "scripts").mkdir(parents=True)
        (base / "SKILL.md").write_text(
            "---\nname: printer\ndescription: bench\nmetadata:\n  secrets: API_KEY\n---\n"
            "Run `scripts/print.py`.\n"
        )
        (base / "scripts" / "print.py").write_text(PRINTER)
        plain_skill = root / "plain"
        (plain_skill / "scripts").mkdir(parents=True)
        (plain_skill / "SKILL.md").write_text(
            "---\nname: plain\ndescription: bench\n---\nRun `scripts/print.py`.\n"
        )
        (plain_skill / "scripts" / "print.py").write_text(PRINTER)
        cap = (args.mib + 1) * 2**20
        with_value = SkillManager([root], max_output_size=cap)
        with_value.provide_secret("printer", "API_KEY", VALUES[0])
        without = SkillManager([root], max_output_size=cap)  # holds no value: nothing to mask

        def run(manager: SkillManager) -> float:
            name = "printer" if manager is with_value else "plain"
            start = time.perf_counter()
            res = manager.execute_skill_script(name, "print", argv=[str(args.mib)])
            wall = time.perf_counter() - start
            assert res.exit_code == 0 and len(res.stdout) >= args.mib * 2**20, res.stderr
            return wall

        run(with_value)
        a: list[float] = []
        b: list[float] = []
        for _ in range(args.rounds):  # A B B A
            a.append(run(with_value))
            b += [run(without), run(without)]
            a.append(run(with_value))
        ma, mb = statistics.median(a), statistics.median(b)
        print(
            f"run    {args.mib} MiB of JSON lines: with a secret value to mask {ma:.3f} s, "
            f"with none {mb:.3f} s (medians of {len(a)}): +{(ma - mb) / args.mib * 1000:.0f} ms "
            "per MiB of output"
        )
    print(f"load after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
