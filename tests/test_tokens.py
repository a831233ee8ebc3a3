"""Token counting: tiktoken only when its encoding is on disk (never the network), else the
documented estimate, labelled."""

from __future__ import annotations

import pytest

from skill_magics.core.prompt import tokens
from skill_magics.core.prompt.tokens import ESTIMATE_LABEL, TokenCounter, as_counter, estimate_tokens


def test_estimate_is_characters_over_four():
    assert [estimate_tokens("x" * n) for n in (0, 1, 4, 5, 8)] == [0, 1, 1, 2, 2]


def test_no_cached_encoding_gives_the_labelled_estimate(tmp_path, monkeypatch):
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))  # empty: nothing cached
    tokens.default_counter.cache_clear()
    try:
        counter = tokens.default_counter()
        assert counter.label == ESTIMATE_LABEL and not counter.exact
        assert tokens.offline_tiktoken() is None
    finally:
        tokens.default_counter.cache_clear()


def test_corrupt_cache_file_falls_back(tmp_path, monkeypatch):
    import hashlib

    import tiktoken  # noqa: F401  (the [test] extra: what falls back is its cache)

    url = tokens._TIKTOKEN_FILES["o200k_base"]
    (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(b"not an encoding")
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    # tiktoken rejects the file (hash mismatch) and cannot download here: no crash, no counter
    assert tokens.offline_tiktoken() is None


def test_as_counter_accepts_encodings_and_counters():
    import tiktoken

    enc = tiktoken.Encoding(
        name="bytes",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )
    counter = as_counter(enc)
    assert counter.label == "tiktoken bytes" and counter.exact
    assert counter.count("<|endoftext|> é") == len("<|endoftext|> é".encode())
    same = TokenCounter("x", len)
    assert as_counter(same) is same
    with pytest.raises(TypeError, match="TokenCounter"):
        as_counter(42)
