"""Grading an evaluation run: a model judges each assertion, with evidence.

The grader gets the task, the expected output, the run's transcript and the text of its
output files, and answers with JSON: a verdict and its evidence per assertion, plus claims
it checked. The burden of proof is on the assertion (no evidence: failed). A reply that
cannot be read leaves the assertions ungraded (``passed: null``) with the reason as
evidence, never graded by guess.

Field names: this writes ``expectations`` (``[{text, passed, evidence}]``, what
skill-creator's ``aggregate_benchmark.py`` reads, agentskills PR #506); it reads
``expectations`` and the older ``assertion_results`` (entries with ``text`` or
``assertion``), in a grader's reply and in a ``grading.json`` (:func:`load_grading`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from skill_magics.core.lab.workspace import VIEWER_SKIPS
from skill_magics.core.base.safefs import read_files

MAX_FILE_CHARS = 20_000  # of one output file shown to the grader
MAX_FILES_CHARS = 60_000  # of all output files together
MAX_TRANSCRIPT_CHARS = 60_000
MAX_FILES = 200  # output files shown to the grader

GRADER_SYSTEM = (
    "You grade the work of an AI assistant against a list of expectations. For each "
    "expectation decide whether the transcript and the output files show it is met. Pass "
    "it only with concrete evidence (quote the text, name the file); when the evidence is "
    "missing, superficial or contradicts it, fail it. Also list factual claims the "
    "assistant made and whether the material verifies them. Answer with one JSON object "
    'and nothing else: {"expectations": [{"text": "<the expectation, verbatim>", '
    '"passed": true or false, "evidence": "..."}], "claims": [{"claim": "...", "type": '
    '"factual" or "process" or "quality", "verified": true or false, "evidence": "..."}]}'
)


def grading_prompt(
    prompt: str,
    expected_output: str,
    transcript_md: str,
    outputs: Path,
    expectations: list[str],
) -> str:
    """The user message for the grader (the expectations are the last section)."""
    parts = [
        "## Task given to the assistant",
        "",
        prompt,
        "",
        "## Expected output",
        "",
        expected_output or "(not described)",
        "",
        "## Transcript",
        "",
        _cap(transcript_md, MAX_TRANSCRIPT_CHARS),
        "",
        "## Output files",
        "",
        _files(outputs),
        "",
        "## Expectations",
        "",
    ]
    parts += [f"{i}. {text}" for i, text in enumerate(expectations, 1)]
    return "\n".join(parts)


def read_grading(
    text: str, expectations: list[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], str]:
    """(expectations as ``{text, passed, evidence}`` in the order given, claims, problem).

    Verdicts are matched to the expectations by text, else by position; one the grader
    left out, or gave no true/false for, is ``passed: None``. ``problem`` says why nothing
    could be read ("" when the reply was JSON)."""
    data = _json_object(text)
    if data is None:
        reason = "the grader's reply held no JSON object"
        return [_ungraded(e, reason) for e in expectations], [], reason
    verdicts = [v for v in _verdicts(data) if isinstance(v, dict)]
    by_text = {_verdict_text(v).strip(): v for v in verdicts}
    out = []
    for i, expectation in enumerate(expectations):
        verdict = by_text.get(expectation.strip())
        if verdict is None and i < len(verdicts) and not _verdict_text(verdicts[i]):
            verdict = verdicts[i]
        if verdict is None and i < len(verdicts) and len(verdicts) == len(expectations):
            verdict = verdicts[i]
        if verdict is None:
            out.append(_ungraded(expectation, "the grader gave no verdict for it"))
            continue
        passed = verdict.get("passed")
        evidence = str(verdict.get("evidence", "")).strip()
        if not isinstance(passed, bool):
            out.append(_ungraded(expectation, f"the grader's verdict was {passed!r}"))
            continue
        out.append({"text": expectation, "passed": passed, "evidence": evidence})
    claims = [
        {
            "claim": str(c.get("claim", "")),
            "type": str(c.get("type", "")),
            "verified": c.get("verified") if isinstance(c.get("verified"), bool) else None,
            "evidence": str(c.get("evidence", "")),
        }
        for c in data.get("claims") or []
        if isinstance(c, dict) and c.get("claim")
    ]
    return out, claims, ""


VERDICT_KEYS = ("expectations", "assertion_results")  # the new name first
_TEXT_KEYS = ("text", "expectation", "assertion")


def _verdicts(data: dict[str, Any]) -> list[Any]:
    for key in VERDICT_KEYS:
        value = data.get(key)
        if isinstance(value, list):
            return value
    return []


def _verdict_text(verdict: dict[str, Any]) -> str:
    return next((str(verdict[k]) for k in _TEXT_KEYS if isinstance(verdict.get(k), str)), "")


def load_grading(path: Path) -> dict[str, Any]:
    """A ``grading.json`` written by this or another tool, with its verdicts as
    ``expectations: [{text, passed, evidence}]`` whichever name it used (``assertion_results``
    with ``assertion`` texts: the older one); its other fields kept. ValueError in one line."""
    try:
        data = json.loads(Path(path).read_text("utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{path} is not readable JSON ({exc})") from None
    if not isinstance(data, dict) or not any(isinstance(data.get(k), list) for k in VERDICT_KEYS):
        raise ValueError(f"{path} has no 'expectations' (or 'assertion_results') list")
    out = {k: v for k, v in data.items() if k not in VERDICT_KEYS}
    out["expectations"] = [
        {
            "text": _verdict_text(v),
            "passed": v.get("passed") if isinstance(v.get("passed"), bool) else None,
            "evidence": str(v.get("evidence", "")),
        }
        for v in _verdicts(data)
        if isinstance(v, dict)
    ]
    if not isinstance(out.get("summary"), dict):
        out["summary"] = grading_summary(out["expectations"])
    return out


def ungraded(expectations: list[str], reason: str) -> list[dict[str, Any]]:
    return [_ungraded(e, reason) for e in expectations]


def grading_summary(expectations: list[dict[str, Any]]) -> dict[str, Any]:
    """``{passed, failed, total, pass_rate}``; pass_rate None when nothing was graded."""
    passed = sum(1 for e in expectations if e["passed"] is True)
    failed = sum(1 for e in expectations if e["passed"] is False)
    graded = passed + failed
    return {
        "passed": passed,
        "failed": failed,
        "total": len(expectations),
        "pass_rate": round(passed / graded, 4) if graded else None,
    }


def _ungraded(text: str, reason: str) -> dict[str, Any]:
    return {"text": text, "passed": None, "evidence": f"not graded: {reason}"}


def _json_object(text: str) -> dict[str, Any] | None:
    """The first JSON object in ``text`` (fenced or not)."""
    fenced = re.search(r"```(?:json)?\s*(\{.*?\})\s*```", text, re.S)
    candidates = [fenced.group(1)] if fenced else []
    start, end = text.find("{"), text.rfind("}")
    if 0 <= start < end:
        candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            value = json.loads(candidate)
        except json.JSONDecodeError:
            continue
        if isinstance(value, dict):
            return value
    return None


def _files(outputs: Path) -> str:
    """The run's output files for the grader: regular files inside ``outputs`` only, never
    through a link (a script may leave one to a file it could not read itself: the grader
    reads with the kernel's rights), bounded in count and size (core/base/safefs.py)."""
    if not outputs.is_dir() or outputs.is_symlink():
        return "(no output folder)"
    shown: list[str] = []
    budget = MAX_FILES_CHARS
    for found in read_files(
        outputs,
        max_files=MAX_FILES,
        max_bytes=MAX_FILE_CHARS * 4 + 4,  # UTF-8: at most 4 bytes a character
        max_total=MAX_FILES_CHARS * 4 + 4,
        skip=VIEWER_SKIPS,
    ):
        rel, size = found.rel, found.size
        try:
            text = found.head.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(found.head) - 4 or found.size == len(found.head):
                shown.append(f"### {rel} ({size:,} bytes, binary: not shown)")
                continue
            text = found.head[: exc.start].decode("utf-8")  # cut inside a character
        part = _cap(text, min(MAX_FILE_CHARS, max(budget, 0)))
        budget -= len(part)
        shown.append(f"### {rel} ({size:,} bytes)\n\n```\n{part}\n```")
    return "\n\n".join(shown) or "(none)"


def _cap(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[... {len(text) - limit:,} more characters not shown]"


__all__ = [
    "GRADER_SYSTEM",
    "grading_prompt",
    "grading_summary",
    "read_grading",
    "load_grading",
    "VERDICT_KEYS",
    "ungraded",
]
