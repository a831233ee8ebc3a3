"""What a Python script says about itself, read with ``ast`` (never imported, never run).

One parse per file gives everything the catalog needs (docs/architecture.md, *Real skills*):

- ``imports``: each ``import``/``from ... import`` anywhere in the file, with its level
  (relative imports), the names a ``from`` import takes (they may be submodules), and
  whether it sits inside ``try: ... except ImportError`` (an optional dependency);
- ``main_guard``: a top-level ``if __name__ == "__main__":``;
- ``programs``: literal program names the script runs: ``shutil.which("gh")``, and the
  first element of a command list given to ``subprocess``/``os`` calls, written directly
  (``run(["gh", ...])``), concatenated (``["soffice"] + args``) or assigned to a variable
  first (``cmd = ["soffice", ...]; run(cmd)``); ``os.system("git ...")`` by its first word;
- ``dependencies``: a PEP 723 ``# /// script`` block's ``dependencies`` (None: no block);
- ``only_definitions``: the top level holds nothing but imports, definitions and constants
  (catalog/toplevel.py; parsed in full only for files without a main guard).

Results are cached per file by (path, mtime, size), so a skill's 50 scripts are parsed once.

Example:
    >>> info = analyze("layouts/eval-skill/scripts/run_eval.py")
    >>> [i.module for i in info.imports], info.main_guard, info.programs
    (['subprocess', 'lxml', 'scripts.utils'], True, ('soffice',))
"""

from __future__ import annotations

import ast
import os
import re
import threading
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass

from skill_magics.core.catalog.toplevel import only_definitions

MAX_SOURCE_BYTES = 2 << 20  # a "script" larger than this is generated data: not parsed


@dataclass(frozen=True)
class ImportRef:
    """One import: ``from .a import b`` is ImportRef("a", level=1, names=("b",))."""

    module: str  # dotted name as written ("" for ``from . import x``)
    level: int = 0  # 0: absolute; 1: ``from .``; 2: ``from ..``
    names: tuple[str, ...] = ()  # what a ``from`` import takes (may be submodules)
    optional: bool = False  # inside try/except ImportError
    line: int = 0

    @property
    def top(self) -> str:
        """The top-level name an absolute import needs on sys.path (``lxml`` of lxml.etree)."""
        return self.module.split(".", 1)[0]


@dataclass(frozen=True)
class SourceInfo:
    """What one parse of a Python file found (``error``: why it could not be parsed)."""

    imports: tuple[ImportRef, ...] = ()
    main_guard: bool = False
    programs: tuple[str, ...] = ()
    dependencies: tuple[str, ...] | None = None  # PEP 723 ``dependencies``; None: no block
    shebang: bool = False  # the first line is ``#!...``
    only_definitions: bool = False  # running it does nothing (catalog/toplevel.py)
    error: str = ""


_CACHE: dict[str, tuple[tuple[int, int], SourceInfo]] = {}
_LOCK = threading.Lock()
_MAX_CACHE = 8192

_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})
_SUBPROCESS_CALLS = frozenset(
    {"run", "call", "check_call", "check_output", "Popen", "getoutput", "getstatusoutput"}
)
# os functions whose first argument (or second, for the exec*/spawn* "file" forms) is a program
_OS_LIST_CALLS = frozenset({"execv", "execve", "execvp", "execvpe", "posix_spawn", "posix_spawnp"})
_OS_STRING_CALLS = frozenset({"system", "popen"})
_PEP723_RE = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")
_PROGRAM_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.+-]*$")


def analyze(path: str | os.PathLike[str]) -> SourceInfo:
    """Parse ``path`` once (cached while its mtime and size stay the same)."""
    key = os.fspath(path)
    try:
        st = os.stat(key)
    except OSError as exc:
        return SourceInfo(error=f"cannot read: {exc.strerror or exc}")
    ident = (st.st_mtime_ns, st.st_size)
    with _LOCK:
        hit = _CACHE.get(key)
    if hit is not None and hit[0] == ident:
        return hit[1]
    info = _analyze(key, st.st_size)
    with _LOCK:
        if len(_CACHE) > _MAX_CACHE:
            _CACHE.clear()
        _CACHE[key] = (ident, info)
    return info


