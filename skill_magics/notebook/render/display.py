"""Display: a text + HTML pair that IPython shows as HTML in Jupyter and text in a terminal."""

from __future__ import annotations

from typing import Any


class Display:
    """What the table renderers return.

    >>> d = Display("name  scripts", "<table>...</table>")
    >>> d                     # terminal / text/plain
    name  scripts
    """

    def __init__(self, text: str, html: str) -> None:
        self.text = text
        self.html = html

    def _repr_mimebundle_(self, include: Any = None, exclude: Any = None, **kwargs: Any) -> dict:
        return {"text/plain": self.text, "text/html": self.html}

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Display) and (self.text, self.html) == (other.text, other.html)

    __hash__ = None  # type: ignore[assignment]  # mutable value object


__all__ = ["Display"]
