"""The provider kind: one model SDK's API (core/lab/clients.py says how a client is known).

:class:`Provider` holds a client and does what every API shares (retries, sending, errors,
checking a reply before reading it); a subclass per SDK implements the hooks that differ:
its names, the request's keywords, the tool definitions' and tool results' shapes, the
create call, and reading a reply. The table is ``PROVIDERS`` in
``core/providers/__init__.py``; the lab and ``core/prompt/tools.py`` ask a provider,
never compare its name.
"""

from __future__ import annotations

import email.utils
import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from skill_magics.core.base.errors import ModelAuthError, ModelCallError
from skill_magics.core.trace import hooks as traced

LOCAL_SERVER = (
    "or use a local OpenAI-compatible server such as Ollama or vLLM: "
    "openai.OpenAI(base_url='http://localhost:11434/v1', api_key='local')"
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


class Provider(ABC):
    """A client and how to talk to its API (core/lab/clients.py). The registered instance
    of each kind holds no client; :meth:`bind` makes one for a client."""

    def __init__(
        self, client: Any = None, is_async: bool = False, sdk: ModuleType | None = None
    ) -> None:
        self.client = client
        self.is_async = is_async
        self.sdk = sdk
        self._wire: Any = None

    def bind(self, client: Any, is_async: bool, sdk: ModuleType | None) -> Provider:
        """A provider of this kind for ``client``."""
        return type(self)(client, is_async, sdk)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(client={self.client!r}, is_async={self.is_async})"

    # -- the hooks ---------------------------------------------------------------------------

    @property
    @abstractmethod
    def name(self) -> str:
        """The API's name (``tool_definitions(api=...)``, a transcript's ``provider``)."""

    @property
    @abstractmethod
    def package(self) -> str:
        """The SDK's top-level package: a client is of this provider when a class in its
        type's MRO comes from it."""

    @property
    @abstractmethod
    def label(self) -> str:
        """The API's name in messages ("Anthropic")."""

    @property
    @abstractmethod
    def key_var(self) -> str:
        """The environment variable the SDK reads its key from."""

    @abstractmethod
    def tool_definition(self, name: str, description: str, schema: dict[str, Any]) -> Any:
        """One tool's definition in this API's shape."""

    @abstractmethod
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

    @abstractmethod
    def tool_messages(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The messages carrying tool results (Anthropic ``tool_result`` blocks) back."""

    @abstractmethod
    def endpoint(self, wire: Any) -> Any:
        """The create call of ``wire`` (the client with the SDK's retries off)."""

    @abstractmethod
    def problem(self, response: Any) -> str:
        """Why ``response`` is not a well-formed message of this API ("" when it is one)."""

    @abstractmethod
    def read(self, response: Any) -> Reply:
        """The reply in a well-formed ``response``."""

    # -- shared by every API -----------------------------------------------------------------

    @property
    def retries(self) -> int:
        """How often the lab retries a failed request: the client's own ``max_retries``
        (the SDKs' default 2), sent by the lab (each one counted), never by the SDK."""
        value = getattr(self.client, "max_retries", 2)
        return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 2

    def no_key_message(self) -> str:
        """The one line for a client that has no key."""
        return (
            f"No {self.label} API key: set {self.key_var} before starting Jupyter (or pass "
            f"api_key= to the client), {LOCAL_SERVER}"
        )

    def user_message(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def tool_definitions(self, specs: Any) -> list[dict[str, Any]]:
        return [spec.definition(self.name) for spec in specs]

    def _endpoint(self) -> Any:
        if self._wire is None:
            # The SDKs retry twice by default, unseen: a copy with retries off makes every
            # HTTP request one the lab counts against its caps (README, *Caps*).
            options = getattr(self.client, "with_options", None)
            self._wire = options(max_retries=0) if callable(options) else self.client
        return self.endpoint(self._wire)

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
        label = self.label
        if isinstance(exc, TypeError) and "authentication" in str(exc):
            # the anthropic SDK's own check when a request is sent without credentials
            return ModelAuthError(self.no_key_message())
        if isinstance(exc, (json.JSONDecodeError, UnicodeDecodeError)):
            # The SDK decodes a 200 reply's body itself: malformed JSON is the provider's
            # failure, not a bug here, and must not end the evaluation.
            return ModelCallError(
                f"{label} API answered malformed JSON: {first_line(exc)}", "reply"
            )
        if sdk is None or not isinstance(exc, getattr(sdk, "APIError", ())):
            return exc
        status = getattr(exc, "status_code", None)
        if status in (401, 403):
            return ModelAuthError(
                f"{label} API rejected the key (HTTP {status}: {first_line(exc)}): check "
                f"{self.key_var} (or the client's api_key=), {LOCAL_SERVER}",
                status,
            )
        if isinstance(exc, getattr(sdk, "APITimeoutError", ())):
            return ModelCallError(f"{label} API request timed out: {exc}", "timeout")
        if isinstance(exc, getattr(sdk, "APIStatusError", ())):
            status = getattr(exc, "status_code", None)
            return ModelCallError(
                f"{label} API answered HTTP {status}: {first_line(exc)}",
                "status",
                status,
                retry_after(getattr(getattr(exc, "response", None), "headers", None)),
            )
        return ModelCallError(f"{label} API not reachable: {first_line(exc)}", "connection")

    def parse(self, response: Any) -> Reply:
        """The reply, once it is a well-formed message of the API's schema (else a
        ModelCallError of kind ``"reply"``: never an empty answer)."""
        problem = self.problem(response)
        if problem:
            raise ModelCallError(
                f"{self.label} API answered something that is not a message: {problem}", "reply"
            )
        return self.read(response)


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


# -- what the APIs' readers share ----------------------------------------------------------


def dump(value: Any) -> Any:
    """An SDK model as plain JSON data (what the API returned, None fields left out)."""
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json", exclude_none=True)
    return value


def is_count(value: Any) -> bool:
    """A token count: a non-negative int (not a bool)."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def what(response: Any) -> str:
    """How a reply that is no message is named in the error."""
    if isinstance(response, str):
        return f"text {response[:60]!r}" if response.strip() else "an empty body"
    return type(response).__name__


def first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:300] if text else type(exc).__name__


__all__ = [
    "LOCAL_SERVER",
    "MAX_RETRY_AFTER_S",
    "Provider",
    "Reply",
    "ToolUse",
    "dump",
    "first_line",
    "is_count",
    "retry_after",
    "what",
]
