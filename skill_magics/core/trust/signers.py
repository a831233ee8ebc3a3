"""An allowed-signers file, git's ``gpg.ssh.allowedSignersFile`` format (``ssh-keygen(1)``,
*ALLOWED SIGNERS*), read in Python so a run can check a recorded signer without a process.

One signer a line: ``PRINCIPALS [OPTIONS] KEYTYPE BASE64KEY [COMMENT]``; principals are
comma-separated patterns (``*``, ``?``, ``!`` negation); ``namespaces="a,b"`` limits the
namespaces a key may sign for. Verification itself is always done by ``ssh-keygen`` or git
(core/sources/sshsig.py, ``gitsig.py``); this module only answers "is this principal with this key
fingerprint still listed?" and finds the file.

Example:
    >>> key = "AAAAC3NzaC1lZDI1NTE5AAAAIAPaQQ7HShjMhLkjSd08TR7+6WL5qpL9+a8WuGhvF/+g"
    >>> line = "alice@example.com ssh-ed25519 " + key
    >>> (s,) = parse_signers(line)
    >>> s.principals, s.fingerprint
    (('alice@example.com',), 'SHA256:N7NQ4k/w7cvO55zldzusYUw+b/9SsjdlqB9nw0CXgo0')
"""

from __future__ import annotations

import base64
import binascii
import fnmatch
import hashlib
import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from skill_magics.core.base.namelist import name_list
from skill_magics.core.base.trustfile import untrusted_because
from skill_magics.core.base.visible import visible

ENV_VAR = "SKILL_MAGICS_ALLOWED_SIGNERS"  # a path, used when no policy names one
MAX_BYTES = 1 << 20
_KEY_PREFIXES = ("ssh-", "ecdsa-", "sk-")
# ``namespaces=VALUE`` among the options: VALUE ends where ssh's next option begins.
_NAMESPACES = re.compile(
    r"(?:^|,)namespaces=(.*?)(?=,(?:cert-authority|valid-after=|valid-before=)|$)", re.I
)


@dataclass(frozen=True)
class AllowedSigner:
    """One line: its principal patterns, key fingerprint and namespaces (empty: any)."""

    principals: tuple[str, ...]
    fingerprint: str
    namespaces: tuple[str, ...] = ()

    def matches(self, principal: str, fingerprint: str, namespace: str = "") -> bool:
        if fingerprint != self.fingerprint:
            return False
        if namespace and self.namespaces and namespace not in self.namespaces:
            return False
        hit = False
        for pattern in self.principals:
            if pattern.startswith("!"):
                if fnmatch.fnmatchcase(principal, pattern[1:]):
                    return False
            elif fnmatch.fnmatchcase(principal, pattern):
                hit = True
        return hit


def key_fingerprint(blob_b64: str) -> str:
    """``SHA256:...`` of a public key's base64 blob, as ``ssh-keygen -l`` prints it."""
    raw = base64.b64decode(blob_b64, validate=True)
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def parse_signers(text: str) -> list[AllowedSigner]:
    """Every signer in ``text``; ValueError naming the line that cannot be read."""
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            tokens = shlex.split(line, posix=True)
        except ValueError:
            raise ValueError(f"line {number}: unbalanced quotes") from None
        at = next((i for i, t in enumerate(tokens) if t.startswith(_KEY_PREFIXES)), None)
        if at is None or at == 0 or at + 1 >= len(tokens):
            raise ValueError(f"line {number}: expected PRINCIPALS [OPTIONS] KEYTYPE KEY")
        # The options are comma-separated and namespaces="a,b" holds commas of its own
        # (shlex took its quotes off): its value runs to the next option ssh knows.
        found = _NAMESPACES.search(",".join(tokens[1:at]))
        namespaces = name_list(found.group(1)) if found else ()
        try:
            fingerprint = key_fingerprint(tokens[at + 1])
        except (binascii.Error, ValueError):
            raise ValueError(f"line {number}: the key is not base64") from None
        principals = name_list(tokens[0])  # comma-separated patterns, no blanks in one
        out.append(AllowedSigner(principals, fingerprint, namespaces))
    return out


_CACHE: dict[str, tuple[tuple[int, int, int], list[AllowedSigner]]] = {}


def load_signers(path: str | os.PathLike[str]) -> list[AllowedSigner]:
    """The signers in the file at ``path``, parsed once per change of the file (stat);
    ValueError naming the file and the problem."""
    name = os.fspath(path)
    try:
        st = os.stat(name)
    except OSError as exc:
        raise ValueError(f"{visible(name)}: cannot be read ({exc.strerror})") from None
    why = untrusted_because(name)  # whoever can change it decides whose signature counts
    if why:
        raise ValueError(f"the allowed signers file {visible(name)} is refused: {why}")
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    hit = _CACHE.get(name)
    if hit is not None and hit[0] == key:
        return hit[1]
    if st.st_size > MAX_BYTES:
        raise ValueError(f"{visible(name)}: larger than {MAX_BYTES >> 20} MB")
    try:
        text = Path(name).read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        raise ValueError(f"{visible(name)}: cannot be read ({exc})") from None
    try:
        signers = parse_signers(text)
    except ValueError as exc:
        raise ValueError(f"{visible(name)} {exc}") from None
    _CACHE[name] = (key, signers)
    return signers


def is_allowed(path: str | os.PathLike[str], principal: str, fingerprint: str) -> bool:
    """Does the allowed-signers file at ``path`` still list ``principal`` with this key?
    ValueError (load_signers) when the file cannot be read or believed."""
    return any(s.matches(principal, fingerprint) for s in load_signers(path))


def env_signers() -> str | None:
    """The allowed-signers file named by ``$SKILL_MAGICS_ALLOWED_SIGNERS`` (None: unset)."""
    value = os.environ.get(ENV_VAR, "").strip()
    return os.path.abspath(os.path.expanduser(value)) if value else None


__all__ = [
    "AllowedSigner",
    "ENV_VAR",
    "env_signers",
    "file_digest",
    "is_allowed",
    "key_fingerprint",
    "load_signers",
    "parse_signers",
]


def file_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` of a file (what an archive signature is shown as covering)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()
