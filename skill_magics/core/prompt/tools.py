"""Skills as LLM tools: definitions for the Anthropic and OpenAI APIs, and running a call.

One tool per script (``{skill}__{script}``) plus one prompt tool per skill (``{skill}``) that
returns the skill's ``<skill_context>`` envelope (scripts not run) and its script tools.
First comes the client guide's activation tool, ``activate_skill``: its ``name`` parameter is
an enum of the real skill names (those without ``disable-model-invocation: true``), and it
returns ``build_skill_context(manager, name, envelope="skill_content")`` (docs/architecture.md,
*Activation*). With no such skill it is not defined at all.
Names match ``^[a-zA-Z0-9_-]{1,64}$`` (valid for both APIs), are unique, and depend only on
the skill and script paths, so they are stable across runs and machines. A name is either
the raw ``{skill}__{stem}`` (or ``{skill}``) when that is exactly representable, or a
sanitised form plus ``_`` and 8 hex digits of a hash of the exact (skill, script path): a
skill added later can never take over an existing name (see :func:`script_tool_name`). A
script whose name cannot be mapped never hides the skill's other tools.

Script tools take a free-form JSON object: it is sent to the script as JSON on stdin; the
optional ``argv`` key (list of strings) is passed as command-line arguments instead of being
sent. Every call goes through approval (docs/architecture.md, *Who approves*): the
``approver`` given, else ``manager.approver``; with neither (or ``approver=None``), a script
tool call is refused (``is_error``, audited ``approval_unavailable``) because the model, not
a person, chose the script. Pass e.g. ``approver=lambda request: "yes_once"`` to let an agent
run scripts unattended. ``handle_tool_call`` and ``handle_tool_call_async`` are one
generator (``_tool_call``: plan, then run, each a step yielded) and two drivers, the pattern of
core/lab/drive.py, so both answer every call alike. A result
longer than ``max_result_chars`` (default 100,000, like the context's per-stream cap) is cut,
with a note saying how many characters were left out.

Example (Anthropic Messages API) (not run as a doctest: it calls a model API)::

    tools = tool_definitions(manager)
    reply = client.messages.create(model=..., tools=tools, messages=...)
    results = [handle_tool_call(manager, b.name, b.input, b.id)
               for b in reply.content if b.type == "tool_use"]
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
import threading
from collections.abc import Awaitable, Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from skill_magics.core.base.deprecation import renamed_argument, renamed_module_name
from skill_magics.core.base.errors import SkillMagicsError
from skill_magics.core.base.models import ScriptExecutionResult, ScriptMetadata
from skill_magics.core.base.namelist import name_list
from skill_magics.core.base.secrets import redact_known
from skill_magics.core.base.steps import drive, drive_async
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.available_skills import mcp_listed, opted_out
from skill_magics.core.prompt.context import build_skill_context
from skill_magics.core.providers import PROVIDERS, Provider
from skill_magics.core.providers.openai_api import tool_message as openai_tool_message
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg, Caller
from skill_magics.core.run.planning.plan import PlannedRun
from skill_magics.core.run.planning.workdir import CwdArg

ToolApi = str  # whose tool-definition shape: a registered provider's name (core/providers/)
ACTIVATION_TOOL = "activate_skill"
ACTIVATION_DESCRIPTION = (
    "Load a skill's full instructions when a task matches its description. Returns "
    "<skill_content>: the instructions, the skill directory (relative paths in the skill "
    "resolve against it) and the skill's bundled files, which are not loaded until you need "
    "them. Available skills: "
)
NAME_RE = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
MAX_NAME = 64
MAX_DESCRIPTION = 1024  # OpenAI's limit for function descriptions
SEPARATOR = "__"
MAX_RESULT_CHARS = 100_000  # per tool result, like the context's per-stream cap
# How deeply a tool input may nest objects and lists. Deeper input is refused (an error
# result, audited for a script tool): JSON tooling recurses, and would raise RecursionError.
MAX_INPUT_DEPTH = 100
# Everything bad input can raise on its way to a refusal: an error result, never an exception.
INPUT_ERRORS = (SkillMagicsError, LookupError, ValueError, TypeError, OSError, RecursionError)

ARGV_DESCRIPTION = (
    "Optional command-line arguments for the script (list of strings, passed verbatim, "
    "never through a shell). Every other key is sent to the script as JSON on stdin."
)


@dataclass(frozen=True)
class ToolSpec:
    """One tool: what it is called, what it runs, and what the model is told."""

    name: str
    kind: Literal["prompt", "script", "activation"]
    skill: str  # "" for the activation tool
    script: str | None  # relative posix path for script tools
    description: str
    enum: tuple[str, ...] = ()  # the activation tool's skill names

    def input_schema(self) -> dict[str, Any]:
        if self.kind == "activation":
            return {
                "type": "object",
                "properties": {
                    "name": {
                        "type": "string",
                        "enum": list(self.enum),
                        "description": "The name of the skill to activate",
                    }
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        if self.kind == "prompt":
            return {"type": "object", "properties": {}}
        return {
            "type": "object",
            "properties": {
                "argv": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": ARGV_DESCRIPTION,
                }
            },
            "additionalProperties": True,
        }

    def definition(self, api: ToolApi = "anthropic") -> dict[str, Any]:
        """This tool's definition in ``api``'s shape (a registered provider's: Anthropic
        Messages, OpenAI, ...)."""
        shape: dict[str, Any] = provider_api(api).tool_definition(
            self.name, self.description, self.input_schema()
        )
        return shape


def provider_api(api: object) -> Provider:
    """The registered provider (core/providers/) whose tool shape ``api`` names;
    ValueError (one line naming the choices) for any other."""
    found = PROVIDERS.find(api) if isinstance(api, str) else None
    if found is None:
        choices = " or ".join(f"api={name!r}" for name in PROVIDERS.names())
        raise ValueError(f"Unknown tool API {api!r}: use {choices}")
    return found


def tool_definitions(
    manager: SkillManager,
    api: ToolApi | None = None,
    skills: Sequence[str] | str | None = None,
    *,
    descriptions: Mapping[str, str] | None = None,
    format: ToolApi | None = None,
) -> list[dict[str, Any]]:
    """Tool definitions for every skill (or ``skills``): the activation tool, then per skill its
    prompt tool and its script tools, in ``api``'s shape ("anthropic", the default, or
    "openai"). ``descriptions`` (skill name -> text) replaces a skill's description in its
    tools' texts (see :func:`tool_specs`). ``format`` is the deprecated old name of ``api``."""
    api = renamed_argument(api, format, new="api=", old="format=") or "anthropic"
    provider_api(api)  # refused before the skills are read
    return [spec.definition(api) for spec in tool_specs(manager, skills, descriptions)]


