"""The model's client: an ``anthropic`` or ``openai`` SDK client, recognised by its type.

Neither SDK is imported here (both are optional: the ``[lab]`` extra). A client is known by
the top-level package of a class in its type's MRO (``anthropic.Anthropic``,
``anthropic.AsyncAnthropic``, ``openai.OpenAI``, ``openai.AzureOpenAI``, their async
twins, and subclasses of them); it is async when one of those classes' names starts with
``Async`` (both SDKs name them so). The SDK's own module is only reached through
``sys.modules``, where the client's existence put it.

A :class:`Provider` speaks one API in the provider's own message format, so a transcript's
``messages`` can be sent again as they are:

- Anthropic Messages API: ``client.messages.create(model, system, messages, tools,
  max_tokens)``; tool calls are ``tool_use`` content blocks, results go back as one user
  message of ``tool_result`` blocks.
- OpenAI Chat Completions: ``client.chat.completions.create(model, messages, tools,
  max_completion_tokens)``; the system prompt is the first message, tool calls are the
  assistant message's ``tool_calls``, each result is a ``tool`` message.

Every API failure (an HTTP error status, no connection, a timeout) becomes one
:class:`~skill_magics.core.base.errors.ModelCallError` with its ``kind``. A client without a key
(``anthropic.Anthropic()`` is made without one) is refused by :func:`provider_for` before any
request, and a key the API rejects (HTTP 401/403) is a
:class:`~skill_magics.core.base.errors.ModelAuthError`: one line naming the environment variable,
or ``base_url`` to a local OpenAI-compatible server (Ollama, vLLM).
A reply that is not a well-formed message of the API's schema (an HTML page, ``{}``,
truncated JSON, a field of the wrong type) is a ``ModelCallError`` of kind ``"reply"``,
which the SDKs hand back unchecked.

Requests go through a copy of the client with the SDK's retries off
(``client.with_options(max_retries=0)``): every HTTP request is one the lab sent and
counted; the lab retries itself, as often as the client's ``max_retries`` says, within
its caps (core/lab/drive.py: ``model_call``).
"""

from __future__ import annotations

import email.utils
import json
import sys
import time
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from skill_magics.core.base.errors import ModelAuthError, ModelCallError
from skill_magics.core.prompt.tools import openai_tool_message
from skill_magics.core.trace import hooks as traced

ProviderName = Literal["anthropic", "openai"]
PROVIDERS: tuple[str, ...] = ("anthropic", "openai")
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
LABELS = {"anthropic": "Anthropic", "openai": "OpenAI"}
LOCAL_SERVER = (
    "or use a local OpenAI-compatible server such as Ollama or vLLM: "
    "openai.OpenAI(base_url='http://localhost:11434/v1', api_key='local')"
)


def no_key_message(name: str) -> str:
    """The one line for a client that has no key."""
    return (
        f"No {LABELS[name]} API key: set {KEY_VARS[name]} before starting Jupyter (or pass "
        f"api_key= to the client), {LOCAL_SERVER}"
    )


@dataclass(frozen=True)
class ToolUse:
    """One tool call the model made: its id, the tool's name and the input (a dict; the raw
    text when OpenAI sent arguments that are not JSON)."""

    id: str
    name: str
    input: Any


