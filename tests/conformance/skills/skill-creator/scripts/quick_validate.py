#!/usr/bin/env python3
"""Check a skill folder's SKILL.md frontmatter."""
import sys
from pathlib import Path


def validate_skill(folder):
    md = Path(folder, "SKILL.md")
    if not md.is_file():
        return False, "SKILL.md not found"
    if not md.read_text(encoding="utf-8").startswith("---"):
        return False, "no frontmatter"
    return True, "Skill is valid!"


if __name__ == "__main__":
    ok, message = validate_skill(sys.argv[1] if len(sys.argv) > 1 else ".")
    print(message)
    sys.exit(0 if ok else 1)
