"""The skill a warm server serves: its identity, the state of its code, and the top-level
import names it ships (docs/architecture.md, *Warm start*).

A server serves one skill at one state of its code: its key holds the skill's folder and a
fingerprint over the skill's code files (``fingerprint.is_code``: scripts, modules, SKILL.md,
its venv's interpreter; data a run writes is not code, so it keeps the server). A server
never preloads a name the skill ships anywhere in its folder (``scripts/vendor/yaml/`` put
first on ``sys.path`` is the skill's ``yaml`` in a cold run), and a run whose server holds
such a name (a package pulled it in) starts cold.

Example:
    >>> code = skill_code("skills/csv-profiler")
    >>> len(code.fingerprint), sorted(code.shipped)  # never preloaded for this skill
    (64, ['profile', 'scripts'])
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import threading
from dataclasses import dataclass

from skill_magics.core.base import fingerprint
from skill_magics.core.base.errors import SkillMagicsError

_SUFFIXES = tuple(importlib.machinery.all_suffixes())  # .py, .pyc, .cpython-311-x86_64...so


@dataclass(frozen=True)
class SkillCode:
    """One skill's code as a server is keyed by it."""

    base: str  # the skill's real folder
    fingerprint: str  # sha256 over its code entries
    shipped: frozenset[str]  # top-level import names its files could provide


def skill_code(base: str) -> SkillCode | None:
    """``base``'s code now (None: it cannot be read, the run starts cold); re-walked only
    when a stat of what the last walk saw moved."""
    with _LOCK:
        hit = _CACHE.get(base)
    if hit is not None and hit[0].unchanged():
        return hit[1]
    try:
        entries, snap = fingerprint.skill_snapshot(base)
    except (OSError, SkillMagicsError):  # SkillTooDeepError and the like
        return None
    code = [(rel, value) for rel, value in entries.items() if fingerprint.is_code(base, rel)]
    digest = hashlib.sha256()
    for rel, value in code:
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(value.encode("utf-8", "surrogateescape") + b"\0")
    found = SkillCode(base, digest.hexdigest(), shipped_names(entries))
    with _LOCK:
        if len(_CACHE) > 256:
            _CACHE.clear()
        _CACHE[base] = (snap, found)
    return found


def shipped_names(rels: object) -> frozenset[str]:
    """Every top-level import name the skill's files could provide from some folder of it
    put on ``sys.path``: each module file's name (``.py``, ``.pyc``, extension modules) and
    the name of every folder on the way to one (a package, regular or namespace)."""
    out: set[str] = set()
    for rel in rels:  # type: ignore[attr-defined]
        if not isinstance(rel, str) or rel == fingerprint.VENV_ENTRY:
            continue
        parts = rel.split("/")
        name = parts[-1]
        suffix = next((s for s in _SUFFIXES if name.endswith(s)), None)
        if suffix is None:
            continue
        out.add(name[: -len(suffix)].split(".", 1)[0])
        out.update(p for p in parts[:-1] if p.isidentifier())
    return frozenset(out)


_LOCK = threading.Lock()
_CACHE: dict[str, tuple[fingerprint.StatSnapshot, SkillCode]] = {}


__all__ = ["SkillCode", "shipped_names", "skill_code"]
