"""A detached SSH signature beside an artifact (``FILE.sig``), checked with ``ssh-keygen``.

Made by ``ssh-keygen -Y sign -f KEY -n skill-magics FILE``; checked in three steps, each the
real ``ssh-keygen`` with the artifact's bytes on stdin:

1. ``-Y find-principals -s SIG -f ALLOWED``: which principals the allowed-signers file gives
   the signing key (none: an unknown signer, step 3);
2. ``-Y verify -f ALLOWED -I PRINCIPAL -n skill-magics -s SIG``: the signature is over these
   bytes, in this namespace, by that principal's key: SIGNED;
3. otherwise ``-Y check-novalidate -n skill-magics -s SIG``: a valid signature by a key nobody
   allowed is UNKNOWN; one that does not verify (other bytes, another namespace) is BAD.

Example (not run as a doctest: it needs keys)::

    verify_detached(Path("pdf.skill"), Path("pdf.skill.sig"), "allowed_signers")
    # -> Signature(state=<SignatureState.SIGNED...>, principal='alice@example.com', ...)
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from pathlib import Path

from skill_magics.core.base.errors import SourceError
from skill_magics.core.base.visible import visible
from skill_magics.core.installed.signature import NAMESPACE, Signature, SignatureState
from skill_magics.core.run.launching.process import run_process

TIMEOUT_S = 30.0
MAX_DATA = 200 * 1000 * 1000
MAX_SIG = 64 << 10
_GOOD = re.compile(
    r'^Good "[^"]*" signature (?:for (?P<p>.+) )?with \S+ key (?P<k>SHA256:\S+)', re.M
)


def ssh_keygen() -> str:
    found = shutil.which("ssh-keygen")
    if found is None:
        raise SourceError(
            "ssh-keygen is not installed (not on PATH): install OpenSSH (e.g. apt-get install "
            "openssh-client) to verify signed skills"
        )
    return found


def _run(args: list[str], data: bytes) -> tuple[int, str]:
    with tempfile.TemporaryDirectory(prefix="skill-magics-sig-") as tmp:
        outcome = run_process(
            [ssh_keygen(), *args],
            cwd=tmp,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
            payload=data,
            timeout=TIMEOUT_S,
            max_output_size=1 << 16,
            die_with_parent=True,  # under the tree guard, as every helper of an install
        )
    if outcome.timed_out:
        raise SourceError(f"ssh-keygen did not finish within {TIMEOUT_S:g} s")
    return outcome.returncode, outcome.stdout.text + outcome.stderr.text


def verify_detached(
    data_path: Path, sig_path: Path, signers: str | None, subject: str = ""
) -> Signature:
    """The signature ``sig_path`` over ``data_path`` (see the module docstring); without an
    allowed-signers file a valid signature is UNKNOWN (nobody allowed it)."""
    if os.path.getsize(data_path) > MAX_DATA or os.path.getsize(sig_path) > MAX_SIG:
        return Signature(SignatureState.BAD, note=f"{visible(sig_path.name)} is too large")
    data = data_path.read_bytes()
    sig = str(sig_path)
    if signers is not None:
        rc, out = _run(["-Y", "find-principals", "-s", sig, "-f", signers], b"")
        principals = [p for p in out.splitlines() if p and rc == 0]
        for principal in principals[:8]:
            rc, out = _run(
                ["-Y", "verify", "-f", signers, "-I", principal, "-n", NAMESPACE, "-s", sig], data
            )
            good = _GOOD.search(out)
            if rc == 0 and good:
                return Signature.signed("ssh", principal, good["k"], subject)
    rc, out = _run(["-Y", "check-novalidate", "-n", NAMESPACE, "-s", sig], data)
    good = _GOOD.search(out)
    if rc == 0 and good:
        why = "not in the allowed signers" if signers else "no allowed signers file"
        return Signature(SignatureState.UNKNOWN, "ssh", "", good["k"], subject, why)
    return Signature(
        SignatureState.BAD,
        "ssh",
        subject=subject,
        note=f"{visible(sig_path.name)} does not verify over these bytes in namespace "
        f"{NAMESPACE!r}",
    )


__all__ = ["verify_detached", "ssh_keygen", "MAX_SIG"]
