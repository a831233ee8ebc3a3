"""SKILL.md body -> safe HTML. Raw HTML in the file is escaped, never passed through:
a skill is third-party content and notebook outputs are trusted by the frontend."""

from __future__ import annotations

import html
import re
from collections.abc import Callable
from functools import lru_cache

_HEADING = re.compile(r"<(/?)h([1-6])(?=[ >])")


@lru_cache(maxsize=1)
def _renderer() -> Callable[[str], str] | None:
    try:
        import mistune  # optional (ships with nbconvert); absent: preformatted text
    except ImportError:
        return None
    try:
        # escape=True turns raw HTML into text; mistune also neutralises javascript: links.
        render = mistune.create_markdown(escape=True, plugins=["table", "strikethrough"])
        return lambda text: str(render(text))
    except Exception:  # an unexpected mistune API: fall back rather than fail %skills show
        return None


def preformatted_html(text: str) -> str:
    return f'<pre style="white-space:pre-wrap">{html.escape(text)}</pre>'


def markdown_html(text: str) -> str:
    """Rendered markdown when mistune is installed, else an escaped ``<pre>``."""
    render = _renderer()
    if render is None:
        return preformatted_html(text)
    try:
        rendered = str(render(text))
    except Exception:  # malformed input must not break the view
        return preformatted_html(text)
    # SKILL.md's "# Title" sits inside a notebook output: demote h1..h6 to h4..h6.
    return _HEADING.sub(lambda m: f"<{m[1]}h{min(6, int(m[2]) + 3)}", rendered)


__all__ = ["markdown_html", "preformatted_html"]
