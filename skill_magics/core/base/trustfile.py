"""May a file that holds rules be believed? Whoever can change it decides what it says.

The team policy, its allowed-signers file, its sigstore trusted root and
``$SKILL_MAGICS_ALLOWED_SIGNERS`` decide what runs (docs/trust.md). Such a file is
refused when someone other than this user or root owns it, or could change it: the file
writable by others, its folder writable by others without the sticky bit (a file there can
be swapped), and, for a file reached through a symlink, the link's own folder (the link
can be swapped), the target writable by its group or others, and the target's folder.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> path = os.path.join(folder, "policy.toml")
    >>> open(path, "w").close(); os.chmod(path, 0o666)
    >>> untrusted_because(path).endswith("which others can write")
    True
    >>> os.chmod(path, 0o644); untrusted_because(path)
    ''
"""

from __future__ import annotations

import os
import stat

from skill_magics.core.base.visible import visible


def untrusted_because(path: str | os.PathLike[str]) -> str:
    """Why the file at ``path`` cannot be believed ("" when it can, or when it is missing:
    reading it then says so)."""
    me = os.getuid()
    name = os.path.abspath(path)
    linked = os.path.islink(name)
    real = os.path.realpath(name)
    # (what, the write bits that make it someone else's to change)
    checks = [(real, 0o022 if linked else 0o002), (os.path.dirname(real), 0o002)]
    if linked:
        checks.append((os.path.realpath(os.path.dirname(name)), 0o002))
    for item, bits in checks:
        try:
            st = os.stat(item)
        except OSError:
            return ""
        if st.st_uid not in (me, 0):
            return f"{visible(item)} belongs to another user"
        if st.st_mode & bits and not (stat.S_ISDIR(st.st_mode) and st.st_mode & stat.S_ISVTX):
            what = "a symlink to " if linked and item == real else ""
            return f"it is {what}{visible(item)}, which others can write"
    return ""


__all__ = ["untrusted_because"]
