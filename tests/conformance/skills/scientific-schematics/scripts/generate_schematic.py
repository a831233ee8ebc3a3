#!/usr/bin/env python3
"""Generate a schematic (writes a placeholder file)."""
import argparse
import pathlib


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("prompt")
    parser.add_argument("-o", "--output", required=True)
    parser.add_argument("--doc-type", default="journal")
    args = parser.parse_args()
    out = pathlib.Path(args.output)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(args.prompt, encoding="utf-8")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
