#!/usr/bin/env bash
# Run the suite (all but the browser test; the kernel matrix is scripts/kernel-matrix.sh) under
# every supported Python found here (3.11+: requires-python in pyproject.toml), each in its own
# venv under .venv-py/<version> holding the package (editable) and uv.lock's pins of its test,
# e2e and langchain extras (scripts/locked-install.sh), so the same tests run on the same
# versions and none skips for a missing extra.
#
#   scripts/python-matrix.sh                  every supported Python found (see below)
#   scripts/python-matrix.sh PY...            just those interpreters (names or paths)
#   scripts/python-matrix.sh --other          only the newest supported Python other than
#                                             the one running .venv (what `make test` runs);
#                                             none found: says so and exits 0
#   scripts/python-matrix.sh --list           what would run, and what is skipped and why
#   scripts/python-matrix.sh --prepare ...    create the venvs only (make test then runs the
#                                             other Python's tests in two halves side by side)
#   PYTEST_ARGS="-x -k kinds" scripts/...     extra pytest arguments
#   PYTHON_MATRIX_SEARCH="dir..."             where to look instead of the places below
#   PYTHON_MATRIX_MAIN=.venv/bin/python       the Python --other leaves out (its version)
#   PYTHON_MATRIX_VENVS=.venv-py              where the venvs live
#   PYTHON_MATRIX_MARKS="not e2e"             which tests (pytest -m)
#
# Found: python3.X on PATH (a pyenv shim for a version that is not selected does not run, so
# pyenv's own folders are searched too), $PYENV_ROOT/versions/*/bin/python (default
# ~/.pyenv), uv's ~/.local/share/uv/python/*/bin/python3 ($UV_PYTHON_INSTALL_DIR), and
# python3.X in /usr/bin, /usr/local/bin and /opt/python/*/bin. Each is de-duplicated by its
# real version (the first found of a version wins). Skipped, with the reason: versions below
# 3.11 (unsupported), interpreters that do not run, and ones without venv support (ensurepip).
#
# Exit status: 0 when every Python that ran passed (or, with --other, none was found), 1 when
# one failed, 2 when none was found at all.
set -uo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
MIN_MINOR=11 # Python 3.11: pyproject.toml's requires-python
MAIN_VENV="${PYTHON_MATRIX_MAIN:-$ROOT/.venv/bin/python}"
VENVS="${PYTHON_MATRIX_VENVS:-$ROOT/.venv-py}"
# Which tests (pytest -m). `make test` leaves out the real-kernel and notebook tests here: the
# kernel matrix's colab entry runs those on Python 3.13 already, in Colab's stack.
MARKS="${PYTHON_MATRIX_MARKS:-not e2e}"

mode=all
list=0
prepare=0
while [ $# -gt 0 ]; do
    case "$1" in
        --other) mode=other; shift ;;
        --list) list=1; shift ;;
        --prepare) prepare=1; shift ;;
        -h | --help) sed -n '2,28p' "$0"; exit 0 ;;
        -*) echo "python-matrix: unknown option $1 (see --help)" >&2; exit 2 ;;
        *) break ;;
    esac
done

# "3.13.0 /real/path" for a Python that runs, nothing otherwise.
probe() {
    "$1" -c 'import os, platform, sys; sys.stdout.write("%s %s\n" % (platform.python_version(), os.path.realpath(sys.executable)))' 2>/dev/null
}

