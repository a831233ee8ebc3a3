"""Prompt context for a model: the ``<skill_context>`` envelope and the ``<available_skills>``
block (core/prompt/available_skills.py).

The envelope (docs/architecture.md, *The prompt envelope*)::

    <skill_context id="csv-profiler">
      <instructions>{SKILL.md body}</instructions>
      <active_resources>
        <script_output source="scripts/profile.py" status="completed">..</script_output>
        <reference_files>
          <file path="references/guide.md"/>
        </reference_files>
      </active_resources>
      <execution_directive>
        You are now operating under the specialized csv-profiler protocol.
        ...
      </execution_directive>
    </skill_context>

Guarantees: well-formed XML that ``xml.etree.ElementTree.fromstring`` reads back to the exact
texts (see ``xmltext`` for the escaping, and the ``sanitized`` attribute for characters XML
cannot carry); the same files and inputs give the same string (no timings, no timestamps).

Only scripts the instructions reference run (``references.referenced_scripts``), in the order
referenced, after ONE approval request listing all of them, also for several skills (a
combined request, ``approval.combine_requests``: skills in the order named). Skills already
approved "in session", or that the approver decides alone (configuration pre-approval), are
left out of it. A skill whose files change between the request and its first script runs
nothing on the old approval (``status="refused"``). Per-script outcomes are attributes
of ``<script_output>``: ``status`` is ``completed``, ``failed``, ``timeout``, ``signaled``,
``declined``, ``approval_unavailable``, ``refused`` (a safety check said no), ``error`` (the
reference is missing or escapes the skill), ``skipped`` (``run_scripts=False``) or
``interrupted`` (``cancel`` was set: its process group was killed, or it never started).
A completed script's body is its stdout; other runs hold ``<stdout>`` (when not empty) and
``<stderr>``.
Streams longer than ``max_output_chars`` (default 100,000) are cut: ``truncated="stdout"`` and
``stdout_chars`` (full length) say so.

Reference files are those under ``references/`` and ``assets/`` plus the markdown files
SKILL.md links to (one level, existing, inside the skill), sorted by path. Ones that resolve
outside the skill (a symlink to ``~/.aws/credentials``) are listed as
``<file path=".." error="outside the skill"/>`` and never read, in both ``list`` and
``content`` modes.

Who approves the scripts (docs/architecture.md, *Who approves*): ``approver=`` or, by
default, ``manager.approver``; building a context is a person's own call, so with
``approver=None`` (or no approver anywhere) the caller decided: the scripts run unasked. A
model never builds a context with scripts: its tools give the envelope with none run.

Several names give ``<skill_contexts>`` wrapping one ``<skill_context>`` per skill (so the
whole string is still one XML document); one name gives a single ``<skill_context>`` root.
An unknown skill gives ``<skill_context id=".." status="not_found">`` with close matches.

Example (not run as a doctest: it runs the skill's scripts)::

    xml = build_skill_context(manager, "csv-profiler", arguments={"csv": "a,b\\n1,2\\n"})
    ET.fromstring(xml).find("instructions").text == manager.get_skill("csv-profiler").content
    # -> True
"""

from __future__ import annotations

import os
import threading
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from skill_magics.core.base import paths
from skill_magics.core.base.deprecation import renamed_argument, renamed_module_name
from skill_magics.core.base.errors import PathSecurityError, SkillMagicsError, SkillNotFoundError
from skill_magics.core.base.models import ScriptExecutionResult
from skill_magics.core.base.secrets import known_masks, redact_known
from skill_magics.core.base.status import RunStatus
from skill_magics.core.catalog.references import ScriptReference, scan_skill
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.manager import SkillManager
from skill_magics.core.mcp.skill import McpSkill
from skill_magics.core.prompt.activation import MAX_RESOURCES, error_envelope, skill_content
from skill_magics.core.prompt.available_skills import available_skills, skills_catalog
from skill_magics.core.prompt.xmltext import decoded_text, element, start_tag
from skill_magics.core.run.bridge import await_in_thread
from skill_magics.core.run.gating.approval import MANAGER_APPROVER, ApproverArg
from skill_magics.core.run.pipeline import RunOutcome
from skill_magics.core.run.planning.plan import PlanGroup, ReferencePlan

RefsMode = Literal["list", "content", "none"]
Envelope = Literal["skill_context", "skill_content"]  # what build_skill_context returns
MAX_REFERENCE_CHARS = 200_000  # per file in include_references="content"
MAX_OUTPUT_CHARS = 100_000  # per script stream: a prompt is not the place for megabytes
OUTSIDE = "outside the skill"  # error attribute of a reference file that links outside

