"""Managed environments: a skill's requirements installed into its own venv
(docs/architecture.md, *Real skills*).

``install.py`` plans an install and runs it through the call site
(:class:`~.install.InstallPlan`), ``build.py`` builds the venv under a lock, atomically;
``skillpy.py`` runs code in a skill's environment (``%%skillpy``; built on the manager).
"""
