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
# The main venv's own ipykernel (the newest, 7.4+: the await path of docs/architecture.md,
# Waiting for a click) is tested by `make test`'s pytest run.
#
# Usage: scripts/kernel-matrix.sh [VERSION...] [-- PYTEST_ARGS...]
#   e.g.  scripts/kernel-matrix.sh                  (7.4.0 7.3.0 6.29.5)
#         scripts/kernel-matrix.sh 6.29.5 -- -x -k click
#         scripts/kernel-matrix.sh --print-deps     the runtime dependencies it installs
#         scripts/kernel-matrix.sh --plan [VERSION...]   versions and Pythons; installs nothing
#   KERNEL_MATRIX_VERSIONS="..."             default versions when none are given
#   PYTHON=.venv/bin/python                  the Python that runs pytest
#   BASE_PYTHON=...                          the Python that creates the matrix venvs
#   KERNEL_MATRIX_DIR=.venv-matrix           where the venvs live
#   SKILL_MAGICS_E2E_REQUIRED=0|1            browser test may (0) / may not (1) skip; default:
#                                            1 when chromium is on PATH (as in `make test`)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# 7.4+: await path; 7.0-7.3: subshell thread; 6.x: pumping (docs/architecture.md, Waiting for a click).
VERSIONS="${KERNEL_MATRIX_VERSIONS:-7.4.0 7.3.0 6.29.5}"
mode=run
case "${1:-}" in
    --print-deps) mode=deps; shift ;;
    --plan) mode=plan; shift ;;
esac
given=""
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        [0-9]*) given="$given $1"; shift ;;
        *) break ;;  # the rest goes to pytest
    esac
done
if [ -n "$given" ]; then VERSIONS="$given"; fi
MATRIX_DIR="${KERNEL_MATRIX_DIR:-$ROOT/.venv-matrix}"

if [ ! -x "$PYTHON" ]; then
    echo "kernel-matrix: $PYTHON not found; create the dev venv first (make venv) or set PYTHON=" >&2
    exit 2
fi

# Runtime dependencies from pyproject.toml, minus ipykernel (pinned per venv below), one per line.
DEPS_TEXT="$("$PYTHON" - <<'EOF'
import re
import tomllib

with open("pyproject.toml", "rb") as fh:
    deps = tomllib.load(fh)["project"]["dependencies"]
for dep in deps:
    if re.split(r"[<>=!~ ;\[(]", dep.strip(), maxsplit=1)[0].lower() != "ipykernel":
        print(dep.strip())
EOF
)"
DEPS=()
if [ -n "$DEPS_TEXT" ]; then mapfile -t DEPS <<<"$DEPS_TEXT"; fi
if [ "$mode" = deps ]; then
    printf '%s\n' "${DEPS[@]}"
    exit 0
fi

# The venvs use the same base interpreter as the dev venv unless told otherwise.
BASE_PYTHON="${BASE_PYTHON:-$("$PYTHON" -c 'import sys; print(sys._base_executable)')}"

pyver() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
MAIN_IPYKERNEL="$("$PYTHON" -c 'import ipykernel; print(ipykernel.__version__)' 2>/dev/null || echo none)"
echo "kernel-matrix: the main venv ($PYTHON, Python $(pyver "$PYTHON")) runs ipykernel $MAIN_IPYKERNEL; make test's pytest run tests that one"

# The browser test of the approval click (tests/e2e/test_matrix_kernels_browser.py, marked
# kernel) runs on each matrix kernel too. Same rule as `make test`: with chromium on PATH it
# must run (a skip becomes a failure); an explicit SKILL_MAGICS_E2E_REQUIRED is kept.
if [ -z "${SKILL_MAGICS_E2E_REQUIRED:-}" ]; then
    if command -v chromium >/dev/null 2>&1; then
        SKILL_MAGICS_E2E_REQUIRED=1
    else
        SKILL_MAGICS_E2E_REQUIRED=0
    fi
fi
export SKILL_MAGICS_E2E_REQUIRED
echo "kernel-matrix: browser test SKILL_MAGICS_E2E_REQUIRED=$SKILL_MAGICS_E2E_REQUIRED (1: it may not skip)"

if [ "$mode" = plan ]; then
    for version in $VERSIONS; do
        echo "kernel-matrix plan: ipykernel $version with $(pyver "$BASE_PYTHON") ($BASE_PYTHON)"
    done
    exit 0
fi

make_venv() {
    local version="$1" venv="$2" base="$3"
    local stamp="$venv/.skill-magics-matrix"
    local want="ipykernel==$version ${DEPS[*]} (Python $(pyver "$base"))"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    echo "kernel-matrix: creating $venv ($want)"
    rm -rf "$venv"
    "$base" -m venv "$venv"
    # pip's output goes to a log (this machine's extra index prints many harmless warnings);
    # it is shown when the install fails.
    if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "ipykernel==$version" "${DEPS[@]}" >"$venv/pip-install.log" 2>&1; then
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
    if ! make_venv "$version" "$venv" "$BASE_PYTHON"; then
        status=1
        summary="$summary\n  ipykernel $version: venv FAILED"
        continue
    fi
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
