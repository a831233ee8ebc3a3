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
# The newest uv, then the newest release of everything (--refresh: no cached index pages).
# pyproject.toml's [tool.uv] override-dependencies apply here as in the lock (they keep out
# what the tests need absent, e.g. tabulate, which notebook 06 installs into a skill's env).
OVERRIDES="$VENV/overrides.txt"
"$PYTHON" -c 'import tomllib; print("\n".join(tomllib.load(open("pyproject.toml", "rb")).get("tool", {}).get("uv", {}).get("override-dependencies", [])))' >"$OVERRIDES"
if ! { "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip uv &&
    "$VENV/bin/uv" pip install --python "$VENV/bin/python" --refresh --upgrade \
        --override "$OVERRIDES" -e ".[$EXTRAS]"; } >"$LOG" 2>&1; then
    tail -40 "$LOG" >&2
    echo "test-latest: the newest releases do not install together (log above): that is the finding" >&2
    exit 1
fi

echo "test-latest: where the newest releases differ from uv.lock:"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import re
import tomllib

from packaging.version import Version

with open("uv.lock", "rb") as fh:
    locked: dict[str, set[str]] = {}
    for p in tomllib.load(fh)["package"]:
        if p.get("version"):
            locked.setdefault(p["name"], set()).add(p["version"])
rows = []
for dist in md.distributions():
    name = re.sub(r"[-_.]+", "-", dist.metadata["Name"]).lower()
    if name in locked and dist.version not in locked[name]:
        was = max(locked[name], key=Version)
        way = "newer" if Version(dist.version) > Version(was) else "older (a newer release pins it)"
        rows.append(f"  {name} {was} -> {dist.version} ({way})")
print("\n".join(sorted(rows)) or "  none: the lock is current")
PY

read -r -a pytest_args <<<"${PYTEST_ARGS:-}"
# The kernel matrix and the Python matrix are `make test`'s: they pin other versions on purpose.
exec "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider "${pytest_args[@]}"
