"""``%skills env NAME [--rebuild] [--installer uv|pip]``: build the skill's managed environment.

The packages the kernel lacks are installed, after approval (the panel lists them), into a
venv outside the skill that sees the kernel's packages; the installer's output streams into
the cell. Later runs of the skill's Python scripts use it (core/run/env/install.py). On
ipykernel >= 7.4 the line is awaited (magics/rewrite.py), so the approval click arrives.
"""

from __future__ import annotations

import sys

from IPython.core.error import UsageError

from skill_magics.core.base.errors import EnvironmentBuildError
from skill_magics.notebook.cmd import SkillsHost, SubcommandParser
from skill_magics.notebook.magics import drive

HELP = "NAME [--rebuild] [--installer uv|pip]: install what a skill's scripts lack"
USAGE = "%skills env NAME [--rebuild] [--installer uv|pip]"


PARSER = SubcommandParser("env", USAGE)
PARSER.add_argument("name")
PARSER.add_argument("--rebuild", action="store_true")
PARSER.add_argument("--installer", default=None)


def parse(args: list[str]) -> tuple[str, bool, str | None]:
    """(skill name, rebuild, installer) from the words after ``env``."""
    opts = PARSER.parse(args)
    return opts.name, opts.rebuild, opts.installer


def magic(mode: drive.Mode, magics: SkillsHost, args: list[str]) -> drive.Magic[None]:
    """Awaited, the approval and the install run in a worker thread while the cell awaits;
    Kernel > Interrupt stops the installer's process group (nothing is kept)."""
    name, rebuild, installer = parse(args)
    approver = mode.approver()
    try:
        report = yield drive.Step(
            lambda: magics.manager.prepare_env(
                name,
                approver=approver,
                rebuild=rebuild,
                installer=installer,
                on_output=_echo,
                cancel=mode.cancel,
            )
        )
    except EnvironmentBuildError as exc:
        # One line that ends with the installer's last lines (its full output streamed above).
        raise UsageError(f"EnvironmentBuildError: {exc}") from None
    print(report.message)
    return None


def _echo(stream: str, text: str) -> None:
    """The installer's output, live in the cell (stderr stays stderr)."""
    out = sys.stderr if stream == "stderr" else sys.stdout
    out.write(text)
    out.flush()
