"""Real SSH keys, allowed-signers files, signed git tags and commits and signed archives for
the tests of core/trust and core/policy (no tests in here)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from sources_support import GIT_ENV, git, make_repo, skill_md

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


# -- OpenPGP: real gpg keyrings in private temporary homes ---------------------------------

GPG = ["gpg", "--batch", "--quiet", "--passphrase", "", "--pinentry-mode", "loopback"]


def gpg_home() -> Path:
    """A new, private GNUPGHOME (short, under /tmp: the agent's socket path has a limit)."""
    import tempfile

    home = Path(tempfile.mkdtemp(prefix="g", dir="/tmp"))
    home.chmod(0o700)
    return home


def gpg(home: Path, *args: str, data: bytes | None = None) -> str:
    """Run the real gpg with ``home`` as its GNUPGHOME; its stdout."""
    return subprocess.run(
        [*GPG, "--homedir", str(home), *args], input=data, capture_output=True, check=True
    ).stdout.decode()


def gpg_keygen(home: Path, uid: str) -> str:
    """A real ed25519 signing key for ``uid`` (``gpg --quick-gen-key``); its fingerprint."""
    gpg(home, "--quick-gen-key", uid, "ed25519", "sign", "never")
    listing = gpg(home, "--with-colons", "--list-keys", uid)
    return next(line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr:"))


def gpg_copy_public(source: Path, target: Path, fpr: str) -> None:
    """Import ``fpr``'s public key from keyring ``source`` into ``target`` (trust: none)."""
    exported = subprocess.run(
        [*GPG, "--homedir", str(source), "--export", fpr], capture_output=True, check=True
    ).stdout
    gpg(target, "--import", data=exported)


def gpg_stop(*homes: Path) -> None:
    """Stop each home's gpg-agent and remove the home."""
    import shutil

    for home in homes:
        subprocess.run(["gpgconf", "--homedir", str(home), "--kill", "all"], check=False)
        shutil.rmtree(home, ignore_errors=True)


def gpg_sign_repo(repo: Path, home: Path, fpr: str, *, tag: str = "") -> None:
    """Sign ``repo``'s last commit (and a tag ``tag``) with OpenPGP key ``fpr`` of ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_ENV, GNUPGHOME=str(home))
    for args in (
        ["config", "gpg.format", "openpgp"],
        ["config", "user.signingkey", fpr],
        ["commit", "-q", "--amend", "-S", "--no-edit"],
        *([["tag", "-s", "-m", tag, tag]] if tag else []),
    ):
        subprocess.run(["git", "-C", str(repo), *args], env=env, check=True, capture_output=True)


def no_policy_but_ours(root: Path, monkeypatch) -> None:
    """A test's own trust record and config folder under ``root``, and no policy or allowed
    signers from the environment: only the policy files the test writes are in force."""
    monkeypatch.setenv("SKILL_MAGICS_TRUST_DIR", str(root / "trust"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(root / "config"))
    monkeypatch.delenv("SKILL_MAGICS_POLICY", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_ALLOWED_SIGNERS", raising=False)
