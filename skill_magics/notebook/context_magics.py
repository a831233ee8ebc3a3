"""``%skill_context``, ``%%skillpy`` and ``%skills catalog``: prompt context in a notebook.

Thin on purpose: core builds the XML (core.context), runs code in a skill's venv
(core.skillpy); this module parses the line, asks for approval the way this kernel can deliver
a click (the same panels, config and waiting strategies as %%skillrun) and displays the result.

    ctx = %skill_context csv-profiler --args '{"csv": "a,b\\n1,2\\n"}'
    client.messages.create(..., system=ctx)          # ctx is a str

On ipykernel >= 7.4 a click reaches the kernel only while the cell awaits, so an input
transformer turns top-level ``[x =] %skill_context ...`` lines and ``%%skillpy`` cells into
``await ...``; core then runs in a worker thread that waits for the panel's decision.
"""

from __future__ import annotations

import argparse
import html
import json
import re
import shlex
import threading
import tokenize
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from skill_magics.core.errors import ApprovalUnavailable, SkillMagicsError
from skill_magics.core.run.approval import ApprovalRequest, Decision, coerce_decision
from skill_magics.notebook.approval import waiting
from skill_magics.notebook.approval.preapproval import preapproved_by, unavailable_message
from skill_magics.notebook.approval.waiting import Strategy
from skill_magics.notebook.transformer import inside_a_magic

MAX_VIEW_CHARS = 100_000  # highlighted in the page; the value itself is never cut
MAX_COPY_CHARS = 2_000_000  # beyond this the copy button is left out (use the variable)


# -- the value ---------------------------------------------------------------------------


