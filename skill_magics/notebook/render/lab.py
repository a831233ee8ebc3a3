"""How the skill lab's values show themselves (core/lab knows nothing of IPython).

- ``Transcript``: a conversation. Static HTML (no CSS or scripts needed: GitHub, nbviewer)
  with one block per step: the prompt, each reply (text, tool calls with their input),
  each tool result with the approval it had; in JupyterLab also a widget with tabs
  ``conversation | messages | system prompt``. Text: ``Transcript.text()``.
- ``TriggerReport``: headline numbers (and train/test), the trigger-rate chart (SVG) and a
  table per query. ``TriggerComparison``: the two descriptions and their numbers side by
  side, then what changed. ``EvalReport``: pass rate, time and tokens per configuration,
  the delta, and one row per run with its folder.
- Progress: :func:`lab_progress` draws the batch progress bar (widget or text line) for
  an evaluation; the extension registers it as core's default (core/lab/progress.py).

The extension registers these by class name (extension.py), so nothing here is imported
until such a value is shown.
"""

from __future__ import annotations

import html
import json
from typing import Any

from skill_magics.notebook import compat
from skill_magics.notebook.compat import WIDGET_MIME
from skill_magics.notebook.render.format import shorten

PRE = "white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto;margin:0.2em 0"
RESULT_CHARS = 4_000  # of a tool result or text the static view shows (the value has all)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:.0%}"


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False, indent=1, sort_keys=True)
    except (TypeError, ValueError):
        return repr(value)


def _pre(text: str, limit: int = RESULT_CHARS) -> str:
    shown = text if len(text) <= limit else text[:limit] + f"\n… {len(text) - limit:,} more"
    return f"<pre style='{PRE}'>{_e(shown)}</pre>"


# -- transcript ------------------------------------------------------------------------------


def transcript_header_html(t: Any) -> str:
    usage = t.usage
    bits = [
        f"<strong>{_e(t.provider)} <code>{_e(t.model)}</code></strong>",
        f"{t.turns} repl{'y' if t.turns == 1 else 'ies'}",
        f"{len(t.tool_calls)} tool calls",
        f"{usage.input_tokens:,} in / {usage.output_tokens:,} out tokens",
        f"{t.seconds:.2f} s",
        f"stop: <code>{_e(t.stop_reason)}</code>",
    ]
    lines = [f"<div>{' · '.join(bits)}</div>"]
    lines.append(
        f"<div><small>skills offered: {_e(', '.join(t.skills) or '(none)')} · activated: "
        f"<strong>{_e(', '.join(t.activated) or '(none)')}</strong></small></div>"
    )
    if t.stand_in:
        lines.append(
            "<div style='color:#a31515'><b>Replies below are a recording or scripted, not a "
            "model's answers.</b></div>"
        )
    if t.error:
        lines.append(f"<div style='color:#a31515'>{_e(t.error)}</div>")
    return "".join(lines)


def step_html(step: Any) -> str:
    kind = step.kind
    if kind == "model":
        head = (
            f"<b>{_e(step.label)}</b> · turn {step.turn} · {step.seconds:.2f} s · "
            f"{step.input_tokens:,}+{step.output_tokens:,} tokens · {_e(step.stop_reason)}"
        )
        body = _pre(step.text) if step.text else ""
        for use in step.tool_uses:
            body += f"<div>→ calls <code>{_e(use.name)}</code></div>{_pre(_json(use.input), 2000)}"
        return _block(head, body, "#e8f0fe")
    if kind == "tool":
        state = "error" if step.is_error else "ok"
        colour = "#a31515" if step.is_error else "#2e7d32"
        what = {"activation": "activates", "script": "runs", "unknown": "unknown tool"}.get(
            step.target, step.target
        )
        target = step.skill or ""
        if step.script:
            target += f"/{step.script}"
        head = (
            f"<b>tool</b> <code>{_e(step.name)}</code> · {_e(what)} <code>{_e(target)}</code> "
            f"· <span style='color:{colour}'>{state}</span> · {step.seconds:.2f} s"
        )
        body = ""
        if step.approval:
            body += f"<div><small>approval: {_e(step.approval)}</small></div>"
        body += _pre(step.result)
        return _block(head, body, "#fff8e1" if step.target == "script" else "#f5f5f5")
    head = f"<b>API error</b> · turn {step.turn} · {_e(step.error)}"
    return _block(head, f"<div style='color:#a31515'>{_e(step.message)}</div>", "#fdecea")


def _block(head: str, body: str, colour: str) -> str:
    return (
        f"<div style='border-left:4px solid #999;background:{colour};padding:0.3em 0.6em;"
        f"margin:0.3em 0'><div>{head}</div>{body}</div>"
    )


def conversation_html(t: Any) -> str:
    parts = [_block("<b>user</b>", _pre(t.prompt), "#ffffff")]
    parts += [step_html(step) for step in t.steps]
    return "".join(parts)


