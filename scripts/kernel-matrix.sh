#!/usr/bin/env bash
# Run the real-kernel tests (pytest -m kernel) once per supported ipykernel version.
#
# Each version gets its own venv under .venv-matrix/ipykernel-X (created on first use, reused
# afterwards; pip's cache makes re-creation cheap). The venv holds the kernel only: ipykernel==X
# plus the package's runtime dependencies, and a .pth file pointing at this checkout (an
# editable install without build artefacts in the repo). pytest itself runs from the main venv
# and starts kernels with SKILL_MAGICS_TEST_KERNEL_PYTHON=<matrix venv python>, through a private
# kernelspec in a temp dir (tests/kernel_fixtures.py).
#
# Usage: scripts/kernel-matrix.sh [VERSION...] [-- PYTEST_ARGS...]
#   e.g.  scripts/kernel-matrix.sh                  (7.4.0 7.3.0 6.29.5)
#         scripts/kernel-matrix.sh 6.29.5 -- -x -k click
#   KERNEL_MATRIX_VERSIONS="..."             default versions when none are given
#   PYTHON=.venv/bin/python                  the Python that runs pytest
#   BASE_PYTHON=...                          the Python that creates the matrix venvs
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# 7.4+: await path; 7.0-7.3: subshell thread; 6.x: pumping (DESIGN.md section 4).
VERSIONS="${KERNEL_MATRIX_VERSIONS:-7.4.0 7.3.0 6.29.5}"
given=""
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        [0-9]*) given="$given $1"; shift ;;
        *) break ;;  # the rest goes to pytest
    esac
done
if [ -n "$given" ]; then VERSIONS="$given"; fi
MATRIX_DIR="$ROOT/.venv-matrix"

if [ ! -x "$PYTHON" ]; then
    echo "kernel-matrix: $PYTHON not found; create the dev venv first (make install) or set PYTHON=" >&2
    exit 2
fi
# The venvs use the same base interpreter as the dev venv unless told otherwise.
BASE_PYTHON="${BASE_PYTHON:-$("$PYTHON" -c 'import sys; print(getattr(sys, "_base_executable", sys.executable))')}"

# Runtime dependencies from pyproject.toml, minus ipykernel (pinned per venv below).
DEPS="$("$PYTHON" - <<'EOF'
import re, tomllib
with open("pyproject.toml", "rb") as fh:
    deps = tomllib.load(fh)["project"]["dependencies"]
print(" ".join(d for d in deps if re.split(r"[<>=!~ ;\[]", d, maxsplit=1)[0].lower() != "ipykernel"))
EOF
)"

make_venv() {
    local version="$1" venv="$2"
    local stamp="$venv/.skill-magics-matrix"
    local want="ipykernel==$version $DEPS"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    echo "kernel-matrix: creating $venv ($want)"
    rm -rf "$venv"
    "$BASE_PYTHON" -m venv "$venv"
    # pip's output goes to a log (this machine's extra index prints many harmless warnings);
    # it is shown when the install fails.
    # shellcheck disable=SC2086  # DEPS is a word list on purpose
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "ipykernel==$version" $DEPS >"$venv/pip-install.log" 2>&1; then
        cat "$venv/pip-install.log" >&2
        echo "kernel-matrix: pip could not install ipykernel==$version (log above)" >&2
        return 1
    fi
    local site
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$ROOT" > "$site/skill_magics_checkout.pth"
    echo "$want" > "$stamp"
}

status=0
summary=""
for version in $VERSIONS; do
    venv="$MATRIX_DIR/ipykernel-$version"
    make_venv "$version" "$venv"
    echo "kernel-matrix: ipykernel $version ($venv/bin/python)"
    start=$(date +%s)
    if SKILL_MAGICS_TEST_KERNEL_PYTHON="$venv/bin/python" SKILL_MAGICS_EXPECT_IPYKERNEL="$version" \
        "$PYTHON" -m pytest -m kernel -q -rs -p no:cacheprovider "$@"; then
        result="passed"
    else
        result="FAILED"
        status=1
    fi
    summary="$summary\n  ipykernel $version: $result ($(($(date +%s) - start)) s)"
done
printf "kernel-matrix summary:%b\n" "$summary"
exit $status