class SkillContextText(str):
    """The envelope (or catalog) as a plain ``str`` that displays as highlighted XML.

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


class SkillPyResult(dict):
    """The seed-004 dict (``skill_name``, ``stdout``, ``stderr``, ``returncode``,
    ``timed_out``, ``error``) with a readable display."""

    def summary(self) -> str:
        if "returncode" not in self:
            name = self.get("skill_name", "")
            head = f"%%skillpy {name}" if name else "%%skillpy"
            return f"{head}: {self.get('error', '')}".strip()
        state = "timed out" if self.get("timed_out") else f"exit code {self['returncode']}"
        return f"%%skillpy {self['skill_name']}: {state}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        parts = [self.summary()]
        if self.get("stdout"):
            parts.append(self["stdout"].rstrip("\n"))
        if self.get("stderr"):
            parts.append("-- stderr --\n" + self["stderr"].rstrip("\n"))
        if "error" in self and "returncode" in self:
            parts.append(f"error: {self['error']}")
        printer.text("\n".join(parts))

    def _repr_html_(self) -> str:
        pre = "<pre style='margin:0;white-space:pre-wrap;max-height:24em;overflow:auto'>"
        out = [f"<div><b>{html.escape(self.summary())}</b></div>"]
        if self.get("stdout"):
            out.append(f"{pre}{html.escape(self['stdout'])}</pre>")
        if self.get("stderr"):
            out.append(
                f"<div style='color:#a31515'>stderr</div>{pre}{html.escape(self['stderr'])}</pre>"
            )
        if "error" in self and "returncode" in self:
            out.append(f"<div style='color:#a31515'>{html.escape(self['error'])}</div>")
        return "<div class='skill-magics-skillpy'>" + "".join(out) + "</div>"


# -- approval in a notebook ------------------------------------------------------------------


class NotebookApprover:
    """An approver (``request -> Decision``) that asks like %%skillrun does.

    Same config (``require_approval``, ``auto_approve``, ``approval_ui``,
    ``approval_timeout``) and panels. ``in_worker`` means core runs in a worker thread while
    the cell awaits (the await path): the panel's click then arrives on the kernel's loop.

    A combined request (``%skill_context a b``: ``request.parts``) gets one panel (or one
    terminal prompt) listing every skill and script; it counts as pre-approved only when every
    skill is. Core leaves pre-approved skills out of a combined request in the first place,
    through :meth:`decides_alone`.
    """

    def __init__(
        self, magics: Any, *, in_worker: bool = False, cancel: threading.Event | None = None
    ) -> None:
        self.magics = magics
        self.in_worker = in_worker
        self.cancel = cancel  # set when the awaiting cell is interrupted: stop waiting

    def decides_alone(self, request: ApprovalRequest) -> bool:
        """True when configuration answers ``request`` (nobody would be asked)."""
        return self._preapproved(request) is not None

    def _preapproved(self, request: ApprovalRequest) -> str | None:
        """Who pre-approved every skill of ``request`` (for the audit), or None."""
        magics = self.magics
        if not magics.require_approval:
            return "config SkillMagics.require_approval=False"
        found: list[str] = []
        for part in request.requests:
            by = preapproved_by(part.skill_name, magics.auto_approve)
            if by is None:
                return None
            found.append(by)
        return "auto_approve by " + " and ".join(dict.fromkeys(found))

    def __call__(self, request: ApprovalRequest) -> Decision:
        magics = self.magics
        by = self._preapproved(request)
        if by is not None:
            return self._approved(request, by)
        shell, names = magics.shell, request.skill_names
        strategy = waiting.choose(shell, in_coroutine=self.in_worker, mode=magics.approval_ui)
        if strategy is Strategy.HEADLESS:
            raise ApprovalUnavailable(
                unavailable_message(names, "nobody can click in this headless run")
            )
        if strategy is Strategy.UNAVAILABLE:
            why = "there is no frontend for buttons and stdin is not a TTY"
            raise ApprovalUnavailable(unavailable_message(names, why))
        if strategy is Strategy.TERMINAL:
            from skill_magics.notebook.approval.panel import summary_text

            try:
                answer = coerce_decision(
                    waiting.ask_terminal(
                        summary_text(request), full=summary_text(request, full=True)
                    )
                )
            except EOFError:  # Ctrl-D at the prompt: No, as in %%skillrun
                return self._decided(request, Decision.NO, "terminal input() (end of input)")
            except OSError:
                raise ApprovalUnavailable(unavailable_message(names, "stdin is closed")) from None
            return self._decided(request, answer, "terminal input()")
        if strategy is Strategy.NONBLOCKING:
            if magics.approval_ui == "nonblocking":
                why = "SkillMagics.approval_ui is 'nonblocking', so this cell cannot wait"
            else:
                why = "this kernel cannot deliver a click to a waiting cell"
            raise ApprovalUnavailable(unavailable_message(names, why))
        panel = self.magics.show_panel(request)
        if strategy is Strategy.PUMP:
            waiting.wait_pumping(shell, panel.event, magics.approval_timeout)
        elif strategy is Strategy.THREAD:
            waiting.wait_for_click(shell, panel.event, magics.approval_timeout, stop=self.cancel)
        else:  # AWAIT with core in a worker thread: the kernel's loop delivers the click
            waiting.wait_event(panel.event, magics.approval_timeout, stop=self.cancel)
        if panel.decision is None and waiting.no_click_can_arrive(shell):
            panel.close()
            why = (
                "no click can reach this waiting cell: ipykernel 7.0-7.3 delivers it only "
                "through a frontend subshell, and none was opened (upgrade to ipykernel >= 7.4, "
                "or pre-approve with auto_approve)"
            )
            raise ApprovalUnavailable(unavailable_message(names, why))
        if panel.decision is None:
            panel.close()
            if self.cancel is not None and self.cancel.is_set():
                raise ApprovalUnavailable(
                    f"Interrupted while waiting for approval of {request.skill_name}: nothing "
                    "ran. Run the cell again to be asked again"
                )
            raise ApprovalUnavailable(
                f"No decision within {magics.approval_timeout:g} s for {request.skill_name}: "
                "nothing ran. Run the cell again, or raise SkillMagics.approval_timeout"
            )
        return self._decided(request, panel.decision, panel.decided_by or "button")

    def _approved(self, request: ApprovalRequest, by: str) -> Decision:
        return self._decided(request, Decision.YES_ONCE, by)

    def _decided(self, request: ApprovalRequest, decision: Decision, by: str) -> Decision:
        if decision is not Decision.NO:  # a No is audited by core (ask_approval)
            reason = f"{decision.value} by {by}"
            self.magics.manager.audit_decision(request, "approved", reason)
        return decision


# -- the magics --------------------------------------------------------------------------


@magics_class
class ContextMagics(Magics):
    """%skill_context and %%skillpy, sharing SkillMagics' manager, approvals and config."""

    def __init__(self, shell: Any, skill_magics: Any) -> None:
        super().__init__(shell=shell)
        self.skill_magics = skill_magics

    @property
    def manager(self) -> Any:
        return self.skill_magics.manager

    # %skill_context ------------------------------------------------------------------------
    @magic_arguments()
    @argument("names", nargs="+", help="one or more skill names")
    @argument("--no-run", action="store_true", help="do not run the referenced scripts")
    @argument(
        "--args",
        default=None,
        help="JSON sent to every referenced script on stdin, or a variable name holding it",
    )
    @argument(
        "--refs",
        choices=("list", "content", "none"),
        default="list",
        help="reference files: list them (default), include their content, or leave them out",
    )
    @argument("-o", "--out", default=None, help="also store the text in this variable")
    @no_var_expand
    @line_magic
    def skill_context(self, line: str = "") -> SkillContextText | None:
        """Build the <skill_context> prompt envelope: %skill_context NAME [NAME...] [options]

        Runs the scripts SKILL.md references (after one approval), and returns a str you can
        pass to a model. --no-run lists them without running; --args JSON feeds them stdin.
        """
        from skill_magics.core.context import build_skill_context

        opts = self._context_opts(line)
        names, options = self._build_args(opts, NotebookApprover(self.skill_magics))
        text = build_skill_context(self.manager, names, **options)
        return self._store(opts.out, SkillContextText(text))

    async def skill_context_async(self, line: str) -> SkillContextText | None:
        """The await path: core in a worker thread, the cell awaiting (clicks get through).

        A kernel interrupt cancels the await: the approval wait ends, a running script's
        process group is killed and no further script starts, then the interrupt propagates.
        """
        from skill_magics.core.context import build_skill_context_async

        opts = self._context_opts(line)
        cancel = threading.Event()
        approver = NotebookApprover(self.skill_magics, in_worker=True, cancel=cancel)
        names, options = self._build_args(opts, approver)
        text = await build_skill_context_async(self.manager, names, cancel=cancel, **options)
        return self._store(opts.out, SkillContextText(text))

    def _context_opts(self, line: str) -> argparse.Namespace:
        try:
            opts = self.skill_context.parser.parse_args(shlex.split(line))
        except ValueError as exc:  # unbalanced quotes
            raise UsageError(
                f"Cannot parse the %skill_context line: {exc}; check the quotes"
            ) from None
        opts.arguments = self._arguments(opts.args)
        return opts

    def _arguments(self, raw: str | None) -> Any:
        if raw is None:
            return None
        try:
            return json.loads(raw)
        except json.JSONDecodeError as exc:
            if raw.isidentifier() and raw in self.shell.user_ns:
                return self.shell.user_ns[raw]
            raise UsageError(
                f"--args is not valid JSON ({exc.msg} at column {exc.colno}) nor a variable: "
                'quote it, e.g. --args \'{"csv": "a,b"}\''
            ) from None

    @staticmethod
    def _build_args(
        opts: argparse.Namespace, approver: NotebookApprover
    ) -> tuple[str | list[str], dict[str, Any]]:
        """(names, keyword arguments) for core's build_skill_context."""
        names = opts.names[0] if len(opts.names) == 1 else opts.names
        options = dict(
            run_scripts=not opts.no_run,
            arguments=opts.arguments,
            include_references=opts.refs,
            approver=approver,
        )
        return names, options

    # %%skillpy ---------------------------------------------------------------------------
    @magic_arguments(name="%skillpy")  # a cell magic: usage reads %%skillpy
    @argument("skill", help="the skill whose venv runs the code")
    @argument("--timeout", type=float, default=None, help="seconds before the code is killed")
    @argument("-o", "--out", default=None, help="also store the result dict in this variable")
    @cell_magic
    def skillpy(self, line: str, cell: str = "") -> SkillPyResult | None:
        """Run the cell as Python inside a skill's own venv: %%skillpy SKILL [--timeout N]

        cwd is the skill folder; the approval panel shows the code. Returns the seed-004
        dict: skill_name, stdout, stderr, returncode, timed_out (and error).
        """
        from skill_magics.core.skillpy import run_python_in_skill

        opts = parse_argstring(self.skillpy, line)
        result = run_python_in_skill(
            self.manager,
            opts.skill,
            cell,
            timeout=opts.timeout,
            approver=NotebookApprover(self.skill_magics),
        )
        return self._store(opts.out, SkillPyResult(result))

    async def skillpy_async(self, line: str, cell: str) -> SkillPyResult | None:
        """The await path: approval in a worker thread, the run awaited (interrupt kills it)."""
        from skill_magics.core.skillpy import run_python_in_skill_async

        opts = parse_argstring(self.skillpy, line)
        cancel = threading.Event()  # interrupt: stop waiting for the click, kill the run
        result = await run_python_in_skill_async(
            self.manager,
            opts.skill,
            cell,
            timeout=opts.timeout,
            approver=NotebookApprover(self.skill_magics, in_worker=True, cancel=cancel),
            cancel=cancel,
        )
        return self._store(opts.out, SkillPyResult(result))

    def _store(self, out: str | None, value: Any) -> Any:
        if out:
            self.shell.user_ns[out] = value
        return value


