"""What differs between the IPython, ipywidgets and ipykernel versions this layer supports.

The oldest is Google Colab's pinned stack (IPython 7.34, ipykernel 6.17, ipywidgets 7.7:
scripts/colab-pins.txt); the newest paths stay the default. Every version test of the notebook
layer lives here, except *how to wait for a click*, which is the strategy table of
``approval/waiting.py: choose`` (docs/architecture.md, *Waiting for a click*); it reads the
kernel's version from here.

- Completion: IPython >= 8.6 has the Matcher API v2 (``context_matcher``, ``SimpleCompletion``,
  a matcher that suppresses the others). IPython 7 has none of it; there a line matcher in
  ``Completer.magic_arg_matchers`` answers first and alone on the lines it completes. IPython 7
  does not tell a matcher which line of the cell the cursor is on, so ``%%skillrun`` names are
  offered on any line that starts with it (a cell magic's line is the first one anyway).
- Widgets: ipywidgets 8 shows a widget through ``_repr_mimebundle_`` (so ``display(widget,
  display_id=True)`` can be updated later) and takes ``Tab(titles=...)``; ipywidgets 7 shows
  itself through ``_ipython_display_``, which ignores the display id, and titles tabs with
  ``set_title``. :func:`widget_view` and :func:`show_widget` give both the same behaviour.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"

# (text of the line up to the cursor, the cursor's line in the cell or None when the IPython
# cannot tell) -> (the fragment being completed, full names that replace it), or None.
LineCompleter = Callable[[str, "int | None"], "tuple[str, list[str]] | None"]


def parse_version(text: str) -> tuple[int, ...]:
    """(7, 34, 0) from "7.34.0"; a part's digits end at a letter: "8.1.0rc1" -> (8, 1, 0)."""
    parts: list[int] = []
    for piece in str(text).split("."):
        digits = ""
        for ch in piece:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(piece):
            break
    return tuple(parts)


def loaded_version(module: str) -> tuple[int, ...] | None:
    """Version of an already imported module (None when it is not imported): never imports."""
    found = sys.modules.get(module)
    if found is None:
        return None
    return parse_version(getattr(found, "__version__", "")) or None


def ipykernel_version() -> tuple[int, ...] | None:
    """Version of the ipykernel running this process, or None outside a kernel."""
    return loaded_version("ipykernel")


def ipywidgets_version() -> tuple[int, ...]:
    """Version of ipywidgets (imports it: call where a widget is about to be built)."""
    import ipywidgets

    return parse_version(ipywidgets.__version__)


# -- completion ----------------------------------------------------------------------------


def matcher_api_v2() -> bool:
    """IPython >= 8.6: ``context_matcher`` and ``SimpleCompletion`` exist."""
    try:
        from IPython.core.completer import SimpleCompletion, context_matcher  # noqa: F401
    except ImportError:
        return False
    return True


def add_completer(completer: Any, identifier: str, complete: LineCompleter) -> Any:
    """Register ``complete`` on IPython's ``Completer``; returns what was registered.

    Where it answers (non-empty names), the other matchers are suppressed (file names and
    Python names are noise on a magic's line).
    """
    remove_completer(completer, identifier)
    if matcher_api_v2():
        matcher = _v2_matcher(identifier, complete)
        completer.custom_matchers.append(matcher)
        return matcher
    matcher = _line_matcher(completer, identifier, complete)
    completer.magic_arg_matchers.append(matcher)
    return matcher


def remove_completer(completer: Any, identifier: str) -> None:
    """Undo :func:`add_completer` (either API)."""
    for name in ("custom_matchers", "magic_arg_matchers"):
        matchers = getattr(completer, name, None)
        if isinstance(matchers, list):
            matchers[:] = [
                m for m in matchers if getattr(m, "matcher_identifier", "") != identifier
            ]


