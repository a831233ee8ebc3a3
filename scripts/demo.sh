#!/usr/bin/env bash
# `make demo`: JupyterLab serving notebooks/01_quickstart.ipynb with the bundled example skills
# configured (SKILL_MAGICS_PATH), on 127.0.0.1 only. Prints the URL once the server answers;
# Ctrl-C stops the server and its kernels.
#
#   PORT=8888 (default)   PYTHON=.venv/bin/python   TOKEN=<random unless set>
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
PORT="${PORT:-8888}"
NOTEBOOK="notebooks/01_quickstart.ipynb"

if [ ! -x "$PYTHON" ]; then
    echo "demo: $PYTHON not found; run \`make venv\` first (or set PYTHON=)" >&2
    exit 2
fi
if ! "$PYTHON" -c "import jupyterlab" 2>/dev/null; then
    echo "demo: JupyterLab is not installed in $PYTHON; run: $PYTHON -m pip install -e '.[e2e]'" >&2
    exit 2
fi
TOKEN="${TOKEN:-$("$PYTHON" -c 'import secrets; print(secrets.token_hex(16))')}"
extra=()
if [ "$(id -u)" = "0" ]; then
    extra+=(--allow-root)  # containers and CI boxes often run as root
fi

export SKILL_MAGICS_PATH="$ROOT/skill_magics/examples/skills${SKILL_MAGICS_PATH:+:$SKILL_MAGICS_PATH}"
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"  # works without `pip install -e .` too

"$PYTHON" -m jupyterlab --no-browser --ServerApp.ip=127.0.0.1 --ServerApp.port="$PORT" \
    --ServerApp.port_retries=0 --IdentityProvider.token="$TOKEN" \
    --ServerApp.root_dir="$ROOT" "${extra[@]}" &
server=$!
# A background job ignores SIGINT in a script, so Ctrl-C reaches us: stop the server with TERM.
trap 'kill -TERM "$server" 2>/dev/null; wait "$server" 2>/dev/null; exit 130' INT TERM

ready=0
for _ in $(seq 1 240); do
    if ! kill -0 "$server" 2>/dev/null; then
        wait "$server" || true
        echo "demo: JupyterLab exited; is port $PORT in use? try PORT=8899 make demo" >&2
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
    echo "demo: JupyterLab did not answer on port $PORT within 2 minutes; see its log above" >&2
    exit 1
fi

cat <<EOF

==============================================================================
 skill_magics demo is running. Open this URL in your browser:

   http://127.0.0.1:$PORT/lab/tree/$NOTEBOOK?token=$TOKEN

 The example skills are configured (SKILL_MAGICS_PATH). Run the cells: each
 %%skillrun asks Yes once / Yes in session / No first. Ctrl-C to stop.
==============================================================================

EOF
wait "$server"
