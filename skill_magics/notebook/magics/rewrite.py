"""The await rewrite: magics that wait for a click run as a top-level ``await``.

On ipykernel >= 7.4 the kernel dispatches widget messages (the approval click, the Stop
button) only while a cell awaits. This input transformer rewrites, per :data:`AWAITABLE`,

- a ``%%skillrun`` or ``%%skillpy`` cell into ``await <hook>('skillrun', LINE, BODY)``;
- a top-level ``[x =] %skill_context ...`` line into ``[x =] await <hook>('skill_context', LINE)``

before IPython's own magic transforms see it; ipykernel then runs the cell as a coroutine and
a Kernel > Interrupt arrives as a cancellation. ``<hook>`` is ``get_ipython().<HOOK_ATTR>``,
which extension.py sets to a dispatcher over the magics' coroutines: the generated code names
no module, so moving a module cannot break it.

Elsewhere (terminal IPython, older kernels, autoawait off, or the body of another magic such
as ``%%time``, which IPython runs outside the kernel's coroutine) cells run through the
ordinary synchronous magics; an empty ``%%skillrun`` body gets a blank line there, because
IPython refuses a cell magic without a body and ours means ``{}``.
"""

from __future__ import annotations

import re
import sys
import tokenize
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from skill_magics.notebook.approval import waiting

HOOK_ATTR = "_skill_magics_await"  # attribute of the shell holding the dispatcher

# name -> kind: "cell" magics are rewritten as a whole cell, "line" magics per statement.
AWAITABLE: Mapping[str, str] = {
    "skillrun": "cell",
    "skillpy": "cell",
    "skill_context": "line",
    "skills env": "line",  # an environment install asks first (notebook/cmd/env.py)
    "skillagent": "cell",  # a model's script calls ask first (notebook/magics/skillagent.py)
    "skills evals": "line",  # one approval for an evaluation (notebook/cmd/evals.py)
    "skills triggers": "line",  # requests awaited: progress and interrupts get through
    # installing skill files asks first too (notebook/cmd/install.py, update.py, sync.py)
    "skills install": "line",
    "skills update": "line",
    "skills sync": "line",
}

Runner = Callable[..., Awaitable[Any]]

_LINE_MAGICS = [name for name, kind in AWAITABLE.items() if kind == "line"]
_LINE_RE = re.compile(
    r"^(?P<lhs>[A-Za-z_][\w.]*\s*=\s*)?%(?P<name>"
    + "|".join(map(re.escape, _LINE_MAGICS))
    + r")(?P<rest>(?:[ \t].*)?)$"
)


