#!/usr/bin/env bash
# `make test-latest`: the suite against the newest release of every dependency, no lock, in
# its own venv (.venv-latest, rebuilt each time so nothing stale stays). It answers "does it
# still work with what users install today?"; `make test` answers "does this commit pass?"
# from uv.lock. First it lists what is newer than the lock, so a failure points at a release.
#
#   PYTHON=python3.11 (default: python3)   LATEST_VENV=.venv-latest   PYTEST_ARGS="-x ..."
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3}"
VENV="${LATEST_VENV:-$ROOT/.venv-latest}"
LOG="$VENV.pip-install.log"

# Every extra pyproject.toml names, so every optional dependency is the newest too.
EXTRAS="$("$PYTHON" -c 'import tomllib; print(",".join(tomllib.load(open("pyproject.toml", "rb"))["project"]["optional-dependencies"]))')"

echo "test-latest: creating $VENV with the newest releases of skill-magics[$EXTRAS]'s dependencies (log: $LOG)"
rm -rf "$VENV"
"$PYTHON" -m venv "$VENV"
# pip asks the index afresh (no resolver cache), and --upgrade-strategy eager moves every
# dependency of a dependency to its newest release as well.
if ! { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip &&
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-cache-dir \
        --upgrade --upgrade-strategy eager -e ".[$EXTRAS]"; } >"$LOG" 2>&1; then
    tail -40 "$LOG" >&2
    echo "test-latest: pip could not install the newest releases (log above): that is the finding" >&2
    exit 1
fi

echo "test-latest: releases newer than uv.lock:"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import re
import tomllib

with open("uv.lock", "rb") as fh:
    locked = {p["name"]: p.get("version") for p in tomllib.load(fh)["package"]}
newer = []
for dist in md.distributions():
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    if name in locked and locked[name] and locked[name] != dist.version:
        newer.append(f"  {name} {locked[name]} -> {dist.version}")
print("\n".join(sorted(newer)) or "  none: the lock is current")
PY

read -r -a pytest_args <<<"${PYTEST_ARGS:-}"
# The kernel matrix and the Python matrix are `make test`'s: they pin other versions on purpose.
exec "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider "${pytest_args[@]}"
