"""core/base/visible.py: text shown to a person shows control characters, separators and bidi
overrides as visible escapes, and leaves plain text (tabs and newlines when asked) alone."""

from __future__ import annotations

import pytest
from manager_support import posix_only

from skill_magics.core.base.visible import visible


@posix_only
def test_visible_escapes_controls_separators_and_bidi():
    assert visible("a\x1b[2Kb\rc\u2028d\u202ee\x00") == "a\\x1b[2Kb\\rc⟨U+2028⟩d⟨U+202E⟩e\\x00"
    assert visible("tab\tnew\nline", keep="\t\n") == "tab\tnew\nline"
    assert visible("üñí😀 plain") == "üñí😀 plain"


def test_characters_that_show_as_nothing_are_shown():
    """A signer, a skill or a file name with a zero-width character reads as another name
    (issue 41: a trusted key's OpenPGP user id is shown as given)."""
    assert visible("alice\u200b@example.com") == "alice⟨U+200B⟩@example.com"
    for char in "\u200c\u200d\u2060\ufeff\u00ad\u180e":
        assert visible(f"a{char}b") == f"a⟨U+{ord(char):04X}⟩b"
    # what must not change: letters of any script, emoji, punctuation, ordinary spaces
    for text in ("José Müller", "山田太郎", "Ελένη", "😀 ok", "a-b_c d\u00a0e"):
        assert visible(text) == text


def test_a_signer_with_a_zero_width_character_is_shown_with_it():
    from skill_magics.core.installed.signature import Signature, SignatureState

    sig = Signature(
        SignatureState.SIGNED,
        method="openpgp",
        principal="alice\u200b@example.com",
        key="ABCD",
        subject="tag v1",
    )
    assert "alice⟨U+200B⟩@example.com" in sig.describe()


def test_an_invisible_character_in_a_name_path_or_source_is_refused_letters_are_not():
    from skill_magics.core.base.errors import SourceError
    from skill_magics.core.installed.names import name_problem, path_problem
    from skill_magics.core.sources.sourcespec import source_text

    assert "invisible" in (name_problem("pdf\u200b") or "")
    assert "invisible" in (path_problem("scripts/run\u2060.py") or "")
    with pytest.raises(SourceError, match="invisible"):
        source_text("https://github.com/anthropics/ski\u200blls")
    assert name_problem("pdf-tools") is None
    assert path_problem("data/données.csv") is None
    assert path_problem("data/山田.txt") is None
    # Persian and Indic words are spelled with a zero-width non-joiner or joiner: not refused
    assert path_problem("docs/می\u200cخواهم.md") is None
    assert name_problem("क्\u200dष") is None
    # the same joiner beside a Latin letter, or at an end, hides nothing a reader needs
    assert "invisible" in (path_problem("scripts/a\u200cb.py") or "")
    assert "invisible" in (name_problem("\u200cمی") or "")
    assert source_text(" https://github.com/anthropics/skills ") == (
        "https://github.com/anthropics/skills"
    )