def transcript_html(t: Any) -> str:
    """Header, the conversation, and the system prompt folded away."""
    return (
        "<div class='skill-magics-transcript'>"
        f"{transcript_header_html(t)}{conversation_html(t)}"
        f"<details><summary>system prompt ({len(t.system):,} characters)</summary>"
        f"{_pre(t.system, 20_000)}</details></div>"
    )


def transcript_widget(t: Any) -> Any:
    import ipywidgets as w

    messages = json.dumps(t.messages, ensure_ascii=False, indent=1, default=str)
    view = compat.tab(
        [
            w.HTML(conversation_html(t)),
            w.HTML(_pre(messages, 50_000)),
            w.HTML(_pre(t.system, 50_000)),
        ],
        ["conversation", f"messages ({len(t.messages)})", "system prompt"],
    )
    box = w.VBox([w.HTML(transcript_header_html(t)), view])
    box.add_class("skill-magics-transcript")
    return box


def transcript_bundle(t: Any) -> dict[str, Any]:
    return _bundle(t.text(), transcript_html(t), lambda: transcript_widget(t))


# -- trigger reports ---------------------------------------------------------------------------


def trigger_summary_html(report: Any) -> str:
    s = report.summary
    source = "override" if report.description_overridden else "SKILL.md"
    rows = [
        f"<div><strong>Trigger evaluation of <code>{_e(report.skill)}</code></strong> · "
        f"{_e(report.provider)} <code>{_e(report.model)}</code> · "
        f"{report.runs_per_query} runs per query · threshold {report.threshold:g}</div>",
        f"<div><small>description ({source}): {_e(report.description)}</small></div>",
        f"<div>{_e(report.headline())}</div>",
    ]
    if report.holdout:
        for part in ("train", "test"):
            p = s[part]
            rows.append(
                f"<div><small>{part}: {p['passed']}/{p['total']} passed · precision "
                f"{_pct(p['precision'])} · recall {_pct(p['recall'])} · accuracy "
                f"{_pct(p['accuracy'])}</small></div>"
            )
    if report.stopped:
        rows.append(f"<div style='color:#a31515'>stopped: {_e(report.stopped)}</div>")
    return "".join(rows)


def trigger_table_html(report: Any) -> str:
    head = (
        "<tr><th>query</th><th>should trigger</th><th>runs</th><th>triggers</th>"
        "<th>errors</th><th>trigger rate</th><th>passed</th>"
        + ("<th>part</th>" if report.holdout else "")
        + "</tr>"
    )
    body = []
    for r in report.results:
        mark = "✔" if r.passed else "✘"
        colour = "#2e7d32" if r.passed else "#a31515"
        extra = f" ({r.not_run} not run)" if r.not_run else ""
        body.append(
            f"<tr><td>{_e(shorten(r.query, 140))}</td><td>{'yes' if r.should_trigger else 'no'}"
            f"</td><td>{r.runs}{_e(extra)}</td><td>{r.triggers}</td><td>{r.errors}</td>"
            f"<td>{_pct(r.trigger_rate)}</td><td style='color:{colour}'>{mark}</td>"
            + (f"<td>{_e(r.part)}</td>" if report.holdout else "")
            + "</tr>"
        )
    return f"<table>{head}{''.join(body)}</table>"


def trigger_report_html(report: Any) -> str:
    return (
        "<div class='skill-magics-triggers'>"
        f"{trigger_summary_html(report)}<div>{report.chart()}</div>"
        f"<details><summary>per query</summary>{trigger_table_html(report)}</details></div>"
    )


def trigger_report_bundle(report: Any) -> dict[str, Any]:
    return {"text/plain": report.text(), "text/html": trigger_report_html(report)}


def comparison_html(c: Any) -> str:
    head = "<tr><th>metric</th><th>A</th><th>B</th></tr>"
    rows = []
    for name, a, b in c.metrics():
        fmt = _pct if name in ("precision", "recall", "accuracy") else (lambda v: f"{v:,}")
        rows.append(f"<tr><td>{_e(name)}</td><td>{_e(fmt(a))}</td><td>{_e(fmt(b))}</td></tr>")
    changes = [
        f"<tr><td>{_e(shorten(r['query'], 120))}</td><td>{'yes' if r['should_trigger'] else 'no'}"
        f"</td><td>{_pct(r['rate_a'])}</td><td>{_pct(r['rate_b'])}</td>"
        f"<td>{_e(r['change'])}</td></tr>"
        for r in c.rows()
    ]
    return (
        "<div class='skill-magics-trigger-comparison'>"
        f"<div><b>A</b>: {_e(c.a.description)}</div><div><b>B</b>: {_e(c.b.description)}</div>"
        f"<table>{head}{''.join(rows)}</table>"
        "<table><tr><th>query</th><th>should trigger</th><th>rate A</th><th>rate B</th>"
        f"<th>change</th></tr>{''.join(changes)}</table></div>"
    )


