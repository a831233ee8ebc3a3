"""core/base/visible.py: text shown to a person shows control characters, separators and bidi
overrides as visible escapes, and leaves plain text (tabs and newlines when asked) alone."""

from __future__ import annotations

from manager_support import posix_only

from skill_magics.core.base.visible import visible


@posix_only
def test_visible_escapes_controls_separators_and_bidi():
    assert visible("a\x1b[2Kb\rc\u2028d\u202ee\x00") == "a\\x1b[2Kb\\rc⟨U+2028⟩d⟨U+202E⟩e\\x00"
    assert visible("tab\tnew\nline", keep="\t\n") == "tab\tnew\nline"
    assert visible("üñí😀 plain") == "üñí😀 plain"
