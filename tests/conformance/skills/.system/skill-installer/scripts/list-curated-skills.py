#!/usr/bin/env python3
"""List the curated skills."""
from __future__ import annotations

import argparse
import json
import sys

from github_utils import CATALOG


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--format", choices=["text", "json"], default="text")
    args = parser.parse_args(argv)
    print(json.dumps(list(CATALOG)) if args.format == "json" else "\n".join(CATALOG))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
