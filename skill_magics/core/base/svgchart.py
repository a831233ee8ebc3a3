"""An SVG chart as plain text (no plotting library): it shows in Jupyter (``_repr_svg_``),
inside static HTML, on GitHub and nbviewer. The lab's trigger chart and ``%skills usage``'s
chart are drawn as one; here so both may use it from their own floor."""

from __future__ import annotations

import os
from pathlib import Path

PASS = "#2e7d32"  # a passed query, a completed run
FAIL = "#c62828"  # a failed one


class Chart(str):
    """An SVG document (a ``str``) that Jupyter draws."""

    def _repr_svg_(self) -> str:
        return str(self)

    def save(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        target.write_text(str(self), "utf-8")
        return target


__all__ = ["FAIL", "PASS", "Chart"]
