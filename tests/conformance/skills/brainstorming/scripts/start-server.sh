#!/usr/bin/env bash
# Start the companion server and print its connection info.
SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
cd "$SCRIPT_DIR" && node server.cjs --once "$@"
