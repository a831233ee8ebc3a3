"""``SkillMagics``: the configuration, the shared SkillManager, and ``%skills``.

Configuration (``%config SkillMagics.timeout = 60`` or ``c.SkillMagics.timeout`` in
ipython_config.py): see the traits below. Bad values are refused when set, in one line.
A list of names (``allowed_interpreters``, ``env_passthrough``, ``sandbox_network``) given
as one string is read by the one parser (core/base/namelist.py): ``"python3, bash"`` is two
names, as for ``auto_approve``; a list of paths (``skill_dirs``, ``sandbox_read``,
``sandbox_deny_read``) given as one string is one path (a folder name may hold a comma).
"""

from __future__ import annotations

import argparse
import shlex
import threading
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.magic import Magics, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments
from traitlets import Any as TraitAny
from traitlets import (
    Bool,
    CaselessStrEnum,
    Float,
    Int,
    List,
    TraitError,
    Unicode,
    Union,
    observe,
    validate,
)

from skill_magics.core.base.errors import SkillMagicsError, SkillNotFoundError
from skill_magics.core.base.namelist import name_list
from skill_magics.core.run.defaults import DEFAULTS
from skill_magics.core.run.launching.sandbox_profiles import PROFILES

if TYPE_CHECKING:  # imported on first use: %load_ext stays light
    from skill_magics.core.manager import SkillManager
    from skill_magics.core.run.planning.settings import RunSettings
    from skill_magics.notebook.approval.approver import NotebookApprover
    from skill_magics.notebook.approval.panel import ApprovalPanel
    from skill_magics.notebook.result import SkillRunResult


# The traits that are run settings: RunSettings' fields, same names (core/run/planning/settings.py;
# tests/test_ipython_config.py checks the two lists agree).
RUN_SETTINGS = (
    "timeout",
    "max_output_size",
    "allowed_interpreters",
    "inherit_env",
    "env_passthrough",
    "run_cwd",
    "sandbox",
    "sandbox_network",
    "sandbox_deny_read",
    "sandbox_read",
    "warm_start",
    "warm_idle_timeout",
)


def _as_list(value: tuple[str, ...] | None) -> list[str] | None:
    return None if value is None else list(value)


class NameListTrait(List):
    """A list of names that also takes one string, read by the one parser: ``"a, b"`` and
    ``"a b"`` are ``["a", "b"]`` (traitlets' List makes a string ONE item, ``["a, b"]``: a
    name no interpreter, variable or skill has, so the setting silently matched nothing)."""

    def set(self, obj: Any, value: Any) -> None:
        super().set(obj, list(name_list(value)) if isinstance(value, str) else value)


def _naming_source_kinds(func: Any) -> Any:
    """Name the registered source kinds (core/sources/kinds/) where ``func``'s docstring
    says ``{source_kinds}``; before ``magic_arguments`` makes the help text of it."""
    from skill_magics.core.sources.kinds import described

    func.__doc__ = (func.__doc__ or "").replace("{source_kinds}", described())
    return func


