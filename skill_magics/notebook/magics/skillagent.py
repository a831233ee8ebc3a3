"""``%%skillagent``: the cell is a prompt; a model works on it with the skills.

    %%skillagent --model claude-sonnet-4-5 --skills unit-converter -o t
    How many miles is a marathon?

Core runs the loop (core/lab/agent.py): the <available_skills> block and tools a real client
gives, every script call through the gate with the notebook's approval panel. This module
parses the line, finds the client (``--client VAR``, else ``SkillMagics.model_client``) and
the model (``--model``, else ``SkillMagics.model``), and returns the Transcript (shown as a
widget, HTML or text: notebook/render/lab.py). On ipykernel >= 7.4 the cell is awaited
(magics/rewrite.py), so approval clicks arrive while the model waits."""

from __future__ import annotations

import argparse
import shlex
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments

from skill_magics.core.base.errors import SkillMagicsError, magic_words
from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.skills import SharedMagics, usage_error
from skill_magics.notebook.names import NameListAction

if TYPE_CHECKING:  # core/lab is imported on use
    from skill_magics.core.lab.options import AgentOptions

NO_CLIENT = (
    "No model client: pass --client VAR (a variable holding an anthropic.Anthropic or "
    "openai.OpenAI client) or set %config SkillMagics.model_client = 'VAR'"
)
MODEL_ASKS = (
    "The model is asking: it chose this script and its inputs while working on your prompt "
    "(%%skillagent). No runs nothing; the model is told so."
)
NO_MODEL = "No model name: pass --model NAME or set %config SkillMagics.model = 'NAME'"


class MissingKey(UsageError):
    """The model client has no key at all (``anthropic.Anthropic()`` without
    ANTHROPIC_API_KEY). The lab's magics catch it and say where a model would answer,
    with the one line naming the fix, instead of failing the cell: a notebook read or
    taught without a key still runs top to bottom (a key the API rejects does fail it)."""

    def note(self, what: str) -> None:
        """Print what a model would have been asked here, then the fix (stdout)."""
        print(f"No model answered here: {what}.")
        print(str(self))


class LineParser(argparse.ArgumentParser):
    """An argparse parser for a magic's line that never exits the kernel: every problem
    (a missing argument too) is a one-line UsageError ending in the usage."""

    def __init__(self, prog: str, usage: str) -> None:
        super().__init__(prog=prog, add_help=False, exit_on_error=False)
        self.usage_line = usage

    def error(self, message: str) -> Any:
        raise UsageError(f"{message}: usage: {self.usage_line}")


def find_client(skill_magics: Any, name: str | None) -> Any:
    """The client named ``name`` in the notebook, else SkillMagics.model_client."""
    shell = skill_magics.shell
    client = skill_magics.model_client
    label = "SkillMagics.model_client"
    if name:
        client, label = name, "--client"
    if isinstance(client, str):  # a variable's name (what %config can carry)
        if shell is None or client not in shell.user_ns:
            raise UsageError(f"{label} {client}: no such variable in the notebook; {NO_CLIENT}")
        client = shell.user_ns[client]
    if client is None:
        raise UsageError(NO_CLIENT)
    from skill_magics.core.lab.clients import provider_for

    try:
        provider_for(client)
    except TypeError as exc:
        raise UsageError(str(exc)) from None
    except SkillMagicsError as exc:  # no key: one line naming the fix (ModelAuthError)
        raise MissingKey(magic_words(exc)) from None
    return client


def find_model(skill_magics: Any, model: str | None) -> str:
    chosen = model or skill_magics.model
    if not chosen:
        raise UsageError(NO_MODEL)
    return str(chosen)


def is_async(client: Any) -> bool:
    from skill_magics.core.lab.clients import provider_for

    return provider_for(client).is_async


def sync_only(client: Any, what: str) -> None:
    """An async client needs the await path; say how to get there."""
    if is_async(client):
        raise UsageError(
            f"{type(client).__name__} is an async client: {what} awaits it only on "
            "ipykernel >= 7.4; use the sync client here (anthropic.Anthropic / openai.OpenAI) "
            "or call the Python API with await"
        )


