"""Skill activation in the Agent Skills client guide's format: ``<skill_content>``.

What a model receives when it activates a skill (docs/architecture.md, *Activation*)::

    <skill_content name="pdf-processing">
    # PDF Processing
    ...the SKILL.md body, frontmatter stripped...

    Skill directory: /home/user/.agents/skills/pdf-processing
    Relative paths in this skill are relative to the skill directory.

    <skill_resources>
      <file>references/guide.md</file>
      <file>scripts/extract.py</file>
    </skill_resources>
    </skill_content>

- The instructions are the SKILL.md body with trailing newlines trimmed; the directory is
  absolute and resolved.
- ``<skill_resources>`` lists the skill's files by relative path, sorted, **without reading
  any of them** (the model reads what the instructions point to). Left out: SKILL.md itself,
  hidden files and folders, ``__pycache__``, ``node_modules`` and virtual environments.
  At most ``max_resources`` (default 50) are listed; beyond that the element says
  ``truncated="true" total="N"`` and a comment says how many were not listed. A file that is
  a symlink resolving outside the skill is listed with ``error="outside the skill"``.
- Well-formed XML whatever the files or names contain (``core/prompt/xmltext.py``: escaping, and
  ``sanitized="text"`` for characters XML cannot carry); :func:`parse_skill_content` gives
  the exact texts back.
- No script runs and no approval is asked: activation only shows text. Scripts run through
  the script tools (``core/prompt/tools.py``), each through the approval gate.
- An unknown skill gives ``<skill_content name=".." status="not_found">`` with the error and
  close matches; several names give ``<skill_contents>`` wrapping one element per skill.

Example:
    >>> xml = skill_content(manager, "csv-profiler")
    >>> parse_skill_content(xml)[0]["directory"]
    '/.../skills/csv-profiler'
"""

from __future__ import annotations

import difflib
import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from skill_magics.core.base import paths
from skill_magics.core.base.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.xmltext import body, decoded_text, element, start_tag

MAX_RESOURCES = 50  # files listed per skill
MAX_WALK = 10_000  # directory entries looked at per skill: a huge tree is counted no further
SKIP_DIRS = frozenset({"__pycache__", "node_modules", "venv", ".venv"})
RELATIVE_NOTE = "Relative paths in this skill are relative to the skill directory."
DIRECTORY_PREFIX = "Skill directory: "
OUTSIDE = "outside the skill"


def skill_content(
    manager: SkillManager, names: str | Iterable[str], *, max_resources: int = MAX_RESOURCES
) -> str:
    """``<skill_content>`` for one skill, ``<skill_contents>`` wrapping several."""
    if max_resources < 0:
        raise ValueError(f"max_resources={max_resources}: use 0 or more")
    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    if not wanted:
        raise ValueError("skill_content needs at least one skill name")
    parts = [_one(manager, name, max_resources) for name in wanted]
    if isinstance(names, str):
        return parts[0]
    return "<skill_contents>\n" + "\n".join(parts) + "\n</skill_contents>"


def list_resources(base_dir: Path | str, limit: int = MAX_RESOURCES) -> tuple[list[str], int]:
    """(first ``limit`` relative posix paths, sorted; total files found, capped at MAX_WALK).

    Walks without following directory symlinks and reads no file.
    """
    base = os.fspath(base_dir)
    found: list[str] = []
    seen = 0
    for root, dirs, files in os.walk(base, followlinks=False):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIP_DIRS)
        rel_root = os.path.relpath(root, base)
        for name in sorted(files):
            seen += 1
            if seen > MAX_WALK:
                return sorted(found)[:limit], MAX_WALK
            if name.startswith("."):
                continue
            rel = name if rel_root == "." else f"{rel_root}/{name}".replace(os.sep, "/")
            if rel == "SKILL.md":
                continue
            found.append(rel)
    found.sort()
    return found[:limit], len(found)


def parse_skill_content(xml_text: str) -> list[dict[str, Any]]:
    """Read ``<skill_content>`` (or ``<skill_contents>``) back into dicts with exact texts.

    Each dict: ``name``, ``status`` (``ok`` or ``not_found``/``error``), ``instructions``,
    ``directory``, ``resources`` (list of dicts: ``path`` and optional ``error``),
    ``truncated`` and ``total``; or ``error`` and ``close_matches`` for a missing skill.
    """
    root = ET.fromstring(xml_text)
    items = [root] if root.tag == "skill_content" else list(root.iter("skill_content"))
    return [_parse_one(item) for item in items]


