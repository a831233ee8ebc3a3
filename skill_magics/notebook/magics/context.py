"""``%skill_context`` and ``%skills available``: prompt context in a notebook.

Thin on purpose: core builds the XML and runs the referenced scripts through its pipeline
(core/prompt/context.py: plan -> gate -> execute); this module parses the line, hands core the
notebook approver (approval/approver.py) and displays the result.

    ctx = %skill_context csv-profiler --args '{"csv": "a,b\\n1,2\\n"}'
    client.messages.create(..., system=ctx)          # ctx is a str

On ipykernel >= 7.4 a click reaches the kernel only while the cell awaits: rewrite.py turns
top-level ``[x =] %skill_context ...`` lines into ``await ...``; core then runs in a worker
thread that waits for the panel's decision.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shlex
import sys
import warnings
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments

from skill_magics.core.base.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.skills import SharedMagics
from skill_magics.notebook.names import NameListAction

if TYPE_CHECKING:
    from skill_magics.core.run.gating.approval import Approver
    from skill_magics.notebook.cmd import SkillsHost, SubcommandParser

    pass

MAX_VIEW_CHARS = 100_000  # highlighted in the page; the value itself is never cut
MAX_COPY_CHARS = 2_000_000  # beyond this the copy button is left out (use the variable)
ENVELOPES = ("skill_context", "skill_content")  # %skill_context --envelope
LAYOUTS = ("skills-ref", "guide")  # %skills available --layout


# -- the value ---------------------------------------------------------------------------


class SkillContextText(str):
    """The envelope (or the <available_skills> block) as a plain ``str`` that displays as
    highlighted XML.

    Use it anywhere a str goes (f-strings, ``system=``, ``messages``). ``.chars`` and
    ``.approx_tokens`` (characters / 4: an estimate, not a tokenizer count) describe its size.
    """

    @property
    def chars(self) -> int:
        return len(self)

    @property
    def approx_tokens(self) -> int:
        return (len(self) + 3) // 4

    def size_line(self) -> str:
        return (
            f"{self.chars:,} characters, ~{self.approx_tokens:,} tokens (estimate: characters / 4)"
        )

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(f"{str(self)}\n-- {self.size_line()}")

    def _repr_html_(self) -> str:
        return context_html(str(self), self.size_line())


def context_html(text: str, size_line: str) -> str:
    """Highlighted XML, size, and a copy-to-clipboard button (works in trusted outputs)."""
    shown = text[:MAX_VIEW_CHARS]
    more = len(text) - len(shown)
    view = highlight_xml(shown)
    if more:
        view += html.escape(f"\n… {more:,} more characters (the value holds everything)")
    button = textarea = ""
    if len(text) <= MAX_COPY_CHARS:
        # The full text sits in a hidden textarea; the button copies it (fallback: select it).
        button = (
            "<button type='button' class='skill-magics-copy' style='margin-left:1em' "
            "onclick=\"const t=this.closest('.skill-magics-context').querySelector('textarea');"
            "navigator.clipboard.writeText(t.value).then(()=>{this.textContent='Copied'},"
            "()=>{t.style.display='block';t.select();this.textContent='Press Ctrl+C'})\">"
            "Copy</button>"
        )
        textarea = (
            "<textarea readonly style='display:none;width:100%;height:8em'>"
            f"{html.escape(text)}</textarea>"
        )
    return (
        "<div class='skill-magics-context'>"
        "<div style='font-size:90%;color:#555;margin-bottom:4px'>"
        f"{html.escape(size_line)}{button}</div>{textarea}"
        "<pre style='max-height:32em;overflow:auto;white-space:pre-wrap;margin:0'>"
        f"{view}</pre></div>"
    )


_TAG_RE = re.compile(r"(&lt;/?)([\w:-]+)((?:\s+[\w:-]+=&quot;.*?&quot;)*)(\s*/?&gt;)")
_ATTR_RE = re.compile(r"([\w:-]+)=(&quot;.*?&quot;)")


def highlight_xml(text: str) -> str:
    """Escaped XML with tag names, attributes and values in colour (no dependencies)."""
    escaped = html.escape(text, quote=True)

    def attrs(value: str) -> str:
        return _ATTR_RE.sub(
            r"<span style='color:#7d4e00'>\1</span>=<span style='color:#a31515'>\2</span>", value
        )

    def tag(m: re.Match[str]) -> str:
        return (
            f"<span style='color:#0000c0'>{m.group(1)}<b>{m.group(2)}</b></span>"
            f"{attrs(m.group(3))}<span style='color:#0000c0'>{m.group(4)}</span>"
        )

    return _TAG_RE.sub(tag, escaped)


# -- the magics --------------------------------------------------------------------------


@magics_class
class ContextMagics(SharedMagics):
    """%skill_context, sharing SkillMagics' manager, approvals and config (``skill_magics``)."""

    # %skill_context ------------------------------------------------------------------------
    @magic_arguments()
    @argument("names", nargs="+", action=NameListAction, help="skill names (a,b or a b)")
    @argument("--no-run", action="store_true", help="do not run the referenced scripts")
    @argument(
        "--args",
        action="append",
        default=None,
        help="JSON sent to every referenced script on stdin, or a variable name holding it; "
        "NAME=JSON (repeat --args) gives skill NAME's scripts their own",
    )
    @argument(
        "--refs",
        choices=("list", "content", "none"),
        default="list",
        help="reference files: list them (default), include their content, or leave them out",
    )
    @argument(
        "--envelope",
        choices=ENVELOPES,
        default=None,
        help="skill_context (default: the envelope, scripts run) or skill_content (the "
        "Agent Skills client guide's activation result: instructions, directory, file list; "
        "nothing runs)",
    )
    @argument("--format", choices=ENVELOPES, default=None, help="deprecated: use --envelope")
    @argument("-o", "--out", default=None, help="also store the text in this variable")
    @no_var_expand
    @line_magic
    def skill_context(self, line: str = "") -> SkillContextText | None:
        """Build the <skill_context> prompt envelope: %skill_context NAME [NAME...] [options]

        Runs the scripts SKILL.md references (after one approval), and returns a str you can
        pass to a model. --no-run lists them without running; --args JSON feeds them stdin
        (--args NAME=JSON, repeated: each skill its own).
        """
        return drive.blocking(self.skill_magics, self._skill_context, line)

    async def skill_context_async(self, line: str) -> SkillContextText | None:
        """The await path: core in a worker thread, the cell awaiting (clicks get through).

        A kernel interrupt cancels the await: the approval wait ends, a running script's
        process group is killed and no further script starts, then the interrupt propagates.
        """
        return await drive.awaited(self.skill_magics, self._skill_context, line)

    def _skill_context(self, mode: drive.Mode, line: str) -> drive.Magic[SkillContextText | None]:
        from skill_magics.core.prompt import context

        opts = self._context_opts(line)
        names, options = self._build_args(opts, mode.approver())
        text = yield drive.Step(
            lambda: context.build_skill_context(self.manager, names, **options),
            lambda: context.build_skill_context_async(
                self.manager, names, cancel=mode.cancel, **options
            ),
        )
        self._say_not_found(context.not_found(text))
        if opts.arguments is None and not opts.by_skill:
            self._say_failed_without_args(text)
        return self._store(opts.out, SkillContextText(text))

    @staticmethod
    def _say_failed_without_args(text: str) -> None:
        """Without --args the referenced scripts get ``{}``; when some failed, the envelope
        holds their errors, and the person gets one line saying so and the fix (issue 44)."""
        from skill_magics.core.prompt.context import parse_skill_context

        try:
            contexts = parse_skill_context(text)
        except Exception:  # noqa: BLE001 - not an envelope we can read: nothing to add
            return
        for ctx in contexts:
            failed = [
                s
                for s in ctx.get("scripts", [])
                if s.get("status") not in (None, "completed", "declined", "refused")
            ]
            if not failed:
                continue
            first = failed[0]
            why = " ".join(((first.get("stderr") or "").strip().splitlines() or [""])[-1:])
            why = (why[:117] + "...") if len(why) > 120 else why
            count = len(failed)
            print(
                f"{ctx['id']}: {count} referenced script{'s' if count != 1 else ''} failed "
                f"with no arguments ({first.get('source')}: {first.get('status')}"
                f"{', exit ' + str(first.get('exit_code')) if first.get('exit_code') else ''}"
                f"{': ' + why if why else ''}); the context holds the errors. "
                f"Give them input: %skill_context {ctx['id']} --args '{{...}}' (stdin JSON), "
                "or --no-run for the instructions alone",
                file=sys.stderr,
            )

    def _say_not_found(self, names: list[str]) -> None:
        """The envelope tells a model only that a skill is not there; the person running
        the magic also gets where it was looked for and the fix, in the magics' words."""
        for name in names:
            try:
                self.manager.get_skill(name)
            except SkillNotFoundError as exc:
                print(exc.magic_text(), file=sys.stderr)
            except SkillMagicsError:
                pass  # the envelope's <error> already says what went wrong

    def _context_opts(self, line: str) -> argparse.Namespace:
        try:
            opts = self.skill_context.parser.parse_args(shlex.split(line))
        except ValueError as exc:  # unbalanced quotes
            raise UsageError(
                f"Cannot parse the %skill_context line: {exc}; check the quotes"
            ) from None
        opts.arguments, opts.by_skill = None, {}
        for value in opts.args or []:
            name, eq, rest = value.partition("=")
            if eq and name in opts.names:  # NAME=JSON: JSON never starts with "name="
                opts.by_skill[name] = self._arguments(rest)
            elif opts.arguments is None:
                opts.arguments = self._arguments(value)
            else:
                raise UsageError(
                    "--args for every skill given twice: use one --args JSON, or NAME=JSON "
                    f"for each of {', '.join(opts.names)}"
                )
        return opts

    def _arguments(self, raw: str | None) -> Any:
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            if raw.isidentifier() and raw in self._shell.user_ns:
                return self._shell.user_ns[raw]
            raise UsageError(
                f"--args is not valid JSON ({exc.msg} at column {exc.colno}) nor a variable: "
                'quote it, e.g. --args \'{"csv": "a,b"}\''
            ) from None

    @staticmethod
    def _build_args(
        opts: argparse.Namespace, approver: Approver
    ) -> tuple[str | list[str], dict[str, Any]]:
        """(names, keyword arguments) for core's build_skill_context."""
        names = opts.names[0] if len(opts.names) == 1 else opts.names
        options = dict(
            run_scripts=not opts.no_run,
            arguments=opts.arguments,
            arguments_by_skill=opts.by_skill,
            include_references=opts.refs,
            approver=approver,
            envelope=renamed_option(opts.envelope, opts.format, "--envelope", "--format"),
        )
        return names, options


