"""The core's base: modules that import nothing above them (docs/architecture.md, section 1).

Errors (``errors.py``), run states (``status.py``), values (``models.py``), paths and safe
file I/O in folders a script can write (``paths.py``, ``safefs.py``), fingerprints, secrets,
the audit, interpreters and environment folders, name lists, deprecations, the version.
"""
