#!/bin/bash
# Bundle the project into one HTML file (needs the bundler on PATH).
set -e
if ! command -v skill-magics-absent-bundler >/dev/null 2>&1; then
    echo "skill-magics-absent-bundler is not installed: install it first" >&2
    exit 1
fi
skill-magics-absent-bundler index.html
