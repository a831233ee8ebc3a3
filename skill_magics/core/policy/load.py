"""Finding and reading the policy files in force.

Every policy file found is in force, and an install or a run must pass each one: no level
weakens another (a file that allows more than another changes nothing the other refuses),
and nothing a user sets, a trait, a cell's ``--sandbox off``, ``sandbox_network``, an
environment variable, gets past any of them. They are looked for, highest level first:

1. ``$SKILL_MAGICS_POLICY`` (a path: an administrator's, e.g. a JupyterHub's);
2. ``.skill-magics/policy.toml`` in each folder from the outermost parent of the notebook's
   folder (the kernel's working folder) down to that folder: a team repository's, then a
   project's inside it;
3. ``$XDG_CONFIG_HOME/skill-magics/policy.toml`` (default ``~/.config/...``): the user's.

A file that someone other than you or root owns or could change (core/base/trustfile.py: it,
its folder, a link's target and the link's folder) is refused like a broken one: whoever
can edit it decides what runs. A file that does not parse, or names a key this version does
not know (a typo must not weaken a rule), refuses everything, in one line naming the file
and line.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from skill_magics.core.base.trustfile import untrusted_because
from skill_magics.core.base.visible import visible
from skill_magics.core.policy.model import Policy
from skill_magics.core.trust.sigstore import parse_identity

ENV_VAR = "SKILL_MAGICS_POLICY"
PROJECT_FILE = Path(".skill-magics") / "policy.toml"
MAX_BYTES = 1 << 20
_FINGERPRINT = re.compile(r"^([0-9A-F]{40}|[0-9A-F]{64})$")
_PROFILE_NAME = re.compile(r"[a-z][a-z0-9-]*\Z")  # sandbox_profiles: lower case, "-"
_KNOWN = {
    "sources": {"allow"},
    "signatures": {"require", "allowed_signers", "openpgp", "sigstore", "sigstore_trusted_root"},
    "skills": {"block"},
    "run": {"max_sandbox", "network"},
}


def user_policy_path() -> Path:
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config")
    return Path(config) / "skill-magics" / "policy.toml"


ENVIRONMENT, PROJECT, USER = f"${ENV_VAR}", "the project", "the user's config folder"


def find_policies(start: str | os.PathLike[str] | None = None) -> tuple[tuple[Path, str], ...]:
    """Every policy file in force for a notebook in ``start`` (default: the working folder),
    highest level first (the module docstring), each with how it was found."""
    found: dict[str, tuple[Path, str]] = {}
    named = os.environ.get(ENV_VAR, "").strip()
    if named:
        path = Path(os.path.abspath(os.path.expanduser(named)))
        found[os.fspath(path)] = (path, ENVIRONMENT)
    here = Path(os.path.abspath(start if start is not None else os.getcwd()))
    for folder in reversed((here, *here.parents)):
        candidate = folder / PROJECT_FILE
        if os.path.lexists(candidate):
            found.setdefault(os.fspath(candidate), (candidate, PROJECT))
    user = user_policy_path()
    if os.path.lexists(user):
        found.setdefault(os.fspath(user), (user, USER))
    return tuple(found.values())


def find_policy(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The highest-level policy file in force (None: none); every one found applies:
    :func:`find_policies`."""
    found = find_policies(start)
    return found[0][0] if found else None


_CACHE: dict[str, tuple[tuple[int, ...], Policy]] = {}


def current_policies(start: str | os.PathLike[str] | None = None) -> tuple[Policy, ...]:
    """Every policy in force, highest level first, each read again only when its file (or
    a folder holding it) changed."""
    return tuple(_cached(path) for path, _how in find_policies(start))


def current_policy(start: str | os.PathLike[str] | None = None) -> Policy | None:
    """The highest-level policy in force (None: none); every one found applies:
    :func:`current_policies`."""
    policies = current_policies(start)
    return policies[0] if policies else None


def _cached(path: Path) -> Policy:
    name = os.fspath(path)
    try:
        lst = os.lstat(name)
        st = os.stat(name)
        key: tuple[int, ...] = (lst.st_ino, lst.st_mtime_ns, st.st_ino, st.st_mtime_ns, st.st_size)
        key += (st.st_mode, st.st_uid)
        for folder in sorted({os.path.dirname(name), os.path.dirname(os.path.realpath(name))}):
            d = os.stat(folder)  # a folder others may now write: the file is checked again
            key += (d.st_ino, d.st_mode, d.st_uid)
    except OSError:
        key = ()
    hit = _CACHE.get(name)
    if hit is not None and hit[0] == key and key:
        return hit[1]
    policy = load_policy(path)
    _CACHE[name] = (key, policy)
    return policy


