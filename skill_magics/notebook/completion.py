"""Tab completion: ``%%skillrun pd<TAB>`` -> ``pdf.extract``; ``%skills show c<TAB>`` -> names.

A Matcher API v2 function added to ``shell.Completer.custom_matchers``; it answers only on
the magic's own line and suppresses the other matchers there (file names are noise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from IPython.core.completer import SimpleCompletion, context_matcher

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager

SKILL_NAME_SUBCOMMANDS = ("show", "revoke")


def candidates(manager: SkillManager) -> list[str]:
    """Every ``skill.script`` a user can type (script stems), sorted."""
    names: list[str] = []
    for meta in manager.list_skills():
        try:
            scripts = manager.get_skill(meta.name).scripts
        except Exception:  # an unreadable skill must not break completion of the others
            continue
        # Offered scripts only (catalog/kinds.py): the ones other scripts import still run
        # when typed, but are not suggested; the ones that do nothing are refused.
        names += [f"{meta.name}.{script.name}" for script in scripts if script.offered]
    return sorted(set(names))


def make_matcher(get_manager: Callable[[], SkillManager]) -> Callable[..., Any]:
    """A matcher bound to the extension's manager (looked up at completion time)."""

    @context_matcher(identifier="skill_magics.completion")
    def skill_magics_matcher(context: Any) -> dict[str, Any]:
        empty: dict[str, Any] = {"completions": [], "suppress": False}
        before = context.text_until_cursor
        words = before.split()
        if before.endswith((" ", "\t")):
            words.append("")
        if len(words) < 2:
            return empty
        if words[0] == "%%skillrun" and context.cursor_line == 0 and len(words) == 2:
            names = candidates(get_manager())
        elif words[0] == "%skills" and len(words) == 3 and words[1] in SKILL_NAME_SUBCOMMANDS:
            names = [meta.name for meta in get_manager().list_skills()]
        else:
            return empty
        prefix = words[-1]
        hits = [SimpleCompletion(n, type="skill") for n in names if n.startswith(prefix)]
        return {"completions": hits, "matched_fragment": prefix, "suppress": bool(hits)}

    return skill_magics_matcher


def install(shell: Any, get_manager: Callable[[], Any]) -> Callable[..., Any] | None:
    """Register the matcher on ``shell.Completer``; returns it (None without a completer)."""
    completer = getattr(shell, "Completer", None)
    if completer is None:
        return None
    uninstall(shell)
    matcher = make_matcher(get_manager)
    completer.custom_matchers.append(matcher)
    return matcher


def uninstall(shell: Any) -> None:
    completer = getattr(shell, "Completer", None)
    if completer is None:
        return
    completer.custom_matchers[:] = [
        m
        for m in completer.custom_matchers
        if getattr(m, "matcher_identifier", "") != "skill_magics.completion"
    ]


__all__ = ["candidates", "make_matcher", "install", "uninstall"]
