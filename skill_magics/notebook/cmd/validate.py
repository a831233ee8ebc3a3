"""``%skills validate [NAME|PATH ...] [--budget TOKENS]``: problems of skills, one per line."""

from __future__ import annotations

from typing import Any

from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

HELP = (
    "check skills as skills-ref does, plus missing referenced files, scripts that cannot "
    "run, secret-like strings and the <available_skills> budget: [NAME|PATH ...] [--budget TOKENS]"
)
USAGE = "%skills validate [NAME|PATH ...] [--budget TOKENS] [--budget-chars N]"
PARSER = SubcommandParser("validate", USAGE)
PARSER.add_argument("targets", nargs="*")
PARSER.add_argument("--budget", type=int, default=None)
PARSER.add_argument("--budget-chars", type=int, default=None)


class ValidationReport(dict):
    """skill (name or path) -> its problems (one line each); shown as a list per skill."""

    @property
    def ok(self) -> bool:
        return not any(self.values())

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        from skill_magics.notebook.render.prompt import validation_text

        printer.text(validation_text(self))

    def _repr_html_(self) -> str:
        from skill_magics.notebook.render.prompt import validation_html

        return validation_html(self)


def run(magics: SkillsHost, args: list[str]) -> ValidationReport:
    from skill_magics.core.lab.validation import validate_skills

    opts = PARSER.parse(args)
    budget = opts.budget
    if budget is None and opts.budget_chars is None:
        budget = getattr(magics, "available_skills_budget", None)  # the SkillMagics trait
    results = validate_skills(
        magics.manager, opts.targets or None, max_tokens=budget, max_chars=opts.budget_chars
    )
    return ValidationReport(results)
