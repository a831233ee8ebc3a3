"""The model's client: an ``anthropic`` or ``openai`` SDK client, recognised by its type.

Neither SDK is imported here (both are optional: the ``[lab]`` extra). A client is known by
the top-level package of a class in its type's MRO (``anthropic.Anthropic``,
``anthropic.AsyncAnthropic``, ``openai.OpenAI``, ``openai.AzureOpenAI``, their async
twins, and subclasses of them); it is async when one of those classes' names starts with
``Async`` (both SDKs name them so). The SDK's own module is only reached through
``sys.modules``, where the client's existence put it.

A :class:`Provider` speaks one API in the provider's own message format, so a transcript's
``messages`` can be sent again as they are. Each SDK is a registered kind (core/providers/:
``PROVIDERS``, the Anthropic Messages API and OpenAI Chat Completions); a client is of the
provider whose ``package`` its class comes from.

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

import sys
from typing import Any

from skill_magics.core.base.errors import ModelAuthError
from skill_magics.core.base.extras import install_hint
from skill_magics.core.providers import PROVIDERS as _TABLE
from skill_magics.core.providers.base import (
    LOCAL_SERVER,
    MAX_RETRY_AFTER_S,
    Provider,
    Reply,
    ToolUse,
    retry_after,
)

ProviderName = str  # a registered provider's name ("anthropic", "openai")
PROVIDERS = _TABLE.names()  # the registered providers' names, read live


def no_key_message(name: str) -> str:
    """The one line for a client of provider ``name`` that has no key."""
    return _TABLE.get(name).no_key_message()


def provider_for(client: Any) -> Provider:
    """The :class:`Provider` of ``client``; TypeError (one line, with the fix) for anything
    that is not an Anthropic or OpenAI SDK client."""
    if isinstance(client, Provider):
        return client
    mro = type(client).__mro__
    for cls in mro:
        root = cls.__module__.partition(".")[0]
        kind = next((k for k in _TABLE if k.package == root), None)
        if kind is not None:
            family = [c for c in mro if c.__module__.partition(".")[0] == root]
            is_async = any(c.__name__.startswith("Async") for c in family)
            provider = kind.bind(client, is_async, sys.modules.get(root))
            check_credentials(provider)
            return provider
    raise TypeError(
        f"client is a {type(client).__module__}.{type(client).__name__}: pass an "
        "anthropic.Anthropic / AsyncAnthropic or an openai.OpenAI / AsyncOpenAI client "
        f"({install_hint('lab', 'anthropic', 'openai')})"
    )


def check_credentials(provider: Provider) -> None:
    """ModelAuthError (one line, the fix) for a client holding no key at all: found here, not
    by a request per query. Clients the SDK cannot make without a key (openai) pass."""
    client = provider.client
    keys = [getattr(client, attr, None) for attr in ("api_key", "auth_token")]
    if hasattr(client, "api_key") and not any(keys):
        raise ModelAuthError(provider.no_key_message())


__all__ = [
    "LOCAL_SERVER",
    "MAX_RETRY_AFTER_S",
    "PROVIDERS",
    "check_credentials",
    "no_key_message",
    "Provider",
    "ProviderName",
    "Reply",
    "ToolUse",
    "provider_for",
    "retry_after",
]
