#!/usr/bin/env python3
"""Install a skill from a GitHub repository (prints the plan only here)."""
from __future__ import annotations

import argparse
import sys

from github_utils import api_contents_url


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--path", required=True, nargs="+")
    args = parser.parse_args(argv)
    for path in args.path:
        print(api_contents_url(args.repo, path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
