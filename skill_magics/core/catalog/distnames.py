"""Import names and the distributions pip installs them from, without importing anything.

``import PIL`` needs ``pip install pillow``. The name is found, in order, in a table of the
known mismatches, in the installed distributions' metadata (``*.dist-info`` folder names,
then their ``top_level.txt``), and otherwise assumed equal to the import name. Installed
metadata is read per ``site-packages`` folder and cached until that folder changes (its
mtime), so a check costs a few stats.

Example:
    >>> import sys
    >>> distribution_for("PIL", sys.path), distribution_for("yaml", [])
    ('pillow', 'pyyaml')
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Sequence

# Import name -> distribution name, where they differ (the ones skills use most).
KNOWN: dict[str, str] = {
    "PIL": "pillow",
    "yaml": "pyyaml",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "bs4": "beautifulsoup4",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "fitz": "pymupdf",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "pyjwt",
    "magic": "python-magic",
    "serial": "pyserial",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyopenssl",
    "google.protobuf": "protobuf",
    "attr": "attrs",
    "jose": "python-jose",
    "multipart": "python-multipart",
    "slugify": "python-slugify",
    "markdown": "markdown",
    "Levenshtein": "levenshtein",
    "zmq": "pyzmq",
    "usb": "pyusb",
    "win32api": "pywin32",
    "win32com": "pywin32",
    "gi": "pygobject",
    "cairo": "pycairo",
    "sentencepiece": "sentencepiece",
    "pdfminer": "pdfminer.six",
    "Bio": "biopython",
    "git": "gitpython",
    "github": "pygithub",
    "telegram": "python-telegram-bot",
    "discord": "discord.py",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "ldap": "python-ldap",
    "lxml_html_clean": "lxml-html-clean",
    "pydub": "pydub",
    "speech_recognition": "speechrecognition",
    "mpl_toolkits": "matplotlib",
    "tree_sitter": "tree-sitter",
    "typing_extensions": "typing-extensions",
    "text_unidecode": "text-unidecode",
    "google.genai": "google-genai",
    "googleapiclient": "google-api-python-client",
}

_NORMALIZE_RE = re.compile(r"[-_.]+")


def normalize(name: str) -> str:
    """PEP 503 normal form: ``Python_Docx`` -> ``python-docx``."""
    return _NORMALIZE_RE.sub("-", name).lower()


class _SiteIndex:
    """Distributions installed in one folder: {normalized name: (name, version, folder)}."""

    def __init__(self, mtime: int, dists: dict[str, tuple[str, str, str]]) -> None:
        self.mtime = mtime
        self.dists = dists
        self._tops: dict[str, str] | None = None  # import name -> distribution (lazy)

    def tops(self, folder: str) -> dict[str, str]:
        if self._tops is None:
            tops: dict[str, str] = {}
            for name, _version, info in self.dists.values():
                try:
                    with open(os.path.join(folder, info, "top_level.txt"), encoding="utf-8") as fh:
                        for line in fh:
                            top = line.strip().replace("/", ".")
                            if top:
                                tops.setdefault(top, name)
                except OSError:
                    continue
            self._tops = tops
        return self._tops


_INDEX: dict[str, _SiteIndex] = {}
_LOCK = threading.Lock()


def site_index(folder: str) -> _SiteIndex | None:
    """The distributions in ``folder`` (cached until its mtime changes); None if unreadable."""
    try:
        mtime = os.stat(folder).st_mtime_ns
    except OSError:
        return None
    with _LOCK:
        hit = _INDEX.get(folder)
    if hit is not None and hit.mtime == mtime:
        return hit
    dists: dict[str, tuple[str, str, str]] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for entry in names:
        if entry.endswith(".dist-info") or entry.endswith(".egg-info"):
            stem = entry.rsplit(".", 1)[0]
            name, _, version = stem.partition("-")
            dists.setdefault(normalize(name), (name, version.split("-")[0], entry))
    index = _SiteIndex(mtime, dists)
    with _LOCK:
        _INDEX[folder] = index
    return index


def installed_version(distribution: str, search: Sequence[str]) -> str | None:
    """The installed version of ``distribution`` in the first folder of ``search`` that has
    it ("" when the version is unknown); None when it is not installed there."""
    key = normalize(distribution)
    for folder in search:
        index = site_index(folder)
        if index is not None and key in index.dists:
            return index.dists[key][1]
    return None


def distribution_for(module: str, search: Sequence[str] = (), folder: str | None = None) -> str:
    """The distribution that provides import ``module`` (dotted or top-level name).

    ``folder``: the site-packages folder the module was found in (its metadata is read);
    otherwise the known table, else the import name itself (pip's best guess).
    """
    top = module.split(".", 1)[0]
    for name in (module, top):
        if name in KNOWN:
            return KNOWN[name]
    if folder is not None:
        index = site_index(folder)
        if index is not None:
            if normalize(top) in index.dists:
                return index.dists[normalize(top)][0].replace("_", "-")
            provider = index.tops(folder).get(top)
            if provider is not None:
                return provider.replace("_", "-")
    return top


__all__ = ["KNOWN", "normalize", "site_index", "installed_version", "distribution_for"]
