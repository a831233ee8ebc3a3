"""Trigger evaluation: does the model activate a skill for the queries that need it?

For each query (skill-creator's trigger eval set: ``[{"query", "should_trigger"}]``, a
DataFrame with those columns, or the path of such a JSON file), ``runs`` requests are sent,
each a fresh conversation with the system prompt, ``<available_skills>`` and tools a real
client gives (core/lab/offer.py). A run *triggers* when the model's first reply activates the skill
(``activate_skill`` with its name) or calls one of its script tools. Nothing is run: only
the first reply is read, so no approval is needed.

- ``trigger_rate`` is triggers / answered runs; a query passes when the rate is at least
  ``threshold`` (should trigger) or below it (should not). Provider errors and timeouts are
  counted per query as ``errors``, apart from non-triggers: they never make a query pass (a
  query with no answered run fails and is counted as ``unanswered``).
- ``description=`` evaluates another description without touching SKILL.md: it replaces the
  skill's description everywhere the model sees it (its ``<available_skills>`` entry, its
  script tools).
- ``holdout=0.4`` splits the queries into train and test, stratified (positives and
  negatives apart) and seeded: ``round(n * holdout)`` of each class go to test, at least one
  and never all of a class with two or more. Summaries are given for both parts.
- ``max_calls`` / ``max_tokens_total`` are hard caps (core/lab/budget.py): once one is
  reached no further request is sent, and the runs not sent are marked ``not_run``. Runs go
  round by round (every query once, then every query again), so a cap leaves each query
  with as many runs as the budget allowed.
"""

from __future__ import annotations

import json
import os
import random
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from skill_magics.core.base.deprecation import deprecation_message
from skill_magics.core.base.errors import ModelCallError
from skill_magics.core.lab.agent import now_iso
from skill_magics.core.lab.budget import Caps
from skill_magics.core.lab.clients import Provider, Reply, provider_for
from skill_magics.core.lab.drive import Loop, drive, drive_async, model_call, sync_provider
from skill_magics.core.lab.offer import Offer, make_offer
from skill_magics.core.lab.options import TriggerOptions, chosen
from skill_magics.core.lab.progress import LabProgress, Tracker
from skill_magics.core.manager import SkillManager
from skill_magics.core.prompt.available_skills import model_visible, opted_out
from skill_magics.core.trace import hooks as traced

TRIGGERED = "triggered"
NOT_TRIGGERED = "not_triggered"
ERROR = "error"
NOT_RUN = "not_run"
FORMAT_HINT = (
    'skill-creator\'s trigger eval set: a list of {"query": "...", "should_trigger": true}'
)


@dataclass(frozen=True)
class TriggerQuery:
    """One query; ``part`` is ``train`` or ``test`` with a holdout, else ""."""

    query: str
    should_trigger: bool
    part: str = ""


@dataclass(frozen=True)
class TriggerRun:
    """One request for one query: its outcome, the tools the first reply called."""

    query_index: int  # index into TriggerReport.queries (``.query`` there is the text)
    run: int  # 1, 2, ...
    status: str  # triggered, not_triggered, error, not_run
    called: tuple[str, ...] = ()  # tool names (activations as activate_skill:<name>)
    error: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    requests: int = 1  # HTTP requests it took, retries included (0: not run)

    @property
    def query(self) -> int:
        """Deprecated: the old name of ``query_index`` (a query is its text elsewhere)."""
        message = deprecation_message("TriggerRun.query", "TriggerRun.query_index")
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return self.query_index


@dataclass(frozen=True)
class QueryResult:
    """A query's runs summed up."""

    query: str
    should_trigger: bool
    part: str
    runs: int  # answered runs
    triggers: int
    errors: int
    not_run: int
    trigger_rate: float | None  # None when no run was answered
    passed: bool

    def run_eval(self) -> dict[str, Any]:
        """This result as skill-creator's ``run_eval`` writes one (plus ``errors``)."""
        return {
            "query": self.query,
            "should_trigger": self.should_trigger,
            "trigger_rate": self.trigger_rate if self.trigger_rate is not None else 0.0,
            "triggers": self.triggers,
            "runs": self.runs,
            "pass": self.passed,
            "errors": self.errors,
        }