def _v2_matcher(identifier: str, complete: LineCompleter) -> Any:
    from IPython.core.completer import SimpleCompletion, context_matcher

    @context_matcher(identifier=identifier)
    def matcher(context: Any) -> dict[str, Any]:
        found = complete(context.text_until_cursor, context.cursor_line)
        if not found:
            return {"completions": [], "suppress": False}
        prefix, names = found
        hits = [SimpleCompletion(n, type="skill") for n in names]
        return {"completions": hits, "matched_fragment": prefix, "suppress": bool(hits)}

    return matcher


def _line_matcher(completer: Any, identifier: str, complete: LineCompleter) -> Any:
    """IPython 7: called with the whole line; the first one with results answers alone, and
    what it returns replaces IPython's own fragment (split at its delimiters)."""

    def matcher(_line: str) -> list[str]:
        before = getattr(completer, "text_until_cursor", "") or ""
        found = complete(before, None)
        if not found:
            return []
        prefix, names = found
        fragment = completer.splitter.split_line(before, len(before)) if before else ""
        if not prefix.endswith(fragment):
            return []
        cut = len(prefix) - len(fragment)  # IPython replaces only the fragment after a delimiter
        return [name[cut:] for name in names]

    matcher.matcher_identifier = identifier  # type: ignore[attr-defined]
    return matcher


# -- widgets -------------------------------------------------------------------------------


def widget_view(widget: Any) -> dict[str, Any]:
    """The ``application/vnd.jupyter.widget-view+json`` data that shows ``widget``."""
    bundle_of = getattr(widget, "_repr_mimebundle_", None)
    if bundle_of is not None:  # ipywidgets >= 8
        bundle = bundle_of()
        if isinstance(bundle, tuple):
            bundle = bundle[0]
        return dict(bundle[WIDGET_MIME])
    # ipywidgets 7 builds the same data inside _ipython_display_ (protocol 2)
    return {"version_major": 2, "version_minor": 0, "model_id": widget.model_id}


def show_widget(widget: Any) -> Any:
    """``display(widget, display_id=True)``: the handle can update or replace the output."""
    from IPython.display import display

    if hasattr(widget, "_repr_mimebundle_"):  # ipywidgets >= 8
        return display(widget, display_id=True)
    text = repr(widget)
    short = text[:110] + ("…" if len(text) > 110 else "")
    bundle = {"text/plain": short, WIDGET_MIME: widget_view(widget)}
    handle = display(bundle, raw=True, display_id=True)
    widget._handle_displayed()  # what ipywidgets 7's _ipython_display_ does after showing
    return handle


def widget_ids(widget: Any) -> list[str]:
    """The model (comm) ids of ``widget`` and every widget it holds, at any depth."""
    found: list[str] = []
    stack = [widget]
    while stack:
        item = stack.pop()
        model_id = getattr(item, "model_id", None)
        if not isinstance(model_id, str) or model_id in found:
            continue
        found.append(model_id)
        stack.extend(getattr(item, "children", None) or ())
    return found


def tab(children: Sequence[Any], titles: Sequence[str]) -> Any:
    """An ipywidgets Tab with these pages and titles."""
    import ipywidgets as w

    if ipywidgets_version() >= (8,):
        return w.Tab(children=list(children), titles=list(titles))
    made = w.Tab(children=list(children))
    for index, title in enumerate(titles):
        made.set_title(index, title)
    return made


def tab_titles(widget: Any) -> list[str]:
    """The titles of a Tab, whichever ipywidgets made it."""
    titles = getattr(widget, "titles", None)
    if titles is not None:  # ipywidgets >= 8
        return list(titles)
    return [widget.get_title(i) or "" for i in range(len(widget.children))]


__all__ = [
    "WIDGET_MIME",
    "LineCompleter",
    "parse_version",
    "loaded_version",
    "ipykernel_version",
    "ipywidgets_version",
    "matcher_api_v2",
    "add_completer",
    "remove_completer",
    "widget_view",
    "show_widget",
    "widget_ids",
    "tab",
    "tab_titles",
]
