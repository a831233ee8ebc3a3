"""Plain-Python core: nothing in here imports IPython or ipywidgets (docs/architecture.md).

- ``base/``: small modules every layer uses (errors, models, paths, safe file I/O, secrets,
  the audit, fingerprints);
- ``catalog/``: skills on disk; ``sources/``: installing them; ``mcp/``: skills over MCP;
- ``run/``: plan -> gate -> launch (``run/planning/``, ``run/gating/``, ``run/launching/``:
  warm start in ``run/launching/warm/``; batches in ``run/batch/``, environments in ``run/env/``);
- ``manager.py``: the facade; ``prompt/``: what a model sees and calls; ``lab/``: a skill
  author's tools (validation, a model with skills, trigger and output evaluations).
"""

import logging

from skill_magics.core import moved
from skill_magics.core.base import audit as _audit
from skill_magics.core.trace import hooks as _hooks

# Library convention: the application decides where log records go. Without this, Python's
# last-resort handler prints every audit WARNING raw on stderr, under the magic's own message.
logging.getLogger("skill_magics").addHandler(logging.NullHandler())
moved.install()
# Every refusal the audit records is a span too while tracing is on (the base cannot import the
# traces, which import it: wired here, before any module of core can record one).
_audit.REFUSAL_LISTENERS.append(_hooks.refusal)