def catalog_command(magics: Any, args: list[str]) -> SkillContextText:
    """``%skills catalog [NAME...]``: the <available_skills> block (skills-ref format)."""
    from skill_magics.core.context import skills_catalog

    try:
        return SkillContextText(skills_catalog(magics.manager, args or None))
    except SkillMagicsError as exc:
        raise UsageError(str(exc)) from None


# -- await transformer -------------------------------------------------------------------

_MODULE = "__import__('skill_magics.notebook.context_magics', fromlist=['_'])"
_MAGIC = "%skill_context"
_LINE_RE = re.compile(r"^(?P<lhs>[A-Za-z_][\w.]*\s*=\s*)?%skill_context(?P<rest>(?:[ \t].*)?)$")


def context_to_await(lines: list[str]) -> list[str]:
    """Cleanup transformer: top-level ``[x =] %skill_context ...`` and ``%%skillpy`` cells
    become ``await ...`` where the kernel delivers clicks only while a cell awaits."""
    if not lines or not _wants_rewrite(lines) or inside_a_magic():
        return lines
    from IPython import get_ipython

    if not waiting.supports_await(get_ipython()):
        return lines
    return rewrite_to_await(lines)


def _is_skillpy_cell(first: str) -> bool:
    return first.startswith("%%skillpy") and (first[9:10].isspace() or first[9:] == "")


