"""Print the version uv.lock pins for a package: ``python scripts/lock_version.py uv``.

Stdlib only: it runs before any venv exists (the Makefile bootstraps uv at this version).
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

LOCK = Path(__file__).resolve().parents[1] / "uv.lock"


def locked_version(name: str, lock: Path = LOCK) -> str:
    want = re.sub(r"[-_.]+", "-", name).lower()
    with lock.open("rb") as fh:
        packages = tomllib.load(fh).get("package", [])
    versions = {p["version"] for p in packages if p.get("name") == want and "version" in p}
    if len(versions) != 1:
        found = ", ".join(sorted(versions)) or "none"
        raise SystemExit(f"{lock.name}: expected one locked version of {want}, found {found}")
    return versions.pop()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        raise SystemExit("usage: python scripts/lock_version.py PACKAGE")
    print(locked_version(sys.argv[1]))
