"""The command that installs an optional extra, for how skill_magics was installed.

skill-magics is not on PyPI, so ``pip install 'skill-magics[mcp]'`` names nothing an index has
(issue 44). From a checkout (an editable install, a ``.pth`` or PYTHONPATH pointing at it, as
`make demo` and `make venv` do) the extra installs from that checkout; from a wheel the extra's
own requirements are installed, as the wheel's metadata lists them.
"""

from __future__ import annotations

import importlib.metadata
import re
import shlex
from pathlib import Path

DISTRIBUTION = "skill-magics"
PACKAGE_DIR = Path(__file__).resolve().parents[2]  # skill_magics/
_NAME_LINE = re.compile(r'^name\s*=\s*"skill-magics"\s*$', re.MULTILINE)
_EXTRA_MARKER = re.compile(r"""extra\s*==\s*["']([\w.-]+)["']""")


def checkout_root(package_dir: Path = PACKAGE_DIR) -> Path | None:
    """The source checkout the package is imported from, or None (a wheel's copy)."""
    root = package_dir.parent
    try:
        text = (root / "pyproject.toml").read_text(encoding="utf-8")
    except OSError:
        return None
    return root if _NAME_LINE.search(text) else None


def extra_requirements(extra: str) -> list[str]:
    """The requirements the installed metadata lists for ``extra`` (markers dropped)."""
    try:
        requires = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    found = []
    for req in requires:
        spec, _, marker = req.partition(";")
        if extra in _EXTRA_MARKER.findall(marker):
            found.append(spec.strip().replace(" ", ""))
    return found


def install_hint(extra: str, *fallback: str) -> str:
    """``pip install ...`` that gives the ``extra``: from the checkout when imported from one,
    else its requirements (``fallback``, e.g. ``"mcp>=2.3"``, when the metadata is missing)."""
    root = checkout_root()
    if root is not None:
        return f"pip install -e {shlex.quote(f'{root}[{extra}]')}"
    reqs = extra_requirements(extra) or list(fallback)
    return "pip install " + " ".join(shlex.quote(r) for r in reqs)
