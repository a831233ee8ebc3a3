"""Who made a skill: signatures verified at install, recorded, and reused by digest at run time.

Modules (docs/trust.md says what is and is not covered):

- ``signature.py`` the :class:`Signature` value (signed, unsigned, unknown signer, bad) as the
  lock, the approval panel and ``%skills show`` carry it
- ``signers.py``   an allowed-signers file (git's ``gpg.ssh.allowedSignersFile`` format): parsed
  in Python, cached by stat, so a run checks a recorded signer without a process
- core/sources/sshsig.py (it runs a process, so above the run machinery): a detached
  ``FILE.sig`` (``ssh-keygen -Y sign -n skill-magics``) checked with ``ssh-keygen -Y verify``
- ``sigstore.py``  a sigstore bundle beside an artifact, checked offline by the ``sigstore``
  package (the ``[sigstore]`` extra) when it is installed
- ``gitsig.py``    a signed tag or commit checked with the real ``git verify-tag`` /
  ``verify-commit`` (SSH against the allowed signers; OpenPGP against the user's keyring)
- ``record.py``    the verified results, a private per-user record keyed by the installed
  tree digest: what a run believes (never the lock alone, which anyone can edit)

Nothing is ever called signed that was not verified here.
"""

from skill_magics.core.installed.signature import NAMESPACE, Signature, SignatureState

__all__ = ["NAMESPACE", "Signature", "SignatureState"]