def _analyze(path: str, size: int) -> SourceInfo:
    if size > MAX_SOURCE_BYTES:
        return SourceInfo(error="too large to parse")
    try:
        with open(path, "rb") as fh:
            source = fh.read()
    except OSError as exc:
        return SourceInfo(error=f"cannot read: {exc.strerror or exc}")
    text = source.decode("utf-8", "replace")
    dependencies = pep723_dependencies(text)
    shebang = source.startswith(b"#!")
    statements, main_guard = _relevant_statements(text)
    tree, error = _parse_statements(statements)
    # A main guard runs code, so only files without one need the full parse.
    defines_only = not main_guard and only_definitions(source)
    visitor = _Visitor()
    visitor.collect(tree)
    return SourceInfo(
        imports=tuple(visitor.imports),
        main_guard=main_guard,
        programs=tuple(dict.fromkeys(visitor.programs)),
        dependencies=dependencies,
        shebang=shebang,
        only_definitions=defines_only,
        error=error,
    )


# -- the statements that matter ------------------------------------------------------------
#
# Parsing a whole script costs ~1.3 ms per 120 lines (plus ~1 ms to walk the tree), too slow
# for a 50-script skill in 20 ms. The lines that can matter (imports, command lists, calls
# that run programs, ``if __name__ == "__main__":``) are found with one cheap pass over the
# lines; only those statements are parsed with ``ast``, in one small module where an import
# inside ``try: ... except ImportError`` is wrapped in such a try again, so the visitor below
# sees the same structure it would in the full tree.

_IMPORT_LINE = re.compile(r"(?:import|from)\s")
_PROGRAM_HINT = re.compile(
    r"which\(|subprocess|os\.(?:system|popen|exec|spawn|posix_spawn)|"
    r"\b(?:run|call|check_call|check_output|Popen|getoutput|getstatusoutput)\("
)
# ``cmd = ["soffice", ...`` (or the list opening at the end of the line): a command list.
_LIST_ASSIGN = re.compile(r"[A-Za-z_]\w*\s*(?::[^=]*)?=\s*[\[(]\s*(?:[rRbBuUfF]?['\"]|$)")
_MAIN_GUARD = re.compile(
    r"if\s+(?:__name__\s*==\s*['\"]__main__['\"]|['\"]__main__['\"]\s*==\s*__name__)\s*:"
)
_HEADER = re.compile(r"(?:if|elif|while)\s+(?P<expr>.*):\s*(?:#.*)?$")
_WITH = re.compile(r"(?:async\s+)?with\s+(?P<expr>.*?)(?:\s+as\s+[\w(), ]+)?:\s*(?:#.*)?$")
_EXCEPT = re.compile(r"except\b(?P<what>[^:]*):")
_STRINGS = re.compile(r"'[^'\\]*(?:\\.[^'\\]*)*'|\"[^\"\\]*(?:\\.[^\"\\]*)*\"")
_BLOCK_END = ("except", "else", "finally", "elif")
_ALIAS = re.compile(r"\bas\s+([A-Za-z_]\w*)")
# Where a line that may matter is (structure included: try/except, triple quotes, the main
# guard): literal tokens found with str.find (C speed), then widened to their line. A regex
# alternation of these tokens tries every alternative at every character (10x slower).
_TOKENS = (
    "import",
    "try:",
    "except",
    '"""',
    "'''",
    "__main__",
    "which(",
    "subprocess",
    "os.system",
    "os.popen",
    "os.exec",
    "os.spawn",
    "os.posix_spawn",
    "run(",
    "call(",
    "check_output(",
    "Popen(",
    "getoutput(",
    "getstatusoutput(",
    # a command list assigned to a variable: its first element is a string literal
    '= ["',
    "= ['",
    '=["',
    "=['",
    "= [\n",
    "=[\n",
    '= ("',
    "= ('",
    "= (\n",
)


class _Try:
    __slots__ = ("indent", "catches", "in_body")

    def __init__(self, indent: int) -> None:
        self.indent = indent
        self.catches = False  # one of its handlers catches ImportError
        self.in_body = True  # before its first except


def _relevant_statements(text: str) -> tuple[list[tuple[str, list[_Try]]], bool]:
    """([(statement at column 0, the try blocks around it)], has a main guard).

    Only lines that may matter are visited (one regex over the text finds them); the others
    (most of a script) are never looked at in Python.
    """
    scan = _Scan(text)
    for start, end in _candidate_lines(text, _TOKENS):
        if start >= scan.consumed:
            scan.line(start, end)
    out = scan.out
    if scan.aliases:  # calls through an alias (``go(cmd)``): a second, targeted pass
        seen = {pos for pos, _, _ in out}
        for start, end in _candidate_lines(text, sorted(scan.aliases)):
            if start not in seen:
                statement = _as_simple(_logical_line(text[start:end].strip(), text, end)[0])
                if statement:
                    out.append((start, statement, []))
        out.sort(key=lambda item: item[0])  # assignments before the calls that use them
    return [(statement, around) for _, statement, around in out], scan.main_guard


