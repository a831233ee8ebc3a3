"""Rewrite scripts/colab-pins.txt from a new Colab pip-freeze.txt (googlecolab/backend-info).

    .venv/bin/python scripts/update_colab_pins.py path/to/pip-freeze.txt [--pins FILE]

Every ``name==version`` line of the pins file gets the freeze's version for that name (names
compared as pip does: case, ``-``, ``_`` and ``.`` alike). Comments and the order stay. A
pinned package the freeze does not have is kept as it is and named (the notebooks' extras
that Colab lacks are such packages; anything else: check why it left). Lines the freeze has
under the same name but with ``@ file`` or ``@ git+`` (not from PyPI) are named and kept.
Then run ``bash scripts/kernel-matrix.sh colab``: it fails when pip installs anything the
pins do not list (a new dependency) or moves one of them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

PINS = Path(__file__).resolve().parent / "colab-pins.txt"
PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>[^\s#;]+)(?P<rest>.*)$")


def canonical(name: str) -> str:
    """The name as pip compares it (PEP 503)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def read_freeze(text: str) -> tuple[dict[str, str], set[str]]:
    """(canonical name -> version) of the ``==`` lines, and the names installed otherwise."""
    versions: dict[str, str] = {}
    other: set[str] = set()
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = PIN.match(line)
        if match:
            versions[canonical(match["name"])] = match["version"]
        else:
            other.add(canonical(re.split(r"[\s@=<>!~;]", line, maxsplit=1)[0]))
    return versions, other


def update(pins_text: str, freeze_text: str) -> tuple[str, list[str]]:
    """The pins with the freeze's versions, and one note per change or problem."""
    versions, other = read_freeze(freeze_text)
    out, notes = [], []
    for line in pins_text.splitlines():
        match = PIN.match(line)
        if not match:
            out.append(line)
            continue
        name, old = match["name"], match["version"]
        new = versions.get(canonical(name))
        if new is None:
            why = "not from PyPI there" if canonical(name) in other else "not in the freeze"
            notes.append(f"kept {name}=={old}: {why}")
        elif new != old:
            notes.append(f"{name}: {old} -> {new}")
            line = f"{name}=={new}{match['rest']}"
        out.append(line)
    return "\n".join(out) + "\n", notes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("freeze", type=Path, help="Colab's pip-freeze.txt")
    parser.add_argument("--pins", type=Path, default=PINS, help=f"default: {PINS.name}")
    args = parser.parse_args(argv)
    try:
        freeze_text = args.freeze.read_text(encoding="utf-8")
    except OSError as exc:
        print(f"update_colab_pins: cannot read {args.freeze}: {exc.strerror}", file=sys.stderr)
        return 2
    if not read_freeze(freeze_text)[0]:
        print(f"update_colab_pins: {args.freeze} has no name==version line", file=sys.stderr)
        return 2
    text, notes = update(args.pins.read_text(encoding="utf-8"), freeze_text)
    args.pins.write_text(text, encoding="utf-8")
    for note in notes:
        print(note)
    print(f"{args.pins}: {sum(1 for n in notes if '->' in n)} versions changed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
