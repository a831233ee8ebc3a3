"""One call site for every run: nothing outside ``core/run/`` and the manager reaches the gate
or the executor (docs/architecture.md, *The run pipeline*).

Read from the source with ``ast`` (nothing is imported), every module of the package:

(a) only ``skill_magics.core.run.*`` and ``skill_magics.core.manager`` import the gate
    (``core/run/gating/gate.py``) or the executor (``core/run/executor.py``); the package face may
    import ``ScriptExecutor`` for its public name, and calls nothing;
(b) nowhere else does code call a method through a ``.gate`` or ``.executor`` attribute
    (``manager.gate.decide(...)``, ``manager.executor.run(...)``): a capability or a magic hands
    its plan to ``manager.run_planned`` instead.

A new capability that needs something the call site lacks extends ``core/run/pipeline.py``.
"""

from __future__ import annotations

import ast
from pathlib import Path

from test_import_graph import PACKAGE, REPO, _within, import_graph

PIPELINE = ("skill_magics.core.run.gating.gate", "skill_magics.core.run.executor")
ALLOWED = ("skill_magics.core.run", "skill_magics.core.manager")
REACHED_THROUGH = ("gate", "executor")  # attribute names that lead to the gate / executor
# A batch's thread/process pool is called ``pool`` (BatchResult.pool, MapRun.pool); the
# deprecated BatchResult.executor property is read, never called.


def _allowed(module: str) -> bool:
    return any(_within(module, p) for p in ALLOWED)


def test_only_core_run_and_the_manager_import_the_gate_or_the_executor():
    problems = []
    for imp in import_graph().imports:
        if not imp.internal or imp.target not in PIPELINE or _allowed(imp.source):
            continue
        if imp.source == PACKAGE and imp.target == "skill_magics.core.run.executor":
            continue  # the public name ScriptExecutor (skill_magics.__init__._LAZY)
        problems.append(f"{imp.where()}: {imp.source} imports {imp.target}")
    assert not problems, (
        "only core/run/ and the manager may use the gate or the executor; hand the plan to "
        "manager.run_planned instead:\n" + "\n".join(problems)
    )


def _calls_through(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every call ``<anything>.gate.<method>(...)`` or
    ``<anything>.executor.<method>(...)``."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        owner = node.func.value
        if isinstance(owner, ast.Attribute) and owner.attr in REACHED_THROUGH:
            found.append((node.lineno, f".{owner.attr}.{node.func.attr}(...)"))
    return found


def test_nothing_outside_core_run_and_the_manager_calls_the_gate_or_the_executor():
    graph = import_graph()
    problems = []
    for module, path in graph.modules.items():
        if _allowed(module):
            continue
        rel = path.relative_to(REPO).as_posix()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        problems += [f"{rel}:{line}: {text}" for line, text in _calls_through(tree)]
    assert not problems, (
        "call manager.run_planned (core/run/pipeline.py) instead of the gate or the "
        "executor:\n" + "\n".join(problems)
    )


def test_the_check_sees_a_call_through_the_gate_and_the_executor():
    """The checker itself: the shapes the rule is about are found, others are not."""
    source = (
        "manager.gate.decide(request, approver)\n"
        "self.manager.executor.run(prepared)\n"
        "await m.manager.executor.run_async(p)\n"
        "manager.run_planned(plan, approver)\n"
        "panel.decide(decision, by)\n"
        "result.executor\n"
    )
    found = [text for _, text in _calls_through(ast.parse(source))]
    assert found == [".gate.decide(...)", ".executor.run(...)", ".executor.run_async(...)"]


def test_the_package_is_read():
    assert Path(REPO, "skill_magics", "core", "run", "pipeline.py").is_file()
    assert "skill_magics.core.run.pipeline" in import_graph().modules
