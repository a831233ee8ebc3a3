#!/usr/bin/env bash
# Run the real-kernel tests (pytest -m kernel) once per supported ipykernel version, but for the
# main_only ones (tests/conftest.py, MAIN_ONLY: the same under every ipykernel; the main venv runs
# them).
#
# Each version gets its own venv under .venv-matrix/ipykernel-X (created on first use, reused
# until uv.lock changes; uv's cache makes re-creation cheap). The venv holds the kernel:
# ipykernel==X plus the runtime dependencies and the [lab] and [mcp] extras (the model SDKs:
# the lab's approval paths are clicked there too; the MCP SDK: notebooks/08_mcp_skills.ipynb
# serves skills from the kernel) as uv.lock pins them (scripts/locked-install.sh),
# and a .pth file pointing at this checkout (an
# editable install without build artefacts in the repo). pytest itself runs from the main venv
# and starts kernels with SKILL_MAGICS_TEST_KERNEL_PYTHON=<matrix venv python>, through a private
# kernelspec in a temp dir (tests/kernel_fixtures.py).
#
# The main venv's own ipykernel (the newest, 7.4+: the await path of docs/architecture.md,
# Waiting for a click) is tested by `make test`'s pytest run.
#
# The entry "colab" is Google Colab's pinned stack instead of one ipykernel version:
# a venv from the Python the pins file names (3.13: COLAB_PYTHON, else python3.13 on PATH,
# else ~/.pyenv/versions/3.13*) holding exactly scripts/colab-pins.txt (IPython 7.34,
# ipykernel 6.17.1, ipywidgets 7.7.1, ...). Building it checks that pip installed exactly
# the pins, then installs skill-magics into it (editable, `-c` the pins) and fails when that
# moves a pin. Its run adds the example notebooks (-m "kernel or notebooks") and leaves out
# the browser test (tests/e2e): JupyterLab 4's widget manager (jupyterlab_widgets 3) renders
# ipywidgets 8 models only, so ipywidgets 7's show "Error displaying widget" there; Colab's own
# frontend renders them, and the kernel tests click them over jupyter_client as it does.
#
# Usage: scripts/kernel-matrix.sh [VERSION|colab...] [-- PYTEST_ARGS...]
#   e.g.  scripts/kernel-matrix.sh                  (7.4.0 7.3.0 6.29.5 colab)
#         scripts/kernel-matrix.sh 6.29.5 -- -x -k click
#         scripts/kernel-matrix.sh colab -- -k stdin
#         scripts/kernel-matrix.sh --print-deps     the locked runtime dependencies it installs
#         scripts/kernel-matrix.sh --plan [VERSION...]   versions and Pythons; installs nothing
#   KERNEL_MATRIX_VERSIONS="..."             default versions when none are given
#   PYTHON=.venv/bin/python                  the Python that runs pytest
#   BASE_PYTHON=...                          the Python that creates the matrix venvs
#   KERNEL_MATRIX_DIR=.venv-matrix           where the venvs live
#   COLAB_PYTHON=...                         the Python 3.13 of the colab venv
#   COLAB_PINS=scripts/colab-pins.txt        the pins of the colab venv
#   SKILL_MAGICS_E2E_REQUIRED=0|1            browser test may (0) / may not (1) skip; default:
#                                            1 when chromium is on PATH (as in `make test`)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
# 7.4+: await path; 7.0-7.3: subshell thread; 6.x: pumping (docs/architecture.md, Waiting for a click).
VERSIONS="${KERNEL_MATRIX_VERSIONS:-7.4.0 7.3.0 6.29.5 colab}"
mode=run
case "${1:-}" in
    --print-deps) mode=deps; shift ;;
    --plan) mode=plan; shift ;;
esac
given=""
while [ $# -gt 0 ]; do
    case "$1" in
        --) shift; break ;;
        [0-9]*|colab) given="$given $1"; shift ;;
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
# The matrix venvs hold what uv.lock pins for the runtime dependencies and the
# [lab] and [mcp] extras (the lab's approval paths are clicked there too:
# tests/test_vscode_kernel.py; 08_mcp_skills.ipynb adds and serves MCP servers), ipykernel
# replaced.
locked_runtime() {
    "$ROOT/.venv/bin/uv" export --locked --quiet --format requirements.txt --no-hashes \
        --no-emit-project --extra lab --extra mcp | grep -E '^[A-Za-z0-9]' | grep -viE '^ipykernel[ =]'
}
if [ "$mode" = deps ]; then
    locked_runtime
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

