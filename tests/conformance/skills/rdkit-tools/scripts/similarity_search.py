#!/usr/bin/env python3
"""Similarity search (needs a toolkit that is not installed here)."""
import argparse
import sys

try:
    from skill_magics_absent_chem import Chem
except ImportError:
    print("Error: the chemistry toolkit is not installed. Install it with conda.")
    sys.exit(1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("query")
    parser.add_argument("database")
    parser.add_argument("--threshold", type=float, default=0.7)
    args = parser.parse_args()
    print(Chem.search(args.query, args.database, args.threshold))


if __name__ == "__main__":
    main()
