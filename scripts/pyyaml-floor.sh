#!/usr/bin/env bash
# The YAML tests under the oldest PyYAML that pyproject.toml accepts. The lock holds the newest
# (and `make test-latest` the newest of the day); the floor is what a user with an old
# environment keeps, and PyYAML's own limits moved between them (6.0.4's libyaml stops deep
# nesting itself), so the frontmatter rules are checked at both ends.
#
# A venv under .venv-matrix/pyyaml-<floor>: the lock minus PyYAML, PyYAML==<floor>, and a
# .pth to this checkout. PYTHON=.venv/bin/python (its interpreter makes the venv).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-$ROOT/.venv/bin/python}"
BASE="$("$PYTHON" -c 'import sys; print(sys._base_executable)')"
FLOOR="$("$PYTHON" - <<'PY'
import tomllib

from packaging.requirements import Requirement

with open("pyproject.toml", "rb") as fh:
    deps = tomllib.load(fh)["project"]["dependencies"]
(spec,) = [Requirement(d).specifier for d in deps if Requirement(d).name.lower() == "pyyaml"]
(low,) = [s.version for s in spec if s.operator in (">=", "==", "~=")]
print(low)
PY
)"
VENV="${KERNEL_MATRIX_DIR:-$ROOT/.venv-matrix}/pyyaml-$FLOOR"
stamp="$VENV/.skill-magics-floor"
want="pyyaml==$FLOOR $(sha256sum uv.lock | cut -c1-16) $("$BASE" -V 2>&1)"
start=$(date +%s)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "pyyaml-floor: creating $VENV (the lock, with PyYAML==$FLOOR)"
    rm -rf "$VENV"
    "$BASE" -m venv --without-pip "$VENV"
    bash scripts/locked-install.sh "$VENV/bin/python" --extra test --no-project --replace "pyyaml==$FLOOR"
    site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    echo "$ROOT" >"$site/skill_magics_checkout.pth"
    echo "$want" >"$stamp"
fi
got="$("$VENV/bin/python" -c 'import yaml; print(yaml.__version__, "libyaml" if yaml.__with_libyaml__ else "pure Python")')"
echo "pyyaml-floor: PyYAML $got (pyproject.toml's floor: $FLOOR)"
case "$got" in
    "$FLOOR"* ) ;;
    *) echo "pyyaml-floor: the venv holds PyYAML $got, not $FLOOR" >&2; exit 1 ;;
esac
# The tests that read YAML: frontmatter, validation, discovery, the public skills' shapes.
if "$VENV/bin/python" -m pytest -q -p no:cacheprovider tests/test_frontmatter.py \
    tests/test_validation.py tests/test_discovery.py tests/test_conformance.py; then
    echo "pyyaml-floor: PyYAML $FLOOR passed ($(($(date +%s) - start)) s)"
else
    echo "pyyaml-floor: PyYAML $FLOOR FAILED" >&2
    exit 1
fi