def comparison_bundle(c: Any) -> dict[str, Any]:
    return {"text/plain": c.text(), "text/html": comparison_html(c)}


# -- eval reports ------------------------------------------------------------------------------


def eval_report_html(report: Any) -> str:
    summary = report.run_summary
    head = "<tr><th>configuration</th><th>pass rate</th><th>time (s)</th><th>tokens</th></tr>"
    rows = []
    for config in report.configurations:
        entry = summary.get(config, {})
        rate = entry.get("pass_rate")
        shown = "not graded" if rate is None else f"{rate['mean']:.0%} ± {rate['stddev']:.0%}"
        t = entry.get("time_seconds", {})
        k = entry.get("tokens", {})
        rows.append(
            f"<tr><td>{_e(config)}</td><td>{_e(shown)}</td>"
            f"<td>{t.get('mean', 0):.1f} ± {t.get('stddev', 0):.1f}</td>"
            f"<td>{k.get('mean', 0):,.0f} ± {k.get('stddev', 0):,.0f}</td></tr>"
        )
    if "delta" in summary:
        d = summary["delta"]
        rows.append(
            f"<tr><td><b>delta</b></td><td>{_e(d.get('pass_rate', '–'))}</td>"
            f"<td>{_e(d.get('time_seconds', '–'))}</td><td>{_e(d.get('tokens', '–'))}</td></tr>"
        )
    runs = []
    for run in report.runs:
        s = run.summary
        graded = s.get("pass_rate") is not None
        result = f"{s.get('passed', 0)}/{s.get('total', 0)}" if graded else "ungraded"
        activated = ", ".join(run.transcript.activated) if run.transcript else ""
        runs.append(
            f"<tr><td>{_e(run.eval_name)}</td><td>{_e(run.configuration)}</td>"
            f"<td>{run.run_number}</td><td>{_e(run.status)}</td><td>{_e(result)}</td>"
            f"<td>{_e(activated)}</td><td><small>{_e(run.reason)}</small></td></tr>"
        )
    notes = "".join(f"<li>{_e(n)}</li>" for n in report.benchmark.get("notes", []))
    return (
        "<div class='skill-magics-evals'>"
        f"<div><strong>Output evaluation of <code>{_e(report.skill)}</code></strong> · "
        f"{_e(report.provider)} <code>{_e(report.model)}</code> · {_e(report.headline())}</div>"
        f"<div><small>workspace: <code>{_e(report.iteration_dir)}</code></small></div>"
        f"<table>{head}{''.join(rows)}</table>"
        "<details><summary>runs</summary><table><tr><th>eval</th><th>configuration</th>"
        "<th>run</th><th>status</th><th>assertions</th><th>activated</th><th>note</th></tr>"
        f"{''.join(runs)}</table></details>" + (f"<ul>{notes}</ul>" if notes else "") + "</div>"
    )


def eval_report_bundle(report: Any) -> dict[str, Any]:
    return {"text/plain": report.text(), "text/html": eval_report_html(report)}


# -- shared ------------------------------------------------------------------------------------


def _bundle(text: str, static: str, widget: Any) -> dict[str, Any]:
    """text/plain + text/html, and a widget view where a kernel can draw one."""
    from skill_magics.notebook.render.widgets import widgets_supported
    from skill_magics.notebook.result import SkillRunResult

    bundle: dict[str, Any] = {}
    wanted = SkillRunResult.use_widget
    if wanted is None:
        wanted = widgets_supported()
    if wanted:
        try:
            bundle[WIDGET_MIME] = compat.widget_view(widget())
        except Exception:  # noqa: BLE001 - the static fallbacks below still show it
            pass
    bundle["text/plain"] = text
    bundle["text/html"] = static
    return bundle


def lab_progress(shell: Any) -> Any:
    """The display factory for core.lab.progress: a widget bar where a person sees widgets
    and outputs can be replaced, else a text line (rewritten in a terminal, printed every
    few seconds in a headless run)."""

    def factory(total: int, name: str) -> Any:
        from IPython.core.displaypub import DisplayPublisher

        from skill_magics.notebook.render.batch import progress_for
        from skill_magics.notebook.render.widgets import widgets_supported

        publisher = getattr(shell, "display_pub", None)
        updates = publisher is not None and type(publisher) is not DisplayPublisher
        headless = _headless(shell)
        widget = updates and not headless and widgets_supported()
        return progress_for(total, name, widget=widget, terminal=not updates)

    return factory


def _headless(shell: Any) -> bool:
    """Nobody can click (nbclient, papermill): no widget bar, a text log instead."""
    from skill_magics.notebook.approval.waiting import get_kernel, stdin_allowed

    kernel = get_kernel(shell)
    return kernel is not None and not stdin_allowed(kernel)


__all__ = [
    "comparison_bundle",
    "eval_report_bundle",
    "lab_progress",
    "transcript_bundle",
    "transcript_html",
    "trigger_report_bundle",
    "trigger_report_html",
]
