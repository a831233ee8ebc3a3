"""Run ``%%skillrun`` cells as a top-level ``await`` where the kernel supports it.

On ipykernel >= 7.4 the kernel dispatches widget messages (the approval click, the Stop
button) only while a cell awaits. This input transformer rewrites a ``%%skillrun`` cell into
``await <coroutine>`` before IPython's own cell-magic transform sees it; ipykernel then runs
the cell as a coroutine (``should_run_async``). A kernel interrupt arrives as a cancellation,
which the awaited script run turns into killing its process group.

Elsewhere (terminal IPython, older kernels, autoawait off, or the body of another magic such
as ``%%time`` or ``%%capture``, which IPython runs outside the kernel's coroutine) the cell
runs through the ordinary synchronous cell magic; the transformer only gives an empty body a
blank line there, because IPython refuses a cell magic without a body and ours means ``{}``.
"""

from __future__ import annotations

import sys
from typing import Any

from skill_magics.notebook.approval.waiting import supports_await

MAGIC = "%%skillrun"


def skillrun_to_await(lines: list[str]) -> list[str]:
    """IPython cleanup transformer: ``%%skillrun LINE\\nBODY`` -> ``await run_cell(LINE, BODY)``."""
    if not lines or not lines[0].startswith(MAGIC):
        return lines
    rest = lines[0][len(MAGIC) :]
    if rest.strip() and not rest[0].isspace():  # %%skillrunx, %%skillrun? (help)
        return lines
    from IPython import get_ipython

    body = "".join(lines[1:])
    if not supports_await(get_ipython()) or inside_a_magic():
        # IPython refuses a cell magic with an empty body; ours means "{}" then.
        return lines if body else [lines[0].rstrip("\n") + "\n", "\n"]
    line = rest.strip()
    return [
        "await __import__('skill_magics.notebook.transformer', fromlist=['run_cell'])"
        f".run_cell({line!r}, {body!r})\n"
    ]


def inside_a_magic() -> bool:
    """True when a running magic transforms its body as a nested cell (``%%time``,
    ``%timeit``, ``%prun``, ``%%capture``): no top-level ``await`` works there (IPython
    compiles or runs it outside the kernel's coroutine), the synchronous magic does."""
    from IPython.core.interactiveshell import InteractiveShell

    runners = (InteractiveShell.run_line_magic.__code__, InteractiveShell.run_cell_magic.__code__)
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in runners:
            return True
        frame = frame.f_back
    return False


# check_complete() skips transformers with side effects: keeps "%%" cells multi-line there.
skillrun_to_await.has_side_effects = True  # type: ignore[attr-defined]


async def run_cell(line: str, body: str) -> Any:
    """What a transformed cell awaits: the magic's coroutine, on the current shell."""
    from IPython import get_ipython

    from skill_magics.notebook.extension import get_magics

    shell = get_ipython()
    return await get_magics(shell).skillrun_async(expand(shell, line), body)


def expand(shell: Any, line: str) -> str:
    """``$name`` / ``{expr}`` in the magic line, as IPython expands it for cell magics."""
    from IPython.utils.text import DollarFormatter

    try:
        return DollarFormatter().vformat(line, args=[], kwargs=dict(shell.user_ns))
    except Exception:  # IPython leaves the line alone when expansion fails, so do we
        return line


def install(shell: Any) -> None:
    """Add the transformer (idempotent); it checks kernel support on every cell."""
    cleanup = shell.input_transformers_cleanup
    if skillrun_to_await not in cleanup:
        cleanup.append(skillrun_to_await)


def uninstall(shell: Any) -> None:
    cleanup = shell.input_transformers_cleanup
    while skillrun_to_await in cleanup:
        cleanup.remove(skillrun_to_await)


__all__ = ["skillrun_to_await", "inside_a_magic", "run_cell", "install", "uninstall"]