def to_await(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: the rewrite, where the kernel supports it."""
    if not lines:
        return lines
    cell = _cell_magic(lines[0])
    if cell is None and not _statement_rows(lines):
        return lines
    from IPython import get_ipython

    if not waiting.supports_await(get_ipython()) or inside_a_magic():
        if cell == "skillrun" and not "".join(lines[1:]):
            return [lines[0].rstrip("\n") + "\n", "\n"]  # IPython refuses an empty body
        return lines
    return rewrite(lines)


# check_complete() skips transformers with side effects: keeps "%%" cells multi-line there.
to_await.has_side_effects = True  # type: ignore[attr-defined]


def rewrite(lines: list[str]) -> list[str]:
    """The rewrite itself (no kernel check): what the await path executes."""
    cell = _cell_magic(lines[0])
    if cell is not None:
        line = lines[0][len(cell) + 2 :].strip()
        body = "".join(lines[1:])
        return [f"await get_ipython().{HOOK_ATTR}({cell!r}, {line!r}, {body!r})\n"]
    rows = _statement_rows(lines)
    out = []
    for row, text in enumerate(lines):
        m = _LINE_RE.match(text.rstrip("\r\n")) if row in rows else None
        if m is None:
            out.append(text)
            continue
        lhs, name, rest = m.group("lhs") or "", m.group("name"), m.group("rest").strip()
        out.append(f"{lhs}await get_ipython().{HOOK_ATTR}({name!r}, {rest!r})\n")
    return out


def _cell_magic(first: str) -> str | None:
    """``skillrun`` for a ``%%skillrun ...`` first line (a cell magic in AWAITABLE), else None."""
    if not first.startswith("%%"):
        return None
    for name, kind in AWAITABLE.items():
        head = "%%" + name
        if kind == "cell" and first.startswith(head):
            rest = first[len(head) :]
            if rest == "" or rest[0].isspace():  # not %%skillrunx or %%skillrun? (help)
                return name
    return None


def _statement_rows(lines: list[str]) -> set[int]:
    """Indexes of the lines that are a top-level ``[x =] %line_magic ...`` statement.

    Only where IPython itself runs a line magic: never in a cell magic's body (``%%writefile``
    must write the text as typed, ``%%time`` compiles its body where no ``await`` is
    allowed), and only at the start of a logical line, so text inside a string literal or a
    continued line stays.
    """
    if lines[0].startswith("%%") or not any(
        "%" + name in line for line in lines for name in _LINE_MAGICS
    ):
        return set()
    from IPython.core.inputtransformer2 import make_tokens_by_line

    try:
        logical = make_tokens_by_line(lines)
    except (SyntaxError, ValueError, tokenize.TokenError):
        return set()  # IPython's own transforms fail on this cell too: leave it to them
    starts = {tokens[0].start[0] - 1 for tokens in logical if tokens}
    return {
        row for row in starts if 0 <= row < len(lines) and _LINE_RE.match(lines[row].rstrip("\r\n"))
    }


def inside_a_magic() -> bool:
    """True when a running magic transforms its body as a nested cell (``%%time``,
    ``%timeit``, ``%prun``, ``%%capture``): no top-level ``await`` works there (IPython
    compiles or runs it outside the kernel's coroutine), the synchronous magic does."""
    from IPython.core.interactiveshell import InteractiveShell

    runners = (InteractiveShell.run_line_magic.__code__, InteractiveShell.run_cell_magic.__code__)
    frame: Any = sys._getframe(1)
    while frame is not None:
        if frame.f_code in runners:
            return True
        frame = frame.f_back
    return False


def expand(shell: Any, line: str) -> str:
    """``$name`` / ``{expr}`` in the magic line, as IPython expands it for cell magics."""
    from IPython.utils.text import DollarFormatter

    try:
        return DollarFormatter().vformat(line, args=[], kwargs=dict(shell.user_ns))
    except Exception:  # IPython leaves the line alone when expansion fails, so do we
        return line


class Dispatcher:
    """What ``get_ipython().<HOOK_ATTR>(name, line[, body])`` calls: the magic's coroutine.

    ``runners`` maps each AWAITABLE name to ``coroutine(line[, body])``. Cell magic lines are
    expanded (``$x``, ``{x}``) as IPython does; ``%skill_context`` is ``@no_var_expand``.
    """

    def __init__(self, shell: Any, runners: Mapping[str, Runner]) -> None:
        missing = set(AWAITABLE) - set(runners)
        if missing:
            raise ValueError(f"no coroutine for the awaitable magics {sorted(missing)}")
        self.shell = shell
        self.runners = dict(runners)

    def __call__(self, name: str, line: str, *body: str) -> Awaitable[Any]:
        if AWAITABLE[name] == "cell":
            return self.runners[name](expand(self.shell, line), *body)
        return self.runners[name](line)


def install(shell: Any, runners: Mapping[str, Runner]) -> None:
    """Add the transformer (idempotent; it checks kernel support per cell) and the hook."""
    setattr(shell, HOOK_ATTR, Dispatcher(shell, runners))
    cleanup = shell.input_transformers_cleanup
    if to_await not in cleanup:
        cleanup.append(to_await)


def uninstall(shell: Any) -> None:
    cleanup = shell.input_transformers_cleanup
    while to_await in cleanup:
        cleanup.remove(to_await)
    if hasattr(shell, HOOK_ATTR):
        delattr(shell, HOOK_ATTR)


__all__ = [
    "AWAITABLE",
    "HOOK_ATTR",
    "Dispatcher",
    "to_await",
    "rewrite",
    "inside_a_magic",
    "expand",
    "install",
    "uninstall",
]
