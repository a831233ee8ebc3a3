"""The import graph of the skill_magics package: no cycles, a UI-free core, imports go down.

The graph is read from the source with ``ast`` (nothing is imported): every ``import`` and
``from ... import`` anywhere in a module counts, inside functions and under
``if TYPE_CHECKING:`` too. Relative imports are resolved. ``import skill_magics.a.b`` is an
import of module ``skill_magics.a.b`` (or of package ``skill_magics.a.b``'s ``__init__``), not of
its parent packages; ``from skill_magics.a import b`` where ``b`` is a submodule is an import of
``skill_magics.a.b``. ``skill_magics/examples`` (skills, not package code) is left out.

Rules:

(a) no cycles among modules, however lazy the import;
(b) nothing under ``skill_magics.core`` imports the notebook layer, ``skill_magics.langchain``,
    the package face ``skill_magics`` (its ``__init__``), or IPython/ipywidgets/traitlets;
(c) a module imports only modules of its own rank or a lower one (``RANKS`` below).

To change the layering, edit ``RANKS``; a new module that no entry matches fails the test
until it is given a rank.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path

# Which modules may import which: a module may import modules of the same or a lower rank, never
# a higher one (same-rank imports must still be acyclic: rule (a)). Keys are module names; a key
# ending in ".*" matches every module below that package. The most specific key wins: an exact
# name over a pattern, a longer pattern over a shorter one.
RANKS: dict[str, int] = {
    # 0: the core's base (core/base/), which imports nothing above it
    "skill_magics.core": 0,  # core/__init__.py (and the aliases of moved modules)
    "skill_magics.core.moved": 0,
    "skill_magics.core.base": 0,
    "skill_magics.core.base.*": 0,
    # traces (core/trace/): a no-op facade every layer calls, so at the bottom; it reads the
    # run machinery's objects by attribute, never imports them
    "skill_magics.core.trace": 0,
    "skill_magics.core.trace.*": 0,
    # 1: skills on disk (discovery, SKILL.md, detection, references)
    "skill_magics.core.catalog": 1,
    "skill_magics.core.catalog.*": 1,
    # installed skills: the lock (which every approval request and %skills show read) and
    # the checks of untrusted names it needs; installing (core.sources) is rank 4
    "skill_magics.core.installed": 1,
    "skill_magics.core.installed.*": 1,
    # what skills did, from the audit records (manager.usage() delegates here)
    # the model SDKs (registered kinds): the lab and the prompt's tool shapes ask them
    "skill_magics.core.providers": 1,
    "skill_magics.core.providers.*": 1,
    "skill_magics.core.usage": 1,
    "skill_magics.core.usage.*": 1,
    # who signed a skill (values, allowed signers, the private record, git's verify output)
    # and the team policy: read by the lock, the run checks and installs alike
    "skill_magics.core.trust": 1,
    "skill_magics.core.trust.*": 1,
    "skill_magics.core.policy": 1,
    "skill_magics.core.policy.*": 1,
    # 2: running a script (plan, approval gate, executor, process)
    "skill_magics.core.run": 2,
    "skill_magics.core.run.*": 2,
    # skills over MCP (SEP-2640): a host and a server over skill folders (catalog, safefs);
    # the manager will hold servers, so below it
    "skill_magics.core.mcp": 2,
    "skill_magics.core.mcp.*": 2,
    # 3: the SkillManager, which ties catalog and run together
    "skill_magics.core.manager": 3,
    # 4: what is built on the manager
    # what a model sees and calls: the envelope, the available skills block, activation, tools
    "skill_magics.core.prompt": 4,
    "skill_magics.core.prompt.*": 4,
    # code in a skill's environment (%%skillpy): built on the manager, unlike the rest of run/
    "skill_magics.core.lab": 4,  # the skill lab: built on tools, available_skills and activation
    "skill_magics.core.lab.*": 4,
    "skill_magics.core.sources": 4,
    "skill_magics.core.sources.*": 4,  # install, verify, sync, update: built on the manager
    # the panels' kernel part: the approval question's model, the Skills side panel's channel
    # (stdlib) and its board over the manager
    "skill_magics.core.panel": 4,
    "skill_magics.core.panel.*": 4,
    # 5: the faces on the core: IPython/Jupyter and LangChain
    "skill_magics.notebook": 5,
    "skill_magics.notebook.*": 5,
    "skill_magics.langchain": 5,
    "skill_magics.mcp": 5,  # `python -m skill_magics.mcp serve`: a command line on core.mcp
    "skill_magics.mcp.*": 5,
    # the Skills side panel's jupyter_server extension: REST handlers over core/panel/
    "skill_magics.server": 5,
    "skill_magics.server.*": 5,
    # 6: the package face (skill_magics/__init__.py), which may import anything (lazily)
    "skill_magics": 6,
}

PACKAGE = "skill_magics"
CORE = "skill_magics.core"
# What the core must not import (rule b): the layers above it, and the UI libraries.
NOT_FROM_CORE = ("skill_magics.notebook", "skill_magics.langchain")
UI_LIBRARIES = ("IPython", "ipywidgets", "traitlets")

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / PACKAGE
SKIPPED = (SOURCE / "examples",)


@dataclass(frozen=True)
class Import:
    """One import statement's edge: ``source`` imports ``target`` at ``path``:``line``."""

    source: str
    target: str  # a module of the package, or the top-level name of an outside package
    internal: bool
    path: str  # relative to the repository
    line: int

    def where(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class Graph:
    modules: dict[str, Path]  # module name -> file
    imports: tuple[Import, ...]
    unresolved: tuple[Import, ...]  # imports of skill_magics.* names that are no module

    def internal(self) -> list[Import]:
        return [i for i in self.imports if i.internal and i.source != i.target]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_package(path: Path) -> bool:
    return path.name == "__init__.py"


@functools.lru_cache(maxsize=1)
def import_graph() -> Graph:
    files = sorted(p for p in SOURCE.rglob("*.py") if not any(p.is_relative_to(s) for s in SKIPPED))
    modules = {_module_name(p): p for p in files}
    imports: list[Import] = []
    unresolved: list[Import] = []

    for name, path in modules.items():
        rel = path.relative_to(REPO).as_posix()
        package = name if _is_package(path) else name.rpartition(".")[0]

        def add(target: str, line: int, *, _name: str = name, _rel: str = rel) -> None:
            top = target.partition(".")[0]
            if top != PACKAGE:
                imports.append(Import(_name, top, False, _rel, line))
            elif target in modules:
                imports.append(Import(_name, target, True, _rel, line))
            else:
                unresolved.append(Import(_name, target, True, _rel, line))

        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=rel)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    add(alias.name, node.lineno)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base_parts = package.split(".")
                    if node.level > 1:
                        base_parts = base_parts[: -(node.level - 1)]
                    base = ".".join(base_parts + ([node.module] if node.module else []))
                else:
                    base = node.module or ""
                for alias in node.names:
                    submodule = f"{base}.{alias.name}"
                    add(submodule if submodule in modules else base, node.lineno)
    return Graph(modules, tuple(imports), tuple(unresolved))