def load_policy(path: str | os.PathLike[str]) -> Policy:
    """The policy in the file at ``path``; a file that cannot be trusted or read gives a
    broken policy (which refuses everything), never an exception."""
    path = Path(os.path.abspath(path))
    shown = visible(str(path))
    unsafe = untrusted_because(path)
    if unsafe:
        return Policy(str(path), broken=f"the policy {shown} is refused: {unsafe}")
    try:
        if os.path.getsize(path) > MAX_BYTES:
            raise OSError("larger than 1 MB")
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeError) as exc:
        return Policy(str(path), broken=f"the policy {shown} cannot be read ({exc})")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        return Policy(str(path), text, broken=f"the policy {shown} does not parse: {exc}")
    try:
        return _policy(path, text, data)
    except ValueError as exc:
        return Policy(str(path), text, broken=f"the policy {shown}: {exc}")


def _line_of(text: str, key: str) -> str:
    for number, line in enumerate(text.splitlines(), 1):
        if line.strip().startswith((f"{key} ", f"{key}=", f"[{key}]")):
            return f"line {number}: "
    return ""


def _check_known(text: str, data: dict[str, Any]) -> None:
    for table, value in data.items():
        if table not in _KNOWN or not isinstance(value, dict):
            raise ValueError(f"{_line_of(text, table)}unknown table [{table}]")
        for key in value:
            if key not in _KNOWN[table]:
                raise ValueError(f"{_line_of(text, key)}unknown key {key!r} in [{table}]")


def _path_of(path: Path, text: str, data: dict[str, Any], key: str, must: str) -> str | None:
    """``[signatures] key``, a path relative to the policy file's folder (``~`` expanded)."""
    value = data.get("signatures", {}).get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{_line_of(text, key)}{must}")
    return os.path.normpath(path.parent / os.path.expanduser(value))


def _policy(path: Path, text: str, data: dict[str, Any]) -> Policy:
    _check_known(text, data)

    def strings(table: str, key: str) -> tuple[str, ...] | None:
        value = data.get(table, {}).get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{_line_of(text, key)}[{table}] {key} must be a list of strings")
        return tuple(value)

    def flag(table: str, key: str) -> bool | None:
        value = data.get(table, {}).get(key)
        if value is not None and not isinstance(value, bool):
            raise ValueError(f"{_line_of(text, key)}[{table}] {key} must be true or false")
        return value

    signers = _path_of(path, text, data, "allowed_signers", "allowed_signers must be a path")
    openpgp = []
    for entry in strings("signatures", "openpgp") or ():
        fpr = entry.replace(" ", "").upper()
        if not _FINGERPRINT.match(fpr):
            raise ValueError(
                f"{_line_of(text, 'openpgp')}[signatures] openpgp lists full key fingerprints "
                f"(40 or 64 hex digits, gpg --fingerprint), not {visible(entry)!r}"
            )
        openpgp.append(fpr)
    sigstore = strings("signatures", "sigstore") or ()
    for entry in sigstore:
        try:
            parse_identity(entry)
        except ValueError as exc:
            raise ValueError(f"{_line_of(text, 'sigstore')}[signatures] sigstore: {exc}") from None
    root = _path_of(path, text, data, "sigstore_trusted_root", "it must be a path")
    sandbox = data.get("run", {}).get("max_sandbox")
    if sandbox is not None and not (isinstance(sandbox, str) and _PROFILE_NAME.match(sandbox)):
        # Which names are profiles is the run checks' table (check_run_limits refuses a run
        # under a name no profile has); here, only that it can be one.
        raise ValueError(
            f"{_line_of(text, 'max_sandbox')}max_sandbox must name a sandbox profile "
            '(e.g. "read-only")'
        )
    return Policy(
        str(path),
        text,
        sources_allow=strings("sources", "allow"),
        require_signatures=bool(flag("signatures", "require")),
        allowed_signers=signers,
        openpgp_signers=tuple(openpgp),
        sigstore_signers=tuple(sigstore),
        sigstore_root=root,
        block=strings("skills", "block") or (),
        max_sandbox=sandbox,
        network=flag("run", "network"),
    )


__all__ = [
    "ENV_VAR",
    "PROJECT_FILE",
    "current_policies",
    "current_policy",
    "describe_policy",
    "find_policies",
    "find_policy",
    "load_policy",
]


def describe_policy(start: str | os.PathLike[str] | None = None) -> str:
    """What ``%skills policy`` prints: every file in force (and how it was found) and what
    it says, or that there is none and where one would be looked for."""
    found = find_policies(start)
    if not found:
        return (
            f"No policy in force: none at ${ENV_VAR}, at {PROJECT_FILE} in this folder or a "
            f"parent, or at {user_policy_path()}"
        )
    lines = []
    if len(found) > 1:
        lines += [f"{len(found)} policies in force, highest level first; each applies:", ""]
    for path, how in found:
        policy = _cached(path)
        lines.append(f"Policy in force: {visible(str(path))} (from {how})")
        if policy.broken:
            lines.append(f"REFUSES EVERYTHING: {policy.broken}")
        lines += ["", policy.text.rstrip()] if policy.text else []
        lines.append("")
    return "\n".join(lines).rstrip()
