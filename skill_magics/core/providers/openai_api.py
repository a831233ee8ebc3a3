"""OpenAI Chat Completions: ``client.chat.completions.create(model, messages, tools,
max_completion_tokens)``; the system prompt is the first message, tool calls are the
assistant message's ``tool_calls``, each result is a ``tool`` message."""

from __future__ import annotations

import json
from typing import Any

from skill_magics.core.base.errors import ModelCallError
from skill_magics.core.providers.base import Provider, Reply, ToolUse, is_count, what


def tool_message(block: dict[str, Any]) -> dict[str, Any]:
    """Turn a ``tool_result`` block into an OpenAI Chat Completions ``tool`` message."""
    content = block["content"]
    if block.get("is_error"):
        content = f"Error: {content}"
    return {"role": "tool", "tool_call_id": block["tool_use_id"], "content": content}


class OpenAIProvider(Provider):
    """An ``openai.OpenAI`` / ``AzureOpenAI`` client, their async twins (or a subclass)."""

    name = "openai"
    package = "openai"
    label = "OpenAI"
    key_var = "OPENAI_API_KEY"

    def tool_definition(self, name: str, description: str, schema: dict[str, Any]) -> Any:
        return {
            "type": "function",
            "function": {"name": name, "description": description, "parameters": schema},
        }

    def request(
        self,
        *,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> dict[str, Any]:
        head = [{"role": "system", "content": system}] if system else []
        kwargs: dict[str, Any] = {
            "model": model,
            "messages": head + messages,
            "max_completion_tokens": max_tokens,
        }
        if tools:
            kwargs["tools"] = tools
        return kwargs

    def tool_messages(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [tool_message(block) for block in blocks]

    def endpoint(self, wire: Any) -> Any:
        return wire.chat.completions.create

    def problem(self, response: Any) -> str:
        if isinstance(response, str) or getattr(response, "object", None) != "chat.completion":
            return f"{what(response)} without object 'chat.completion'"
        choices = getattr(response, "choices", None)
        if not isinstance(choices, list) or not choices:
            return "it has no choices"
        choice = choices[0]
        message = getattr(choice, "message", None)
        if getattr(message, "role", None) != "assistant":
            return "its message's role is not 'assistant'"
        content = getattr(message, "content", None)
        if content is not None and not isinstance(content, str):
            return "its message's content is not text"
        calls = getattr(message, "tool_calls", None)
        if calls is not None and not isinstance(calls, list):
            return "its tool_calls is not a list"
        for tool_call in calls or []:
            function = getattr(tool_call, "function", None)
            if function is None:
                continue  # a custom tool call: not one of ours (left out when read)
            if not (
                isinstance(getattr(tool_call, "id", None), str)
                and isinstance(getattr(function, "name", None), str)
                and isinstance(getattr(function, "arguments", None), (str, type(None)))
            ):
                return "a tool call lacks its id, name or arguments text"
        if not isinstance(getattr(choice, "finish_reason", None), str):
            return "it has no finish_reason"
        usage = getattr(response, "usage", None)
        if usage is not None and not (
            is_count(getattr(usage, "prompt_tokens", None))
            and is_count(getattr(usage, "completion_tokens", None))
        ):
            return "its usage lacks prompt_tokens or completion_tokens"
        return ""

    def read(self, response: Any) -> Reply:
        choices = getattr(response, "choices", None) or []
        if not choices:
            raise ModelCallError("OpenAI API answered without a choice", "status")
        choice = choices[0]
        message = choice.message
        text = message.content or ""
        calls = []
        uses = []
        for call in message.tool_calls or []:
            function = getattr(call, "function", None)
            if function is None:  # a custom (non-function) tool call: not one of ours
                continue
            arguments = function.arguments or ""
            calls.append(
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": function.name, "arguments": arguments},
                }
            )
            uses.append(ToolUse(str(call.id), str(function.name), _arguments(arguments)))
        resend: dict[str, Any] = {"role": "assistant", "content": message.content}
        if calls:
            resend["tool_calls"] = calls
        usage = getattr(response, "usage", None)
        return Reply(
            text=text,
            tool_uses=tuple(uses),
            stop_reason=str(getattr(choice, "finish_reason", "") or ""),
            input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            message=resend,
            model=str(getattr(response, "model", "") or ""),
        )


def _arguments(text: str) -> Any:
    """OpenAI's arguments string as JSON data; the text itself when it is not JSON (the
    tool call then answers with the decoding error)."""
    if not text:
        return {}
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


__all__ = ["OpenAIProvider", "tool_message"]