def tool_specs(
    manager: SkillManager,
    skills: Sequence[str] | str | None = None,
    descriptions: Mapping[str, str] | None = None,
) -> list[ToolSpec]:
    """The tools as :class:`ToolSpec` objects, in a stable order (skill name, script path).

    A skill with ``disable-model-invocation: true`` is for people only: no tool of it is
    offered to a model, even when ``skills`` names it, so :func:`handle_tool_call` (which
    looks names up here) refuses a call to one as an unknown tool. ``descriptions`` (skill
    name -> text) is the description the tools quote instead of SKILL.md's, to try another
    one without editing the file; names and inputs stay the same.
    """
    metas = manager.local_skills()
    # MCP servers' skills (LABEL/NAME): activatable from their listing (fetched, verified,
    # when activated); their prompt and script tools only when ``skills`` names them (a
    # listing never makes us fetch every server's files).
    remote = mcp_listed(manager)
    hidden = {m.name for m in [*metas, *remote] if opted_out(m)}
    # A string is a name list (core/base/namelist.py), never a sequence of letters.
    wanted = sorted(m.name for m in metas) if skills is None else list(name_list(skills))
    names = [n for n in wanted if n not in hidden]
    used: set[str] = {ACTIVATION_TOOL}
    specs: list[ToolSpec] = []
    extra = [m.name for m in remote if m.name not in hidden] if skills is None else []
    activatable = tuple(n for n in [*names, *extra] if n not in hidden)
    if activatable:  # the guide: no activation tool when there is nothing to activate
        specs.append(
            ToolSpec(
                ACTIVATION_TOOL,
                "activation",
                "",
                None,
                _clip(ACTIVATION_DESCRIPTION + ", ".join(activatable)),
                activatable,
            )
        )
    for skill_name in names:
        skill = manager.get_skill(skill_name)
        description = skill.metadata.description
        if descriptions and skill_name in descriptions:
            description = str(descriptions[skill_name])
        specs.append(
            ToolSpec(
                _unique(prompt_tool_name(skill_name), used, f"skill:{skill_name}"),
                "prompt",
                skill_name,
                None,
                _clip(f"Load the instructions of the '{skill_name}' skill: {description}"),
            )
        )
        try:
            # Offered scripts only (catalog/kinds.py): a module other scripts import, or one
            # that does nothing when run, is not a tool.
            scripts = sorted(skill.offered_scripts, key=lambda s: s.path.as_posix())
        except (OSError, SkillMagicsError):
            continue  # an unreadable scripts/ folder must not hide the prompt tool
        stems: dict[str, int] = {}
        for script in scripts:
            stems[script.name] = stems.get(script.name, 0) + 1
        for script in scripts:
            rel = script.path.as_posix()
            name = script_tool_name(
                skill_name, script.name, rel, unique_stem=stems[script.name] == 1
            )
            name = _unique(name, used, f"script:{skill_name}/{rel}")
            specs.append(
                ToolSpec(
                    name,
                    "script",
                    skill_name,
                    rel,
                    _script_description(skill, script, description),
                )
            )
    return specs


