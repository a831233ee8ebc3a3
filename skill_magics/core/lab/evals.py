"""Output evaluation: a skill's ``evals/evals.json`` run with and without the skill.

``evals/evals.json`` is the Agent Skills guide's format (skill-creator's too):
``{"skill_name", "evals": [{"id", "prompt", "expected_output", "files", "expectations"}]}``;
older files name the last field ``assertions`` (agentskills PR #506 renamed it; both are
read, ``expectations`` is what this writes, in ``eval_metadata.json`` too). An optional
``name`` (or ``eval_name``) names the eval's folder, else its id.

Each prompt runs through the agent loop (core/lab/agent.py) ``runs`` times per
configuration: ``with_skill`` (the skill alone in ``<available_skills>``, its activation and
script tools) and ``without_skill`` (no such block, no tools). Each run starts in its own working
folder, ``run-k/outputs/``, holding a copy of the eval's ``files``; scripts start there.
Before the first run ONE approval is asked for the whole evaluation (the gate's
``decide_scope``): it lists the skill's scripts and how many agent runs may call them;
every script call then passes the gate under that answer, never asking again.

With a ``grader`` client each run's assertions are judged by that model with evidence
(core/lab/grading.py); without one they stay ungraded (``passed: null``). The workspace is
written as core/lab/workspace.py describes, with ``timing.json``, ``grading.json`` and
``benchmark.json`` in skill-creator's field names. ``max_calls`` caps every request
(agent turns and grading); runs it leaves out are marked ``not_run``.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_magics.core.base import paths
from skill_magics.core.base.errors import ModelCallError
from skill_magics.core.catalog.discovery import is_qualified
from skill_magics.core.lab.agent import conversation_loop, now_iso
from skill_magics.core.lab.approvals import approver_for_model
from skill_magics.core.lab.budget import Caps
from skill_magics.core.lab.clients import Provider, Reply, provider_for
from skill_magics.core.lab.drive import (
    Blocking,
    Loop,
    drive,
    drive_async,
    model_call,
    sync_provider,
)
from skill_magics.core.lab.evalsjson import (
    EVALS_FILE,
    FORMAT_HINT,
    EvalCase,
    copy_inputs,
    load_evals,
)
from skill_magics.core.lab.grading import (
    GRADER_SYSTEM,
    grading_prompt,
    grading_summary,
    read_grading,
    ungraded,
)
from skill_magics.core.lab.offer import Offer, make_offer
from skill_magics.core.lab.options import CONFIGURATIONS, AgentOptions, EvalOptions, chosen
from skill_magics.core.lab.progress import LabProgress, Tracker
from skill_magics.core.lab.transcript import Transcript
from skill_magics.core.lab.workspace import (
    VIEWER_SKIPS,
    benchmark_markdown,
    new_iteration,
    output_files,
    run_summary,
    write_json,
    write_text,
)
from skill_magics.core.manager import SkillManager
from skill_magics.core.run.gating.approval import (
    MANAGER_APPROVER,
    Approver,
    ApproverArg,
    Caller,
    ScopeInfo,
)
from skill_magics.core.run.pipeline import RunOutcome
from skill_magics.core.trace import hooks as traced

GRADER_MAX_TOKENS = 2048
RESPONSE_FILE = "response.md"  # the model's final answer, so the viewer shows it
COMPLETED, ERROR, STOPPED, NOT_RUN = "completed", "error", "stopped", "not_run"


@dataclass
class EvalRun:
    """One run of one eval in one configuration."""

    eval_id: Any
    eval_name: str
    configuration: str
    run_number: int
    status: str  # completed, error (an API error ended it), stopped (a cap ended it), not_run
    run_dir: Path | None = None
    transcript: Transcript | None = None
    grading: dict[str, Any] | None = None
    timing: dict[str, Any] | None = None
    metrics: dict[str, Any] | None = None
    reason: str = ""

    @property
    def summary(self) -> dict[str, Any]:
        return (self.grading or {}).get("summary", {})


@dataclass
class EvalReport:
    """What :func:`run_evals` did and wrote; ``benchmark`` is benchmark.json's content."""

    skill: str
    provider: str
    model: str
    grader_model: str | None
    workspace: Path
    iteration_dir: Path
    configurations: tuple[str, ...]
    runs_per_configuration: int
    cases: list[EvalCase]
    runs: list[EvalRun] = field(default_factory=list)
    benchmark: dict[str, Any] = field(default_factory=dict)
    approval: str = ""  # how the evaluation's one approval went
    stopped: str = ""
    calls: int = 0
    tokens: int = 0
    seconds: float = 0.0

    @property
    def benchmark_path(self) -> Path:
        return self.iteration_dir / "benchmark.json"

    @property
    def run_summary(self) -> dict[str, Any]:
        return dict(self.benchmark.get("run_summary", {}))

    @property
    def graded(self) -> bool:
        return self.grader_model is not None

    def to_pandas(self) -> Any:
        """One row per run: eval, configuration, run, status, pass rate, passed, total,
        time, tokens, tool calls, errors, activated skills, the folder."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("EvalReport.to_pandas needs pandas: pip install pandas") from None
        rows = []
        for run in self.runs:
            t = run.transcript
            summary = run.summary
            rows.append(
                {
                    "eval_id": run.eval_id,
                    "eval_name": run.eval_name,
                    "configuration": run.configuration,
                    "run": run.run_number,
                    "status": run.status,
                    "pass_rate": summary.get("pass_rate"),
                    "passed": summary.get("passed"),
                    "total": summary.get("total"),
                    "time_seconds": (run.timing or {}).get("executor_duration_seconds"),
                    "tokens": (run.timing or {}).get("total_tokens"),
                    "tool_calls": (run.metrics or {}).get("total_tool_calls"),
                    "errors": (run.metrics or {}).get("errors_encountered"),
                    "activated": ", ".join(t.activated) if t else "",
                    "run_dir": str(run.run_dir) if run.run_dir else "",
                }
            )
        return pd.DataFrame(rows)

    def headline(self) -> str:
        done = sum(1 for r in self.runs if r.status != NOT_RUN)
        bits = [f"{done}/{len(self.runs)} runs"]
        for config in self.configurations:
            rate = self.run_summary.get(config, {}).get("pass_rate")
            if rate is not None:
                bits.append(f"{config} {rate['mean']:.0%}")
        delta = self.run_summary.get("delta", {}).get("pass_rate")
        if delta is not None:
            bits.append(f"delta {delta}")
        if not self.graded:
            bits.append("not graded")
        bits.append(f"{self.calls} calls · {self.tokens:,} tokens")
        return " · ".join(bits)

    def text(self) -> str:
        lines = [
            f"Output evaluation of '{self.skill}' · {self.provider} {self.model} · "
            f"{self.headline()}",
            f"workspace: {self.iteration_dir}",
        ]
        if self.approval:
            lines.append(f"scripts: {self.approval}")
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        summary = self.run_summary
        for config in self.configurations:
            entry = summary.get(config, {})
            rate = entry.get("pass_rate")
            shown = "not graded" if rate is None else f"{rate['mean']:.0%} ± {rate['stddev']:.0%}"
            time_ = entry.get("time_seconds", {}).get("mean", 0.0)
            tokens = entry.get("tokens", {}).get("mean", 0.0)
            lines.append(f"  {config:<14} pass rate {shown} · {time_:.1f} s · {tokens:,.0f} tokens")
        if "delta" in summary:
            d = summary["delta"]
            lines.append("  delta          " + " · ".join(f"{k} {v}" for k, v in d.items()))
        for run in self.runs:
            s = run.summary
            shown = (
                f"{s.get('passed', 0)}/{s.get('total', 0)}"
                if s.get("pass_rate") is not None
                else "ungraded"
            )
            note = f" ({run.reason})" if run.reason else ""
            lines.append(
                f"  eval-{run.eval_name} {run.configuration} run-{run.run_number}: "
                f"{run.status}, {shown}{note}"
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<EvalReport '{self.skill}': {self.headline()}>"


# -- running -------------------------------------------------------------------------------


def run_evals(
    client: Any,
    manager: SkillManager,
    skill: str,
    options: EvalOptions | None = None,
    *,
    grader: Any = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_progress: Callable[[LabProgress], object] | None = None,
    **choices: Any,
) -> EvalReport:
    """Run ``skill``'s evals and write the workspace; see the module docstring.

    ``options``: an :class:`~.options.EvalOptions` (model, configurations, runs, workspace:
    the folder holding ``iteration-N``, default ``./<skill folder>-workspace``, the folder's
    name, never the name SKILL.md gives); keywords such as ``model=`` fill or replace its
    fields. ``grader``: a client whose model grades the assertions (``grader_model``, default
    ``model``). ``approver`` answers the evaluation's one approval (default: the manager's;
    with none, script calls are refused and the model is told). ``client`` and ``grader``
    are sync clients (async ones: ``await run_evals_async(...)``).
    """
    provider = sync_provider(client, "run_evals")
    grading = sync_provider(grader, "run_evals") if grader is not None else None
    opts = chosen(EvalOptions, options, choices)
    with traced.lab("run_evals", (skill,), opts.model, f"run_evals {skill}"):
        return drive(_prepare(provider, grading, manager, skill, opts, approver, on_progress))


async def run_evals_async(
    client: Any,
    manager: SkillManager,
    skill: str,
    options: EvalOptions | None = None,
    *,
    grader: Any = None,
    approver: ApproverArg = MANAGER_APPROVER,
    on_progress: Callable[[LabProgress], object] | None = None,
    cancel: threading.Event | None = None,
    **choices: Any,
) -> EvalReport:
    """:func:`run_evals` as a coroutine, for sync and async clients alike (the approval
    and sync requests wait in worker threads)."""
    provider = provider_for(client)
    grading = provider_for(grader) if grader is not None else None
    opts = chosen(EvalOptions, options, choices)
    loop = _prepare(provider, grading, manager, skill, opts, approver, on_progress)
    with traced.lab("run_evals", (skill,), opts.model, f"run_evals {skill}"):
        return await drive_async(loop, cancel)


def _prepare(
    provider: Provider,
    grading: Provider | None,
    manager: SkillManager,
    skill: str,
    opts: EvalOptions,
    approver: ApproverArg,
    on_progress: Callable[[LabProgress], object] | None,
) -> Loop[EvalReport]:
    """Check everything (evals.json, files, arguments) before anything is sent or written."""
    base = Path(manager.get_skill(skill).base_dir)
    # A name that is not one folder name runs nothing, as for any run (the checks refuse
    # it); the workspace is named after the skill's FOLDER, never its author-chosen name.
    paths.check_skill_name(skill, folder=base.name)
    cases = load_evals(base, skill)
    offers = {
        "with_skill": make_offer(manager, [skill], system=opts.system),
        "without_skill": make_offer(manager, [], system=opts.system),
    }
    if "with_skill" in opts.configurations and skill not in offers["with_skill"].skills:
        raise ValueError(
            f"'{skill}' says disable-model-invocation: true: no model is offered it, so "
            "with_skill would equal without_skill; remove that line to evaluate it"
        )
    workspace = opts.workspace
    # An MCP server's skill (LABEL/NAME, two checked folder names) lives in a cache folder
    # named 'files': its workspace is named LABEL.NAME (a '.' no skill name has).
    folder = skill.replace("/", ".") if is_qualified(skill) else base.name
    root = Path(workspace) if workspace is not None else Path.cwd() / f"{folder}-workspace"
    report = EvalReport(
        skill=skill,
        provider=provider.name,
        model=opts.model,
        grader_model=(opts.grader_model or opts.model) if grading is not None else None,
        workspace=root,
        iteration_dir=root,  # set when the iteration folder is made
        configurations=opts.configurations,
        runs_per_configuration=opts.runs,
        cases=cases,
    )
    runs = len(cases) * len(opts.configurations) * opts.runs
    settings = _Settings(
        manager,
        provider,
        grading,
        offers,
        base,
        Caps(opts.max_calls, None),
        opts.agent([skill]),
        approver_for_model(manager, approver),
        Tracker(runs, f"evals of {skill}", on_progress),
    )
    return _evaluate(report, settings)


@dataclass
class _Settings:
    manager: SkillManager
    provider: Provider
    grader: Provider | None
    offers: dict[str, Offer]
    skill_dir: Path
    caps: Caps
    agent: AgentOptions  # each agent run's model and limits (the offer is per configuration)
    approver: Approver
    tracker: Tracker


def _evaluate(report: EvalReport, s: _Settings) -> Loop[EvalReport]:
    began = time.monotonic()
    report.iteration_dir = new_iteration(report.workspace)
    s.tracker.start()
    try:
        scoped = yield from _approve(report, s)
        for case in report.cases:
            eval_dir = report.iteration_dir / f"eval-{case.name}"
            metadata = {
                "eval_id": case.id,
                "eval_name": case.name,
                "prompt": case.prompt,
                "expectations": list(case.assertions),
            }
            write_json(eval_dir / "eval_metadata.json", metadata)
            for config in report.configurations:
                for k in range(1, report.runs_per_configuration + 1):
                    run = yield from _one_run(report, s, case, config, k, eval_dir, scoped)
                    report.runs.append(run)
                    if run.status != NOT_RUN:
                        s.tracker.step(failed=run.status == ERROR)
        report.benchmark = _benchmark(report, s)
        write_json(report.benchmark_path, report.benchmark)
        write_text(report.iteration_dir / "benchmark.md", benchmark_markdown(report.benchmark))
    finally:
        report.calls = s.caps.calls
        report.tokens = s.caps.tokens
        report.seconds = time.monotonic() - began
        s.tracker.finish(report.headline())
    return report


def _approve(report: EvalReport, s: _Settings) -> Loop[Approver]:
    """The evaluation's ONE approval (the gate's scope decision): the approver every
    script call of the with_skill runs is then decided by."""
    if "with_skill" not in report.configurations:
        return s.approver
    runs = len(report.cases) * report.runs_per_configuration
    scope = ScopeInfo(
        purpose=f"output evaluation of '{report.skill}' ({report.iteration_dir.name})",
        agent_runs=runs,
        sample=tuple(case.prompt for case in report.cases[:3]),
    )
    manager = s.manager
    cwd = str(report.iteration_dir)
    plan = manager.plan_scope(report.skill, scope, cwd=cwd)
    if plan is None:
        report.approval = "the skill offers no script that may run: nothing to approve"
        return s.approver
    request = plan.request

    def decide() -> RunOutcome:
        # The call site's scope decision (the gate's decide_scope): a model's calls.
        return manager.run_planned(plan, s.approver, caller=Caller.MODEL)

    outcome = yield Blocking(decide)
    verdict, scoped = outcome.verdict, outcome.value
    names = ", ".join(script.path for script in request.scripts)
    if verdict.allowed:
        report.approval = f"{names} approved for this evaluation ({verdict.by or 'approver'})"
    else:
        report.approval = f"{names} not approved: {verdict.message}"
    return scoped


def _one_run(
    report: EvalReport,
    s: _Settings,
    case: EvalCase,
    config: str,
    k: int,
    eval_dir: Path,
    approver: Approver,
) -> Loop[EvalRun]:
    run = EvalRun(case.id, case.name, config, k, NOT_RUN)
    reason = s.caps.exhausted()
    if reason:
        report.stopped = run.reason = reason
        return run
    run.run_dir = run_dir = eval_dir / config / f"run-{k}"
    outputs = run_dir / "outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    write_json(
        run_dir / "eval_metadata.json",
        {
            "eval_id": case.id,
            "eval_name": case.name,
            "prompt": case.prompt,
            "expectations": list(case.assertions),
        },
    )
    inputs = copy_inputs(s.skill_dir, case.files, outputs)
    executor_start, t0 = now_iso(), time.monotonic()
    transcript: Transcript = yield from conversation_loop(
        s.provider,
        s.manager,
        case.prompt,
        s.agent,
        s.offers[config],
        approver,
        cwd=str(outputs),
        caps=s.caps,
    )
    executor_s = time.monotonic() - t0
    executor_end = now_iso()
    run.transcript = transcript
    run.status = {"error": ERROR, "budget": STOPPED}.get(transcript.stop_reason, COMPLETED)
    run.reason = transcript.error
    transcript_md = f"# Transcript\n\n## Eval Prompt\n\n{case.prompt}\n\n{transcript.to_markdown()}"
    _write_output(run, outputs / RESPONSE_FILE, transcript.final_text + "\n")
    _write_output(run, outputs / "transcript.md", transcript_md)
    run.metrics = _metrics(transcript, outputs, inputs, len(transcript_md))
    _write_output(run, outputs / "metrics.json", json.dumps(run.metrics, indent=2) + "\n")
    timing: dict[str, Any] = {
        "total_tokens": transcript.usage.total,
        "duration_ms": round(executor_s * 1000),
        "total_duration_seconds": round(executor_s, 3),
        "executor_start": executor_start,
        "executor_end": executor_end,
        "executor_duration_seconds": round(executor_s, 3),
    }
    expectations, claims, grader_s = yield from _grade(report, s, case, transcript_md, outputs)
    if grader_s is not None:
        timing["grader_start"] = executor_end
        timing["grader_end"] = now_iso()
        timing["grader_duration_seconds"] = round(grader_s, 3)
        timing["total_duration_seconds"] = round(executor_s + grader_s, 3)
    run.timing = timing
    write_json(run_dir / "timing.json", timing)
    execution_metrics = {k: v for k, v in run.metrics.items() if k != "files_created"}
    run.grading = {
        "expectations": expectations,
        "summary": grading_summary(expectations),
        "execution_metrics": execution_metrics,
        "timing": {
            "executor_duration_seconds": timing["executor_duration_seconds"],
            "grader_duration_seconds": timing.get("grader_duration_seconds", 0.0),
            "total_duration_seconds": timing["total_duration_seconds"],
        },
        "claims": claims,
        "user_notes_summary": {"uncertainties": [], "needs_review": [], "workarounds": []},
    }
    write_json(run_dir / "grading.json", run.grading)
    return run


def _write_output(run: EvalRun, path: Path, text: str) -> None:
    """Write one of the lab's files into the run's outputs (the script's folder: it may have
    put a folder or anything else under that name); a failure is noted on the run, never
    the end of the evaluation."""
    try:
        write_text(path, text)
    except OSError as exc:
        note = f"{path.name} not written ({exc.strerror or exc}): the run's scripts took the name"
        run.reason = f"{run.reason}; {note}" if run.reason else note


def _grade(
    report: EvalReport, s: _Settings, case: EvalCase, transcript_md: str, outputs: Path
) -> Loop[tuple[list[dict[str, Any]], list[dict[str, Any]], float | None]]:
    """(expectations with verdicts, claims, seconds the grader took or None)."""
    wanted = list(case.assertions)
    if not wanted:
        return [], [], None
    if s.grader is None:
        return ungraded(wanted, "no grader client was given"), [], None
    reason = s.caps.exhausted()
    if reason:
        return ungraded(wanted, reason), [], None
    prompt = grading_prompt(case.prompt, case.expected_output, transcript_md, outputs, wanted)
    kwargs = s.grader.request(
        model=report.grader_model or report.model,
        system=GRADER_SYSTEM,
        messages=[s.grader.user_message(prompt)],
        tools=[],
        max_tokens=GRADER_MAX_TOKENS,
    )
    t0 = time.monotonic()
    try:
        reply: Reply = yield from model_call(s.grader, kwargs, s.caps)
    except ModelCallError as exc:
        return ungraded(wanted, f"the grader's request failed: {exc}"), [], time.monotonic() - t0
    s.caps.used(reply.input_tokens, reply.output_tokens)
    expectations, claims, _ = read_grading(reply.text, wanted)
    return expectations, claims, time.monotonic() - t0


def _metrics(
    transcript: Transcript, outputs: Path, inputs: Mapping[str, tuple[int, int]], chars: int
) -> dict[str, Any]:
    """metrics.json: tool calls by name, steps, files the run created, errors, sizes."""
    counts: dict[str, int] = {}
    for step in transcript.tool_calls:
        counts[step.name] = counts.get(step.name, 0) + 1
    now = output_files(outputs)
    ours = VIEWER_SKIPS | {RESPONSE_FILE}
    created = sorted(
        rel for rel, stamp in now.items() if rel not in ours and inputs.get(rel) != stamp
    )
    output_chars = sum(size for rel, (size, _) in now.items() if rel not in VIEWER_SKIPS)
    return {
        "tool_calls": counts,
        "total_tool_calls": sum(counts.values()),
        "total_steps": transcript.turns,
        "files_created": created,
        "errors_encountered": transcript.errors,
        "output_chars": output_chars,
        "transcript_chars": chars,
    }


def _benchmark(report: EvalReport, s: _Settings) -> dict[str, Any]:
    rows = []
    for run in report.runs:
        if run.grading is None or run.timing is None or run.metrics is None:
            continue  # not run: nothing measured
        summary = run.grading["summary"]
        rows.append(
            {
                "eval_id": run.eval_id,
                "eval_name": run.eval_name,
                "configuration": run.configuration,
                "run_number": run.run_number,
                "result": {
                    "pass_rate": summary["pass_rate"],
                    "passed": summary["passed"],
                    "failed": summary["failed"],
                    "total": summary["total"],
                    "time_seconds": run.timing["executor_duration_seconds"],
                    "tokens": run.timing["total_tokens"],
                    "tool_calls": run.metrics["total_tool_calls"],
                    "errors": run.metrics["errors_encountered"],
                },
                "expectations": run.grading["expectations"],
                "notes": [run.reason] if run.reason else [],
            }
        )
    notes = []
    if s.grader is None:
        notes.append("Not graded: no grader client was given, so pass rates are empty.")
    not_run = sum(1 for r in report.runs if r.status == NOT_RUN)
    if not_run:
        notes.append(f"{not_run} runs were not run: {report.stopped}.")
    if report.approval:
        notes.append(f"Scripts: {report.approval}.")
    notes.append(
        "time_seconds is the agent run's wall time (grading excluded); tokens are the "
        "agent run's input + output tokens."
    )
    return {
        "metadata": {
            "skill_name": report.skill,
            "skill_path": str(s.skill_dir),
            "executor_model": report.model,
            "analyzer_model": report.grader_model,
            "timestamp": now_iso(),
            "evals_run": [case.id for case in report.cases],
            "runs_per_configuration": report.runs_per_configuration,
        },
        "runs": rows,
        "run_summary": run_summary(rows, report.configurations),
        "notes": notes,
    }


__all__ = [
    "CONFIGURATIONS",
    "EVALS_FILE",
    "FORMAT_HINT",
    "EvalCase",
    "EvalOptions",
    "EvalReport",
    "EvalRun",
    "load_evals",
    "run_evals",
    "run_evals_async",
]