@magics_class
class SkillAgentMagics(SharedMagics):
    """%%skillagent, sharing SkillMagics' manager, approvals and config (``skill_magics``)."""

    @magic_arguments(name="%skillagent")  # a cell magic: usage reads %%skillagent
    @argument("--model", default=None, help="the model's name (default: SkillMagics.model)")
    @argument(
        "--skills",
        nargs="+",
        action=NameListAction,
        default=None,
        help="the skills offered, a,b or a b (default: all)",
    )
    @argument("--client", default=None, help="variable holding the client (default: model_client)")
    @argument("--system", default=None, help="variable holding a system prompt to put first")
    @argument("--max-turns", type=int, default=8, help="replies at most (default 8)")
    @argument("--max-tokens", type=int, default=1024, help="tokens per reply (default 1024)")
    @argument("-o", "--out", default=None, help="also store the Transcript in this variable")
    @cell_magic
    def skillagent(self, line: str, cell: str = "") -> Any:
        """Let a model work on the cell with the skills: %%skillagent [--model M] [--skills A B]
        [--client VAR] [-o VAR]

        The model sees the <available_skills> block, the activate_skill tool and the
        skills' script tools; each script it calls asks for approval first. Returns the
        Transcript (messages, steps with timing, activated, tool_calls, final_text, usage).
        """
        return drive.blocking(self.skill_magics, self._skillagent, line, cell)

    async def skillagent_async(self, line: str, cell: str) -> Any:
        """The await path: approvals wait in worker threads while the cell awaits; a kernel
        interrupt kills a running script and ends the conversation."""
        return await drive.awaited(self.skill_magics, self._skillagent, line, cell)

    def _skillagent(self, mode: drive.Mode, line: str, cell: str) -> drive.Magic[Any]:
        from skill_magics.core.lab import agent

        try:
            opts, client, options = self._parse(line, cell)
        except MissingKey as exc:
            return self._keyless(line, exc)
        if not mode.is_awaited:  # awaited, an async client is awaited too
            sync_only(client, "%%skillagent")
        approver = mode.approver(asker=MODEL_ASKS)
        run = (client, self.manager, cell.strip(), options)
        try:
            transcript = yield drive.Step(
                lambda: agent.run_agent(*run, approver=approver),
                lambda: agent.run_agent_async(*run, approver=approver, cancel=mode.cancel),
            )
        except (SkillMagicsError, ValueError) as exc:
            raise usage_error(exc) from None
        return self._store(opts.out, transcript)

    def _keyless(self, line: str, exc: MissingKey) -> None:
        """No key: what the model would have been given (the real offer), then the fix;
        ``-o VAR`` is set to None so a later cell can tell."""
        from skill_magics.core.lab.offer import make_offer

        opts = self.skillagent.parser.parse_args(shlex.split(line))
        try:
            offer = make_offer(self.manager, opts.skills)
        except (SkillMagicsError, ValueError) as bad:
            raise usage_error(bad) from None
        tools = ", ".join(spec.name for spec in offer.specs) or "(none)"
        exc.note(
            f"a model would get this prompt with a system prompt of {len(offer.system):,} "
            f"characters (the <available_skills> block of {', '.join(offer.skills)}) and "
            f"the tools {tools}"
        )
        if opts.out:
            self._shell.user_ns[opts.out] = None
        return None

    def _parse(self, line: str, cell: str) -> tuple[argparse.Namespace, Any, AgentOptions]:
        """The parsed line, the client and the options of the run."""
        from skill_magics.core.lab.options import AgentOptions

        try:
            opts = self.skillagent.parser.parse_args(shlex.split(line))
        except ValueError as exc:
            raise UsageError(
                f"Cannot parse the %%skillagent line: {exc}; check the quotes"
            ) from None
        if not cell.strip():
            raise UsageError("%%skillagent needs a prompt: write it in the cell below the line")
        client = find_client(self.skill_magics, opts.client)
        model = find_model(self.skill_magics, opts.model)
        try:
            options = AgentOptions(
                model=model,
                skills=opts.skills,
                system=self._system(opts.system),
                max_turns=opts.max_turns,
                max_tokens=opts.max_tokens,
            )
        except ValueError as exc:
            raise usage_error(exc) from None
        return opts, client, options

    def _system(self, name: str | None) -> str | None:
        if name is None:
            return None
        value = self._shell.user_ns.get(name)
        if not isinstance(value, str):
            raise UsageError(f"--system {name}: name a variable holding the system prompt text")
        return value


__all__ = ["LineParser", "MissingKey", "SkillAgentMagics", "find_client", "find_model", "sync_only"]
