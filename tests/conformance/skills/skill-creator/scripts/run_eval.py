#!/usr/bin/env python3
"""Run one evaluation of a skill's description."""
import sys

from scripts.utils import parse_skill_md


def run_eval(folder):
    return {"name": parse_skill_md(folder).get("name", ""), "passed": 0}


if __name__ == "__main__":
    print(run_eval(sys.argv[1] if len(sys.argv) > 1 else "."))