class _Scan:
    """The state of :func:`_relevant_statements` over one text's candidate lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.out: list[tuple[int, str, list[_Try]]] = []
        self.tries: list[_Try] = []
        self.main_guard = False
        self.aliases: set[str] = set()  # "go(" for ``from subprocess import run as go``
        self.quote = ""  # the triple quote of the string we are inside, if any
        self.consumed = 0  # text before this offset was read as part of an earlier statement

    def line(self, start: int, end: int) -> None:
        line = self.text[start:end]
        if self.quote:
            if self.quote in line:
                self.quote = ""
            return
        stripped = line.strip()
        if not stripped or stripped[0] == "#":
            return
        indent = len(line) - len(line.lstrip())
        for q in ('"""', "'''"):
            if line.count(q) % 2 == 1:  # opens a string that ends on a later line
                self.quote = q
                break
        if self._structure(stripped, indent) or self.quote:
            return
        if self._relevant(stripped):
            statement, self.consumed = _logical_line(stripped, self.text, end)
            statement = _as_simple(statement)
            if statement:
                self.out.append((start, statement, [t for t in self.tries if t.in_body]))

    def _structure(self, stripped: str, indent: int) -> bool:
        """Follow try/except blocks and the main guard; True when the line was one."""
        tries = self.tries
        while tries and (
            indent < tries[-1].indent
            or (indent == tries[-1].indent and not stripped.startswith(_BLOCK_END))
        ):
            tries.pop()
        if stripped.startswith("try:"):
            tries.append(_Try(indent))
            return True
        if tries and indent == tries[-1].indent and stripped.startswith("except"):
            tries[-1].in_body = False
            found = _EXCEPT.match(stripped)
            what = found.group("what") if found else ""
            if not what.strip() or any(name in what for name in _IMPORT_ERRORS):
                tries[-1].catches = True
            return True
        if indent == 0 and _MAIN_GUARD.match(stripped):
            self.main_guard = True
            return True
        return False

    def _relevant(self, stripped: str) -> bool:
        """An import, a program named, a list assigned or a call through an alias."""
        is_import = _IMPORT_LINE.match(stripped) is not None
        if is_import and " as " in stripped and ("subprocess" in stripped or "shutil" in stripped):
            self.aliases.update(m + "(" for m in _ALIAS.findall(stripped))  # run as go: go(...)
        return (
            is_import
            or _PROGRAM_HINT.search(stripped) is not None
            or _LIST_ASSIGN.match(stripped) is not None
            or bool(self.aliases and any(a in stripped for a in self.aliases))
        )


