"""Install skills from where they live: git repositories, .skill/.zip archives, folders.

Functions over the manager, one small module each (docs/architecture.md, *Installed skills*):

- core/installed/ (below the run machinery, which reads it): ``names.py``, the checks of
  folder names and paths from a source; ``lock.py``, ``skills-lock.json``
- ``spec.py``    a source string -> :class:`SourceSpec` (git URL, archive, folder; ref, subfolder)
- ``snapshot.py`` a source's files as a listing; finding the skills in it; staging copies
- ``git.py``     the real ``git``, hardened: shallow fetch of one ref, blobs read raw
- ``archive.py`` zip checks before anything is written
- ``request.py`` the approval request for an install, and its one call to the gate
- ``install.py`` ``install_skills``; ``verify.py`` ``verify_skills``;
  ``update.py`` ``sync_skills`` and ``update_skills``
"""
