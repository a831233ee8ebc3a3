"""Sphinx configuration of the documentation site (`make docs`: sphinx-build -W, warnings fail).

Pages are MyST Markdown; the example notebooks (docs/notebooks links to ../notebooks) render
with the outputs they were saved with: nothing executes, so the build is quick and offline.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # autodoc imports the checkout, whatever is installed

project = "skill_magics"
author = "skill_magics contributors"
copyright = "skill_magics contributors"  # noqa: A001 - Sphinx's setting name

extensions = [
    "myst_nb",  # MyST Markdown pages + notebooks (includes myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
]

exclude_patterns = ["_build", "**.ipynb_checkpoints", "notebooks/data", "notebooks/skills"]
root_doc = "index"

myst_heading_anchors = 3  # `page.md#a-heading` links, as GitHub renders them
myst_enable_extensions = ["colon_fence"]
nb_execution_mode = "off"  # the stored outputs, never a kernel
nb_merge_streams = True

autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "undoc-members": False}
napoleon_google_docstring = True
napoleon_numpy_docstring = False

html_theme = "alabaster"
html_title = "skill_magics"
html_static_path = ["_static"]
html_css_files = ["skill_magics.css"]  # outputs wrap long lines (issue 44)