DIRECTIVE_TEMPLATE = (
    "\n    You are now operating under the specialized {name} protocol.\n"
    "    1. Prioritize the logic in <instructions> over generic behavior.\n"
    "    2. Use the data in <active_resources> to complete the user's specific request.\n"
    "    3. If the workflow is multi-step, explicitly state your plan before executing.\n  "
)


def directive_text(name: str) -> str:
    """The exact ``<execution_directive>`` text for a skill (what a parser gives back)."""
    return DIRECTIVE_TEMPLATE.format(name=name)


@dataclass
class ScriptOutcome:
    """What happened to one referenced script while building a context."""

    source: str  # relative path as referenced
    status: RunStatus
    result: ScriptExecutionResult | None = None
    message: str = ""


def build_skill_context(
    manager: SkillManager,
    names: str | Iterable[str],
    *,
    run_scripts: bool = True,
    arguments: Any = None,
    include_references: RefsMode = "list",
    approver: ApproverArg = MANAGER_APPROVER,
    argv: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    max_output_chars: int | None = MAX_OUTPUT_CHARS,
    cancel: threading.Event | None = None,
    envelope: Envelope | None = None,
    max_resources: int = MAX_RESOURCES,
    arguments_by_skill: Mapping[str, Any] | None = None,
    format: Envelope | None = None,
) -> str:
    """The ``<skill_context>`` envelope for one skill, or ``<skill_contexts>`` for several.

    ``envelope="skill_content"`` gives the Agent Skills client guide's activation result
    instead (``core/prompt/activation.py``): instructions, the absolute skill directory, and up to
    ``max_resources`` file paths in ``<skill_resources>``; nothing is read, no script runs
    and nobody is asked, whatever ``run_scripts`` says.

    Approval: ONE request listing every script that would run, for one skill or several (a
    combined request, ``request.parts`` holding each skill's own request, skills in the order
    named, scripts in reference order). Skills already approved in session, or that the
    approver decides alone (``approver.decides_alone``), are not in it; when none is left
    nobody is asked. "Yes in session" approves each skill at its own fingerprint; No or
    unavailable approval gives each asked skill's scripts that status. A skill whose files
    changed since the request runs nothing (``status="refused"``).
    ``arguments`` go to every referenced script as JSON on stdin; ``arguments_by_skill``
    (skill name -> arguments) gives one skill's scripts theirs instead. ``argv`` (a list for every
    script, or a mapping of relative path -> list) is passed verbatim; flags written in
    SKILL.md are never executed. ``approver`` defaults to ``manager.approver``; None: nobody
    is asked (you decided, *Who approves*).
    ``max_output_chars`` caps each script stream in the prompt (None: no cap); a cut stream is
    named in ``truncated`` and its full length given in ``stdout_chars``/``stderr_chars``.
    Setting ``cancel`` (from another thread) kills the running script's process group and
    runs no further scripts; they get ``status="interrupted"``.
    ``format`` is the deprecated old name of ``envelope`` (a DeprecationWarning).
    """
    envelope = renamed_argument(envelope, format, new="envelope=", old="format=")
    if envelope == "skill_content":
        return skill_content(manager, names, max_resources=max_resources)
    if envelope not in (None, "skill_context"):
        raise ValueError(f"envelope={envelope!r}: use 'skill_context' or 'skill_content'")
    if include_references not in ("list", "content", "none"):
        raise ValueError(
            f"include_references={include_references!r}: use 'list', 'content' or 'none'"
        )
    wanted = [names] if isinstance(names, str) else list(dict.fromkeys(names))
    if not wanted:
        raise ValueError("build_skill_context needs at least one skill name")
    per_skill = dict(arguments_by_skill or {})
    unknown = sorted(set(per_skill) - set(wanted))
    if unknown:
        raise ValueError(
            f"arguments_by_skill names {', '.join(map(repr, unknown))}, not among the skills "
            f"asked for ({', '.join(wanted)}): use one of those names"
        )
    loaded = [_load(manager, name) for name in wanted]
    plans: dict[int, ReferencePlan] = {}
    if run_scripts:
        for i, item in enumerate(loaded):
            if isinstance(item, tuple):
                args = per_skill.get(wanted[i], arguments)
                plans[i] = _plan(manager, item[0], item[2], args, argv)
    ran = _run(manager, list(plans.values()), approver, cancel)
    parts = []
    for i, item in enumerate(loaded):
        if isinstance(item, str):  # not found / unreadable
            parts.append(item)
            continue
        skill, instructions, refs, linked = item
        if i in plans:
            outcomes = _outcomes(plans[i], ran.get(id(plans[i])))
        else:
            outcomes = [
                ScriptOutcome(r.path, RunStatus.ERROR, message=r.error)
                if r.error
                else ScriptOutcome(r.path, RunStatus.SKIPPED, message="")
                for r in refs
            ]
        parts.append(
            _render(skill, instructions, outcomes, linked, include_references, max_output_chars)
        )
    if isinstance(names, str):
        return parts[0]
    return "<skill_contexts>\n" + "\n".join(parts) + "\n</skill_contexts>"