# A plain name is the raw text itself; everything else gets "_" + 8 hex digits of a hash of
# its identity. Plain names never end like that, so the two kinds cannot meet.
_PLAIN_SKILL = re.compile(r"^[A-Za-z0-9-]+$")  # no "_": the first "__" is the separator
_PLAIN_STEM = re.compile(r"^[A-Za-z0-9_-]+$")
_HASH_TAIL = re.compile(r"_[0-9a-f]{8}$")


def prompt_tool_name(skill_name: str) -> str:
    """The prompt tool's name: the skill name when it is a valid tool name with no ``_``,
    else its sanitised form plus a hash of the exact skill name.

    Depends on the skill name only, so adding another skill never changes or takes over it.
    """
    if _plain(skill_name, _PLAIN_SKILL):
        return skill_name
    return _with_hash(_sanitize(skill_name) or "skill", f"skill:{skill_name}")


def script_tool_name(skill_name: str, stem: str, rel: str, *, unique_stem: bool = True) -> str:
    """A script tool's name: ``{skill}__{stem}`` when that text is exactly a valid tool name,
    the skill name has no ``_`` and the stem is the only one of its kind in the skill; else
    the sanitised form plus a hash of the exact (skill, script path).

    So a name either is the raw text (which only this script can produce) or carries its
    own identity's hash: a skill or script added later cannot take an existing name over.
    It can only make a name disappear (two scripts now share a stem: both get hashes), and
    a model calling the old name then gets "unknown tool", never another script.
    """
    raw = f"{skill_name}{SEPARATOR}{stem}"
    if unique_stem and _plain(skill_name, _PLAIN_SKILL) and _plain(stem, _PLAIN_STEM):
        if _plain(raw, NAME_RE):
            return raw
    wanted = stem if unique_stem else rel.removeprefix("scripts/")
    skill_part = _sanitize(skill_name) or "skill"
    script_part = _sanitize(wanted) or "script"
    return _with_hash(f"{skill_part}{SEPARATOR}{script_part}", f"script:{skill_name}/{rel}")


def _plain(text: str, pattern: re.Pattern[str]) -> bool:
    return bool(pattern.match(text)) and len(text) <= MAX_NAME and not _HASH_TAIL.search(text)


def _with_hash(readable: str, identity: str) -> str:
    return f"{readable[: MAX_NAME - 9]}_{_digest(identity)}"


def find_tool(
    manager: SkillManager,
    name: str,
    skills: Sequence[str] | str | None = None,
    tools: Collection[str] | None = None,
) -> ToolSpec:
    """The tool called ``name`` among the tools of every skill (or of ``skills``: what a
    model was offered; and of those, only the names in ``tools``: what that very request
    offered); LookupError listing close matches among those only when there is none."""
    specs = tool_specs(manager, skills)
    if tools is not None:  # a tool the request left out does not exist for the model
        allowed = set(tools)
        specs = [s for s in specs if s.name in allowed]
    for spec in specs:
        if spec.name == name:
            return spec
    close = difflib.get_close_matches(name, [s.name for s in specs], n=3, cutoff=0.5)
    hint = f"; did you mean {', '.join(close)}?" if close else "."
    raise LookupError(
        f"Unknown tool {name!r}{hint} Pass the tools from tool_definitions(manager) to the model "
        "so it only calls names that exist"
    )


