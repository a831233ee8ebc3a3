#!/usr/bin/env python3
"""Validate a skill and list what a package of it would hold."""
import sys
from pathlib import Path

from scripts.quick_validate import validate_skill


def main():
    folder = Path(sys.argv[1])
    ok, message = validate_skill(folder)
    if not ok:
        print(f"not packaged: {message}")
        return 1
    names = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    print(f"would package {len(names)} files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