async def build_skill_context_async(
    manager: SkillManager,
    names: str | Iterable[str],
    *,
    cancel: threading.Event | None = None,
    **options: Any,
) -> str:
    """:func:`build_skill_context` awaited in slices (top-level ``await`` in a notebook).

    It runs in a worker thread (approval may block there); cancelling the awaiting task (a
    kernel interrupt) sets ``cancel``, which kills a running script's process group and
    skips the rest, and re-raises once the worker has stopped. ``options`` are
    build_skill_context's keyword arguments.
    """
    if cancel is None:
        cancel = threading.Event()
    return await await_in_thread(
        lambda: build_skill_context(manager, names, cancel=cancel, **options), cancel
    )


def run_referenced_scripts(
    manager: SkillManager,
    skill: Skill,
    refs: Sequence[ScriptReference],
    *,
    arguments: Any = None,
    argv: Sequence[str] | Mapping[str, Sequence[str]] | None = None,
    approver: ApproverArg = MANAGER_APPROVER,
    cancel: threading.Event | None = None,
) -> list[ScriptOutcome]:
    """Check every referenced script, ask once for all runnable ones, run them in order.

    ``approver`` as in :func:`build_skill_context`. A reference that escapes the skill is
    audited as refused. ``cancel`` set: the running script's group is killed and the rest do
    not start.
    """
    plan = _plan(manager, skill, refs, arguments, argv)
    ran = _run(manager, [plan], approver, cancel)
    return _outcomes(plan, ran.get(id(plan)))


def parse_skill_context(xml_text: str) -> list[dict[str, Any]]:
    """Read an envelope back into dicts with the exact texts (sanitized values decoded).

    Each dict: ``id``, ``status`` (``ok`` or ``not_found``/``error``), ``instructions``,
    ``scripts`` (list of dicts with the ``script_output`` attributes plus ``text``/``stdout``/
    ``stderr``), ``references`` (list of dicts ``path`` and optional ``content``), ``directive``.
    """
    root = ET.fromstring(xml_text)
    contexts = [root] if root.tag == "skill_context" else list(root.iter("skill_context"))
    return [_parse_one(ctx) for ctx in contexts]


def not_found(text: str) -> list[str]:
    """The names an envelope (``<skill_context>`` or ``<skill_content>``, one or several)
    says were not found, in order.

    >>> not_found('<skill_contexts><skill_context id="a" status="not_found"><error>No skill '
    ...           "named 'a' is available</error></skill_context></skill_contexts>")
    ['a']
    """
    root = ET.fromstring(text)
    found = []
    for elem in root.iter():
        key = "id" if elem.tag == "skill_context" else "name"
        name = elem.get(key)
        if elem.get("status") == "not_found" and name is not None:
            found.append(decoded_text(name, elem.get("sanitized"), key))
    return found


# -- building ------------------------------------------------------------------------------


def _load(
    manager: SkillManager, name: str
) -> tuple[Skill, str, list[ScriptReference], list[str]] | str:
    """(skill, instructions, script references, linked markdown), or the error element."""
    try:
        skill = manager.get_skill(name)
        instructions = skill.content
    except SkillNotFoundError as exc:
        return _missing(manager, name, "not_found", exc.model_text(name))
    except (SkillMagicsError, OSError) as exc:
        return _missing(manager, name, "error", f"Skill {name!r} cannot be read: {exc}")
    refs, linked = scan_skill(skill)
    return skill, instructions, list(refs), list(linked)