@magics_class
class SkillMagics(Magics):
    """Agent Skills in IPython: the configuration every magic reads, the SkillManager they
    share, and ``%skills`` to browse. The other magics (skillrun.py, context.py, skillpy.py)
    get this instance from extension.py."""

    skill_dirs = List(
        Unicode(),
        default_value=None,
        allow_none=True,
        help="Skill directories, first wins a name clash. None: $SKILL_MAGICS_PATH, then "
        "./skills, ./.agents/skills, ./.claude/skills and the same under ~.",
    ).tag(config=True)
    # The run settings' defaults are RunSettings' own (core/run/defaults.py: one place).
    timeout = Float(DEFAULTS["timeout"], help="Default script timeout in seconds (1-600).").tag(
        config=True
    )
    max_output_size = Int(
        DEFAULTS["max_output_size"],
        help="Bytes of stdout and of stderr kept per run (the rest is counted).",
    ).tag(config=True)
    allowed_interpreters = NameListTrait(
        Unicode(),
        default_value=_as_list(DEFAULTS["allowed_interpreters"]),
        allow_none=True,
        help="Interpreters scripts may use; None: python3, bash, sh, node.",
    ).tag(config=True)
    require_approval = Bool(
        True,
        help="Ask before every run (Yes once / Yes in session / No). False: nothing asks "
        "(audited), and %%skillrun --no-approval is accepted.",
    ).tag(config=True)
    auto_approve = Union(
        [Unicode(), List(Unicode())],
        default_value=[],
        help='Skills pre-approved without asking: a list of names, "*" (every local skill) '
        'or "LABEL/*" (every skill of that MCP server; "*" never covers one) (audited). '
        "Env var SKILL_MAGICS_AUTO_APPROVE does the same (names separated by commas or "
        "spaces).",
    ).tag(config=True)
    inherit_env = Bool(
        DEFAULTS["inherit_env"],
        help="Give scripts the kernel's whole environment (default: a minimal one).",
    ).tag(config=True)
    env_passthrough = NameListTrait(
        Unicode(),
        default_value=list(DEFAULTS["env_passthrough"]),
        help="Environment variables passed to scripts in addition to the minimal set.",
    ).tag(config=True)
    approval_timeout = Float(
        300.0,
        help="Seconds a cell waits for an approval click; after that it returns a pending "
        "result and a later click still runs the script.",
    ).tag(config=True)
    max_display_chars = Int(
        100_000, help="Characters of stdout/stderr shown in the view (the object keeps all)."
    ).tag(config=True)
    approval_ui = CaselessStrEnum(
        ["auto", "widgets", "nonblocking", "stdin", "terminal"],
        default_value="auto",
        help="How approval is asked: auto (by kernel, see docs), widgets (buttons, cell waits), "
        "nonblocking (buttons, cell returns a pending result), stdin or terminal (input(): "
        "the notebook's input box, or the terminal).",
    ).tag(config=True)
    audit_log = Unicode(
        None, allow_none=True, help="Also append audit records to this JSONL file."
    ).tag(config=True)
    available_skills_budget = Int(
        None,
        allow_none=True,
        help="Token budget of %skills available (and what %skills validate checks "
        "descriptions against) when no --budget is given; None: no budget.",
    ).tag(config=True)
    catalog_budget = Int(
        None, allow_none=True, help="Deprecated: the old name of available_skills_budget."
    ).tag(config=True)
    sandbox = CaselessStrEnum(
        PROFILES.names(),  # the registered profiles, read live (run/launching/sandbox_profiles/)
        default_value=DEFAULTS["sandbox"],
        allow_none=True,
        help="Isolate runs with bubblewrap: "
        + ", ".join(profile.description for profile in PROFILES)
        + ". None: $SKILL_MAGICS_SANDBOX, else off.",
    ).tag(config=True)
    sandbox_network = NameListTrait(
        Unicode(),
        default_value=list(DEFAULTS["sandbox_network"]),
        help='Skills that may use the network in sandboxed runs ("*": all; audited).',
    ).tag(config=True)
    sandbox_deny_read = List(
        Unicode(),
        default_value=list(DEFAULTS["sandbox_deny_read"]),
        help="Paths sandboxed runs may not read, on top of ~/.ssh, ~/.aws, ~/.netrc and the "
        "other credential defaults (~ is $HOME).",
    ).tag(config=True)
    sandbox_read = List(
        Unicode(),
        default_value=list(DEFAULTS["sandbox_read"]),
        help="Folders sandboxed runs are given read-only besides the skill, the workspace and "
        "their Python (e.g. a data folder); never $HOME or a folder holding it.",
    ).tag(config=True)
    warm_start = CaselessStrEnum(
        ["auto", "on", "off"],
        default_value=DEFAULTS["warm_start"],
        allow_none=True,
        help="How Python scripts start: auto (forked from a warm server that imported their "
        "packages once the server is ready, else cold; a batch waits for it), on (always "
        "warm, the first run waits for the server), off (always cold). %%skillrun "
        "--warm/--cold overrides it. None: $SKILL_MAGICS_WARM_START, else auto.",
    ).tag(config=True)
    warm_idle_timeout = Float(
        DEFAULTS["warm_idle_timeout"],
        help="Seconds a warm server waits for its next run before it stops (1-86400).",
    ).tag(config=True)
    run_cwd = Unicode(
        DEFAULTS["run_cwd"],
        help="Where scripts start: workspace (the notebook's folder, so relative file paths "
        "work), skill (the skill folder) or a folder path. %%skillrun --cwd overrides it.",
    ).tag(config=True)

    model_client = TraitAny(
        None,
        allow_none=True,
        help="The model client %%skillagent, %skills triggers and %skills evals use when no "
        "--client is given: the name of a notebook variable holding an anthropic.Anthropic or "
        "openai.OpenAI client (or async), e.g. %config SkillMagics.model_client = 'client' "
        "(a client object cannot pass through %config, which copies values), or the client "
        "itself assigned in Python.",
    ).tag(config=True)
    model = Unicode(
        None,
        allow_none=True,
        help="The model name the skill lab's magics use when no --model is given.",
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        # Set before traitlets loads the config: config observers run inside super().__init__.
        self._manager: SkillManager | None = None
        self._lock = threading.RLock()
        self.panels: list[ApprovalPanel] = []  # every approval panel shown, oldest first
        self.pending: list[SkillRunResult] = []  # non-blocking runs not decided yet
        super().__init__(shell=shell, **kwargs)

    # -- the manager ------------------------------------------------------------------------
    @property
    def has_manager(self) -> bool:
        """Was the SkillManager made already (without making it)?"""
        return self._manager is not None

    @property
    def manager(self) -> SkillManager:
        """The SkillManager behind the magics (created on first use from the config)."""
        with self._lock:
            if self._manager is None:
                from skill_magics.core.manager import SkillManager

                self._manager = SkillManager(
                    self.skill_dirs, audit_log=self.audit_log, settings=self.run_settings()
                )
            return self._manager

    def run_settings(self) -> RunSettings:
        """The run settings these traits say: the one place traits become RunSettings (the
        manager is made with them, and gets them again whenever one changes)."""
        from skill_magics.core.run.planning.settings import RunSettings

        return RunSettings(**self._setting_values())

    def _setting_values(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in RUN_SETTINGS}

    # Bad values are refused when set (one line from %config), not at the next run.
    @validate("timeout")
    def _valid_timeout(self, proposal: Any) -> float:
        from skill_magics.core.run.planning.settings import MAX_TIMEOUT, MIN_TIMEOUT, check_timeout

        value = proposal["value"]
        try:
            return check_timeout(value)  # the one range check (core/run/planning/settings.py)
        except ValueError:
            raise TraitError(
                f"SkillMagics.timeout = {value:g} is out of range: use {MIN_TIMEOUT} to "
                f"{MAX_TIMEOUT} seconds"
            ) from None

    @validate("run_cwd")
    def _valid_run_cwd(self, proposal: Any) -> str:
        from skill_magics.core.run.planning.workdir import check_cwd

        try:
            check_cwd(proposal["value"])
        except SkillMagicsError as exc:
            raise TraitError(f"SkillMagics.run_cwd: {exc}") from None
        return str(proposal["value"])

    @validate("warm_idle_timeout")
    def _valid_warm_idle(self, proposal: Any) -> float:
        from skill_magics.core.run.planning.settings import check_warm_idle

        try:
            return check_warm_idle(proposal["value"])
        except ValueError as exc:
            raise TraitError(f"SkillMagics.{exc}") from None

    @validate("max_output_size", "max_display_chars", "approval_timeout")
    def _valid_non_negative(self, proposal: Any) -> Any:
        value, name = proposal["value"], proposal["trait"].name
        if value < 0:
            raise TraitError(f"SkillMagics.{name} = {value} is negative: use 0 or more")
        return value

    @observe("skill_dirs")
    def _dirs_changed(self, change: Any) -> None:
        manager = self._manager
        if manager is not None:
            manager.skill_dirs = change["new"]  # None: the defaults; rescans on next use

    @observe(*RUN_SETTINGS)
    def _settings_changed(self, change: Any) -> None:
        # Approvals and audit history stay: the manager reads the settings at the next run.
        manager = self._manager
        if manager is None:
            return
        # A changed sandbox_network is the whole answer: configure ends the session's grants.
        manager.configure(**self._setting_values())

    @observe("catalog_budget")
    def _old_budget_name(self, change: Any) -> None:
        from skill_magics.core.base.deprecation import renamed_argument

        new, old = "SkillMagics.available_skills_budget", "SkillMagics.catalog_budget"
        current = self.available_skills_budget
        try:
            value = renamed_argument(
                None if current in (change["old"], change["new"]) else current,
                change["new"],
                new=new,
                old=old,
                category=FutureWarning,
                stacklevel=2,
            )
        except ValueError as exc:
            raise TraitError(str(exc)) from None
        self.available_skills_budget = value

    @observe("audit_log")
    def _audit_log_changed(self, change: Any) -> None:
        manager = self._manager
        if manager is not None:
            manager.audit.write_to(change["new"])  # the history stays: only the file changes

    # -- %skills ----------------------------------------------------------------------------
    @magic_arguments()
    @argument(
        "subcommand",
        nargs="?",
        default="list",
        help="list (default), show NAME, add DIR|--examples, remove DIR, reload, dirs, "
        "approvals, revoke NAME|--all, history, available, validate, env NAME, "
        "install SOURCE, verify, sync, update, policy, triggers NAME, evals NAME, "
        "warm [--stop|NAME]",
    )
    @argument("args", nargs=argparse.REMAINDER, help="arguments of the subcommand")
    @line_magic
    @_naming_source_kinds
    def skills(self, line: str = "") -> Any:
        """Browse and manage Agent Skills.

        %skills                      table of skills (HTML in Jupyter, text in a terminal)
        %skills show NAME            metadata, SKILL.md, scripts and their approval state
        %skills add DIR              search another directory (--examples: bundled examples)
        %skills remove DIR | reload | dirs
        %skills approvals            session approvals; %skills revoke NAME forgets one
        %skills history              this session's audit records
        %skills usage [--since 7d]   runs per skill and script (the audit log): table, chart
        %skills trace [on|off|auto]  OpenTelemetry traces of runs and approvals
        %skills available            the <available_skills> block for a system prompt
                                     [--budget N] [--include PAT ...] [--exclude PAT ...]
        %skills validate [NAME|PATH] problems of skills, one line each, with the fix
        %skills env NAME             install what the skill's scripts lack into its own
                                     environment (asks first) [--rebuild] [--installer uv|pip]
        %skills install SOURCE       skills from {source_kinds}
                                     [--skill NAME ...] [--ref REF] [--path SUB] [--into DIR]
        %skills verify [DIR]         files changed since the install (skills-lock.json);
                                     --signatures: each signer verified again
        %skills sync [DIR]           re-create the locked skills; update [NAME]: fetch again
        %skills policy               the team policies in force: each file and what it says
        %skills triggers NAME --queries VAR   how often a model activates the skill
        %skills evals NAME           the skill's evals/evals.json with and without it
        %skills warm                 warm servers (interpreter, preloaded packages, memory,
                                     idle time); --stop stops them; NAME starts a skill's
        %skills add mcp LABEL -- COMMAND... | URL   an MCP server's skills, as LABEL/NAME
                                     [--timeout S] [--connect-timeout S] before -- or URL
        %skills serve mcp [--http PORT] [DIR...]    serve skill folders to other agents over
                                     MCP; %skills serve lists them, --stop [PORT] stops them
        """
        from skill_magics.notebook import cmd

        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"Cannot parse {line!r}: {exc}; check the quotes") from None
        name, args = (words[0], words[1:]) if words else ("list", [])
        run = cmd.lookup(name)
        try:
            return run(self, args)
        except SkillMagicsError as exc:
            raise usage_error(exc) from None

    async def skills_subcommand_async(self, name: str, line: str = "") -> Any:
        """``%skills NAME ...`` on the await path (ipykernel >= 7.4) for the subcommands
        that wait (``env``, ``install``, ``update``, ``sync``, ``evals``, ``triggers``: a
        ``magic`` in their module, magics/drive.py): the approval, the fetch or the model's
        requests wait in worker threads while the cell awaits, so clicks, progress and
        Kernel > Interrupt get through."""
        import importlib

        from skill_magics.notebook.magics import drive

        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"Cannot parse {line!r}: {exc}; check the quotes") from None
        module = importlib.import_module(f"skill_magics.notebook.cmd.{name}")
        try:
            return await drive.awaited(self, module.magic, self, words)
        except SkillMagicsError as exc:
            raise usage_error(exc) from None

    # -- asking --------------------------------------------------------------------------------
    def approver(
        self,
        *,
        in_worker: bool = False,
        cancel: threading.Event | None = None,
        pending_ok: bool = False,
        asker: str = "",
    ) -> NotebookApprover:
        """The approver every magic passes to the gate, reading this configuration
        (``asker``: who wants the runs when it is not the person, shown first in the panel)."""
        from skill_magics.notebook.approval.approver import NotebookApprover

        return NotebookApprover(
            self, in_worker=in_worker, cancel=cancel, pending_ok=pending_ok, asker=asker
        )


