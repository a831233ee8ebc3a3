#!/usr/bin/env python3
"""Start servers, run a command, stop the servers."""
import argparse
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--server", action="append", default=[])
    parser.add_argument("--port", action="append", type=int, default=[])
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give the command to run after --")
    return subprocess.run(command).returncode


if __name__ == "__main__":
    sys.exit(main())
