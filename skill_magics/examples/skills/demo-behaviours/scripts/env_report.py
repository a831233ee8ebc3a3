#!/usr/bin/env python3
"""Report the SKILL_* environment variables and the names (not values) of all the others."""

import json
import os
import sys

skill_vars = {k: v for k, v in sorted(os.environ.items()) if k.startswith("SKILL")}
others = sorted(k for k in os.environ if not k.startswith("SKILL"))
secrets = [k for k in others if any(s in k for s in ("KEY", "TOKEN", "SECRET", "PASSWORD"))]
report = {
    "skill_vars": skill_vars,
    "other_var_names": others,
    "secret_like_var_names": secrets,
    "cwd": os.getcwd(),
    "python": sys.executable,
}
print(json.dumps(report, indent=2))