def _candidate_lines(text: str, tokens: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of each line holding one of ``tokens``, in order, once each."""
    starts: set[int] = set()
    find, rfind = text.find, text.rfind
    for token in tokens:
        pos = find(token)
        while pos >= 0:
            start = rfind("\n", 0, pos) + 1
            starts.add(start)
            end = find("\n", pos)
            if end < 0:
                break
            pos = find(token, end)  # the rest of this line is already in
    lines = []
    for start in sorted(starts):
        end = find("\n", start)
        lines.append((start, len(text) if end < 0 else end))
    return lines


def _as_simple(statement: str) -> str:
    """A compound statement's header as an expression (``if which("x"):`` -> ``which("x")``);
    "" for headers that hold nothing to read."""
    header = _HEADER.match(statement) or _WITH.match(statement)
    if header is not None:
        return header.group("expr")
    if statement.endswith(":") or statement.startswith(("def ", "class ", "for ")):
        return ""
    return statement


def _logical_line(first: str, text: str, pos: int) -> tuple[str, int]:
    """The statement starting with ``first`` (its line ends at ``pos``), joined over open
    brackets and backslashes; and the offset where it ends."""
    parts = [first]
    depth = _depth(first)
    while (depth > 0 or parts[-1].endswith("\\")) and pos < len(text) and len(parts) < 60:
        if parts[-1].endswith("\\"):
            parts[-1] = parts[-1][:-1]
        start = pos + 1
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        nxt = text[start:end].strip()
        pos = end
        parts.append(nxt)
        depth += _depth(nxt)
    return " ".join(parts), pos


def _depth(line: str) -> int:
    code = _STRINGS.sub("''", line.split("#", 1)[0] if "#" in line else line)
    return (
        code.count("(")
        + code.count("[")
        + code.count("{")
        - code.count(")")
        - code.count("]")
        - code.count("}")
    )


def _parse_statements(statements: list[tuple[str, list[_Try]]]) -> tuple[ast.Module, str]:
    """One module of the statements (optional imports inside ``try/except ImportError``)."""
    chunks = [_wrapped(stmt, tries) for stmt, tries in statements]
    try:
        return ast.parse("\n".join(chunks)), ""
    except (SyntaxError, ValueError):
        pass
    body: list[ast.stmt] = []
    errors = []
    for chunk in chunks:  # one bad statement must not hide the others
        try:
            body.extend(ast.parse(chunk).body)
        except (SyntaxError, ValueError) as exc:
            why = exc.msg if isinstance(exc, SyntaxError) else str(exc)
            errors.append(f"{chunk.splitlines()[-1][:60]!r} ({why})")
    error = f"does not parse: {errors[0]}" if errors else ""
    return ast.Module(body=body, type_ignores=[]), error


def _wrapped(statement: str, tries: list[_Try]) -> str:
    if any(t.catches for t in tries):
        return f"try:\n    {statement}\nexcept ImportError:\n    pass"
    return statement


def pep723_dependencies(text: str) -> tuple[str, ...] | None:
    """The ``dependencies`` of a PEP 723 ``# /// script`` block; None when there is none.

    >>> pep723_dependencies('# /// script\\n# dependencies = ["rich>=13"]\\n# ///\\n')
    ('rich>=13',)
    """
    if "# /// script" not in text:
        return None
    for match in _PEP723_RE.finditer(text):
        if match.group("type") != "script":
            continue
        content = "".join(
            line[2:] if line.startswith("# ") else line[1:]
            for line in match.group("content").splitlines(keepends=True)
        )
        deps = _toml_dependencies(content)
        return tuple(str(d) for d in deps)
    return None


def _toml_dependencies(content: str) -> list:
    try:
        data = tomllib.loads(content)
    except ValueError:
        return []
    deps = data.get("dependencies", [])
    return deps if isinstance(deps, list) else []


class _Visitor(ast.NodeVisitor):
    """Collects imports (with try/except ImportError depth) and program literals."""

    def __init__(self) -> None:
        self.imports: list[ImportRef] = []
        self.programs: list[str] = []
        self._optional = 0
        # Variables holding a command list, per scope: name -> program (last assignment wins).
        self._scopes: list[dict[str, str]] = [{}]
        self._subprocess_names: set[str] = set()  # ``from subprocess import run`` aliases
        self._which_names: set[str] = set()  # ``from shutil import which``

    # -- imports ---------------------------------------------------------------------------

    def visit_Try(self, node: ast.Try | ast.TryStar) -> None:
        optional = any(_catches_import_error(h) for h in node.handlers)
        self._optional += optional
        for stmt in node.body:
            self.visit(stmt)
        self._optional -= optional
        for handler in node.handlers:
            self.visit(handler)
        for stmt in [*node.orelse, *node.finalbody]:
            self.visit(stmt)

    visit_TryStar = visit_Try

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.imports.append(ImportRef(alias.name, 0, (), self._optional > 0, node.lineno))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = node.module or ""
        names = tuple(a.name for a in node.names if a.name != "*")
        self.imports.append(
            ImportRef(module, node.level or 0, names, self._optional > 0, node.lineno)
        )
        if node.level == 0 and module == "subprocess":
            self._subprocess_names.update(
                a.asname or a.name for a in node.names if a.name in _SUBPROCESS_CALLS
            )
        if node.level == 0 and module == "shutil":
            self._which_names.update(a.asname or a.name for a in node.names if a.name == "which")

    # -- scopes and command variables -------------------------------------------------------

    def visit_FunctionDef(self, node: ast.FunctionDef) -> None:
        self._scopes.append({})
        self.generic_visit(node)
        self._scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef  # type: ignore[assignment]

    def visit_Assign(self, node: ast.Assign) -> None:
        program = self._program_of(node.value)
        for target in node.targets:
            if isinstance(target, ast.Name) and program:
                self._scopes[-1][target.id] = program
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and isinstance(node.target, ast.Name):
            program = self._program_of(node.value)
            if program:
                self._scopes[-1][node.target.id] = program
        self.generic_visit(node)

    # -- calls -----------------------------------------------------------------------------

    def collect(self, module: ast.Module) -> None:
        """Read the flat module :func:`_parse_statements` builds, without a generic visit
        (NodeVisitor's per-node dispatch was most of the analysis time)."""
        for stmt in module.body:
            if isinstance(stmt, ast.Try):  # the optional-import wrapper
                self._optional += 1
                for inner in stmt.body:
                    self._statement(inner)
                self._optional -= 1
            else:
                self._statement(stmt)

    def _statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import):
            self.visit_Import(stmt)
            return
        if isinstance(stmt, ast.ImportFrom):
            self.visit_ImportFrom(stmt)
            return
        if isinstance(stmt, ast.Assign):
            program = self._program_of(stmt.value)
            if program:
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self._scopes[-1][target.id] = program
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            program = self._program_of(stmt.value)
            if program and isinstance(stmt.target, ast.Name):
                self._scopes[-1][stmt.target.id] = program
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                self._call(node)

    def visit_Call(self, node: ast.Call) -> None:
        self._call(node)
        self.generic_visit(node)

    def _call(self, node: ast.Call) -> None:
        owner, name = _call_name(node.func)
        first = node.args[0] if node.args else _keyword(node, "args")
        if (owner == "shutil" and name == "which") or (owner is None and name in self._which_names):
            if first is not None:
                self._add(_string(first))
        elif (owner == "subprocess" and name in _SUBPROCESS_CALLS) or (
            owner is None and name in self._subprocess_names
        ):
            if first is not None:
                self._add(self._program_of(first, strings=True))
        elif owner == "os" and first is not None:
            self._os_call(node, name, first)

    def _os_call(self, node: ast.Call, name: str, first: ast.expr) -> None:
        """``os.NAME(first, ...)``: the program a shell string or an exec/spawn call starts."""
        if name in _OS_STRING_CALLS:
            self._add(_first_word(_string(first)))
        elif name in _OS_LIST_CALLS or name.startswith(("execl", "spawnl", "spawnv")):
            # os.execvp(file, args) / os.spawnlp(mode, file, ...): the program is the file.
            arg = node.args[1] if name.startswith("spawn") and len(node.args) > 1 else first
            self._add(_string(arg))

    def _program_of(self, node: ast.expr, *, strings: bool = False) -> str:
        """The literal program a command expression starts with ("" when not literal)."""
        if isinstance(node, (ast.List, ast.Tuple)):
            return _string(node.elts[0]) if node.elts else ""
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return self._program_of(node.left)  # ["soffice"] + args
        if isinstance(node, ast.Name):
            for scope in reversed(self._scopes):
                if node.id in scope:
                    return scope[node.id]
            return ""
        if strings and isinstance(node, (ast.Constant, ast.JoinedStr)):
            return _first_word(_string(node))  # run("git status", shell=True)
        return ""

    def _add(self, program: str) -> None:
        name = os.path.basename(program) if program.startswith("/") else program
        if name and _PROGRAM_RE.match(name):
            self.programs.append(name)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    if handler.type is None:
        return True  # a bare except catches ImportError too
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    for t in types:
        name = t.attr if isinstance(t, ast.Attribute) else getattr(t, "id", "")
        if name in _IMPORT_ERRORS:
            return True
    return False


def _call_name(func: ast.expr) -> tuple[str | None, str]:
    if isinstance(func, ast.Attribute):
        owner = func.value.id if isinstance(func.value, ast.Name) else ""
        return owner, func.attr
    if isinstance(func, ast.Name):
        return None, func.id
    return "", ""


def _keyword(node: ast.Call, name: str) -> ast.expr | None:
    for kw in node.keywords:
        if kw.arg == name:
            return kw.value
    return None


def _string(node: ast.expr) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr) and node.values:
        head = node.values[0]  # f"git {x}": the literal start
        if isinstance(head, ast.Constant) and isinstance(head.value, str):
            return head.value
    return ""


def _first_word(text: str) -> str:
    words = text.split()
    return words[0] if words else ""


__all__ = ["ImportRef", "SourceInfo", "analyze", "pep723_dependencies"]