@dataclass
class TriggerReport:
    """What :func:`evaluate_triggers` found; see the module docstring for the rules."""

    skill: str
    description: str
    description_overridden: bool
    provider: str
    model: str
    threshold: float
    runs_per_query: int
    queries: list[TriggerQuery]
    runs: list[TriggerRun]
    holdout: float | None = None
    seed: int = 42
    stopped: str = ""  # why runs were not sent (a cap), "" when all were
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    started_at: str = ""
    seconds: float = 0.0
    skills: tuple[str, ...] = field(default=())

    # -- per query ---------------------------------------------------------------------------

    @property
    def results(self) -> list[QueryResult]:
        by_query: dict[int, list[TriggerRun]] = {i: [] for i in range(len(self.queries))}
        for run in self.runs:
            by_query[run.query_index].append(run)
        return [self._result(q, by_query[i]) for i, q in enumerate(self.queries)]

    def _result(self, q: TriggerQuery, runs: list[TriggerRun]) -> QueryResult:
        answered = [r for r in runs if r.status in (TRIGGERED, NOT_TRIGGERED)]
        triggers = sum(1 for r in answered if r.status == TRIGGERED)
        rate = triggers / len(answered) if answered else None
        if rate is None:
            passed = False  # errors never make a query pass
        elif q.should_trigger:
            passed = rate >= self.threshold
        else:
            passed = rate < self.threshold
        return QueryResult(
            query=q.query,
            should_trigger=q.should_trigger,
            part=q.part,
            runs=len(answered),
            triggers=triggers,
            errors=sum(1 for r in runs if r.status == ERROR),
            not_run=sum(1 for r in runs if r.status == NOT_RUN),
            trigger_rate=rate,
            passed=passed,
        )

    # -- summaries ---------------------------------------------------------------------------

    @property
    def summary(self) -> dict[str, Any]:
        """precision, recall, accuracy, errors, calls, tokens (and the counts behind them);
        with a holdout also ``train`` and ``test``: the same for each part."""
        results = self.results
        out = summarize(results, self.runs, range(len(self.queries)))
        if self.holdout:
            for part in ("train", "test"):
                picked = [i for i, q in enumerate(self.queries) if q.part == part]
                out[part] = summarize([results[i] for i in picked], self.runs, picked)
        return out

    def to_pandas(self) -> Any:
        """One row per query: query, should_trigger, runs, triggers, errors, trigger_rate,
        passed (and part, not_run)."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("TriggerReport.to_pandas needs pandas: pip install pandas") from None
        rows = [
            {
                "query": r.query,
                "should_trigger": r.should_trigger,
                "runs": r.runs,
                "triggers": r.triggers,
                "errors": r.errors,
                "trigger_rate": r.trigger_rate,
                "passed": r.passed,
                "part": r.part,
                "not_run": r.not_run,
            }
            for r in self.results
        ]
        return pd.DataFrame(rows)

    def to_json(self) -> dict[str, Any]:
        """skill-creator's ``run_eval`` output: ``{skill_name, description, results: [{query,
        should_trigger, trigger_rate, triggers, runs, pass}], summary: {total, passed,
        failed}}`` (each result also has ``errors``). With a holdout, also ``holdout`` and
        the train/test fields its ``run_loop`` history uses (``train_results``,
        ``test_results``, ``train_passed``, ``train_total``, ``test_passed``,
        ``test_total``)."""
        results = self.results
        passed = sum(1 for r in results if r.passed)
        data: dict[str, Any] = {
            "skill_name": self.skill,
            "description": self.description,
            "results": [r.run_eval() for r in results],
            "summary": {"total": len(results), "passed": passed, "failed": len(results) - passed},
        }
        if self.holdout:
            data["holdout"] = self.holdout
            for part in ("train", "test"):
                chosen = [r for r in results if r.part == part]
                data[f"{part}_results"] = [r.run_eval() for r in chosen]
                data[f"{part}_passed"] = sum(1 for r in chosen if r.passed)
                data[f"{part}_total"] = len(chosen)
        return data

    def save_json(self, path: str | os.PathLike[str]) -> Path:
        """Write :meth:`to_json` to ``path`` (UTF-8, indented); the path written."""
        target = Path(path)
        tmp = target.with_name(f".{target.name}.tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n", "utf-8")
        os.replace(tmp, target)
        return target

    def chart(self) -> Any:
        """A bar chart of the trigger rate per query (an SVG; shows itself in Jupyter)."""
        from skill_magics.core.lab.chart import trigger_chart

        return trigger_chart(self)

    def compare(self, other: TriggerReport) -> TriggerComparison:
        """This report (A) next to ``other`` (B), query by query: e.g. two descriptions of
        the same skill on the same queries."""
        return TriggerComparison(self, other)

    # -- text ----------------------------------------------------------------------------------

    def headline(self) -> str:
        s = self.summary
        bits = [
            f"{s['passed']}/{s['total']} queries passed",
            f"precision {_pct(s['precision'])}",
            f"recall {_pct(s['recall'])}",
            f"accuracy {_pct(s['accuracy'])}",
            f"{s['errors']} error{'s' if s['errors'] != 1 else ''}",
            f"{s['calls']} calls",
            f"{s['tokens']:,} tokens",
        ]
        return " · ".join(bits)

    def text(self) -> str:
        source = "override" if self.description_overridden else "SKILL.md"
        lines = [
            f"Trigger evaluation of '{self.skill}' · {self.provider} {self.model} · "
            f"{self.runs_per_query} runs per query · threshold {self.threshold:g}",
            f"description ({source}): {self.description}",
            self.headline(),
        ]
        if self.holdout:
            for part in ("train", "test"):
                p = self.summary[part]
                lines.append(
                    f"  {part}: {p['passed']}/{p['total']} passed · precision "
                    f"{_pct(p['precision'])} · recall {_pct(p['recall'])} · accuracy "
                    f"{_pct(p['accuracy'])}"
                )
        if self.stopped:
            lines.append(f"stopped: {self.stopped}")
        for r in self.results:
            mark = "PASS" if r.passed else "FAIL"
            rate = "-" if r.trigger_rate is None else f"{r.triggers}/{r.runs}"
            extra = f" · {r.errors} errors" if r.errors else ""
            extra += f" · {r.not_run} not run" if r.not_run else ""
            want = "should" if r.should_trigger else "should not"
            part = f" [{r.part}]" if r.part else ""
            lines.append(f"  [{mark}] {rate:>5} {want} trigger{part}{extra}: {_short(r.query)}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"<TriggerReport '{self.skill}': {self.headline()}>"


@dataclass
class TriggerComparison:
    """Two trigger reports side by side (A: the first, B: the other)."""

    a: TriggerReport
    b: TriggerReport

    def rows(self) -> list[dict[str, Any]]:
        theirs = {(r.query, r.should_trigger): r for r in self.b.results}
        out = []
        for mine in self.a.results:
            other = theirs.get((mine.query, mine.should_trigger))
            if other is None:
                change = "only in A"
            elif mine.passed == other.passed:
                change = "same"
            else:
                change = "fixed in B" if other.passed else "broken in B"
            out.append(
                {
                    "query": mine.query,
                    "should_trigger": mine.should_trigger,
                    "rate_a": mine.trigger_rate,
                    "rate_b": None if other is None else other.trigger_rate,
                    "passed_a": mine.passed,
                    "passed_b": None if other is None else other.passed,
                    "change": change,
                }
            )
        known = {(r.query, r.should_trigger) for r in self.a.results}
        for other in self.b.results:
            if (other.query, other.should_trigger) not in known:
                out.append(
                    {
                        "query": other.query,
                        "should_trigger": other.should_trigger,
                        "rate_a": None,
                        "rate_b": other.trigger_rate,
                        "passed_a": None,
                        "passed_b": other.passed,
                        "change": "only in B",
                    }
                )
        return out

    def metrics(self) -> list[tuple[str, Any, Any]]:
        """(metric, A, B) for the headline numbers."""
        sa, sb = self.a.summary, self.b.summary
        names = ("passed", "precision", "recall", "accuracy", "errors", "calls", "tokens")
        return [(name, sa[name], sb[name]) for name in names]

    def to_pandas(self) -> Any:
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("TriggerComparison.to_pandas needs pandas") from None
        return pd.DataFrame(self.rows())

    def text(self) -> str:
        lines = [
            f"A: {self.a.description}",
            f"B: {self.b.description}",
            f"{'metric':<10} {'A':>8} {'B':>8}",
        ]
        for name, va, vb in self.metrics():
            lines.append(f"{name:<10} {_fmt(name, va):>8} {_fmt(name, vb):>8}")
        for row in self.rows():
            if row["change"] != "same":
                lines.append(f"  {row['change']}: {_short(row['query'])}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.text()


# -- the evaluation ------------------------------------------------------------------------------


def evaluate_triggers(
    client: Any,
    manager: SkillManager,
    skill: str,
    queries: Any,
    options: TriggerOptions | None = None,
    *,
    on_progress: Callable[[LabProgress], object] | None = None,
    **choices: Any,
) -> TriggerReport:
    """Measure how often ``skill`` triggers for ``queries``; see the module docstring.

    ``options``: a :class:`~.options.TriggerOptions` (model, runs, threshold, description,
    the other ``skills`` offered: None for every skill a model may use, as a real client
    would list them; ``skill`` is always offered); keywords such as ``model=`` fill or
    replace its fields. ``client`` is a sync client (an async one:
    ``await evaluate_triggers_async(...)``).
    """
    provider = sync_provider(client, "evaluate_triggers")
    opts = chosen(TriggerOptions, options, choices)
    with traced.lab("evaluate_triggers", (skill,), opts.model, f"evaluate_triggers {skill}"):
        return drive(_prepare(provider, manager, skill, queries, opts, on_progress))


async def evaluate_triggers_async(
    client: Any,
    manager: SkillManager,
    skill: str,
    queries: Any,
    options: TriggerOptions | None = None,
    *,
    on_progress: Callable[[LabProgress], object] | None = None,
    **choices: Any,
) -> TriggerReport:
    """:func:`evaluate_triggers` as a coroutine, for sync and async clients alike."""
    opts = chosen(TriggerOptions, options, choices)
    loop = _prepare(provider_for(client), manager, skill, queries, opts, on_progress)
    with traced.lab("evaluate_triggers", (skill,), opts.model, f"evaluate_triggers {skill}"):
        return await drive_async(loop)


def _prepare(
    provider: Provider,
    manager: SkillManager,
    skill: str,
    queries: Any,
    opts: TriggerOptions,
    on_progress: Callable[[LabProgress], object] | None,
) -> Loop[TriggerReport]:
    """Check everything before anything is sent; the evaluation loop."""
    meta = manager.get_skill(skill).metadata  # SkillNotFoundError for a typo
    if opted_out(meta):
        raise ValueError(
            f"'{skill}' says disable-model-invocation: true, so no model is ever offered it: "
            "it cannot trigger; remove that line to evaluate it"
        )
    items = load_queries(queries)
    if opts.holdout is not None:
        items = split_holdout(items, opts.holdout, opts.seed)
    offered = list(model_visible(manager) if opts.skills is None else opts.skills)
    if skill not in offered:
        offered.append(skill)
    description = opts.description
    overrides = {skill: description} if description is not None else None
    offer = make_offer(manager, offered, system=opts.system, descriptions=overrides)
    caps = Caps(opts.max_calls, opts.max_tokens_total)
    report = TriggerReport(
        skill=skill,
        description=description if description is not None else meta.description,
        description_overridden=description is not None,
        provider=provider.name,
        model=opts.model,
        threshold=opts.threshold,
        runs_per_query=opts.runs,
        queries=items,
        runs=[],
        holdout=opts.holdout,
        seed=opts.seed,
        skills=offer.skills,
    )
    tracker = Tracker(len(items) * opts.runs, f"triggers of {skill}", on_progress)
    return _evaluate(provider, report, offer, caps, opts.max_tokens, tracker)


def _evaluate(
    provider: Provider,
    report: TriggerReport,
    offer: Offer,
    caps: Caps,
    max_tokens: int,
    tracker: Tracker,
) -> Loop[TriggerReport]:
    report.started_at = now_iso()
    began = time.monotonic()
    tools = offer.tools(provider)
    tracker.start()
    try:
        for run in range(1, report.runs_per_query + 1):
            for index, item in enumerate(report.queries):
                reason = caps.exhausted()
                if reason:
                    report.stopped = reason
                    report.runs.append(TriggerRun(index, run, NOT_RUN, requests=0))
                    continue
                kwargs = provider.request(
                    model=report.model,
                    system=offer.system,
                    messages=[provider.user_message(item.query)],
                    tools=tools,
                    max_tokens=caps.clamp(max_tokens),
                )
                t0, before = time.monotonic(), caps.calls
                try:
                    reply: Reply = yield from model_call(provider, kwargs, caps)
                except ModelCallError as exc:
                    report.runs.append(
                        TriggerRun(
                            index,
                            run,
                            ERROR,
                            error=str(exc),
                            seconds=time.monotonic() - t0,
                            requests=caps.calls - before,
                        )
                    )
                    tracker.step(failed=True)
                    continue
                caps.used(reply.input_tokens, reply.output_tokens)
                hit, called = triggered(reply, offer, report.skill)
                report.runs.append(
                    TriggerRun(
                        index,
                        run,
                        TRIGGERED if hit else NOT_TRIGGERED,
                        called,
                        "",
                        reply.input_tokens,
                        reply.output_tokens,
                        time.monotonic() - t0,
                        caps.calls - before,
                    )
                )
                tracker.step()
    finally:
        report.calls = caps.calls
        report.input_tokens, report.output_tokens = caps.input_tokens, caps.output_tokens
        report.seconds = time.monotonic() - began
        not_sent = sum(1 for r in report.runs if r.status == NOT_RUN)
        tail = f"; {not_sent} runs not sent: {report.stopped}" if not_sent else ""
        tracker.finish(f"{report.headline()}{tail}")
    return report


def triggered(reply: Reply, offer: Offer, skill: str) -> tuple[bool, tuple[str, ...]]:
    """(did the reply activate ``skill`` or call one of its tools, the tools it called)."""
    hit = False
    called = []
    for use in reply.tool_uses:
        kind, target, _ = offer.target(use.name, use.input)
        called.append(f"{use.name}:{target}" if kind == "activation" else use.name)
        if target == skill and kind in ("activation", "script"):
            hit = True
    return hit, tuple(called)


# -- queries -------------------------------------------------------------------------------------


def load_queries(queries: Any) -> list[TriggerQuery]:
    """The queries as TriggerQuery items, from a list of dicts, a DataFrame with ``query`` and
    ``should_trigger`` columns, or the path of a JSON file holding such a list."""
    records: Iterable[Any]
    if isinstance(queries, (str, os.PathLike)):
        path = Path(queries)
        if not path.is_file():
            raise ValueError(f"No queries file at {path}: give {FORMAT_HINT}, or its path")
        try:
            records = json.loads(path.read_text("utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path} is not readable JSON ({exc}): write {FORMAT_HINT}") from None
    elif hasattr(queries, "to_dict") and hasattr(queries, "columns"):
        records = queries.to_dict(orient="records")
    elif isinstance(queries, Mapping) or isinstance(queries, (bytes, bytearray)):
        raise ValueError(f"queries must be a list, not a {type(queries).__name__}: {FORMAT_HINT}")
    else:
        records = queries
    if not isinstance(records, Iterable) or isinstance(records, (str, Mapping)):
        raise ValueError(f"queries must be a list: {FORMAT_HINT}")
    items = []
    for i, record in enumerate(records):
        if not isinstance(record, Mapping):
            raise ValueError(f"queries[{i}] is a {type(record).__name__}: {FORMAT_HINT}")
        query = record.get("query")
        flag = record.get("should_trigger")
        if not isinstance(query, str) or not query.strip():
            raise ValueError(f"queries[{i}] has no 'query' text: {FORMAT_HINT}")
        if not (isinstance(flag, bool) or type(flag).__name__ == "bool_"):
            raise ValueError(
                f"queries[{i}] 'should_trigger' is {flag!r}: use true or false ({FORMAT_HINT})"
            )
        items.append(TriggerQuery(query, bool(flag)))
    if not items:
        raise ValueError(f"No queries given: {FORMAT_HINT}")
    return items


def split_holdout(items: list[TriggerQuery], holdout: float, seed: int) -> list[TriggerQuery]:
    """The items, each marked ``train`` or ``test``: a seeded split stratified by
    should_trigger (see the module docstring for the counts). Order is kept."""
    if isinstance(holdout, bool) or not 0 < float(holdout) < 1:
        raise ValueError(f"holdout={holdout!r}: use a fraction between 0 and 1, e.g. 0.4")
    rng = random.Random(seed)
    test: set[int] = set()
    for flag in (True, False):
        members = [i for i, item in enumerate(items) if item.should_trigger is flag]
        if len(members) < 2:
            continue  # a lone example stays in train: the test part cannot take a whole class
        count = min(max(round(len(members) * holdout), 1), len(members) - 1)
        rng.shuffle(members)
        test.update(members[:count])
    return [
        TriggerQuery(item.query, item.should_trigger, "test" if i in test else "train")
        for i, item in enumerate(items)
    ]


def summarize(
    results: Sequence[QueryResult], runs: Sequence[TriggerRun], indexes: Iterable[int]
) -> dict[str, Any]:
    """The summary numbers of ``results`` (the queries at ``indexes`` of the report)."""
    answered = [r for r in results if r.trigger_rate is not None]
    # (should trigger, passed): (T, T) a true positive, (T, F) a miss, (F, F) a false alarm.
    seen = Counter((r.should_trigger, r.passed) for r in answered)
    tp, fn, fp, tn = seen[True, True], seen[True, False], seen[False, False], seen[False, True]
    wanted = set(indexes)
    mine = [r for r in runs if r.query_index in wanted]
    statuses = Counter(r.status for r in mine)
    sent = [r for r in mine if r.status != NOT_RUN]
    input_tokens = sum(r.input_tokens for r in sent)
    output_tokens = sum(r.output_tokens for r in sent)
    passed = sum(r.passed for r in results)
    return {
        "total": len(results),
        "passed": passed,
        "failed": len(results) - passed,
        "precision": _ratio(tp, tp + fp),
        "recall": _ratio(tp, tp + fn),
        "accuracy": _ratio(tp + tn, len(answered)),
        "errors": statuses[ERROR],
        "unanswered": len(results) - len(answered),
        "not_run": statuses[NOT_RUN],
        "calls": sum(r.requests for r in sent),  # on the wire: retries included
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "tokens": input_tokens + output_tokens,
    }


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _fmt(name: str, value: Any) -> str:
    if name in ("precision", "recall", "accuracy"):
        return _pct(value)
    return f"{value:,}" if isinstance(value, int) else str(value)


def _short(text: str, limit: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


__all__ = [
    "QueryResult",
    "TriggerComparison",
    "TriggerOptions",
    "TriggerQuery",
    "TriggerReport",
    "TriggerRun",
    "evaluate_triggers",
    "evaluate_triggers_async",
    "load_queries",
    "split_holdout",
    "summarize",
    "triggered",
]