class AvailableSkillsText(SkillContextText):
    """The ``<available_skills>`` block (a ``str``) shown with its sizes: tokens per skill and
    in total, which tokenizer counted, and every skill left out with the reason.
    ``.available_skills`` is core's
    :class:`~skill_magics.core.prompt.available_skills.AvailableSkills` (``.omitted``,
    ``.entries``, ...); ``.catalog`` its deprecated old name."""

    available_skills: Any

    def __new__(cls, block: Any) -> AvailableSkillsText:
        self = super().__new__(cls, str(block))
        self.available_skills = block
        return self

    @property
    def catalog(self) -> Any:
        """Deprecated: the old name of ``.available_skills`` (a FutureWarning)."""
        from skill_magics.core.base.deprecation import deprecation_message

        old, new = ".catalog", ".available_skills"
        warnings.warn(deprecation_message(old, new), FutureWarning, stacklevel=2)
        return self.available_skills

    @property
    def omitted(self) -> Any:
        return self.available_skills.omitted

    @property
    def tokens(self) -> int:
        return int(self.available_skills.tokens)

    def size_line(self) -> str:
        block = self.available_skills
        return f"{len(self):,} characters, {block.tokens:,} tokens ({block.counter})"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        head = str(self) if self else EMPTY_BLOCK
        printer.text(f"{head}\n-- {self.available_skills.report()}")

    def _repr_html_(self) -> str:
        from skill_magics.notebook.render.prompt import available_skills_html

        shown = str(self) if self else EMPTY_BLOCK
        return available_skills_html(self.available_skills) + context_html(shown, self.size_line())