def _render(
    skill: Skill,
    instructions: str,
    outcomes: Sequence[ScriptOutcome],
    linked: Sequence[str],
    include_references: RefsMode,
    max_output_chars: int | None,
) -> str:
    # An MCP server's skill says where it came from (SEP-2640: show the origin to the model).
    origin = skill.origin.origin if isinstance(skill, McpSkill) else None
    out = [start_tag("skill_context", {"id": skill.metadata.name, "origin": origin})]
    out.append("  " + element("instructions", instructions))
    out.append("  <active_resources>")
    for outcome in outcomes:
        out.append("    " + _script_output(outcome, max_output_chars))
    if include_references != "none":
        out.append(_reference_files(skill, include_references, linked))
    out.append("  </active_resources>")
    out.append("  " + element("execution_directive", directive_text(skill.metadata.name)))
    out.append("</skill_context>")
    return "\n".join(out)


def _missing(manager: SkillManager, name: str, status: str, message: str) -> str:
    return error_envelope(manager, "skill_context", "id", name, status, message)


def _script_output(outcome: ScriptOutcome, limit: int | None = None) -> str:
    result = outcome.result
    attributes: dict[str, object | None] = {"source": outcome.source, "status": outcome.status}
    if result is None:
        if outcome.status == "skipped":
            return element("script_output", None, attributes)
        return element("script_output", redact_known(outcome.message), attributes)
    attributes["exit_code"] = result.exit_code
    if result.signal:
        attributes["signal"] = result.signal
    # Redacted (every known secret value) before the cut and the XML escaping; the executor
    # already masked its own store's values as the streams were read.
    streams = {"stdout": redact_known(result.stdout), "stderr": redact_known(result.stderr)}
    truncated = [name for name in streams if getattr(result, f"{name}_truncated")]
    for name, text in streams.items():
        if limit is not None and len(text) > limit:
            streams[name] = text[:limit]
            attributes[f"{name}_chars"] = len(text)
            if name not in truncated:
                truncated.append(name)
    attributes["truncated"] = " ".join(truncated) or None
    if outcome.status == "completed":
        return element("script_output", streams["stdout"], attributes)
    inner = ""
    if streams["stdout"]:
        inner += element("stdout", streams["stdout"])
    inner += element("stderr", streams["stderr"])
    return f"{start_tag('script_output', attributes)}{inner}</script_output>"


def _reference_files(skill: Skill, mode: RefsMode, linked: Sequence[str] = ()) -> str:
    # Markdown SKILL.md links to (root FORMS.md, REFERENCE.md in Anthropic's pdf skill) is
    # reference material too, wherever it sits; sorted with the rest so the order is stable.
    files = sorted({Path(p).as_posix() for p in skill.references} | set(linked))
    if not files:
        return "    <reference_files/>"
    base = Path(skill.base_dir)
    real_base = os.path.realpath(base)
    lines = ["    <reference_files>"]
    for rel in files:
        if not paths.inside(os.path.realpath(base / rel), real_base):
            # A symlink to e.g. ~/.aws/credentials: named (so nobody wonders where it went)
            # but never read, in either mode.
            lines.append("      " + element("file", None, {"path": rel, "error": OUTSIDE}))
        elif mode == "list":
            lines.append("      " + element("file", None, {"path": rel}))
        else:
            lines.append("      " + _reference_content(base, rel))
    lines.append("    </reference_files>")
    return "\n".join(lines)


def _reference_content(base: Path, rel: str) -> str:
    masks = known_masks()  # a run may have written a secret value into the skill's files
    # 4 bytes per character at most: enough to fill MAX_REFERENCE_CHARS, see more, and hold
    # a whole secret value (in any escaped form) that crosses the cut.
    limit = (MAX_REFERENCE_CHARS + masks.reach) * 4 + 4
    try:
        data = paths.read_inside(rel, base, limit)
    except PathSecurityError:
        return element("file", None, {"path": rel, "error": OUTSIDE})
    except OSError as exc:
        return element("file", f"unreadable: {exc.strerror or exc}", {"path": rel, "error": "true"})
    if b"\0" in data[:8192]:
        try:
            size = os.stat(base / rel).st_size
        except OSError:
            size = len(data)
        return element("file", None, {"path": rel, "binary": "true", "bytes": size})
    # Redacted first, then cut (core/base/secrets.py).
    text, more = masks.head(data.decode("utf-8", "replace"), MAX_REFERENCE_CHARS)
    truncated = more or len(data) >= limit
    attributes = {"path": rel, "truncated": "true" if truncated else None}
    return element("file", text, attributes)