candidates() {
    local dir v pyenv_root uv_root
    if [ -n "${PYTHON_MATRIX_SEARCH:-}" ]; then
        for dir in $PYTHON_MATRIX_SEARCH; do
            for f in "$dir"/python3 "$dir"/python3.[0-9]*; do
                [ -x "$f" ] && [ ! -d "$f" ] && echo "$f"
            done
        done
        return
    fi
    for v in 14 13 12 11 10 9; do
        command -v "python3.$v" 2>/dev/null
    done
    pyenv_root="${PYENV_ROOT:-$HOME/.pyenv}"
    uv_root="${UV_PYTHON_INSTALL_DIR:-${XDG_DATA_HOME:-$HOME/.local/share}/uv/python}"
    for f in "$pyenv_root"/versions/*/bin/python "$uv_root"/*/bin/python3 \
        /usr/local/bin/python3.[0-9]* /usr/bin/python3.[0-9]* /opt/python/*/bin/python3; do
        case "$f" in *-config | *m) continue ;; esac # python3.X-config, python3.Xm
        [ -x "$f" ] && [ ! -d "$f" ] && echo "$f"
    done
}

found=()     # "version path", one per supported version
skipped=()   # "path: why"
declare -A seen_version=()
declare -A seen_real=()
add() {
    local py="$1" out version real major minor
    if ! out="$(probe "$py")" || [ -z "$out" ]; then
        case "$py" in
            */shims/*) skipped+=("$py: does not run (a pyenv shim of a version not selected; pyenv's versions/ are searched)") ;;
            *) skipped+=("$py: does not run") ;;
        esac
        return
    fi
    version="${out%% *}"
    real="${out#* }"
    [ -n "${seen_real[$real]:-}" ] && return # the same interpreter under another name
    seen_real[$real]=1
    major="${version%%.*}"
    minor="${version#*.}"
    minor="${minor%%.*}"
    if [ "$major" != 3 ] || [ "$minor" -lt "$MIN_MINOR" ]; then
        skipped+=("$py: Python $version unsupported (3.$MIN_MINOR+)")
        return
    fi
    if [ -n "${seen_version[$major.$minor]:-}" ]; then
        skipped+=("$py: Python $version, same 3.$minor as ${seen_version[$major.$minor]}")
        return
    fi
    if ! "$py" -c 'import ensurepip, venv' >/dev/null 2>&1; then
        skipped+=("$py: Python $version lacks venv support (ensurepip): install python3.$minor-venv")
        return
    fi
    seen_version[$major.$minor]="$real"
    found+=("$major.$minor $real")
}

if [ $# -gt 0 ]; then
    for py in "$@"; do add "$py"; done
else
    while IFS= read -r py; do add "$py"; done < <(candidates)
fi

main_minor=""
if [ "$mode" = other ]; then
    main_minor="$("$MAIN_VENV" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)"
    newest=""
    for entry in "${found[@]}"; do
        [ "${entry%% *}" = "$main_minor" ] && continue
        if [ -z "$newest" ] || [ "$(printf '%s\n%s\n' "${newest%% *}" "${entry%% *}" | sort -V | tail -1)" = "${entry%% *}" ]; then
            newest="$entry"
        fi
    done
    if [ -z "$newest" ]; then
        echo "python-matrix: no supported Python other than .venv's ${main_minor:-?} found (3.$MIN_MINOR+ in pyenv, uv, PATH, /usr/bin, /usr/local/bin): the suite ran on one Python only"
        for s in "${skipped[@]}"; do echo "python-matrix:   skipped $s"; done
        exit 0
    fi
    for entry in "${found[@]}"; do
        if [ "${entry%% *}" = "$main_minor" ]; then
            skipped+=("${entry#* }: Python $main_minor is .venv's (the main run tests it)")
        elif [ "$entry" != "$newest" ]; then
            skipped+=("${entry#* }: Python ${entry%% *}, not the newest (make python-matrix runs all)")
        fi
    done
    found=("$newest")
fi

for entry in "${found[@]}"; do echo "python-matrix: found Python ${entry%% *} (${entry#* })"; done
for s in "${skipped[@]}"; do echo "python-matrix: skipped $s"; done
if [ ${#found[@]} -eq 0 ]; then
    echo "python-matrix: no supported Python (3.$MIN_MINOR+) found: nothing tested" >&2
    exit 2
fi
[ "$list" = 1 ] && exit 0

status=0
summary=""
read -r -a pytest_args <<<"${PYTEST_ARGS:-}"
for entry in "${found[@]}"; do
    version="${entry%% *}"
    py="${entry#* }"
    venv="$VENVS/$version"
    start=$(date +%s)
    stamp="$venv/.installed"
    # One creator at a time (make test runs two halves of the suite side by side): the other
    # waits here, then finds the stamp.
    mkdir -p "$VENVS"
    exec 9>"$VENVS/.$version.lock"
    flock 9
    # Rebuilt when pyproject.toml or uv.lock changes, or the venv belongs to another interpreter.
    want="$(realpath "$py") $(sha256sum pyproject.toml uv.lock | cut -c1-16 | tr '\n' ' ')"
    if [ ! -x "$venv/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
        echo "python-matrix: Python $version: creating $venv (log: $venv/pip-install.log)"
        rm -rf "$venv"
        # What uv.lock pins for that Python (the lock is universal: 3.11+).
        if ! "$py" -m venv "$venv" >/dev/null 2>&1 ||
            ! { bash scripts/locked-install.sh "$venv/bin/python" --extra test --extra e2e \
                --extra langchain >"$venv/pip-install.log" 2>&1; }; then
            tail -30 "$venv/pip-install.log" 2>/dev/null
            echo "python-matrix: Python $version: venv or pip install FAILED"
            summary="$summary\n  Python $version ($py): venv or pip install FAILED"
            status=1
            continue
        fi
        echo "$want" >"$stamp"
    fi
    exec 9>&-
    if [ "$prepare" = 1 ]; then
        summary="$summary\n  Python $version ($py): venv ready ($venv)"
        continue
    fi
    echo "python-matrix: Python $version: pytest -m '$MARKS' in $venv"
    # The browser test is `make e2e`'s; the kernel matrix is scripts/kernel-matrix.sh's.
    if "$venv/bin/python" -m pytest -q -rs -m "$MARKS" -p no:cacheprovider "${pytest_args[@]}"; then
        result=passed
    else
        result=FAILED
        status=1
    fi
    summary="$summary\n  Python $version ($py): $result ($(($(date +%s) - start)) s)"
done
printf "python-matrix summary:%b\n" "$summary"
exit $status
