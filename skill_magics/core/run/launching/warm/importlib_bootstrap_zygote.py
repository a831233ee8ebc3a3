"""Starts the warm server (zygote.py) with its frames marked as the interpreter's own.

A cold ``python script.py`` has no Python frame above the script, so a top-level
``warnings.warn(..., stacklevel=2)`` is reported at ``sys:1``. A warm run's script is called
from the server's frames; CPython's warnings skip frames whose file name holds both
"importlib" and "_bootstrap" (its own import machinery), so this file's name and the name
zygote.py is compiled under hold both: a stack level past the script then reaches no frame,
as cold. Standard library only (it runs in the skill's Python, as zygote.py does).
"""

import os

_ZYGOTE = os.path.join(os.path.dirname(os.path.realpath(__file__)), "zygote.py")
with open(_ZYGOTE, "rb") as _fh:
    _CODE = compile(_fh.read(), "<frozen importlib._bootstrap: skill_magics warm server>", "exec")
del _fh
exec(_CODE, {"__name__": "__main__", "__file__": _ZYGOTE, "__builtins__": __builtins__})
