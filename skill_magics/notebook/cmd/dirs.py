"""``%skills dirs``: the searched directories, in precedence order."""

from __future__ import annotations

import html
from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = "the directories searched, first wins a name clash"

PARSER = SubcommandParser("dirs", "%skills dirs")


def run(magics: SkillsHost, args: list[str]) -> Any:
    PARSER.parse(args)
    from skill_magics.notebook.render import Display, display_path

    rows = [
        (str(i), display_path(d), "yes" if d.is_dir() else "missing")
        for i, d in enumerate(magics.manager.skill_dirs, 1)
    ]
    if not rows:
        text = "No skills directories: add one with %skills add DIR"
        return Display(text, f"<p>{html.escape(text)}</p>")
    text = "\n".join(
        f"{i:>2}. {path}" + ("" if ok == "yes" else "  (missing)") for i, path, ok in rows
    )
    body = "".join(
        f"<tr><td>{i}</td><td><code>{html.escape(path)}</code></td><td>{ok}</td></tr>"
        for i, path, ok in rows
    )
    return Display(
        text,
        "<table class='skill-magics-dirs'><tr><th>#</th><th>directory</th><th>exists</th></tr>"
        f"{body}</table>",
    )
