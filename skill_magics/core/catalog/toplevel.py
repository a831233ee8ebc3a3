"""Does running a Python file do anything? Read from its top level with ``ast``, never run.

A module holding nothing but imports, definitions and constants does nothing when run:
``python utils.py`` defines some functions and exits. Such a file is a library, not a
program (catalog/kinds.py refuses to run it on its own). Everything else is a program:
one top-level ``print(...)``, ``main()``, ``for``/``with``/``while`` or an assignment that
reads the script's input (``reader = PdfReader(sys.argv[1])``) is enough.

What counts as "only definitions", statement by statement (nested ``if``/``try`` blocks
are read the same way, so ``try: import x / except ImportError: x = None`` and
``if TYPE_CHECKING: import y`` count as imports):

- ``import``/``from ... import``, ``def``, ``async def``, ``class`` (decorated too), ``pass``,
  a docstring or ``...``, ``global``/``nonlocal``;
- assignments (``=``, ``+=``, annotated) whose value calls none of the module's own
  functions or classes, nor ``print``/``input``/``open``/``exit``..., and reads neither
  ``sys.argv`` nor ``sys.stdin``: ``LOG = logging.getLogger(__name__)`` and
  ``PATTERN = re.compile("x")`` are constants, ``rows = load(sys.argv[1])`` is work;
- ``if``/``try`` whose test is such a value and whose blocks hold only the above.

A file that does not parse is a program (running it shows the error), and so is one too
large to read (``pysource.MAX_SOURCE_BYTES``).

Example:
    >>> only_definitions("import re\\nPAT = re.compile('x')\\ndef f():\\n    return 1\\n")
    True
    >>> only_definitions("import json, sys\\nprint(json.load(sys.stdin))\\n")
    False
"""

from __future__ import annotations

import ast

# Calls that do something when the module runs, whoever defines them.
_ACTIONS = frozenset(
    {"print", "input", "open", "exit", "quit", "exec", "eval", "main", "run", "breakpoint"}
)
# ``sys.<name>``: the script's input, output or exit.
_SYS_IO = frozenset({"argv", "stdin", "stdout", "stderr", "exit"})
_TRY_TYPES = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


def only_definitions(source: str | bytes) -> bool:
    """True when the module's top level holds only imports, definitions and constants."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return False  # a program with a bug, not a library: running it shows the error
    own = {
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    }
    return all(_quiet(stmt, own) for stmt in tree.body)


def _quiet(stmt: ast.stmt, own: set[str]) -> bool:
    if isinstance(
        stmt,
        (
            ast.Import,
            ast.ImportFrom,
            ast.FunctionDef,
            ast.AsyncFunctionDef,
            ast.ClassDef,
            ast.Pass,
            ast.Global,
            ast.Nonlocal,
        ),
    ):
        return True
    if isinstance(stmt, ast.Expr):
        return isinstance(stmt.value, ast.Constant)  # a docstring or ``...``
    if isinstance(stmt, ast.Assign):
        return _quiet_value(stmt.value, own)
    if isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
        return stmt.value is None or _quiet_value(stmt.value, own)
    if isinstance(stmt, ast.If):
        return _quiet_value(stmt.test, own) and all(
            _quiet(s, own) for s in [*stmt.body, *stmt.orelse]
        )
    if isinstance(stmt, _TRY_TYPES):
        blocks = [*stmt.body, *stmt.orelse, *stmt.finalbody]
        for handler in stmt.handlers:
            blocks += handler.body
        return all(_quiet(s, own) for s in blocks)
    return False  # for, while, with, raise, assert, del, match, a call...


def _quiet_value(node: ast.expr, own: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Await, ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(sub, ast.Call):
            func = sub.func
            name = func.id if isinstance(func, ast.Name) else ""
            if name in own or name in _ACTIONS:
                return False
        if (
            isinstance(sub, ast.Attribute)
            and sub.attr in _SYS_IO
            and isinstance(sub.value, ast.Name)
            and sub.value.id == "sys"
        ):
            return False
    return True


__all__ = ["only_definitions"]