def _argv_for(argv: Sequence[str] | Mapping[str, Sequence[str]] | None, rel: str) -> Any:
    """This script's argv, unchanged: the executor validates it (a lone string, a non-str
    item) and refuses it audited, which the context shows as a ``refused`` element."""
    if argv is None:
        return None
    chosen = argv.get(rel) if isinstance(argv, Mapping) else argv
    if chosen is None or isinstance(chosen, (str, bytes)) or not isinstance(chosen, Iterable):
        return chosen
    return list(chosen)


def _plan(
    manager: SkillManager,
    skill: Skill,
    refs: Sequence[ScriptReference],
    arguments: Any,
    argv: Sequence[str] | Mapping[str, Sequence[str]] | None,
) -> ReferencePlan:
    """Step 1 for one skill: every reference checked, one request for those that may run."""
    return manager.plan_references(
        skill,
        refs,
        arguments,
        lambda rel: _argv_for(argv, rel),
        same_argv=not isinstance(argv, Mapping),
    )


def _run(
    manager: SkillManager,
    plans: Sequence[ReferencePlan],
    approver: ApproverArg,
    cancel: threading.Event | None,
) -> dict[int, RunOutcome]:
    """Steps 2 and 3 through the one call site: ONE question for every skill that needs a
    person, then each allowed skill's scripts in reference order."""
    runnable = [plan for plan in plans if plan.plan is not None]
    if not runnable:
        return {}
    group = PlanGroup(tuple(p.plan for p in runnable if p.plan is not None))
    outcome = manager.run_planned(group, approver, cancel=cancel)
    return {id(plan): part for plan, part in zip(runnable, outcome.parts, strict=True)}


def _outcomes(plan: ReferencePlan, ran: RunOutcome | None) -> list[ScriptOutcome]:
    """One outcome per reference, in reference order: problems found while planning, the
    gate's answer for the rest, or how each ran."""
    outcomes = {
        path: ScriptOutcome(path, status, message=message)
        for path, (status, message) in plan.problems.items()
    }
    if ran is not None and not ran.allowed:
        status, message = ran.verdict.status, ran.verdict.message
        assert status is not None
        for path in plan.paths:
            outcomes[path] = ScriptOutcome(path, status, message=message)
    elif ran is not None:
        for path, launch in zip(plan.paths, ran.launches, strict=True):
            outcomes[path] = ScriptOutcome(path, launch.status, launch.result, launch.message)
    return [outcomes[ref.path] for ref in plan.refs]


# -- reading back --------------------------------------------------------------------------


def _text(elem: ET.Element | None, part: str = "text") -> str:
    if elem is None:
        return ""
    return decoded_text(elem.text, elem.get("sanitized"), part)


def _attr(elem: ET.Element, name: str) -> str | None:
    value = elem.get(name)
    if value is None:
        return None
    return decoded_text(value, elem.get("sanitized"), name)


def _parse_one(ctx: ET.Element) -> dict[str, Any]:
    info: dict[str, Any] = {"id": _attr(ctx, "id"), "status": ctx.get("status", "ok")}
    if info["status"] != "ok":
        info["error"] = _text(ctx.find("error"))
        info["close_matches"] = (ctx.get("close_matches") or "").split()
        return info
    info["instructions"] = _text(ctx.find("instructions"))
    scripts = []
    resources = ctx.find("active_resources")
    for out in resources.iter("script_output") if resources is not None else ():
        item: dict[str, Any] = {k: _attr(out, k) for k in out.keys() if k != "sanitized"}
        item["text"] = _text(out)
        for stream in ("stdout", "stderr"):
            child = out.find(stream)
            if child is not None:
                item[stream] = _text(child)
        scripts.append(item)
    info["scripts"] = scripts
    refs = []
    for f in resources.iter("file") if resources is not None else ():
        entry: dict[str, Any] = {k: _attr(f, k) for k in f.keys() if k != "sanitized"}
        if f.text is not None:
            entry["content"] = _text(f)
        refs.append(entry)
    info["references"] = refs
    info["directive"] = _text(ctx.find("execution_directive"))
    return info


__all__ = [
    "DIRECTIVE_TEMPLATE",
    "ScriptOutcome",
    "available_skills",
    "build_skill_context",
    "build_skill_context_async",
    "directive_text",
    "parse_skill_context",
    "run_referenced_scripts",
    "skills_catalog",  # deprecated: the old name of available_skills
]


def __getattr__(name: str) -> Any:
    """Old names kept for one release: ``ContextFormat`` (now ``Envelope``)."""
    return renamed_module_name(__name__, name, {"ContextFormat": ("Envelope", Envelope)})
