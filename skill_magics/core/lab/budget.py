"""Hard caps on what an evaluation may spend: requests sent and tokens used.

``max_calls`` counts requests sent to the API (a failed one too: it was sent);
``max_tokens_total`` counts the tokens the provider reported (input + output). Before each
request :meth:`Caps.exhausted` is asked: once a cap is reached, no further request is sent.
While tokens remain, a request's ``max_tokens`` is lowered to what remains, so a reply's
output cannot pass the cap; only the input tokens of the last request sent can (they are
known when the provider reports them).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Caps:
    """What was spent so far, and the caps (None: none)."""

    max_calls: int | None = None
    max_tokens_total: int | None = None
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0

    def __post_init__(self) -> None:
        for label, value in (
            ("max_calls", self.max_calls),
            ("max_tokens_total", self.max_tokens_total),
        ):
            if value is not None and (isinstance(value, bool) or int(value) != value or value < 1):
                raise ValueError(f"{label}={value!r}: use a whole number of 1 or more, or None")

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def exhausted(self) -> str:
        """Why no further request may be sent ("" while one may)."""
        if self.max_calls is not None and self.calls >= self.max_calls:
            return f"max_calls={self.max_calls:,} reached"
        if self.max_tokens_total is not None and self.tokens >= self.max_tokens_total:
            return (
                f"max_tokens_total={self.max_tokens_total:,} reached ({self.tokens:,} tokens used)"
            )
        return ""

    def clamp(self, max_tokens: int) -> int:
        """``max_tokens`` for the next request: at most the tokens that remain."""
        if self.max_tokens_total is None:
            return max_tokens
        return max(1, min(max_tokens, self.max_tokens_total - self.tokens))

    def sent(self) -> None:
        self.calls += 1

    def used(self, input_tokens: int, output_tokens: int) -> None:
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens


__all__ = ["Caps"]
