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
# The main venv's own ipykernel is tested by `make test`'s pytest run. When it is older than
# 7.4 (on Python 3.10 pip resolves 7.3: 7.4 needs 3.11) and no version >= 7.4 is asked for,
# the newest 7.x is added, so the await path (docs/architecture.md, Waiting for a click) is never left untested: with
# the matrix Python when it can install it, else with a python3.11+ found on PATH; when
# neither can, a loud warning says the await path went untested.
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

# Runtime dependencies, minus ipykernel (pinned per venv below), one per line: from
# pyproject.toml with tomllib (Python >= 3.11), else from the installed package's metadata
# (Python 3.10; the dev venv has skill-magics installed, and make reinstalls it when
# pyproject.toml changes).
DEPS_TEXT="$("$PYTHON" - <<'EOF'
import re
import sys

def from_pyproject():
    try:
        import tomllib
    except ImportError:
        return None
    with open("pyproject.toml", "rb") as fh:
        return tomllib.load(fh)["project"]["dependencies"]

def from_metadata():
    from importlib.metadata import PackageNotFoundError, requires
    try:
        reqs = requires("skill-magics") or []
    except PackageNotFoundError:
        sys.exit("kernel-matrix: cannot read pyproject.toml (no tomllib before Python 3.11) "
                 "and skill-magics is not installed: run make venv (or pip install -e .)")
    # Requires-Dist lists the extras too, as 'pkg; extra == "test"': keep the base ones.
    return [r for r in reqs if not re.search(r"""\bextra\s*==""", r)]

deps = from_pyproject()
if deps is None:
    deps = from_metadata()
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
# (Python 3.10's sys._base_executable is the venv's own python: prefer the base install's.)
BASE_PYTHON="${BASE_PYTHON:-$("$PYTHON" -c '
import os, sys
base = os.path.join(sys.base_prefix, "bin", "python%d.%d" % sys.version_info[:2])
print(base if os.access(base, os.X_OK) else getattr(sys, "_base_executable", sys.executable))
')}"

pyver() { "$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null; }
# 0 when version $1 >= $2 (dotted, numeric parts)
version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

# The newest ipykernel 7.x >= 7.4 that Python version $1 can install (pip honours its
# Requires-Python), or nothing. Downloads one small wheel (cached) with the main venv's pip.
newest_await_kernel() {
    local tmp found
    tmp="$(mktemp -d)"
    if "$PYTHON" -m pip download --quiet --disable-pip-version-check --no-deps \
        --only-binary=:all: --python-version "$1" --dest "$tmp" 'ipykernel>=7.4,<8' \
        >/dev/null 2>&1; then
        found="$(cd "$tmp" && ls ipykernel-*.whl 2>/dev/null | head -1)"
        found="${found#ipykernel-}"
        echo "${found%%-*}"
    fi
    rm -rf "$tmp"
}

declare -A BASE_FOR=()  # version -> Python creating its venv (default BASE_PYTHON)
MAIN_IPYKERNEL="$("$PYTHON" -c 'import ipykernel; print(ipykernel.__version__)' 2>/dev/null || echo none)"
echo "kernel-matrix: the main venv ($PYTHON, Python $(pyver "$PYTHON")) runs ipykernel $MAIN_IPYKERNEL; make test's pytest run tests that one"
AWAIT_WARNING=""
if [ "$MAIN_IPYKERNEL" = none ] || ! version_ge "$MAIN_IPYKERNEL" 7.4; then
    asked=0
    for version in $VERSIONS; do
        if version_ge "$version" 7.4; then asked=1; fi
    done
    if [ "$asked" = 0 ]; then
        added=""
        candidates=("$BASE_PYTHON")
        for v in 3.11 3.12 3.13 3.14; do
            command -v "python$v" >/dev/null 2>&1 && candidates+=("python$v")
        done
        for cand in "${candidates[@]}"; do
            cv="$(pyver "$cand")" || continue  # pyenv shims of unselected versions do not run
            "$cand" -c 'import ensurepip, venv' >/dev/null 2>&1 || continue
            newest="$(newest_await_kernel "$cv")"
            if [ -n "$newest" ]; then
                VERSIONS="$VERSIONS $newest"
                BASE_FOR[$newest]="$("$cand" -c 'import sys; print(sys.executable)')"
                added="$newest"
                echo "kernel-matrix: ipykernel $MAIN_IPYKERNEL < 7.4 in the main venv: adding ipykernel $newest (the await path) to the matrix, with Python $cv ($cand)"
                break
            fi
        done
        if [ -z "$added" ]; then
            AWAIT_WARNING="ipykernel >= 7.4 (the await path): NOT TESTED; no Python >= 3.11 with venv support found"
            cat >&2 <<EOF
kernel-matrix: ##################################################################
kernel-matrix: WARNING: the main venv runs ipykernel $MAIN_IPYKERNEL and no Python here can
kernel-matrix: install ipykernel >= 7.4 (it needs Python >= 3.11): the await path that
kernel-matrix: JupyterLab users on ipykernel 7.4+ get is NOT tested by this run.
kernel-matrix: Install python3.11 (or newer) or set BASE_PYTHON to one.
kernel-matrix: ##################################################################
EOF
        fi
    fi
fi

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
        echo "kernel-matrix plan: ipykernel $version with $(pyver "${BASE_FOR[$version]:-$BASE_PYTHON}") (${BASE_FOR[$version]:-$BASE_PYTHON})"
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
    if ! make_venv "$version" "$venv" "${BASE_FOR[$version]:-$BASE_PYTHON}"; then
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
if [ -n "$AWAIT_WARNING" ]; then
    summary="$summary\n  WARNING: $AWAIT_WARNING"
fi
printf "kernel-matrix summary:%b\n" "$summary"
exit $status