def renamed_option(value: Any, old_value: Any, new: str, old: str) -> Any:
    """A magic's option under its new name, or its old name with a FutureWarning (shown in
    Jupyter); both given is a UsageError."""
    from skill_magics.core.base.deprecation import renamed_argument

    try:
        return renamed_argument(
            value, old_value, new=new, old=old, category=FutureWarning, stacklevel=4
        )
    except ValueError as exc:
        raise UsageError(str(exc)) from None


EMPTY_BLOCK = "(no skills listed: the <available_skills> block is empty, no block)"


def available_skills_parser() -> SubcommandParser:
    from skill_magics.notebook.cmd import SubcommandParser

    parser = SubcommandParser("available", AVAILABLE_USAGE)
    parser.add_argument("names", nargs="*", action=NameListAction)
    parser.add_argument("--budget", type=int, default=None, help="max tokens")
    parser.add_argument("--budget-chars", type=int, default=None, help="max characters")
    parser.add_argument("--include", nargs="+", action="extend", default=None)
    parser.add_argument("--exclude", nargs="+", action="extend", default=None)
    parser.add_argument("--layout", choices=LAYOUTS, default=None)
    parser.add_argument("--format", choices=LAYOUTS, default=None)  # deprecated: --layout
    parser.add_argument("-o", "--out", default=None)
    return parser


AVAILABLE_USAGE = (
    "%skills available [NAME ...] [--budget TOKENS] [--budget-chars N] [--include PAT ...] "
    "[--exclude PAT ...] [--layout skills-ref|guide] [-o VAR]"
)


def available_skills_command(magics: SkillsHost, args: list[str]) -> AvailableSkillsText:
    """``%skills available``: the <available_skills> block (skills-ref format by default),
    filtered by name globs and fitted to a budget, with its token counts."""
    from skill_magics.core.prompt.available_skills import available_skills

    opts = available_skills_parser().parse(args)
    layout = renamed_option(opts.layout, opts.format, "--layout", "--format")
    budget = opts.budget
    if budget is None and opts.budget_chars is None:
        budget = getattr(magics, "available_skills_budget", None)  # the SkillMagics trait
    try:
        block = available_skills(
            magics.manager,
            opts.names or None,
            max_tokens=budget,
            max_chars=opts.budget_chars,
            include=opts.include,
            exclude=opts.exclude,
            layout=layout,
        )
    except SkillMagicsError as exc:
        raise UsageError(exc.magic_text()) from None
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    text = AvailableSkillsText(block)
    shell = getattr(magics, "shell", None)
    if opts.out and shell is not None:
        shell.user_ns[opts.out] = text
    return text


__all__ = [
    "SkillContextText",
    "AvailableSkillsText",
    "ContextMagics",
    "available_skills_command",
    "context_html",
    "highlight_xml",
]
