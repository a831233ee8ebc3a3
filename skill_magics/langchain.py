"""LangChain adapter: a skill's scripts (and its prompt) as ``StructuredTool`` objects.

Optional: needs langchain-core (``pip install langchain-core``, or the ``[langchain]`` extra).
Tool names are the same as ``core.prompt.tools`` (``{skill}__{script}``, ``{skill}``). Each
tool has a sync ``func`` and a real ``coroutine``: the async path awaits the script in slices,
so other tasks keep running and cancelling the task kills the script. A failed, declined or
refused run raises ``ToolException`` with the reason; ``handle_tool_error=True`` hands that
text to the agent. Input nested deeper than ``core.prompt.tools.MAX_INPUT_DEPTH`` is refused
the same way (and audited) before LangChain itself sees it: its callbacks print the input,
which raises RecursionError for deep enough input.

Example (not run as a doctest: it needs a chat model)::

    from skill_magics.langchain import create_tools
    tools = create_tools(manager)
    agent = create_agent(model, tools)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.tools import (
    MAX_RESULT_CHARS,
    ToolSpec,
    check_input_depth,
    handle_tool_call,
    handle_tool_call_async,
    tool_specs,
)
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg

# Names the package itself: skill-magics is not on PyPI yet, so `skill-magics[langchain]` would
# not resolve (the extra, from a clone: pip install -e '.[langchain]').
INSTALL_HINT = "skill_magics.langchain needs langchain-core: pip install langchain-core"


@dataclass(frozen=True)
class _Refused:
    """Stands in for input LangChain cannot take: the error text of its (audited) refusal.
    An object, not a string, so no input a model sends can look like one."""

    message: str


REFUSED_KEY = "_skill_magics_refused"


def _langchain() -> tuple[Any, Any]:
    try:
        from langchain_core.tools import StructuredTool, ToolException
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return _screening_tool(StructuredTool), ToolException


@cache
def _screening_tool(structured_tool: Any) -> Any:
    """A StructuredTool that checks the input's depth before LangChain prints it (its run()
    calls ``str(input)`` for callbacks first): too deep, and the call is refused through
    ``handle_tool_call`` (an error result, audited) and the tool sees only the refusal."""

    class SkillTool(structured_tool):
        screen: Any = None  # input -> the refusal's text, or None when the input is fine

        def run(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            return super().run(self._screened(tool_input), *args, **kwargs)

        async def arun(self, tool_input: Any, *args: Any, **kwargs: Any) -> Any:
            return await super().arun(self._screened(tool_input), *args, **kwargs)

        def _screened(self, tool_input: Any) -> Any:
            if self.screen is None:
                return tool_input
            problem = self.screen(tool_input)
            return tool_input if problem is None else {REFUSED_KEY: _Refused(problem)}

    return SkillTool


def create_tools(
    manager: SkillManager,
    *,
    approver: ApproverArg = MANAGER_APPROVER,
    skills: list[str] | None = None,
    max_result_chars: int | None = MAX_RESULT_CHARS,
) -> list[Any]:
    """One ``StructuredTool`` per script plus one prompt tool per skill (or per ``skills``).

    ``approver`` defaults to ``manager.approver``. With none (or ``approver=None``), script
    tools do not run: the model chose the script, so something must approve it (the tool
    returns the refusal and the fix, e.g. ``approver=lambda request: "yes_once"`` for
    unattended agents; docs/architecture.md, *Who approves*).
    A script's output beyond ``max_result_chars`` is cut with a note (None: no cap).
    """
    structured_tool, tool_exception = _langchain()
    return [
        _make_tool(structured_tool, tool_exception, manager, spec, approver, max_result_chars)
        for spec in tool_specs(manager, skills)
    ]


def _make_tool(
    structured_tool: Any,
    tool_exception: Any,
    manager: SkillManager,
    spec: ToolSpec,
    approver: Any,
    max_chars: int | None,
) -> Any:
    def unwrap(block: dict[str, Any]) -> str:
        if block["is_error"]:
            raise tool_exception(block["content"])
        return block["content"]

    options = {"approver": approver, "max_result_chars": max_chars}

    def screen(tool_input: Any) -> str | None:
        try:
            check_input_depth(tool_input)
        except ValueError:
            # handle_tool_call refuses it again, audits it and says why in one line.
            return str(
                handle_tool_call(manager, spec.name, tool_input, spec.name, **options)["content"]
            )
        return None

    def refused(kwargs: dict[str, Any]) -> None:
        stand_in = kwargs.get(REFUSED_KEY)
        if isinstance(stand_in, _Refused):
            raise tool_exception(stand_in.message)

    def func(**kwargs: Any) -> str:
        refused(kwargs)
        return unwrap(handle_tool_call(manager, spec.name, kwargs, spec.name, **options))

    async def coroutine(**kwargs: Any) -> str:
        refused(kwargs)
        block = await handle_tool_call_async(manager, spec.name, kwargs, spec.name, **options)
        return unwrap(block)

    tool = structured_tool.from_function(
        func=func,
        coroutine=coroutine,
        name=spec.name,
        description=spec.description,
        args_schema=spec.input_schema(),
        handle_tool_error=True,
    )
    tool.screen = screen
    return tool


__all__ = ["create_tools", "INSTALL_HINT"]
