"""A module this process has imported, whole, without importing it: ``loaded(name)``.

``sys.modules.get(name)`` hands over a module another thread is still importing (its name is
there before its body has run): the side panel's thread listed MCP skills while a cell's
thread imported the MCP host, and got ``servers`` without ``servers_of``. An import of a
module that is in ``sys.modules`` waits until the importing thread has finished it.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType


def loaded(name: str) -> ModuleType | None:
    """The module ``name`` once whole if this process imported it (or is importing it),
    else None; never starts an import.

    >>> loaded("sys") is sys
    True
    >>> loaded("skill_magics.no_such_module") is None
    True
    """
    if name not in sys.modules:
        return None
    return importlib.import_module(name)