# -- building ------------------------------------------------------------------------------


def _one(manager: SkillManager, name: str, max_resources: int) -> str:
    try:
        skill = manager.get_skill(name)
        instructions = skill.content
    except SkillNotFoundError as exc:
        return _missing(manager, name, "not_found", str(exc))
    except (SkillMagicsError, OSError) as exc:
        return _missing(manager, name, "error", f"Skill {name!r} cannot be read: {exc}")
    directory = str(Path(skill.base_dir).resolve())
    text = f"{instructions.rstrip(chr(10))}\n\n{DIRECTORY_PREFIX}{directory}\n{RELATIVE_NOTE}\n\n"
    head = start_tag("skill_content", {"name": skill.metadata.name}, text=text)
    return f"{head}\n{body(text)}{_resources(directory, max_resources)}\n</skill_content>"


def _resources(directory: str, limit: int) -> str:
    try:
        files, total = list_resources(directory, limit)
    except OSError as exc:  # an unreadable folder: say so, never crash the activation
        return element("skill_resources", f"cannot list: {exc.strerror or exc}", {"error": "true"})
    if not files and total == 0:
        return "<skill_resources/>"
    truncated = total > len(files)
    attrs = {"truncated": "true", "total": total} if truncated else {}
    lines = [start_tag("skill_resources", attrs)]
    real_base = os.path.realpath(directory)
    for rel in files:
        outside = not paths.inside(os.path.realpath(os.path.join(directory, rel)), real_base)
        lines.append("  " + element("file", rel, {"error": OUTSIDE if outside else None}))
    if truncated:
        more = total - len(files)
        lines.append(f"  <!-- {more:,} more files not listed: the listing is incomplete -->")
    lines.append("</skill_resources>")
    return "\n".join(lines)


def _missing(manager: SkillManager, name: str, status: str, message: str) -> str:
    return error_envelope(manager, "skill_content", "name", name, status, message)


def error_envelope(
    manager: SkillManager, tag: str, key: str, name: str, status: str, message: str
) -> str:
    """``<tag key=name status=… close_matches=…><error>message</error></tag>``: what a
    context or activation for a skill that cannot be given says (shared with context.py)."""
    try:
        known = [m.name for m in manager.list_skills()]
    except Exception:  # a broken directory must not hide the real problem
        known = []
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.5)
    head = start_tag(tag, {key: name, "status": status, "close_matches": " ".join(close) or None})
    return f"{head}\n  {element('error', message)}\n</{tag}>"


# -- reading back --------------------------------------------------------------------------


def _attr(elem: ET.Element, name: str) -> str | None:
    value = elem.get(name)
    return None if value is None else decoded_text(value, elem.get("sanitized"), name)


def _parse_one(item: ET.Element) -> dict[str, Any]:
    info: dict[str, Any] = {"name": _attr(item, "name"), "status": item.get("status", "ok")}
    if info["status"] != "ok":
        error = item.find("error")
        info["error"] = "" if error is None else decoded_text(error.text, error.get("sanitized"))
        info["close_matches"] = (item.get("close_matches") or "").split()
        return info
    text = decoded_text(item.text, item.get("sanitized"))
    at = text.rindex(f"\n\n{DIRECTORY_PREFIX}")
    info["instructions"] = text[1:at] if text.startswith("\n") else text[:at]
    tail = text[at + 2 + len(DIRECTORY_PREFIX) :]
    info["directory"] = tail[: tail.rindex(f"\n{RELATIVE_NOTE}")]
    resources = item.find("skill_resources")
    info["resources"] = [
        {k: _attr(f, k) for k in f.keys() if k != "sanitized"}
        | {"path": decoded_text(f.text, f.get("sanitized"))}
        for f in (resources.iter("file") if resources is not None else ())
    ]
    info["truncated"] = resources is not None and resources.get("truncated") == "true"
    total = resources.get("total") if resources is not None else None
    info["total"] = int(total) if total else len(info["resources"])
    return info


__all__ = [
    "MAX_RESOURCES",
    "RELATIVE_NOTE",
    "list_resources",
    "parse_skill_content",
    "skill_content",
]
