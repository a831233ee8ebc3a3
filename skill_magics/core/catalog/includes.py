"""Which of a skill's files a shell or JavaScript script pulls in (catalog/kinds.py).

A file another script includes is part of that script: runnable when asked, but not offered
on its own, as with Python imports. Read from the text, never run:

- shell: ``source lib/common.sh``, ``. "$SCRIPT_DIR/common.sh"``,
  ``source "$(dirname "$0")/lib.sh"`` (a path after a variable or ``$(...)`` is read
  relative to the script's folder, the idiom's meaning);
- JavaScript: ``require("./helper")``, ``import x from "./helper.js"``, ``import("./x.mjs")``:
  relative specifiers only (``require("fs")`` is a package), with Node's extension lookup.

Example:
    >>> exists = {"scripts/lib.sh"}.__contains__
    >>> included_files("scripts/run.sh", "bash", 'source "$(dirname "$0")/lib.sh"\\n', exists)
    {'scripts/lib.sh'}
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

_SHELL_TYPES = frozenset({"bash", "sh"})
_NODE_TYPES = frozenset({"node", "typescript"})
_SOURCE_RE = re.compile(r"^[ \t]*(?:source|\.)[ \t]+(?P<arg>[^;&|#\n]+)", re.MULTILINE)
# The path after the last ``$VAR/``, ``${VAR}/`` or ``$(...)/`` in a source argument.
_AFTER_VAR_RE = re.compile(r"(?:\)|\}|\$\w+)[\"']?/(?P<path>[\w.\-/]+)")
_PLAIN_RE = re.compile(r"^[\"']?(?P<path>[\w.\-/]+)[\"']?$")
_JS_RE = re.compile(
    r"""(?:\brequire\s*\(\s*|\bimport\s*\(\s*|\bfrom\s+|^\s*import\s+)"""
    r"""(?P<q>['"])(?P<spec>\.{1,2}/[^'"\n]+)(?P=q)""",
    re.MULTILINE,
)
_JS_EXTENSIONS = ("", ".js", ".mjs", ".cjs", ".ts", "/index.js", "/index.mjs", "/index.cjs")
MAX_TEXT = 1 << 20


def included_files(
    rel: str, script_type: str, text: str, is_file: Callable[[str], bool]
) -> set[str]:
    """Skill files (relative posix paths) the script ``rel`` includes; ``is_file(rel)`` says
    whether a relative path is a file of the skill."""
    folder = posixpath.dirname(rel)
    found: set[str] = set()
    if script_type in _SHELL_TYPES:
        for m in _SOURCE_RE.finditer(text[:MAX_TEXT]):
            arg = m.group("arg").strip()
            after = list(_AFTER_VAR_RE.finditer(arg))
            if after:
                candidates = [posixpath.join(folder, after[-1].group("path"))]
            else:
                plain = _PLAIN_RE.match(arg)
                if plain is None or plain.group("path").startswith("/"):
                    continue
                path = plain.group("path")
                candidates = [posixpath.join(folder, path), path]  # its folder, or the root
            _add_first(candidates, is_file, found)
    elif script_type in _NODE_TYPES:
        for m in _JS_RE.finditer(text[:MAX_TEXT]):
            target = posixpath.join(folder, m.group("spec"))
            _add_first([target + ext for ext in _JS_EXTENSIONS], is_file, found)
    found.discard(rel)
    return found


def _add_first(candidates: list[str], is_file: Callable[[str], bool], found: set[str]) -> None:
    for candidate in candidates:
        norm = posixpath.normpath(candidate)
        if norm.startswith("../") or norm == "..":
            continue
        if is_file(norm):
            found.add(norm)
            return


__all__ = ["included_files"]
