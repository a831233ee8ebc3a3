"""Skills on disk: where they are, what SKILL.md says, which scripts and references they hold.

Decided from files only: nothing here imports or runs a skill's code
(docs/architecture.md, *Real skills*).

- ``discovery.py``: the skills under the configured folders (new folders appear without a
  reload); ``hidden.py``: skills under hidden folders, counted; ``plugins.py``: Agent Plugins;
- ``frontmatter.py``: SKILL.md read leniently; ``skill.py``: a skill and its files;
- ``detect.py``, ``kinds.py``, ``toplevel.py``, ``includes.py``, ``pysource.py``: which
  scripts may run, which are offered, which run as ``python -m``;
- ``references.py``: what SKILL.md references (scripts, files, links);
- ``requirements.py``, ``requirements_cache.py``, ``distnames.py``: what a skill needs, read
  from site-packages, never by running its Python.
"""
