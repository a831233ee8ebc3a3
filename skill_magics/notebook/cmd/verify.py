"""``%skills verify [DIR]``: every file added, removed or changed since the skills of DIR
(default ``./.agents/skills``) were installed, one line each (core/sources/verify.py)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources

HELP = "[DIR]: files added, removed or changed since the skills were installed"
USAGE = "%skills verify [DIR]"


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.core.sources.install import install_folder
    from skill_magics.core.sources.lock import read_lock
    from skill_magics.core.sources.verify import verify_skills

    p = _sources.parser(USAGE)
    p.add_argument("folder", nargs="?")
    p.add_argument("--into")
    opts = p.parse_args(args)
    folder = install_folder(opts.folder or opts.into)
    lines = verify_skills(folder)
    if lines:
        print(f"{len(lines)} difference{'s' if len(lines) != 1 else ''} from the lock:")
        for line in lines:
            print(f"  {line}")
        print(f"Restore them with %skills sync {folder} --force, or keep them as they are")
    else:
        count = len(read_lock(folder).skills)
        print(
            f"All {count} skill{'s' if count != 1 else ''} in {folder} match its skills-lock.json"
        )
    return None