def handle_tool_call(
    manager: SkillManager,
    name: str,
    input: Any,
    tool_use_id: str,
    *,
    approver: ApproverArg = MANAGER_APPROVER,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    skills: Sequence[str] | str | None = None,
    cwd: CwdArg | None = None,
    tools: Collection[str] | None = None,
) -> dict[str, Any]:
    """Run one tool call and return an Anthropic ``tool_result`` block. Never raises for
    tool-level problems (unknown name, bad input, refusal, decline, failure): those come back
    with ``is_error: True`` so the model can react; input a script tool cannot take (not a
    JSON object, nested deeper than ``MAX_INPUT_DEPTH``, a bad ``argv``) is audited as
    refused, like every other refusal. ``approver`` defaults to ``manager.approver``; None
    (or no approver at all) refuses: the script does not run (is_error, audited as
    approval_unavailable). A script's stdout (or stderr) beyond ``max_result_chars`` is cut
    with a note saying so (None: no cap). ``skills``: only the tools of these skills exist
    (what the model was offered; a name of another skill's tool is unknown). ``cwd``: where a
    script starts (None: ``manager.settings.run_cwd``). ``tools``: the names the request offered
    (None: every tool of ``skills``); any other name is unknown and never hinted.
    """
    call = _ToolCall(manager, name, input, tool_use_id, approver, max_result_chars)
    return _drive(_tool_call(call, skills, cwd, tools))


async def handle_tool_call_async(
    manager: SkillManager,
    name: str,
    input: Any,
    tool_use_id: str,
    *,
    approver: ApproverArg = MANAGER_APPROVER,
    max_result_chars: int | None = MAX_RESULT_CHARS,
    skills: Sequence[str] | str | None = None,
    cwd: CwdArg | None = None,
    cancel: threading.Event | None = None,
    tools: Collection[str] | None = None,
) -> dict[str, Any]:
    """Like :func:`handle_tool_call`, awaiting the script so the event loop keeps running.

    Everything before the run (tool lookup, checks, the approval request with its previews
    and the skill's fingerprint, the approver) happens in worker threads. Cancelling the
    task kills the script's process group.
    """
    call = _ToolCall(manager, name, input, tool_use_id, approver, max_result_chars)
    stop = cancel if cancel is not None else threading.Event()
    return await _drive_async(_tool_call(call, skills, cwd, tools), stop)


# -- a tool call, written once for both paths -------------------------------------------------


@dataclass(frozen=True)
class _ToolCall:
    """What one call is: the model's tool name and input, and how its answer is made."""

    manager: SkillManager
    name: str
    input: Any
    tool_use_id: str
    approver: ApproverArg
    max_result_chars: int | None


@dataclass(frozen=True)
class _Step:
    """A blocking step of a tool call: ``call()`` in this thread (the sync path), or
    ``awaited(cancel)`` on the async path (work in a worker thread, a run in its process
    group that ``cancel`` kills)."""

    call: Callable[[], Any]
    awaited: Callable[[threading.Event], Awaitable[Any]]


_Steps = Generator[_Step, Any, dict[str, Any]]


def _tool_call(
    call: _ToolCall,
    skills: Sequence[str] | str | None,
    cwd: CwdArg | None,
    tools: Collection[str] | None,
) -> _Steps:
    """The tool call: plan it (blocking: file scans, checks), run the plan through the
    manager's call site; yields each blocking step and gets its value back, or its exception
    thrown in, so the one ``except`` serves both drivers."""
    manager = call.manager

    def plan() -> tuple[str, PlannedRun | None]:
        return _plan_call(manager, call.name, call.input, skills, cwd, tools)

    try:
        # join=False: nothing has started yet, and a caller's approver may not watch
        # ``cancel`` (a person deciding, or one that asks through this very loop): do not
        # block the loop waiting for it. The abandoned answer is never run.
        content, planned = yield _Step(plan, lambda stop: await_in_thread(plan, stop, join=False))
        if planned is None:
            return tool_result(call.tool_use_id, content)
        outcome = yield _Step(
            lambda: manager.run_planned(planned, call.approver, caller=Caller.MODEL),
            lambda stop: manager.run_planned_async(
                planned, call.approver, caller=Caller.MODEL, cancel=stop, join_approval=False
            ),
        )
        result = outcome.script_result()
    except INPUT_ERRORS as exc:
        return tool_result(call.tool_use_id, str(exc), is_error=True)
    return result_block(call.tool_use_id, result, call.max_result_chars)