def rank_of(module: str) -> int | None:
    """The rank RANKS gives ``module`` (the most specific key), or None when none matches."""
    if module in RANKS:
        return RANKS[module]
    best: tuple[int, int] | None = None
    for key, rank in RANKS.items():
        if key.endswith(".*") and module.startswith(key[:-1]):
            if best is None or len(key) > best[0]:
                best = (len(key), rank)
    return None if best is None else best[1]


def _within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def _strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's algorithm, iterative: the components with more than one module."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = 0
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return components


def _edges(graph: Graph) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for imp in graph.internal():
        edges.setdefault(imp.source, set()).add(imp.target)
    return edges


def find_cycles(graph: Graph, limit: int = 100) -> tuple[list[tuple[str, ...]], bool]:
    """The elementary import cycles, shortest first, each starting at its alphabetically first
    module; and whether that is all of them (the search stops after ``limit`` cycles)."""
    edges = _edges(graph)
    cycles: list[tuple[str, ...]] = []
    budget = [limit, 200_000]  # cycles still wanted, search steps left: fast even on a tangle
    for component in _strongly_connected(sorted(graph.modules), edges):
        for start in component:  # the cycles through `start` and modules after it only
            allowed = {m for m in component if m >= start}
            _cycles_from(start, [start], allowed, edges, cycles, budget)
    complete = budget[0] > 0 and budget[1] > 0
    return sorted(cycles, key=lambda c: (len(c), c)), complete


