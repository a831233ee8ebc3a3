"""Model SDKs the lab speaks, the registered kinds of :class:`Provider` (docs/architecture.md,
*Registered kinds*; which client is which: core/lab/clients.py).

- ``base.py``: :class:`Provider`, what every API shares and the hooks each implements;
- ``anthropic_api.py``: the Anthropic Messages API; ``openai_api.py``: OpenAI Chat
  Completions.

A third SDK: a subclass in a module of its own and one line in :data:`PROVIDERS`;
``tests/test_registered_kinds.py`` checks its hooks. Nothing here imports an SDK.

Example:
    >>> list(PROVIDERS.names())
    ['anthropic', 'openai']
    >>> PROVIDERS.get("openai").tool_definition("t", "A tool.", {})["function"]["name"]
    't'
"""

from __future__ import annotations

from skill_magics.core.base.registry import Registry
from skill_magics.core.providers.anthropic_api import AnthropicProvider
from skill_magics.core.providers.base import Provider
from skill_magics.core.providers.openai_api import OpenAIProvider

PROVIDERS: Registry[Provider] = Registry(
    "model API", Provider, [AnthropicProvider(), OpenAIProvider()]
)

__all__ = ["PROVIDERS", "AnthropicProvider", "OpenAIProvider", "Provider"]
