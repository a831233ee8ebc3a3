"""What a skill's scripts need, remembered until something it depends on changes.

``RequirementsCache.for_run(skill)`` answers for the Python that would run the skill's scripts
(``envdirs.choose_python``: its venv, its managed environment, else the kernel's);
``for_python(skill, python, source)`` for a given one (an install checks against the
kernel's). An answer is reused while the skill's fingerprint, that Python and the mtimes of
the folders it and PATH look in are the same, so an install or an edit is seen at once
(docs/architecture.md, *Real skills*).

Example:
    >>> cache = RequirementsCache()
    >>> cache.for_run(manager.get_skill("csv-profiler")).missing
    []
"""

from __future__ import annotations

import os
import threading

from skill_magics.core.base import envdirs
from skill_magics.core.catalog.requirements import Requirements, skill_requirements
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.base.errors import SkillMagicsError

MAX_ENTRIES = 256  # skills x Pythons remembered; beyond this the cache starts over


def _mtime(path: str) -> int:
    try:
        return os.stat(path).st_mtime_ns
    except OSError:
        return 0


class RequirementsCache:
    """Requirements per (skill, Python), checked for staleness on every use. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[tuple, Requirements]] = {}

    def for_run(self, skill: Skill) -> Requirements:
        """For the Python that would run ``skill``'s scripts now."""
        python, source = envdirs.choose_python(skill.base_dir)
        return self.for_python(skill, python, source)

    def for_python(self, skill: Skill, python: str, source: str) -> Requirements:
        """For ``python`` (``source``: where it comes from, e.g. ``envdirs.KERNEL``)."""
        search = envdirs.import_path(python)
        path_dirs = os.environ.get("PATH", "").split(os.pathsep)
        try:
            content: str | None = skill.content_hash()
        except SkillMagicsError:  # too deep to fingerprint (refused to run): still inspectable
            content = None  # ... but never cached
        key = (
            os.fspath(skill.base_dir),
            content,
            python,
            tuple(_mtime(p) for p in (*search, *path_dirs)),
        )
        cache_key = f"{skill.name}\0{python}"
        with self._lock:
            hit = self._entries.get(cache_key)
        if content is not None and hit is not None and hit[0] == key:
            return hit[1]
        reqs = skill_requirements(
            skill.name, skill.base_dir, skill.scripts, python=python, python_source=source
        )
        with self._lock:
            if len(self._entries) > MAX_ENTRIES:
                self._entries.clear()
            if content is not None:
                self._entries[cache_key] = (key, reqs)
        return reqs

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


__all__ = ["RequirementsCache"]
