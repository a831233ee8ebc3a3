"""What was verified, kept where only this user writes: one record per installed tree digest.

``skills-lock.json`` travels with a project and anyone can edit it, so a run never believes
the signer a lock names: it believes this record, written only after ``git``,
``ssh-keygen`` or the ``sigstore`` package verified the signature on this machine (install,
sync, update, verify), and looked up by the tree digest of the files the lock matched. The
record is a small JSON file, ``<tree>.json`` in ``$SKILL_MAGICS_TRUST_DIR`` (default
``$XDG_CACHE_HOME/skill-magics/trust``), a private (0700) folder; a record that is not one,
or that cannot be read, is no record. It keeps every signature verified over those bytes
(newest first, at most ``KEEP``): the same files installed twice, signed by two people, are
two installs whose locks each name their own signer. It keeps the sources the tree was
fetched from here too: a lock's ``source`` counts for the policy's ``[sources] allow`` only
when it is one of them. Lookups are cached per (file, mtime): a run costs one ``stat``.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path

from skill_magics.core.base.safefs import open_private_root
from skill_magics.core.installed.signature import Signature

DIR_VAR = "SKILL_MAGICS_TRUST_DIR"
KEEP = 16  # signatures kept per tree
_TREE = re.compile(r"^[0-9a-f]{64}$")
_CACHE: dict[str, tuple[int, tuple[tuple[Signature, ...], tuple[str, ...]]]] = {}


def trust_root() -> Path:
    override = os.environ.get(DIR_VAR)
    if override:
        return Path(override).expanduser()
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
    return Path(cache) / "skill-magics" / "trust"


def _private_root(create: bool) -> Path | None:
    """The record's folder, None when it is missing or not private: someone else's folder,
    or one others may write, could hold forged records."""
    root = trust_root()
    try:
        os.close(open_private_root(root, create=create, others=0o022))
    except OSError:
        return None
    return root


def remember(tree: str, signature: Signature, source: str = "") -> None:
    """Record that the tree ``tree`` was verified as ``signature`` (atomically, 0600), before
    the others verified over it, and fetched here from ``source`` ("": not recorded)."""
    if not _TREE.match(tree):
        raise ValueError(f"not a tree digest: {tree!r}")
    root = _private_root(create=True)
    if root is None:
        return  # nowhere private to write: runs see the skill as unverified
    signatures, sources = _read(tree)
    kept = [s for s in signatures if s.identity != signature.identity]
    listed = [s.to_json() for s in [signature, *kept][:KEEP]]
    fetched = list(dict.fromkeys([source, *sources] if source else sources))[:KEEP]
    data = json.dumps({"tree": tree, "signatures": listed, "sources": fetched}, sort_keys=True)
    fd, tmp = tempfile.mkstemp(dir=root, prefix=".record-")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(data)
        os.replace(tmp, root / f"{tree}.json")
    except BaseException:
        os.unlink(tmp)
        raise


def recalled(tree: str) -> tuple[Signature, ...]:
    """The signatures verified over ``tree`` on this machine, newest first (none: empty)."""
    return _read(tree)[0]


def fetched_from(tree: str) -> tuple[str, ...]:
    """The sources ``tree`` was fetched from on this machine (install, sync, update, verify
    --signatures), newest first: what a lock's ``source`` is believed against."""
    return _read(tree)[1]


_Record = tuple[tuple[Signature, ...], tuple[str, ...]]


def _read(tree: str) -> _Record:
    if not _TREE.match(tree):
        return (), ()
    root = _private_root(create=False)
    if root is None:
        return (), ()
    path = os.fspath(root / f"{tree}.json")
    try:
        st = os.lstat(path)
    except OSError:
        return (), ()
    hit = _CACHE.get(path)
    if hit is not None and hit[0] == st.st_mtime_ns:
        return hit[1]
    result: _Record = (), ()
    if st.st_uid == os.getuid() and not st.st_mode & 0o022 and os.path.isfile(path):
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("tree") == tree:
                listed = data.get("signatures")
                if not isinstance(listed, list):  # a record of one (written before lists)
                    listed = [data.get("signature")]
                sources = data.get("sources", [])
                if not isinstance(sources, list) or not all(isinstance(x, str) for x in sources):
                    raise ValueError("sources")
                signatures = tuple(Signature.from_json(item) for item in listed[:KEEP])
                result = signatures, tuple(sources[:KEEP])
        except (OSError, ValueError, AttributeError):
            result = (), ()
    _CACHE[path] = (st.st_mtime_ns, result)
    return result


__all__ = ["DIR_VAR", "KEEP", "fetched_from", "recalled", "remember", "trust_root"]