def _wants_rewrite(lines: list[str]) -> bool:
    return _is_skillpy_cell(lines[0]) or bool(_statement_rows(lines))


def _statement_rows(lines: list[str]) -> set[int]:
    """Indexes of the lines that are a top-level ``[x =] %skill_context ...`` statement.

    Only where IPython itself runs a line magic: never in another cell magic's body
    (``%%writefile`` must write the text as typed, ``%%time`` compiles its body where no
    ``await`` is allowed; ``%%skillrun`` cells belong to notebook.transformer), and only at
    the start of a logical line, so text inside a string literal or a continued line stays.
    """
    if lines[0].startswith("%%") or not any(_MAGIC in line for line in lines):
        return set()
    from IPython.core.inputtransformer2 import make_tokens_by_line

    try:
        logical = make_tokens_by_line(lines)
    except (SyntaxError, ValueError, tokenize.TokenError):
        return set()  # IPython's own transforms fail on this cell too: leave it to them
    starts = {tokens[0].start[0] - 1 for tokens in logical if tokens}
    return {
        row for row in starts if 0 <= row < len(lines) and _LINE_RE.match(lines[row].rstrip("\r\n"))
    }


def rewrite_to_await(lines: list[str]) -> list[str]:
    """The rewrite itself (no kernel check): what the await path executes."""
    first = lines[0]
    if _is_skillpy_cell(first):
        body = "".join(lines[1:])
        return [f"await {_MODULE}.run_skillpy({first[9:].strip()!r}, {body!r})\n"]
    rows = _statement_rows(lines)
    out = []
    for row, line in enumerate(lines):
        m = _LINE_RE.match(line.rstrip("\r\n")) if row in rows else None
        if m is None:
            out.append(line)
            continue
        lhs = m.group("lhs") or ""
        out.append(f"{lhs}await {_MODULE}.run_skill_context({m.group('rest').strip()!r})\n")
    return out


context_to_await.has_side_effects = True  # type: ignore[attr-defined]


def _context_magics() -> ContextMagics:
    from IPython import get_ipython

    shell = get_ipython()
    magics = getattr(shell, _ATTR, None)
    if magics is None:
        magics = register(shell)
    return magics


async def run_skill_context(line: str) -> SkillContextText | None:
    """What a transformed ``%skill_context`` line awaits."""
    return await _context_magics().skill_context_async(line)


async def run_skillpy(line: str, body: str) -> SkillPyResult | None:
    """What a transformed ``%%skillpy`` cell awaits."""
    from skill_magics.notebook.transformer import expand

    magics = _context_magics()
    return await magics.skillpy_async(expand(magics.shell, line), body)


# -- registration --------------------------------------------------------------------------

_ATTR = "_skill_magics_context"


def register(shell: Any, skill_magics: Any = None) -> ContextMagics:
    """Register %skill_context / %%skillpy (and the await transformer) on ``shell``."""
    if skill_magics is None:
        from skill_magics.notebook.extension import get_magics

        skill_magics = get_magics(shell)
    magics = getattr(shell, _ATTR, None)
    if magics is None:
        magics = ContextMagics(shell, skill_magics)
        setattr(shell, _ATTR, magics)
    shell.register_magics(magics)
    cleanup = shell.input_transformers_cleanup
    if context_to_await not in cleanup:
        cleanup.append(context_to_await)
    return magics


def unregister(shell: Any) -> None:
    """Undo :func:`register`."""
    cleanup = shell.input_transformers_cleanup
    while context_to_await in cleanup:
        cleanup.remove(context_to_await)
    magics = getattr(shell, _ATTR, None)
    if magics is None:
        return
    from skill_magics.notebook.extension import remove_magics

    remove_magics(shell, magics)
    delattr(shell, _ATTR)


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext skill_magics.notebook.context_magics`` (when the main extension does not)."""
    register(shell)


def unload_ipython_extension(shell: Any) -> None:
    unregister(shell)


__all__ = [
    "SkillContextText",
    "SkillPyResult",
    "NotebookApprover",
    "ContextMagics",
    "catalog_command",
    "context_to_await",
    "rewrite_to_await",
    "highlight_xml",
    "register",
    "unregister",
]
