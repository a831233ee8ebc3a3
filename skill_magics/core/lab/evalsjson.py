"""A skill's ``evals/evals.json`` read (docs/architecture.md, *The skill lab*): the cases
:func:`~skill_magics.core.lab.evals.run_evals` runs, checked as untrusted input (one line naming
the fix), and the input files an eval copies into its outputs folder."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.base import paths
from skill_magics.core.lab.workspace import (
    slug,
)

EVALS_FILE = "evals/evals.json"
FORMAT_HINT = (
    '{"skill_name": "...", "evals": [{"id": 1, "prompt": "...", "expected_output": "...", '
    '"files": [], "expectations": ["..."]}]}'
)


@dataclass(frozen=True)
class EvalCase:
    """One eval of evals.json."""

    id: Any
    name: str  # the folder is eval-<name>
    prompt: str
    expected_output: str = ""
    files: tuple[str, ...] = ()
    assertions: tuple[str, ...] = ()  # written as ``expectations``; both names are read

    @property
    def expectations(self) -> tuple[str, ...]:
        return self.assertions


# -- evals.json ----------------------------------------------------------------------------


def load_evals(skill_dir: Path, skill: str) -> list[EvalCase]:
    """The evals of ``skill_dir/evals/evals.json``, checked (files exist inside the skill,
    ids and folder names unique); ValueError in one line naming the fix otherwise."""
    path = skill_dir / EVALS_FILE
    if not path.is_file():
        raise ValueError(f"Skill '{skill}' has no {EVALS_FILE}: write one, e.g. {FORMAT_HINT}")
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path} is not readable JSON ({exc}): write {FORMAT_HINT}") from None
    items = data.get("evals") if isinstance(data, dict) else data
    if not isinstance(items, list) or not items:
        raise ValueError(f"{path} lists no evals: write {FORMAT_HINT}")
    cases: list[EvalCase] = []
    names: set[str] = set()
    ids: set[str] = set()
    for i, item in enumerate(items):
        cases.append(_case(skill_dir, item, i, f"{path.name} evals[{i}]", ids, names))
    return cases


def _case(
    skill_dir: Path, item: Any, i: int, where: str, ids: set[str], names: set[str]
) -> EvalCase:
    """Eval ``i`` (``where``), checked; its id and folder name are added to ``ids``, ``names``."""
    if not isinstance(item, dict):
        raise ValueError(f"{where} is a {type(item).__name__}: write {FORMAT_HINT}")
    prompt = item.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise ValueError(f"{where} has no 'prompt' text: write {FORMAT_HINT}")
    eval_id = item.get("id", item.get("eval_id", i + 1))
    if not isinstance(eval_id, (int, str)) or isinstance(eval_id, bool):
        raise ValueError(f"{where} 'id' is {eval_id!r}: use a number")
    if str(eval_id) in ids:
        raise ValueError(f"{where} repeats id {eval_id!r}: give each eval its own id")
    ids.add(str(eval_id))
    name = slug(item.get("name") or item.get("eval_name") or str(eval_id))
    if name in names:
        name = slug(f"{name}-{eval_id}")
    names.add(name)
    files = item.get("files") or []
    if not isinstance(files, list) or not all(isinstance(f, str) for f in files):
        raise ValueError(f"{where} 'files' must be a list of paths inside the skill")
    for rel in files:
        _source(skill_dir, rel, where)
    return EvalCase(
        id=eval_id,
        name=name,
        prompt=prompt,
        expected_output=str(item.get("expected_output") or ""),
        files=tuple(files),
        assertions=_assertions(item, where),
    )


def _assertions(item: Mapping[str, Any], where: str) -> tuple[str, ...]:
    """``assertions`` and/or ``expectations``: strings, or objects with their text in
    ``text``, ``assertion``, ``check``, ``description`` or ``name``."""
    out: list[str] = []
    for key in ("assertions", "expectations"):
        value = item.get(key)
        if value is None:
            continue
        if not isinstance(value, list):
            raise ValueError(f"{where} '{key}' must be a list of statements")
        for entry in value:
            if isinstance(entry, dict):
                text = next(
                    (
                        entry[k]
                        for k in ("text", "assertion", "check", "description", "name")
                        if isinstance(entry.get(k), str)
                    ),
                    None,
                )
            else:
                text = entry if isinstance(entry, str) else None
            if not text or not text.strip():
                raise ValueError(f"{where} '{key}' holds {entry!r}: write each as a sentence")
            if text not in out:
                out.append(text)
    return tuple(out)


def _source(skill_dir: Path, rel: str, where: str) -> Path:
    """The eval file ``rel`` inside the skill (refused when it leaves it or is missing)."""
    base = skill_dir.resolve()
    source = (skill_dir / rel).resolve()
    if not paths.inside(str(source), str(base)):
        raise ValueError(f"{where} file {rel!r} lies outside the skill: keep eval files in it")
    if not source.is_file():
        raise ValueError(f"{where} file {rel!r} does not exist in the skill")
    return source


def copy_inputs(skill_dir: Path, files: Sequence[str], outputs: Path) -> dict[str, tuple]:
    """Copy the eval's files into the run's folder (``evals/files/`` dropped from their
    path); relative path -> (size, mtime) of each copy, so created files can be told apart."""
    copied = {}
    for rel in files:
        source = _source(skill_dir, rel, "eval")
        name = rel.replace("\\", "/").removeprefix("./").removeprefix("evals/files/")
        target = outputs / name
        if not paths.inside(str(target.resolve()), str(outputs.resolve())):
            target = outputs / Path(rel).name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
        st = target.stat()
        copied[target.relative_to(outputs).as_posix()] = (st.st_size, st.st_mtime_ns)
    return copied


__all__ = ["EVALS_FILE", "FORMAT_HINT", "EvalCase", "copy_inputs", "load_evals"]
