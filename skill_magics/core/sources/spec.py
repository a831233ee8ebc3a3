"""What a source string names: a git repository, a .skill/.zip archive, a folder, a site's
well-known index, or another registered source kind (core/sources/kinds/: each kind's
``parse``, asked in the table's order; the values and checks: sourcespec.py).

Accepted, and nothing else (``ext::``, ``git://``, ``http://`` and options are refused):

- ``https://host/owner/repo[.git]``, ``ssh://[user@]host/path``, ``user@host:path`` (scp-like)
- ``file:///path/to/repo``, or the path of a local repository (its committed files)
- a browser URL of GitHub or GitLab with the ref and folder in it:
  ``https://github.com/anthropics/skills/tree/main/skills/pdf``
- the path of a ``.skill`` or ``.zip`` file
- the path of a folder (its files as they are on disk)

The subfolder to look in comes from ``subfolder=`` (``--path``) or a browser URL; the ref
(branch, tag or commit) from ``ref=`` (``--ref``) or a browser URL.

Example:
    >>> parse_source("https://github.com/openai/skills", ref="main")
    SourceSpec(kind='git', location='https://github.com/openai/skills', ref='main', subfolder='')
"""

from __future__ import annotations

import os
from pathlib import Path

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.sources.kinds import SOURCE_KINDS
from skill_magics.core.sources.sourcespec import (
    ARCHIVE,
    ARCHIVE_SUFFIXES,
    FOLDER,
    GIT,
    SCHEME,
    WELL_KNOWN,
    SourceSpec,
    check_ref,
    check_subfolder,
    check_url,
    is_commit,
    is_loopback,
    is_repository,
    source_text,
    well_known_index,
)


def parse_source(
    source: str | os.PathLike[str], *, ref: str | None = None, subfolder: str | None = None
) -> SourceSpec:
    """The SourceSpec of ``source``: the first registered kind that claims it; SourceError
    (one line, naming the fix) when none does."""
    text = source_text(source)
    sub = check_subfolder(subfolder or "")
    ref = check_ref(ref) if ref else None
    for kind in SOURCE_KINDS:
        spec = kind.parse(text, ref, sub)
        if spec is not None:
            return spec
    scheme = SCHEME.match(text)
    if scheme is not None:  # a URL no kind claims: its transport is refused
        check_url(text, scheme.group("scheme").lower(), scheme.group("sep"))
    raise SourceError(
        f"{visible(str(Path(text).expanduser()))} does not exist: give a git URL (https://, "
        "ssh://, file://), a .skill/.zip file or a folder"
    )


__all__ = [
    "GIT",
    "ARCHIVE",
    "ARCHIVE_SUFFIXES",
    "FOLDER",
    "WELL_KNOWN",
    "SourceSpec",
    "well_known_index",
    "is_loopback",
    "parse_source",
    "check_ref",
    "check_subfolder",
    "is_commit",
    "is_repository",
]