@dataclass(frozen=True)
class Reply:
    """One answer of the model, whatever the provider."""

    text: str
    tool_uses: tuple[ToolUse, ...]
    stop_reason: str  # as the provider said it: end_turn, tool_use, stop, tool_calls, ...
    input_tokens: int
    output_tokens: int
    message: dict[str, Any]  # the assistant message in the provider's format
    model: str = ""

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass
class Provider:
    """A client and how to talk to its API (see the module docstring)."""

    client: Any
    name: ProviderName
    is_async: bool
    sdk: ModuleType | None = field(default=None, repr=False)

    @property
    def retries(self) -> int:
        """How often the lab retries a failed request: the client's own ``max_retries``
        (the SDKs' default 2), sent by the lab (each one counted), never by the SDK."""
        value = getattr(self.client, "max_retries", 2)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 2

    # -- building a request ------------------------------------------------------------------

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def tool_definitions(self, specs: Any) -> list[dict[str, Any]]:
        return [spec.definition(self.name) for spec in specs]

    def request(
        self,
        *,
        model: str,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        max_tokens: int,
    ) -> dict[str, Any]:
        """The keyword arguments of the create call."""
        if self.name == "anthropic":
            kwargs: dict[str, Any] = {
                "model": model,
                "max_tokens": max_tokens,
                "messages": messages,
            }
            if system:
                kwargs["system"] = system
            if tools:
                kwargs["tools"] = tools
            return kwargs
        head = [{"role": "system", "content": system}] if system else []
        kwargs = {
            "model": model,
            "messages": head + messages,
            "max_completion_tokens": max_tokens,
        }
        if tools:
            kwargs["tools"] = tools
        return kwargs

    def tool_messages(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages carrying tool results (Anthropic ``tool_result`` blocks) back."""
        if not blocks:
            return []
        if self.name == "anthropic":
            return [{"role": "user", "content": [dict(b) for b in blocks]}]
        return [openai_tool_message(block) for block in blocks]

    # -- sending ------------------------------------------------------------------------------

    def _endpoint(self) -> Any:
        wire = self.__dict__.get("_wire")
        if wire is None:
            # The SDKs retry twice by default, unseen: a copy with retries off makes every
            # HTTP request one the lab counts against its caps (README, *Caps*).
            options = getattr(self.client, "with_options", None)
            wire = options(max_retries=0) if callable(options) else self.client
            self.__dict__["_wire"] = wire
        if self.name == "anthropic":
            return wire.messages.create
        return wire.chat.completions.create

    def send(self, kwargs: dict[str, Any]) -> Reply:
        """Send a request with a synchronous client."""
        if self.is_async:
            raise TypeError(f"{type(self.client).__name__} is async: await send_async()")
        return traced.model_call(self.name, kwargs, lambda: self._send(kwargs))

    def _send(self, kwargs: dict[str, Any]) -> Reply:
        try:
            response = self._endpoint()(**kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        return self.parse(response)

    async def send_async(self, kwargs: dict[str, Any]) -> Reply:
        """Send a request with an async client."""
        if not self.is_async:
            raise TypeError(f"{type(self.client).__name__} is not async: call send()")
        return await traced.model_call_async(self.name, kwargs, lambda: self._send_async(kwargs))

    async def _send_async(self, kwargs: dict[str, Any]) -> Reply:
        try:
            response = await self._endpoint()(**kwargs)
        except Exception as exc:
            raise self._error(exc) from exc
        return self.parse(response)

    def _error(self, exc: Exception) -> Exception:
        """A ModelCallError for the SDK's API errors; anything else unchanged (a bug, a
        TypeError from a bad argument) so it is not mistaken for the provider's failure."""
        sdk = self.sdk
        label = LABELS[self.name]
        if isinstance(exc, TypeError) and "authentication" in str(exc):
            # the anthropic SDK's own check when a request is sent without credentials
            return ModelAuthError(no_key_message(self.name))
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
            # The SDK decodes a 200 reply's body itself: malformed JSON is the provider's
            # failure, not a bug here, and must not end the evaluation.
            return ModelCallError(
                f"{label} API answered malformed JSON: {_first_line(exc)}", "reply"
            )
        if sdk is None or not isinstance(exc, getattr(sdk, "APIError", ())):
            return exc
        status = getattr(exc, "status_code", None)
        if status in (401, 403):
            return ModelAuthError(
                f"{label} API rejected the key (HTTP {status}: {_first_line(exc)}): check "
                f"{KEY_VARS[self.name]} (or the client's api_key=), {LOCAL_SERVER}",
                status,
            )
        if isinstance(exc, getattr(sdk, "APITimeoutError", ())):
            return ModelCallError(f"{label} API request timed out: {exc}", "timeout")
        if isinstance(exc, getattr(sdk, "APIStatusError", ())):
            status = getattr(exc, "status_code", None)
            return ModelCallError(
                f"{label} API answered HTTP {status}: {_first_line(exc)}",
                "status",
                status,
                retry_after(getattr(getattr(exc, "response", None), "headers", None)),
            )
        return ModelCallError(f"{label} API not reachable: {_first_line(exc)}", "connection")

    # -- reading the answer -------------------------------------------------------------------

    def parse(self, response: Any) -> Reply:
        """The reply, once it is a well-formed message of the API's schema (else a
        ModelCallError of kind ``"reply"``: never an empty answer)."""
        if self.name == "anthropic":
            problem = _anthropic_problem(response)
        else:
            problem = _openai_problem(response)
        if problem:
            label = "Anthropic" if self.name == "anthropic" else "OpenAI"
            raise ModelCallError(
                f"{label} API answered something that is not a message: {problem}", "reply"
            )
        if self.name == "anthropic":
            return _parse_anthropic(response)
        return _parse_openai(response)


