#!/usr/bin/env python3
"""Validate, then package a skill folder."""
import sys

from quick_validate import validate_skill

if __name__ == "__main__":
    valid, message = validate_skill(sys.argv[1])
    print("packaged" if valid else f"not packaged: {message}")
    sys.exit(0 if valid else 1)
