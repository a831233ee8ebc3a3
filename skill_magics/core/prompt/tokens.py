"""Counting tokens for prompt budgets: a real tokenizer when one works offline, else an estimate.

The counter is chosen once per process (``default_counter``):

1. tiktoken's ``o200k_base``, then ``cl100k_base``, **only when the encoding file is already
   in tiktoken's cache** (``TIKTOKEN_CACHE_DIR``, ``DATA_GYM_CACHE_DIR`` or the temp-dir
   default): tiktoken downloads missing encodings, and a notebook must never reach the
   network to show a count. Label: ``"tiktoken o200k_base"``.
2. Otherwise the estimate ``ceil(characters / 4)``, labelled
   ``"estimate: characters / 4"``. English prose averages about four characters per token
   on current BPE vocabularies; code and non-Latin text use more tokens per character, so
   treat the estimate as a guide, not a limit to the token.

Pass ``counter=TokenCounter.from_tiktoken(encoding)`` (any ``tiktoken.Encoding``) or
``TokenCounter(label, fn)`` to count with another tokenizer.

Example:
    >>> counter = default_counter()
    >>> counter.count("hello world"), counter.label
    (3, 'estimate: characters / 4')
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

ESTIMATE_LABEL = "estimate: characters / 4"
CHARS_PER_TOKEN = 4
# tiktoken's published encoding files, by encoding name (what its loader fetches and caches).
_TIKTOKEN_FILES = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@dataclass(frozen=True)
class TokenCounter:
    """A token count function and the label that says which tokenizer it is."""

    label: str
    count_fn: Callable[[str], int]
    exact: bool = False  # True for a real tokenizer, False for the estimate

    def count(self, text: str) -> int:
        return int(self.count_fn(text))

    @classmethod
    def from_tiktoken(cls, encoding: Any) -> TokenCounter:
        """A counter over a ``tiktoken.Encoding`` (special-token text counted as plain text)."""
        return cls(
            f"tiktoken {encoding.name}",
            lambda text: len(encoding.encode(text, disallowed_special=())),
            exact=True,
        )


def estimate_tokens(text: str) -> int:
    """``ceil(len(text) / 4)``: the documented estimate."""
    return (len(text) + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


ESTIMATE = TokenCounter(ESTIMATE_LABEL, estimate_tokens)


def _tiktoken_cache_dir() -> str | None:
    # Mirrors where tiktoken's loader keeps downloads; "" disables its cache.
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        return os.environ["TIKTOKEN_CACHE_DIR"] or None
    if "DATA_GYM_CACHE_DIR" in os.environ:
        return os.environ["DATA_GYM_CACHE_DIR"] or None
    return os.path.join(tempfile.gettempdir(), "data-gym-cache")


def offline_tiktoken() -> TokenCounter | None:
    """A tiktoken counter whose encoding is already on disk; None when there is none."""
    try:
        import tiktoken
    except ImportError:
        return None
    cache = _tiktoken_cache_dir()
    if cache is None:
        return None
    for name, url in _TIKTOKEN_FILES.items():
        cached = os.path.join(cache, hashlib.sha1(url.encode()).hexdigest())
        if not os.path.isfile(cached):
            continue
        try:
            return TokenCounter.from_tiktoken(tiktoken.get_encoding(name))
        except Exception:  # a corrupt cache file: tiktoken refuses it; try the next one
            continue
    return None


@lru_cache(maxsize=1)
def default_counter() -> TokenCounter:
    """The real tokenizer when one works offline, else the estimate (chosen once)."""
    return offline_tiktoken() or ESTIMATE


def as_counter(counter: TokenCounter | Any | None) -> TokenCounter:
    """``None`` -> :func:`default_counter`; a tiktoken ``Encoding`` or a TokenCounter as is."""
    if counter is None:
        return default_counter()
    if isinstance(counter, TokenCounter):
        return counter
    if hasattr(counter, "encode") and hasattr(counter, "name"):
        return TokenCounter.from_tiktoken(counter)
    raise TypeError(
        f"counter={counter!r}: pass a TokenCounter, a tiktoken Encoding, or None for the default"
    )


__all__ = [
    "ESTIMATE",
    "ESTIMATE_LABEL",
    "TokenCounter",
    "as_counter",
    "default_counter",
    "estimate_tokens",
    "offline_tiktoken",
]
