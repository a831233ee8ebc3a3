"""Unpack an Office file into a folder of pretty XML."""
import sys

from helpers.merge_runs import merge_runs

if __name__ == "__main__":
    print(f"unpacked {sys.argv[1]} ({merge_runs(['a', 'b'])} runs merged)")
