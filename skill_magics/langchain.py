"""LangChain adapter: a skill's scripts (and its prompt) as ``StructuredTool`` objects.

Optional: needs ``pip install skill-magics[langchain]`` (langchain-core). Tool names are the
same as ``core.tools`` (``{skill}__{script}``, ``{skill}``). Each tool has a sync ``func`` and
a real ``coroutine``: the async path awaits the script in slices, so other tasks keep running
and cancelling the task kills the script. A failed, declined or refused run raises
``ToolException`` with the reason; ``handle_tool_error=True`` hands that text to the agent.

Example:
    >>> from skill_magics.langchain import create_tools
    >>> tools = create_tools(manager)
    >>> agent = create_agent(model, tools)
"""

from __future__ import annotations

from typing import Any

from skill_magics.core.manager import SkillManager
from skill_magics.core.run.approval import MANAGER_APPROVER, ApproverArg
from skill_magics.core.tools import (
    MAX_RESULT_CHARS,
    ToolSpec,
    handle_tool_call,
    handle_tool_call_async,
    tool_specs,
)

INSTALL_HINT = "skill_magics.langchain needs langchain-core: pip install skill-magics[langchain]"


def _langchain() -> tuple[Any, Any]:
    try:
        from langchain_core.tools import StructuredTool, ToolException
    except ImportError:
        raise ImportError(INSTALL_HINT) from None
    return StructuredTool, ToolException


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

    def func(**kwargs: Any) -> str:
        return unwrap(handle_tool_call(manager, spec.name, kwargs, spec.name, **options))

    async def coroutine(**kwargs: Any) -> str:
        block = await handle_tool_call_async(manager, spec.name, kwargs, spec.name, **options)
        return unwrap(block)

    return structured_tool.from_function(
        func=func,
        coroutine=coroutine,
        name=spec.name,
        description=spec.description,
        args_schema=spec.input_schema(),
        handle_tool_error=True,
    )


__all__ = ["create_tools", "INSTALL_HINT"]
