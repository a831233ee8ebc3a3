"""The Anthropic Messages API: ``client.messages.create(model, system, messages, tools,
max_tokens)``; tool calls are ``tool_use`` content blocks, results go back as one user
message of ``tool_result`` blocks."""

from __future__ import annotations

from typing import Any

from skill_magics.core.providers.base import Provider, Reply, ToolUse, dump, is_count, what


class AnthropicProvider(Provider):
    """An ``anthropic.Anthropic`` / ``AsyncAnthropic`` client (or a subclass)."""

    name = "anthropic"
    package = "anthropic"
    label = "Anthropic"
    key_var = "ANTHROPIC_API_KEY"

    def tool_definition(self, name: str, description: str, schema: dict[str, Any]) -> Any:
        return {"name": name, "description": description, "input_schema": schema}

    def request(
        self,
        *,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": messages}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        return kwargs

    def tool_messages(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"role": "user", "content": [dict(b) for b in blocks]}] if blocks else []

    def endpoint(self, wire: Any) -> Any:
        return wire.messages.create

    def problem(self, response: Any) -> str:
        if getattr(response, "type", None) != "message" or isinstance(response, str):
            return f"{what(response)} without type 'message'"
        if getattr(response, "role", None) != "assistant":
            return "its role is not 'assistant'"
        content = getattr(response, "content", None)
        if not isinstance(content, list):
            return "its content is not a list of blocks"
        for block in content:
            kind = getattr(block, "type", None)
            if not isinstance(kind, str):
                return "a content block has no type"
            if kind == "text" and not isinstance(getattr(block, "text", None), str):
                return "a text block has no text"
            if kind == "tool_use" and not (
                isinstance(getattr(block, "id", None), str)
                and isinstance(getattr(block, "name", None), str)
                and isinstance(getattr(block, "input", None), dict)
            ):
                return "a tool_use block lacks its id, name or input object"
        if not isinstance(getattr(response, "stop_reason", None), str):
            return "it has no stop_reason"
        usage = getattr(response, "usage", None)
        if not (
            is_count(getattr(usage, "input_tokens", None))
            and is_count(getattr(usage, "output_tokens", None))
        ):
            return "its usage lacks input_tokens or output_tokens"
        return ""

    def read(self, response: Any) -> Reply:
        blocks = [dump(b) for b in (getattr(response, "content", None) or [])]
        texts = [
            b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"
        ]
        uses = tuple(
            ToolUse(str(b.get("id", "")), str(b.get("name", "")), b.get("input", {}))
            for b in blocks
            if isinstance(b, dict) and b.get("type") == "tool_use"
        )
        usage = getattr(response, "usage", None)
        input_tokens = sum(
            int(getattr(usage, key, 0) or 0)
            for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        )
        return Reply(
            text="\n".join(t for t in texts if t),
            tool_uses=uses,
            stop_reason=str(getattr(response, "stop_reason", "") or ""),
            input_tokens=input_tokens,
            output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
            message={"role": "assistant", "content": blocks},
            model=str(getattr(response, "model", "") or ""),
        )


__all__ = ["AnthropicProvider"]
