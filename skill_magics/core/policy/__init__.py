"""A team's policy: one TOML file that says which skills may be installed and run, and how.

Modules (the file's format and the order it is found in: docs/trust.md):

- ``model.py`` the :class:`Policy` value and :class:`PolicyError`
- ``load.py``  finding the files in force (``$SKILL_MAGICS_POLICY``, ``.skill-magics/policy.toml``
  in the notebook's folder and its parents, the user's config folder: each applies, none
  weakens another), refusing a file others can write, parsing it strictly; cached by stat,
  so a run pays a few ``stat`` calls
- ``rules.py`` the checks: a source allowed, a signer required and allowed, a skill blocked,
  the most a run may get (sandbox, network); each refusal one line naming the rule and file
"""

from skill_magics.core.policy.load import (
    current_policies,
    current_policy,
    find_policies,
    find_policy,
    load_policy,
)
from skill_magics.core.policy.model import Policy, PolicyError

__all__ = [
    "Policy",
    "PolicyError",
    "current_policies",
    "current_policy",
    "find_policies",
    "find_policy",
    "load_policy",
]
