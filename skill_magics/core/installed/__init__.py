"""Installed skills as recorded: ``skills-lock.json`` and the checks of untrusted names it
needs, below the run machinery (every approval request, the gate's digests, ``%skills
show`` and the trust record read the lock; installing is core/sources/, built on the
manager).

- ``names.py``  folder names and relative paths from a source, checked before any use
- ``lock.py``   ``skills-lock.json``: what was installed, from where, every file's digest
"""
