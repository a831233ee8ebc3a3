#!/usr/bin/env python3
"""Minimal validation of a skill folder."""
import sys
from pathlib import Path


def validate_skill(path):
    ok = Path(path, "SKILL.md").is_file()
    return ok, "valid" if ok else "SKILL.md missing"


if __name__ == "__main__":
    valid, message = validate_skill(sys.argv[1])
    print(message)
    sys.exit(0 if valid else 1)