# -- the colab entry --------------------------------------------------------------------
COLAB_PINS="${COLAB_PINS:-$ROOT/scripts/colab-pins.txt}"
# "# python: 3.13" and "# absent: jedi" lines of the pins file; the pins themselves
pins_directive() { sed -n "s/^# $1: *//p" "$COLAB_PINS" | head -1; }
pins_list() { grep -E '^[A-Za-z0-9]' "$COLAB_PINS" | sed 's/[[:space:]]*#.*//'; }
# name==version, lower-case, '-' for '_' and '.' (as pip compares names), sorted
canonical_pins() { tr 'A-Z' 'a-z' | sed -E 's/^([^=]+)==/\1 ==/; :a; s/^([^ ]*)[_.]([^ ]* ==)/\1-\2/; ta; s/ ==/==/' | sort; }

# The Python the pins name: COLAB_PYTHON, else pythonX.Y on PATH, else pyenv's newest X.Y.*.
colab_python() {
    local want cand
    want="$(pins_directive python)"
    if [ -n "${COLAB_PYTHON:-}" ]; then
        echo "$COLAB_PYTHON"
        return 0
    fi
    for cand in "python$want" $(ls -d "$HOME"/.pyenv/versions/"$want".*/bin/python 2>/dev/null | sort -V -r); do
        # pyenv shims of unselected versions do not run; venv needs ensurepip
        if [ "$(pyver "$cand")" = "$want" ] && "$cand" -c 'import ensurepip, venv' >/dev/null 2>&1; then
            "$cand" -c 'import sys; print(sys.executable)'
            return 0
        fi
    done
    return 1
}

# Build (or reuse) the colab venv: exactly the pins, then skill-magics beside them.
make_colab_venv() {
    local venv="$1" base="$2"
    local stamp="$venv/.skill-magics-matrix"
    local want
    want="colab[lab,mcp] $(sha256sum "$COLAB_PINS" | cut -c1-16) ${DEPS[*]} (Python $(pyver "$base"))"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    echo "kernel-matrix: creating $venv (Colab's stack from $(basename "$COLAB_PINS"), Python $(pyver "$base"))"
    rm -rf "$venv"
    "$base" -m venv "$venv"
    local pip=("$venv/bin/python" -m pip --disable-pip-version-check)
    local log="$venv/pip-install.log"
    # Colab's image is not made by pip either: uv lays the pins down (120 s with pip on two
    # busy cores, most of the stage's set-up).
    if ! UV_PYTHON_DOWNLOADS=never "$ROOT/.venv/bin/uv" pip install --quiet \
        --python "$venv/bin/python" -r "$COLAB_PINS" >"$log" 2>&1; then
        cat "$log" >&2
        echo "kernel-matrix: uv could not install $COLAB_PINS on Python $(pyver "$base") (log above)" >&2
        return 1
    fi
    local absent
    absent="$(pins_directive absent)"
    if [ -n "$absent" ]; then
        # shellcheck disable=SC2086
        "${pip[@]}" uninstall --yes $absent >>"$log" 2>&1
    fi
    local before="$venv/freeze-pins.txt" after="$venv/freeze-with-skill-magics.txt"
    "${pip[@]}" freeze --all --exclude pip | canonical_pins >"$before"
    if ! diff <(pins_list | canonical_pins) "$before" >"$venv/pins.diff"; then
        echo "kernel-matrix: the colab venv is not exactly $COLAB_PINS ('<' pinned, '>' installed):" >&2
        cat "$venv/pins.diff" >&2
        echo "kernel-matrix: pin the new dependency (or fix the version) in $COLAB_PINS" >&2
        return 1
    fi
    # What `%pip install skill-magics[lab,mcp]` does on Colab: it must move none of the pins
    # (resolved by uv against them as constraints: pip took 100 s of a loaded CI run here).
    # The extras are there because the example notebooks include the lab's (model SDKs) and
    # 08_mcp_skills (the MCP SDK).
    if ! UV_PYTHON_DOWNLOADS=never "$ROOT/.venv/bin/uv" pip install --python "$venv/bin/python" \
        -e "$ROOT[lab,mcp]" -c "$COLAB_PINS" >>"$log" 2>&1; then
        tail -30 "$log" >&2
        echo "kernel-matrix: skill-magics does not install beside $COLAB_PINS (log above): loosen pyproject.toml's ranges" >&2
        return 1
    fi
    "${pip[@]}" freeze --all --exclude pip --exclude skill-magics | canonical_pins >"$after"
    local moved added
    moved="$(comm -23 "$before" "$after" | tr '\n' ' ')"
    added="$(comm -13 "$before" "$after" | tr '\n' ' ')"
    if [ -n "$moved" ]; then
        echo "kernel-matrix: installing skill-magics moved Colab's pins: $moved-> $added" >&2
        return 1
    fi
    echo "kernel-matrix: skill-magics installs beside Colab's pins; none moved; pip added: ${added:-nothing}"
    echo "$want" > "$stamp"
}