class SharedMagics(Magics):
    """Base of the magics that share one SkillMagics (``skill_magics``): its configuration, its
    manager, its panels. Not registered itself; subclasses add their magics."""

    def __init__(self, shell: Any, skill_magics: SkillMagics) -> None:
        super().__init__(shell=shell)
        self.skill_magics = skill_magics

    @property
    def manager(self) -> SkillManager:
        return self.skill_magics.manager

    @property
    def _shell(self) -> InteractiveShell:
        shell = self.shell
        assert shell is not None  # registered magics always have a shell
        return shell

    def _store(self, out: str | None, value: Any) -> Any:
        """``value``, also stored in the notebook variable ``out`` (``-o NAME``)."""
        if out and value is not None:
            self._shell.user_ns[out] = value
        return value


def usage_error(exc: BaseException) -> UsageError:
    """The one-line error IPython shows without a traceback ("UsageError: ...")."""
    if isinstance(exc, SkillNotFoundError) and exc.name and not exc.skipped:
        from IPython import get_ipython

        from skill_magics.notebook.earlier import restart_hint

        hint = restart_hint(get_ipython(), exc.name)  # its folder, added before a restart
        if hint is not None:
            return UsageError(f"{type(exc).__name__}: {hint}")
    if isinstance(exc, SkillMagicsError):  # in the magics' words (%skills add DIR, not add_dir)
        text = f"{type(exc).__name__}: {exc.magic_text()}"
    else:
        text = str(exc)
    return UsageError(text.replace("\n", " "))


__all__ = ["SkillMagics", "SharedMagics", "usage_error"]
