#!/usr/bin/env bash
# `make demo`: JupyterLab serving a working copy of notebooks/01_quickstart.ipynb with the
# bundled example skills configured (SKILL_MAGICS_PATH), on 127.0.0.1 only. Prints the URL once
# the server answers; Ctrl-C stops the server and its kernels.
#
# JupyterLab saves what it shows (autosave every 120 s), so it never serves the tracked
# notebooks: it serves DEMO_DIR (default .demo/, git-ignored), holding copies of notebooks/*.ipynb.
# On each start a copy is (re)made from notebooks/ when it is missing or unedited; a copy you
# changed (edits, or cells you ran) is kept and reported. DEMO_FRESH=1 replaces edited copies,
# moving them to DEMO_DIR/backup/ first. Beside them only docs/images (the screenshots they
# show); the example skills (and data/sample.csv) come from the package.
#
#   PORT=8888 (default)   PYTHON=.venv/bin/python   TOKEN=<random unless set>
#   DEMO_DIR=.demo        DEMO_FRESH=0
#   FRONTEND=lab (default) or notebook: Notebook 7 instead of JupyterLab (the [demo] extra has both)
#   scripts/demo.sh --prepare     only make/refresh the copies, then exit
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
PORT="${PORT:-8888}"
DEMO_DIR="${DEMO_DIR:-$ROOT/.demo}"
SOURCE="$ROOT/notebooks"
NOTEBOOK="notebooks/01_quickstart.ipynb"  # relative to DEMO_DIR, the server's root

# Copies of notebooks/*.ipynb in DEMO_DIR/notebooks; DEMO_DIR/.pristine keeps what was copied
# (hidden from JupyterLab), so an edited copy can be told from an old unedited one.
prepare_copies() {
    local copies="$DEMO_DIR/notebooks" pristine_dir="$DEMO_DIR/.pristine"
    local backup_dir="" src name copy pristine
    mkdir -p "$copies" "$pristine_dir" "$DEMO_DIR/docs"
    # The notebooks show ../docs/images/*.png: keep that relative path working in the copy.
    cp -Rf "$ROOT/docs/images" "$DEMO_DIR/docs/"
    for src in "$SOURCE"/*.ipynb; do
        [ -f "$src" ] || continue
        name="$(basename "$src")"
        copy="$copies/$name"
        pristine="$pristine_dir/$name"
        if [ ! -e "$copy" ]; then
            cp -f "$src" "$copy" && cp -f "$src" "$pristine"
            echo "demo: copied notebooks/$name to $copy"
        elif [ -f "$pristine" ] && cmp -s "$copy" "$pristine"; then
            if ! cmp -s "$src" "$copy"; then  # unedited, and notebooks/ has a newer version
                cp -f "$src" "$copy" && cp -f "$src" "$pristine"
                echo "demo: refreshed $copy from notebooks/$name"
            fi
        elif [ "${DEMO_FRESH:-0}" = 1 ]; then
            backup_dir="${backup_dir:-$DEMO_DIR/backup/$(date +%Y%m%d-%H%M%S)}"
            mkdir -p "$backup_dir"
            mv "$copy" "$backup_dir/$name"
            cp -f "$src" "$copy" && cp -f "$src" "$pristine"
            echo "demo: DEMO_FRESH=1: moved your edited copy to $backup_dir/$name and copied notebooks/$name afresh"
        else
            if [ -f "$pristine" ] && ! cmp -s "$src" "$pristine"; then
                echo "demo: kept your edited $copy, although notebooks/$name has changed since it was copied"
            else
                echo "demo: kept your edited $copy"
            fi
            echo "demo:   (to start from notebooks/$name again: DEMO_FRESH=1 make demo; your copy goes to $DEMO_DIR/backup/)"
        fi
    done
}

if [ "${1:-}" = "--prepare" ]; then
    prepare_copies
    exit 0
fi

if [ ! -x "$PYTHON" ]; then
    echo "demo: $PYTHON not found; run \`make venv\` first (or set PYTHON=)" >&2
    exit 2
fi
FRONTEND="${FRONTEND:-lab}"
case "$FRONTEND" in
    lab) APP=jupyterlab; NAME=JupyterLab; PAGE="lab/tree/$NOTEBOOK" ;;
    notebook) APP=notebook; NAME="Notebook 7"; PAGE="notebooks/$NOTEBOOK" ;;
    *) echo "demo: FRONTEND=$FRONTEND: use FRONTEND=lab (JupyterLab) or FRONTEND=notebook (Notebook 7)" >&2; exit 2 ;;
esac
if ! "$PYTHON" -c "import $APP" 2>/dev/null; then
    echo "demo: $NAME is not installed in $PYTHON; run: $PYTHON -m pip install -e '$ROOT[demo]'" >&2
    exit 2
fi
prepare_copies
# JupyterLab takes 10-30 s to answer: say so at once, not after a silent wait (issue 44).
echo "demo: starting $NAME on http://127.0.0.1:$PORT (10-30 s; the URL to open follows)"
TOKEN="${TOKEN:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')}"
extra=()
if [ "$(id -u)" = "0" ]; then
    extra+=(--allow-root)  # containers and CI boxes often run as root
fi

export SKILL_MAGICS_PATH="$ROOT/skill_magics/examples/skills${SKILL_MAGICS_PATH:+:$SKILL_MAGICS_PATH}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # works without `pip install -e .` too

"$PYTHON" -m "$APP" --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port="$PORT" \
    --ServerApp.port_retries=0 --IdentityProvider.token="$TOKEN" \
    --ServerApp.root_dir="$DEMO_DIR" "${extra[@]}" &
server=$!
# A background job ignores SIGINT in a script, so Ctrl-C reaches us: stop the server with TERM.
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; exit 130' INT TERM

ready=0
for _ in $(seq 1 240); do
    if ! kill -0 "$server" 2>/dev/null; then
        wait "$server" || true
        echo "demo: $NAME exited; is port $PORT in use? try PORT=8899 make demo" >&2
        exit 1
    fi
    if "$PYTHON" -c "import urllib.request, sys; urllib.request.urlopen('http://127.0.0.1:$PORT/api/status?token=$TOKEN', timeout=2)" 2>/dev/null; then
        ready=1
        break
    fi
    sleep 0.5
done
if [ "$ready" != 1 ]; then
    kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null
    echo "demo: $NAME did not answer on port $PORT within 2 minutes; see its log above" >&2
    exit 1
fi

cat <<EOF

==============================================================================
 skill_magics demo is running. Open this URL in your browser:

   http://127.0.0.1:$PORT/$PAGE?token=$TOKEN

 That is a working copy: $DEMO_DIR/$NOTEBOOK
 Edit and save freely; the committed notebooks/ are never touched.
 The example skills are configured (SKILL_MAGICS_PATH). Run the cells: each
 %%skillrun asks Yes once / Yes in session / No first. Ctrl-C to stop.
==============================================================================

EOF
wait "$server"
