"""Real SSH keys, allowed-signers files, signed git tags and commits and signed archives for
the tests of core/trust and core/policy (no tests in here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sources_support import git, make_repo, skill_md

NAMESPACE = "skill-magics"


def keygen(folder: Path, name: str) -> Path:
    """A real ed25519 key pair ``folder/name`` (+ ``.pub``), no passphrase."""
    folder.mkdir(parents=True, exist_ok=True)
    key = folder / name
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", name, "-f", str(key)], check=True
    )
    return key


def fingerprint(key: Path) -> str:
    """``SHA256:...`` as ``ssh-keygen -l`` prints it."""
    out = subprocess.run(
        ["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True
    )
    return out.stdout.split()[1]


def allowed_signers(path: Path, *signers: tuple[str, Path]) -> Path:
    """An allowed-signers file listing each (principal, key)."""
    lines = []
    for principal, key in signers:
        keytype, blob = Path(f"{key}.pub").read_text().split()[:2]
        lines.append(f"{principal} {keytype} {blob}")
    path.write_text("\n".join(lines) + "\n")
    return path


def sign_file(key: Path, artifact: Path, namespace: str = NAMESPACE) -> Path:
    """``ssh-keygen -Y sign``: ``ARTIFACT.sig`` beside it."""
    sig = Path(f"{artifact}.sig")
    sig.unlink(missing_ok=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-f", str(key), "-n", namespace, str(artifact)],
        check=True,
        capture_output=True,
    )
    return sig


def use_key(repo: Path, key: Path) -> None:
    """Sign this repository's commits and tags with ``key`` (SSH)."""
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key))


def signed_repo(root: Path, key: Path, name: str = "greet", *, tag: str = "v1") -> Path:
    """A repository whose one skill is committed and tagged ``tag``, both signed by ``key``."""
    files = {
        "SKILL.md": skill_md(name),
        "scripts/hello.py": "print('hello from a signed skill')\n",
    }
    repo = make_repo(root, files)
    use_key(repo, key)
    git(repo, "commit", "-q", "--amend", "-S", "--no-edit")
    if tag:
        git(repo, "tag", "-s", "-m", tag, tag)
    return repo


def private(path: Path) -> Path:
    os.chmod(path, 0o700 if path.is_dir() else 0o600)
    return path
