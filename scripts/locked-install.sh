#!/usr/bin/env bash
# Install exactly what uv.lock names into an existing venv: the question "does this commit
# pass?" gets the same answer on every machine and every day. Used by the kernel matrix, the
# Python matrix and the PyYAML floor check; the main .venv is made by `uv sync` (Makefile).
#
# Usage: scripts/locked-install.sh VENV_PYTHON [options]
#   --extra NAME       an extra of pyproject.toml (repeatable); --all-extras for all of them
#   --replace REQ      install REQ (e.g. ipykernel==6.29.5) instead of the lock's version of
#                      that package; what only REQ needs is resolved then (the one unlocked part)
#   --no-project       leave skill-magics out (the caller adds a .pth to the checkout)
#   (no --extra: the package's own dependencies only)
# Environment: UV (default .venv/bin/uv, else uv on PATH). The lock must match pyproject.toml
# (`uv export --locked`): a stale lock stops here with the fix (make lock).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 1 ]; then
    sed -n '2,14p' "$0" >&2
    exit 2
fi
TARGET="$1"
shift
extras=()
replace=()
project=1
while [ $# -gt 0 ]; do
    case "$1" in
        --extra) extras+=(--extra "$2"); shift 2 ;;
        --all-extras) extras+=(--all-extras); shift ;;
        --replace) replace+=("$2"); shift 2 ;;
        --no-project) project=0; shift ;;
        *) echo "locked-install: unknown option $1 (see the header of $0)" >&2; exit 2 ;;
    esac
done

UV="${UV:-$ROOT/.venv/bin/uv}"
if [ ! -x "$UV" ]; then
    UV="$(command -v uv || true)"
fi
if [ -z "$UV" ]; then
    echo "locked-install: uv not found: run 'make venv' first (it installs the locked uv into .venv)" >&2
    exit 2
fi
export UV_PYTHON_DOWNLOADS=never  # never fetch an interpreter: the venv's own is the one

reqs="$(mktemp)"
trap 'rm -f "$reqs"' EXIT
if ! (cd "$ROOT" && "$UV" export --locked --quiet --format requirements.txt --no-hashes \
    --no-emit-project "${extras[@]}" -o "$reqs") 2>"$reqs.err"; then
    cat "$reqs.err" >&2
    rm -f "$reqs.err"
    echo "locked-install: uv.lock does not match pyproject.toml: run 'make lock' and commit uv.lock" >&2
    exit 1
fi
rm -f "$reqs.err"

# Drop the lock's line of each replaced package (names compared as PEP 503 normalises them).
for req in "${replace[@]}"; do
    name="$(printf '%s' "$req" | sed -E 's/[<>=!~ ;\[].*//' | tr 'A-Z_.' 'a-z--')"
    awk -v want="$name" '{
        n = tolower($0); sub(/[<>=!~ ;\[].*/, "", n); gsub(/[_.]/, "-", n)
        if (n != want) print
    }' "$reqs" >"$reqs.new"
    mv "$reqs.new" "$reqs"
done

args=(pip install --quiet --python "$TARGET" -r "$reqs" "${replace[@]}")
if [ "$project" = 1 ]; then
    "$UV" "${args[@]}"
    "$UV" pip install --quiet --python "$TARGET" --no-deps -e "$ROOT"
else
    "$UV" "${args[@]}"
fi
