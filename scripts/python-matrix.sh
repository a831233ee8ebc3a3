#!/usr/bin/env bash
# Run the suite (all but the browser test) under other Pythons, each in its own venv under
# .venv-py/<version>. Not part of `make test` (CI has one Python); run it before a release:
#
#   scripts/python-matrix.sh                 # every python3.10 ... python3.13 found on PATH
#   scripts/python-matrix.sh python3.10      # just that interpreter (a name or a path,
#                                            # e.g. ~/.pyenv/versions/3.10.13/bin/python)
#
# Each venv gets the package (editable) with its test and langchain extras; on 3.10 pip
# resolves IPython 8.x and ipykernel 7.3 (7.4 needs 3.11), and skills-ref (3.11+) is absent,
# so the catalog's byte-for-byte comparison skips there.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
pythons=("$@")
if [ ${#pythons[@]} -eq 0 ]; then
    for v in 3.10 3.11 3.12 3.13; do
        # pyenv shims exist for versions that are not selected: keep only ones that run
        "python$v" -c "" >/dev/null 2>&1 && pythons+=("python$v")
    done
fi
if [ ${#pythons[@]} -eq 0 ]; then
    echo "python-matrix: no python3.10 ... python3.13 runs on PATH: nothing tested" >&2
    exit 1
fi
status=0
summary=""
for py in "${pythons[@]}"; do
    if ! version="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"; then
        echo "python-matrix: $py does not run; skipped"; summary="$summary\n  $py: not runnable"
        continue
    fi
    venv="$ROOT/.venv-py/$version"
    if [ ! -x "$venv/bin/python" ]; then
        "$py" -m venv "$venv" || { status=1; continue; }
    fi
    echo "python-matrix: Python $version ($venv)"
    if ! "$venv/bin/python" -m pip install -q -e '.[test,langchain]' >"$venv/pip-install.log" 2>&1; then
        tail -30 "$venv/pip-install.log"; echo "python-matrix: pip failed for $version"
        status=1; summary="$summary\n  Python $version: pip FAILED"; continue
    fi
    if "$venv/bin/python" -m pytest -q -rs -m "not e2e" -p no:cacheprovider; then
        summary="$summary\n  Python $version: passed"
    else
        summary="$summary\n  Python $version: FAILED"; status=1
    fi
done
printf "python-matrix summary:%b\n" "$summary"
exit $status
