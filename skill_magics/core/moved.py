"""Module paths of earlier layouts (issues 30 and 40), still importable for one release.

``import skill_magics.core.context`` (or ``from skill_magics.core.tools import ...``) gives the
module at its new place, the same object, with a ``DeprecationWarning`` naming that place; the
old path goes in the next release. An import hook rather than files at the old paths, so no
second module object (and no second copy of its state) can exist.

Example:
    >>> import warnings, importlib
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     old = importlib.import_module("skill_magics.core.xmltext")
    >>> old is importlib.import_module("skill_magics.core.prompt.xmltext")
    True
    >>> str(caught[0].message).split(":")[0]
    'skill_magics.core.xmltext is deprecated and will be removed in the next release'
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

from skill_magics.core.base.deprecation import deprecation_message

_BASE = (
    "audit deprecation envdirs errors fingerprint interpreters jsonable models namelist paths "
    "safefs secrets status version visible"
)
_STAGES = {
    "planning": "plan runplan checks settings payload template workdir childenv",
    "gating": "gate approval store",
    "launching": (
        "process sandbox sandbox_mounts orphans cgroups containment warden spawning treeguard "
        "launchers launchers.base launchers.cold launchers.sandboxed launchers.warm "
        "sandbox_profiles sandbox_profiles.base sandbox_profiles.standard "
        "warm warm.child warm.launch warm.namespaces warm.pool warm.server "
        "warm.skillcode"  # not the zygote's two scripts: a warm server runs them, nobody imports
    ),
}
_WHERE = {name: f"base.{name}" for name in _BASE.split()} | {
    **{
        name: f"prompt.{name}"
        for name in "activation available_skills context tokens tools xmltext".split()
    },
    "validation": "lab.validation",
    "skillpy": "run.env.skillpy",
    # issue 40: the launchers are registered kinds; sshsig runs ssh-keygen, so it sits
    # above the run machinery
    "run.launch": "run.launching.launchers",
    "run.warm.modes": "run.launching.warm_modes",  # the setting's values, read by the plan
    "trust.sshsig": "sources.sshsig",
    "sources.lock": "installed.lock",  # read by the run machinery: on its floor
    "sources.names": "installed.names",
    "trust.signature": "installed.signature",  # the value the lock records
    **{
        f"lab.providers{m}": f"providers{m}" for m in ("", ".base", ".anthropic_api", ".openai_api")
    },
    # issue 40: core/run/ shows its three stages (a moved package's modules each named)
    **{f"run.{m}": f"run.{stage}.{m}" for stage, ms in _STAGES.items() for m in ms.split()},
}
MOVED = {f"skill_magics.core.{old}": f"skill_magics.core.{new}" for old, new in _WHERE.items()}


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds the old paths only; the module it returns is the one at the new path."""

    def find_spec(
        self, fullname: str, path: object = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(fullname, self) if fullname in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(deprecation_message(spec.name, MOVED[spec.name]), DeprecationWarning, 2)
        return importlib.import_module(MOVED[spec.name])

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the module was imported at its new path."""


def install() -> None:
    """Put the finder on ``sys.meta_path`` once (it answers only for the names in MOVED)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        # First: a moved package's submodule would otherwise be found again under the old
        # name through the package's __path__ (a second module object).
        sys.meta_path.insert(0, _OldPaths())


__all__ = ["MOVED", "install"]
