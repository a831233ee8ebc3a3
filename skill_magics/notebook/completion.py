"""Tab completion: ``%%skillrun pd<TAB>`` -> ``pdf.extract``; ``%skills show c<TAB>`` -> names.

Registered on ``shell.Completer`` through notebook/compat.py (IPython's Matcher API v2 from
8.6, a line matcher on IPython 7); it answers only on the magic's own line and suppresses the
other matchers there (file names are noise).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from skill_magics.notebook import compat

if TYPE_CHECKING:
    from skill_magics.core.manager import SkillManager

SKILL_NAME_SUBCOMMANDS = ("show", "revoke")
IDENTIFIER = "skill_magics.completion"


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


def make_completer(get_manager: Callable[[], SkillManager]) -> compat.LineCompleter:
    """(line up to the cursor, cursor line or None) -> (fragment, names) on a magic's line."""

    def complete(before: str, cursor_line: int | None) -> tuple[str, list[str]] | None:
        words = before.split()
        if before.endswith((" ", "\t")):
            words.append("")
        if len(words) < 2:
            return None
        # A cell magic's line is the cell's first; IPython 7 cannot say (cursor_line None).
        first_line = cursor_line in (0, None)
        if words[0] == "%%skillrun" and first_line and len(words) == 2:
            names = candidates(get_manager())
        elif words[0] == "%skills" and len(words) == 3 and words[1] in SKILL_NAME_SUBCOMMANDS:
            names = [meta.name for meta in get_manager().list_skills()]
        else:
            return None
        prefix = words[-1]
        return prefix, [n for n in names if n.startswith(prefix)]

    return complete


def install(shell: Any, get_manager: Callable[[], Any]) -> Any | None:
    """Register the completer on ``shell.Completer``; returns it (None without a completer)."""
    completer = getattr(shell, "Completer", None)
    if completer is None:
        return None
    return compat.add_completer(completer, IDENTIFIER, make_completer(get_manager))


def uninstall(shell: Any) -> None:
    completer = getattr(shell, "Completer", None)
    if completer is not None:
        compat.remove_completer(completer, IDENTIFIER)


__all__ = ["candidates", "make_completer", "install", "uninstall"]
