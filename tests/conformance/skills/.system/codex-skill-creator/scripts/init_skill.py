#!/usr/bin/env python3
"""Create a new skill folder from a template."""
import argparse
import re
import sys

NAME = re.compile(r"^[a-z0-9-]{1,64}$")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("name")
    parser.add_argument("--path", required=True)
    parser.add_argument("--resources", default="")
    args = parser.parse_args()
    if not NAME.match(args.name):
        print(f"invalid name {args.name!r}", file=sys.stderr)
        return 1
    print(f"would create {args.path}/{args.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