def _cycles_from(
    start: str,
    path: list[str],
    allowed: set[str],
    edges: dict[str, set[str]],
    cycles: list[tuple[str, ...]],
    budget: list[int],
) -> None:
    for child in sorted(edges.get(path[-1], ())):
        budget[1] -= 1
        if budget[0] <= 0 or budget[1] <= 0:
            return
        if child == start:
            cycles.append(tuple(path))
            budget[0] -= 1
        elif child in allowed and child not in path:
            _cycles_from(start, [*path, child], allowed, edges, cycles, budget)


def _chain(cycle: tuple[str, ...]) -> str:
    return " -> ".join(cycle + cycle[:1])


def _cycle_report(cycles: list[tuple[str, ...]], complete: bool, graph: Graph) -> str:
    """Each cycle as a chain ``a -> b -> a``, then the file and line of every import in them."""
    first: dict[tuple[str, str], Import] = {}
    for imp in sorted(graph.internal(), key=lambda i: i.line):
        first.setdefault((imp.source, imp.target), imp)
    used = sorted(
        {(a, b) for c in cycles for a, b in zip(c, c[1:] + c[:1], strict=True)},
    )
    lines = [f"{len(cycles)} import cycle(s), shortest first:"]
    lines += [f"  {_chain(c)}" for c in cycles]
    if not complete:
        lines.append("  ... and more (the search stopped early): untangle these first")
    lines.append("made of these imports:")
    lines += [f"  {first[e].where()}: {e[0]} imports {e[1]}" for e in used]
    return "\n".join(lines)


# -- the tests -----------------------------------------------------------------------------


def test_the_graph_is_read_from_the_whole_package():
    graph = import_graph()
    assert {PACKAGE, CORE, "skill_magics.core.manager", "skill_magics.notebook.magics"} <= set(
        graph.modules
    )
    assert not [m for m in graph.modules if _within(m, "skill_magics.examples")]
    # every kind of import is seen: a lazy one in a function (the face loads the notebook layer)
    assert any(
        i.source == PACKAGE and i.target == "skill_magics.notebook.extension" for i in graph.imports
    )


def test_every_internal_import_names_a_module_of_the_package():
    graph = import_graph()
    problems = [
        f"{i.where()}: {i.source} imports {i.target}, which is no module of the package"
        for i in graph.unresolved
    ]
    assert not problems, "\n".join(problems)


def test_every_module_has_a_rank():
    missing = [
        f"{path.relative_to(REPO).as_posix()}: {name} matches no entry of RANKS"
        for name, path in import_graph().modules.items()
        if rank_of(name) is None
    ]
    assert not missing, (
        "add these modules to RANKS at the top of tests/test_import_graph.py:\n"
        + "\n".join(missing)
    )


def test_no_import_cycles():
    graph = import_graph()
    cycles, complete = find_cycles(graph)
    assert not cycles, _cycle_report(cycles, complete, graph)


def test_core_imports_neither_the_layers_above_it_nor_the_ui_libraries():
    problems = []
    for imp in import_graph().imports:
        if not _within(imp.source, CORE):
            continue
        if imp.internal and (
            imp.target == PACKAGE or any(_within(imp.target, p) for p in NOT_FROM_CORE)
        ):
            problems.append(f"{imp.where()}: {imp.source} imports {imp.target}")
        elif not imp.internal and imp.target in UI_LIBRARIES:
            problems.append(f"{imp.where()}: {imp.source} imports {imp.target}")
    assert not problems, "the core must stay plain Python:\n" + "\n".join(problems)


def test_imports_go_down_the_ranks():
    problems = []
    for imp in import_graph().internal():
        source, target = rank_of(imp.source), rank_of(imp.target)
        if source is None or target is None:
            continue  # test_every_module_has_a_rank names it
        if target > source:
            problems.append(
                f"{imp.where()}: {imp.source} (rank {source}) imports {imp.target} (rank {target})"
            )
    assert not problems, "a module may import only modules of its rank or lower:\n" + "\n".join(
        problems
    )
