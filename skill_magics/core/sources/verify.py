"""``verify_skills``: every file added, removed or changed since the skills were installed.

Compares each skill folder named in the install folder's ``skills-lock.json`` with the
digests recorded there (``lock.compare_folder``); nothing is fetched and nothing runs.
Python's ``__pycache__`` folders are not counted (a run writes them). A skill whose files
match but whose lock names a signer this machine did not verify over them (a lock edited by
hand, or cloned: core/trust/installed.py) gets a line saying so; ``%skills verify
--signatures`` (``update.verify_signatures``) fetches and verifies them again.

Example (not run as a doctest: it needs an installed skills folder)::

    verify_skills(".agents/skills")
    # -> ['pdf: changed scripts/extract.py', 'pdf: added notes.txt']
"""

from __future__ import annotations

import os

from skill_magics.core.installed.lock import Lock, compare_folder
from skill_magics.core.sources.install import install_folder
from skill_magics.core.sources.kinds import read_lock
from skill_magics.core.trust.installed import verified_signature


def verify_skills(folder: str | os.PathLike[str] | None = None) -> list[str]:
    """One line per file that differs from the lock, ``"<skill folder>: <change>"``, sorted
    by skill; empty when every installed skill matches. ``folder``: the install folder
    (default ``./.agents/skills``). LockFileError when it has no readable lock."""
    path = install_folder(folder)
    lock = read_lock(path)
    out = []
    for name, lines in changes_by_skill(lock).items():
        out += [f"{name}: {line}" for line in lines]
        claimed = lock.skills[name].signature
        if not lines and claimed is not None and claimed.is_signed:
            believed = verified_signature(lock.skills[name])
            if not believed.is_signed:
                out.append(f"{name}: {believed.describe()}")
    return out


def changes_by_skill(lock: Lock) -> dict[str, list[str]]:
    """Skill folder -> what differs from the lock (an empty list: it matches), by name."""
    folder = lock.path.parent
    return {name: compare_folder(folder / name, lock.skills[name]) for name in sorted(lock.skills)}


__all__ = ["verify_skills", "changes_by_skill"]
