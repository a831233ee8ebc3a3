"""``%skills verify [DIR]``: every file added, removed or changed since the skills of DIR
(default ``./.agents/skills``) were installed, one line each (core/sources/verify.py);
``--signatures`` also verifies each skill's signature again at its locked commit or archive
and names any other signer (core/sources/update.py ``verify_signatures``)."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, _sources

HELP = "[DIR] [--signatures]: files changed since the install; signers verified again"
USAGE = "%skills verify [DIR] [--signatures]"


def run(magics: SkillsHost, args: list[str]) -> Any:
    from skill_magics.core.installed.lock import read_lock
    from skill_magics.core.sources.install import install_folder
    from skill_magics.core.sources.verify import verify_skills

    p = _sources.parser(USAGE)
    p.add_argument("folder", nargs="?")
    p.add_argument("--into")
    p.add_argument("--signatures", action="store_true")
    opts = p.parse(args)
    folder = install_folder(opts.folder or opts.into)
    lines = verify_skills(folder)
    if opts.signatures:
        from skill_magics.core.sources.update import verify_signatures

        lines += verify_signatures(folder)
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