if [ "$mode" = plan ]; then
    for version in $VERSIONS; do
        if [ "$version" = colab ]; then
            if base="$(colab_python)"; then
                echo "kernel-matrix plan: colab ($(basename "$COLAB_PINS")) with $(pyver "$base") ($base)"
            else
                echo "kernel-matrix plan: colab: NO Python $(pins_directive python) found (set COLAB_PYTHON)"
            fi
            continue
        fi
        echo "kernel-matrix plan: ipykernel $version with $(pyver "$BASE_PYTHON") ($BASE_PYTHON)"
    done
    exit 0
fi

make_venv() {
    local version="$1" venv="$2" base="$3"
    local stamp="$venv/.skill-magics-matrix"
    local want="ipykernel==$version [lab,mcp] lock $(sha256sum uv.lock | cut -c1-16) (Python $(pyver "$base"))"
    if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
        return 0
    fi
    echo "kernel-matrix: creating $venv ($want)"
    rm -rf "$venv"
    "$base" -m venv "$venv"
    # uv.lock's runtime pins with ipykernel==X instead of the lock's: only what that version
    # alone needs is resolved anew. The output goes to a log, shown when the install fails.
    if ! bash "$ROOT/scripts/locked-install.sh" "$venv/bin/python" --no-project --extra lab \
        --extra mcp --replace "ipykernel==$version" >"$venv/pip-install.log" 2>&1; then
        cat "$venv/pip-install.log" >&2
        echo "kernel-matrix: could not install uv.lock's runtime pins with ipykernel==$version (log above)" >&2
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
    start=$(date +%s)
    if [ "$version" = colab ]; then
        # Colab's stack: the kernel tests plus the example notebooks, in a kernel from it.
        label="colab ($(basename "$COLAB_PINS"))"
        venv="$MATRIX_DIR/colab"
        expect="$(pins_list | sed -n 's/^ipykernel==//p')"
        marks="(kernel or notebooks) and not main_only"
        skip=(--ignore=tests/e2e)  # see the header: no JupyterLab here renders ipywidgets 7
        if ! base="$(colab_python)"; then
            status=1
            summary="$summary\n  $label: NO Python $(pins_directive python) (install it or set COLAB_PYTHON)"
            echo "kernel-matrix: colab needs Python $(pins_directive python): none found; install it or set COLAB_PYTHON" >&2
            continue
        fi
        built=0
        make_colab_venv "$venv" "$base" || built=1
        pins="$COLAB_PINS"
    else
        label="ipykernel $version"
        venv="$MATRIX_DIR/ipykernel-$version"
        expect="$version"
        marks="kernel and not main_only"
        skip=()
        built=0
        make_venv "$version" "$venv" "$BASE_PYTHON" || built=1
        pins=""
    fi
    if [ "$built" != 0 ]; then
        status=1
        summary="$summary\n  $label: venv FAILED"
        continue
    fi
    built_s=$(($(date +%s) - start))
    echo "kernel-matrix: $label ($venv/bin/python)"
    if SKILL_MAGICS_TEST_KERNEL_PYTHON="$venv/bin/python" SKILL_MAGICS_EXPECT_IPYKERNEL="$expect" \
        SKILL_MAGICS_EXPECT_PINS="$pins" \
        "$PYTHON" -m pytest -m "$marks" -q -rs -p no:cacheprovider "${skip[@]}" "$@"; then
        result="passed"
    else
        result="FAILED"
        status=1
    fi
    summary="$summary\n  $label: $result ($(($(date +%s) - start)) s, venv $built_s s)"
done
printf "kernel-matrix summary:%b\n" "$summary"
exit $status