def _drive(steps: _Steps) -> dict[str, Any]:
    """Answer each step in this thread (every exception is thrown into the call)."""
    return drive(steps, lambda step: step.call())


async def _drive_async(steps: _Steps, cancel: threading.Event) -> dict[str, Any]:
    """Await each step; ``cancel`` is set when the awaiting task is cancelled."""
    return await drive_async(steps, lambda step: step.awaited(cancel))


def _plan_call(
    manager: SkillManager,
    name: str,
    input: Any,
    skills: Sequence[str] | str | None = None,
    cwd: CwdArg | None = None,
    tools: Collection[str] | None = None,
) -> tuple[str, PlannedRun | None]:
    """(prompt content, None) for a prompt or activation tool, else ("", the planned run).
    Blocking (file scans, checks): the async path runs it in a worker thread."""
    spec = find_tool(manager, name, skills, tools)
    if spec.kind == "activation":
        return activate(manager, spec, input), None
    try:
        arguments, argv = _split_input(input)
    except INPUT_ERRORS as exc:
        if spec.kind == "script":  # a refused run, audited like the planner's refusals
            manager.audit.refused(spec.skill, spec.script or "", input, exc)
        raise
    if spec.kind == "prompt":
        return prompt_content(manager, spec.skill), None
    assert spec.script is not None  # script tools always name their script
    return "", manager.plan(spec.skill, spec.script, arguments, argv=argv, cwd=cwd)


def activate(manager: SkillManager, spec: ToolSpec, input: Any) -> str:
    """The activation tool's result: ``<skill_content>`` for a name in its enum, through
    the same core path as ``build_skill_context(manager, name, envelope="skill_content")``."""
    value = _decoded(input)
    skill = value.get("name") if isinstance(value, dict) else None
    if not isinstance(skill, str) or skill not in spec.enum:
        raise ValueError(
            f'{ACTIVATION_TOOL} needs {{"name": ...}} with one of: {", ".join(spec.enum)}; '
            f"got {skill!r}"
        )
    return build_skill_context(manager, skill, envelope="skill_content")


def prompt_content(manager: SkillManager, skill_name: str) -> str:
    """What a skill's prompt tool returns: its envelope (scripts not run) and script tools."""
    envelope = build_skill_context(manager, skill_name, run_scripts=False)
    scripts = [s for s in tool_specs(manager, [skill_name]) if s.kind == "script"]
    if not scripts:
        return envelope
    rows = "\n".join(f"| {s.name} | {s.script} | {_first_line(s.description)} |" for s in scripts)
    return (
        f"{envelope}\n\nScript tools of this skill (each run must be approved first; a run "
        "that is declined or cannot be approved returns an error and does nothing):\n\n"
        f"| Tool | Script | Description |\n|------|--------|-------------|\n{rows}"
    )


