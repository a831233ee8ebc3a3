"""Merge adjacent runs with the same formatting."""
import re

_SPACE = re.compile(r"\s+")


def merge_runs(runs):
    return max(len(runs) - 1, 0)
