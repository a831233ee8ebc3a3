"""Where a skill on disk came from and who signed it, as a run sees it, without a process.

An installed skill (its parent's ``skills-lock.json`` names its folder and the files match)
is signed only when the private record (``record.py``) holds a signature verified over its
tree digest by the signer the lock names; a lock edited to name someone else (or no one),
files changed since install, or a record that is missing (a lock cloned from elsewhere:
``%skills verify --signatures`` verifies it again) make it unsigned, saying why. A folder
no lock describes is ``unsigned (local)``; an MCP server's skill (named ``LABEL/NAME``) is
``unsigned (MCP server LABEL)``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.installed.lock import LockedSkill, skill_lock_status
from skill_magics.core.installed.signature import Signature
from skill_magics.core.trust.record import fetched_from, recalled

INSTALLED, LOCAL, MCP = "installed", "local", "mcp"


@dataclass(frozen=True)
class Origin:
    """A skill's origin: its kind, the source a policy's ``[sources] allow`` matches (the
    lock's source, the folder, or ``mcp:LABEL``), its signature, the tree digest of its
    files when it is installed and they match the lock ("" otherwise), and what else the
    source may be matched by (an MCP server's URL or command line)."""

    kind: str
    source: str
    signature: Signature
    tree: str = ""
    also: tuple[str, ...] = ()


def origin_of(skill_dir: str | os.PathLike[str], skill_name: str) -> Origin:
    """The origin of the skill in ``skill_dir`` named ``skill_name``."""
    if "/" in skill_name:  # only an MCP server's skills are LABEL/NAME (core/mcp/skill.py)
        label = skill_name.split("/", 1)[0]
        server = _mcp_server(skill_dir, label)
        return Origin(
            MCP,
            f"mcp:{label}",
            Signature.unsigned(f"MCP server {label}"),
            also=(server,) if server else (),
        )
    base = Path(os.path.abspath(skill_dir))
    status = skill_lock_status(base)
    if status is None:
        return Origin(LOCAL, os.fspath(base), Signature.unsigned("local"))
    locked = status.locked
    if status.changes:
        return Origin(
            INSTALLED, locked.source, Signature.unsigned("files changed since they were installed")
        )
    return Origin(INSTALLED, locked.source, verified_signature(locked), locked.tree)


def source_fetched_here(origin: Origin) -> bool:
    """Was an installed skill's tree fetched on this machine from the source its lock names
    (core/trust/record.py)? Always true of a local folder or an MCP server's skill."""
    return origin.kind != INSTALLED or (
        bool(origin.tree) and origin.source in fetched_from(origin.tree)
    )


_SERVERS: dict[str, tuple[tuple[int, int], str]] = {}


def _mcp_server(skill_dir: str | os.PathLike[str], label: str) -> str:
    """The URL or command line of the server an MCP skill's cached copy came from, as the
    cache's ``origin.json`` beside its files records it (core/mcp/cache.py; a folder only
    this user writes), "" when there is none for this label."""
    path = os.path.join(os.path.dirname(os.path.abspath(skill_dir)), "origin.json")
    try:
        st = os.stat(path)
    except OSError:
        return ""
    key = (st.st_ino, st.st_mtime_ns)
    hit = _SERVERS.get(path)
    if hit is not None and hit[0] == key:
        return hit[1]
    server = ""
    try:
        if st.st_size < 1 << 20:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
            if isinstance(data, dict) and data.get("label") == label:
                found = data.get("server")
                server = found if isinstance(found, str) else ""
    except (OSError, ValueError):
        server = ""
    _SERVERS[path] = (key, server)
    return server


def verified_signature(locked: LockedSkill) -> Signature:
    """What the private record says of ``locked``'s tree: the signature verified over it
    that the lock names (never one the lock does not name)."""
    claimed = locked.signature
    seen = recalled(locked.tree)
    if claimed is None:
        why = "skills-lock.json names no signer" if seen else "installed before signatures"
        return Signature.unsigned(f"{why}: run %skills verify --signatures")
    same = next((s for s in seen if s.identity == claimed.identity), None)
    if same is not None:
        return same
    if not claimed.is_signed:
        return claimed  # unsigned, or an unknown signer: it claims nothing to believe
    if not seen:
        return Signature.unsigned(
            f"skills-lock.json says signed by {claimed.principal}, not verified on this "
            "machine: run %skills verify --signatures"
        )
    return Signature.unsigned(
        "skills-lock.json names another signer than the one verified: run %skills verify "
        "--signatures"
    )


__all__ = [
    "INSTALLED",
    "LOCAL",
    "MCP",
    "Origin",
    "origin_of",
    "source_fetched_here",
    "verified_signature",
]