def tool_result(tool_use_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    """An Anthropic ``tool_result`` content block (secret values masked: an error message
    may quote the input, and the block goes to a model)."""
    return {
        "type": "tool_result",
        "tool_use_id": tool_use_id,
        "content": redact_known(content),
        "is_error": is_error,
    }


def result_block(
    tool_use_id: str, result: ScriptExecutionResult, max_chars: int | None = MAX_RESULT_CHARS
) -> dict[str, Any]:
    """stdout on success; stderr (or a one-line reason) with ``is_error`` otherwise; either
    cut to ``max_chars`` (None: no cap) with a note, so one chatty script cannot flood the
    model's context."""
    if result.success:
        return tool_result(tool_use_id, cap_text(result.stdout, max_chars))
    reason = result.stderr.strip() or (
        f"Script {result.script_path} failed with exit code {result.exit_code} and no stderr"
    )
    return tool_result(tool_use_id, cap_text(reason, max_chars), is_error=True)


def cap_text(text: str, max_chars: int | None) -> str:
    """``text`` with secret values masked, or its first ``max_chars`` characters (masked
    first, then cut) and a note of how much was left out."""
    text = redact_known(text)
    if max_chars is None or len(text) <= max_chars:
        return text
    more = len(text) - max_chars
    # The audit keeps no output and the caller gets only this block: the note says the rest
    # is not shown and which limit cut it, never that it is stored somewhere.
    return (
        f"{text[:max_chars]}\n[... truncated: {more:,} more characters not shown; tool "
        f"results are capped at {max_chars:,} characters (max_result_chars)]"
    )


# -- helpers -------------------------------------------------------------------------------


def _decoded(value: Any) -> Any:
    """The model's input, decoded when it came as JSON text (OpenAI sends a string), and
    checked to nest no deeper than MAX_INPUT_DEPTH (ValueError otherwise)."""
    if isinstance(value, (str, bytes)) and value:
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(
                f"Tool input is not valid JSON ({exc.msg}): send a JSON object"
            ) from None
        except RecursionError:  # the decoder recurses per level: far too deep
            raise ValueError(_too_deep()) from None
    check_input_depth(value)
    return value


def check_input_depth(value: Any, limit: int = MAX_INPUT_DEPTH) -> None:
    """ValueError when ``value`` nests dicts/lists/tuples deeper than ``limit``; walked
    without recursion, so no input can exhaust the stack here."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if depth >= limit:
            raise ValueError(_too_deep(limit))
        stack.extend((child, depth + 1) for child in children)


def _too_deep(limit: int = MAX_INPUT_DEPTH) -> str:
    return (
        f"Tool input nests objects/lists more than {limit} levels deep: send a flatter JSON object"
    )


def _split_input(value: Any) -> tuple[dict[str, Any], list[str] | None]:
    """(arguments for stdin, argv) from the model's input (a dict, or JSON text from OpenAI)."""
    if value is None or value == "":
        value = {}
    value = _decoded(value)
    if not isinstance(value, dict):
        raise ValueError(f"Tool input must be a JSON object, got {type(value).__name__}")
    arguments = dict(value)
    argv = arguments.pop("argv", None)
    if argv is not None:
        if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise ValueError('\'argv\' must be a list of strings, e.g. ["--limit", "5"]')
    return arguments, argv


def _sanitize(text: str) -> str:
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "_", text)
    cleaned = re.sub(r"_{3,}", "__", cleaned).strip("_")
    return cleaned if re.search(r"[A-Za-z0-9]", cleaned) else ""


def _digest(identity: str, length: int = 8) -> str:
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:length]


def _unique(candidate: str, used: set[str], identity: str) -> str:
    """``candidate`` unless an earlier tool has it (only on a 32-bit hash collision, or a
    ``{skill}__{stem}`` pair that reads like another one): then a further identity hash."""
    name = candidate
    attempt = 0
    while name in used:
        attempt += 1
        name = _with_hash(candidate, f"{identity}#{attempt}")
    used.add(name)
    return name


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_DESCRIPTION else text[: MAX_DESCRIPTION - 1] + "…"


def _first_line(text: str) -> str:
    return text.split(". ", 1)[0].replace("|", "\\|")


def _script_description(skill: Skill, script: ScriptMetadata, description: str) -> str:
    rel = script.path.as_posix()
    doc = (script.description or "").strip()
    head = doc.rstrip(".") + ". " if doc else f"Runs {rel}. "
    return _clip(
        f"{head}Script {rel} ({script.interpreter}) of the '{skill.metadata.name}' skill: "
        f"{description} Input: a JSON object sent on stdin; optional 'argv' "
        "list of strings as command-line arguments."
    )


__all__ = [
    "MAX_INPUT_DEPTH",
    "check_input_depth",
    "ACTIVATION_TOOL",
    "NAME_RE",
    "activate",
    "ToolSpec",
    "tool_definitions",
    "tool_specs",
    "find_tool",
    "handle_tool_call",
    "handle_tool_call_async",
    "prompt_content",
    "tool_result",
    "result_block",
    "cap_text",
    "MAX_RESULT_CHARS",
    "openai_tool_message",
]


def __getattr__(name: str) -> Any:
    """Old names kept for one release: ``ToolFormat`` (now ``ToolApi``)."""
    return renamed_module_name(__name__, name, {"ToolFormat": ("ToolApi", ToolApi)})