MAX_RETRY_AFTER_S = 60.0  # a longer wait asked for is not taken (the SDKs' rule): back off


def retry_after(headers: Any) -> float | None:
    """The seconds a reply's headers ask to wait before a retry: ``retry-after-ms``, else
    ``retry-after`` (seconds or an HTTP date); None when absent, unreadable, not positive or
    above MAX_RETRY_AFTER_S (a hostile or broken API cannot stall the lab for an hour).

    >>> retry_after({"retry-after-ms": "1500"}), retry_after({"retry-after": "2"})
    (1.5, 2.0)
    >>> retry_after({"retry-after": "3600"}), retry_after({"retry-after": "soon"})
    (None, None)
    """
    if headers is None:
        return None
    seconds: float | None = None
    try:
        if headers.get("retry-after-ms") is not None:
            seconds = float(headers["retry-after-ms"]) / 1000
        elif headers.get("retry-after") is not None:
            text = str(headers["retry-after"]).strip()
            try:
                seconds = float(text)
            except ValueError:
                when = email.utils.parsedate_to_datetime(text)
                seconds = when.timestamp() - time.time()
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    if seconds is None or not 0 < seconds <= MAX_RETRY_AFTER_S:
        return None
    return seconds


def provider_for(client: Any) -> Provider:
    """The :class:`Provider` of ``client``; TypeError (one line, with the fix) for anything
    that is not an Anthropic or OpenAI SDK client."""
    if isinstance(client, Provider):
        return client
    mro = type(client).__mro__
    for cls in mro:
        root = cls.__module__.partition(".")[0]
        if root in PROVIDERS:
            family = [c for c in mro if c.__module__.partition(".")[0] == root]
            is_async = any(c.__name__.startswith("Async") for c in family)
            provider = Provider(client, root, is_async, sys.modules.get(root))  # type: ignore[arg-type]
            check_credentials(provider)
            return provider
    raise TypeError(
        f"client is a {type(client).__module__}.{type(client).__name__}: pass an "
        "anthropic.Anthropic / AsyncAnthropic or an openai.OpenAI / AsyncOpenAI client "
        "(pip install 'skill-magics[lab]')"
    )


def check_credentials(provider: Provider) -> None:
    """ModelAuthError (one line, the fix) for a client holding no key at all: found here, not
    by a request per query. Clients the SDK cannot make without a key (openai) pass."""
    client = provider.client
    keys = [getattr(client, attr, None) for attr in ("api_key", "auth_token")]
    if hasattr(client, "api_key") and not any(keys):
        raise ModelAuthError(no_key_message(provider.name))


# -- parsing -------------------------------------------------------------------------------


def _dump(value: Any) -> Any:
    """An SDK model as plain JSON data (what the API returned, None fields left out)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _what(response: Any) -> str:
    if isinstance(response, str):
        return f"text {response[:60]!r}" if response.strip() else "an empty body"
    return type(response).__name__


def _anthropic_problem(response: Any) -> str:
    """Why ``response`` is not a Messages API message ("" when it is one)."""
    if getattr(response, "type", None) != "message" or isinstance(response, str):
        return f"{_what(response)} without type 'message'"
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
        _is_int(getattr(usage, "input_tokens", None))
        and _is_int(getattr(usage, "output_tokens", None))
    ):
        return "its usage lacks input_tokens or output_tokens"
    return ""


def _openai_problem(response: Any) -> str:
    """Why ``response`` is not a Chat Completions answer ("" when it is one)."""
    if isinstance(response, str) or getattr(response, "object", None) != "chat.completion":
        return f"{_what(response)} without object 'chat.completion'"
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
        _is_int(getattr(usage, "prompt_tokens", None))
        and _is_int(getattr(usage, "completion_tokens", None))
    ):
        return "its usage lacks prompt_tokens or completion_tokens"
    return ""


def _parse_anthropic(response: Any) -> Reply:
    blocks = [_dump(b) for b in (getattr(response, "content", None) or [])]
    texts = [b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
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


def _parse_openai(response: Any) -> Reply:
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


__all__ = [
    "PROVIDERS",
    "check_credentials",
    "no_key_message",
    "Provider",
    "ProviderName",
    "Reply",
    "ToolUse",
    "provider_for",
]
