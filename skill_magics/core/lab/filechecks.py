"""The file checks of core/lab/validation.py (docs/architecture.md, *The skill lab*): files
SKILL.md references that are missing or outside the skill, scripts an agent cannot run, and
secret-like strings in any text file of the skill; and :class:`Problem`, what every check
reports. Never runs anything; reads only the skill's own files (text up to 1 MiB each)."""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from skill_magics.core.base.interpreters import (
    DEFAULT_ALLOWED,
    EXTENSIONS,
    canonical,
    interpreter_for,
    parse_shebang,
    read_first_line,
)
from skill_magics.core.catalog.kinds import may_run
from skill_magics.core.catalog.references import PROSE_MD_RE, case_match, find_references

MAX_SCAN_BYTES = 1 << 20  # per file for the secrets scan
MAX_FILES = 2_000  # files scanned per skill
SKIP_DIRS = frozenset({".git", "__pycache__", "node_modules", "venv", ".venv"})

# (what it is, pattern). Specific token formats only, plus assignments of long literals to
# key-like names, so ordinary prose does not trigger it.
SECRET_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("an AWS access key id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b")),
    ("an Anthropic API key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("an OpenAI API key", re.compile(r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}")),
    ("a GitHub token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_\w{22,})")),
    ("a Slack token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}")),
    ("a Google API key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}")),
    ("a Stripe secret key", re.compile(r"\b[rs]k_live_[0-9A-Za-z]{16,}")),
    ("a private key", re.compile(r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----")),
    (
        "a hard-coded secret",
        re.compile(
            r"(?i)\b[\w-]*(?:api[_-]?key|secret|token|passw(?:or)?d)[\w-]*[\"']?\s*[:=]\s*"
            r"[\"']([A-Za-z0-9_\-+/=.]{16,})[\"']"
        ),
    ),
)
_PLACEHOLDER = re.compile(r"(?i)x{6,}|your[_-]|example|placeholder|changeme|<|\$\{|\.\.\.")
_DOC_PATH = re.compile(r"(?<![\w/.\-])((?:references|assets)/[\w.\-/]*\w\.\w+)")
_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*:")


@dataclass(frozen=True)
class Problem:
    """One problem: where (file relative to the skill, line), what, and the fix."""

    file: str
    message: str
    fix: str
    code: str  # a stable tag for tests and tools, e.g. "name-lowercase", "secret"
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.message}. Fix: {self.fix}"
        return " ".join(text.split())  # one line, whatever a value held


# -- references -----------------------------------------------------------------------------


def _does_nothing(file: str, ref: Any) -> Problem:
    what = (
        "a package's __init__.py"
        if ref.path.endswith("__init__.py")
        else "a module holding only imports, definitions and constants"
    )
    return Problem(
        file,
        f"runs {ref.path}, which is {what}: running it does nothing, so it is refused",
        "run the script that imports it, or give it an `if __name__ == '__main__':` block "
        "that does the work",
        "not-runnable",
        line=ref.line,
    )


def reference_problems(skill_dir: Path, file: str, text: str, body: str) -> list[Problem]:
    first_line = text.replace("\r\n", "\n").count("\n", 0, max(text.find(body[:200]), 0)) + 1
    problems = []
    for ref in find_references(body, skill_dir, source=file, first_line=first_line):
        if ref.error is None:
            if ref.as_command and ref.path.endswith(".py") and not may_run(skill_dir, ref.path):
                problems.append(_does_nothing(file, ref))
            continue
        if not ref.inside:
            message, fix = (
                f"{ref.raw} points outside the skill",
                "ship the file inside the skill folder and use a relative path",
            )
        elif not ref.exists:
            message, fix = (
                f"{ref.path} is referenced but does not exist",
                "fix the path or add the file",
            )
        else:
            continue  # exists but cannot run: reported by the script checks
        problems.append(Problem(file, message, fix, "missing-reference", line=ref.line))
    seen: set[str] = set()
    lines = body.split("\n")
    for number, line in enumerate(lines, start=first_line):
        targets = [m.group(1) for m in _DOC_PATH.finditer(line)]
        targets += [m.group(1) for m in _LINK.finditer(line)]
        for m in PROSE_MD_RE.finditer(line):  # "read FORMS.md": a mismatch only, if any
            name = m.group("name")
            if name not in seen and not (skill_dir / name).exists() and case_match(skill_dir, name):
                targets.append(name)
        for target in targets:
            clean = target.split("#", 1)[0].split("?", 1)[0]
            if not clean or _SCHEME.match(target) or target.startswith("#") or clean in seen:
                continue
            if Path(clean).suffix.lstrip(".") in {e.lstrip(".") for e in EXTENSIONS}:
                continue  # scripts: checked by find_references above
            seen.add(clean)
            if clean.startswith(("/", "~")) or ".." in Path(clean).parts:
                problems.append(
                    Problem(
                        file,
                        f"{clean} points outside the skill",
                        "ship the file inside the skill folder and use a relative path",
                        "missing-reference",
                        line=number,
                    )
                )
            elif not (skill_dir / clean).exists() and case_match(skill_dir, clean):
                problems.append(
                    Problem(
                        file,
                        f"{clean} is named but the file is {case_match(skill_dir, clean)}",
                        "write the name with the file's case: Linux and a model's sandbox "
                        "are case-sensitive (it is read here anyway)",
                        "case-mismatch",
                        line=number,
                    )
                )
            elif not (skill_dir / clean).exists():
                problems.append(
                    Problem(
                        file,
                        f"{clean} is referenced but does not exist",
                        "fix the path or add the file",
                        "missing-reference",
                        line=number,
                    )
                )
    return problems


# -- scripts --------------------------------------------------------------------------------


def _walk(skill_dir: Path) -> Iterable[Path]:
    count = 0
    for root, dirs, files in os.walk(skill_dir, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            count += 1
            if count > MAX_FILES:
                return
            yield Path(root) / name


def script_problems(skill_dir: Path, body: str) -> list[Problem]:
    problems: list[Problem] = []
    direct = set(re.findall(r"(?:^|[\s`(])\./([\w.\-/]+)", body))
    candidates = (
        sorted(p for p in (skill_dir / "scripts").rglob("*") if p.is_file())
        if (skill_dir / "scripts").is_dir()
        else []
    )
    candidates += [
        skill_dir / rel
        for rel in sorted(direct)
        if (skill_dir / rel).is_file() and not rel.startswith("scripts/")
    ]
    for path in candidates:
        rel = path.relative_to(skill_dir).as_posix()
        if any(part in SKIP_DIRS for part in Path(rel).parts):
            continue
        try:
            mode = path.stat().st_mode
        except OSError:
            continue
        executable = bool(mode & (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH))
        first = read_first_line(path)
        shebang = parse_shebang(first)
        spec = interpreter_for(path, first)
        known_ext = path.suffix.lower() in EXTENSIONS
        if spec is None:
            if executable or rel in direct:
                problems.append(
                    Problem(
                        rel,
                        "no interpreter we know (no known extension, no shebang)",
                        "add a shebang line such as '#!/usr/bin/env python3' or use "
                        ".py/.sh/.js/.rb/.pl",
                        "no-interpreter",
                    )
                )
            continue
        if first.startswith("#!") and _raw_first_line(path).endswith(b"\r"):
            problems.append(
                Problem(
                    rel,
                    "the shebang line ends in a carriage return (CRLF): the kernel looks for "
                    "an interpreter named with '\\r'",
                    "convert the file to LF line endings",
                    "shebang-crlf",
                    line=1,
                )
            )
        name = canonical(spec.interpreter)
        program = spec.argv[0] if shebang and not known_ext else spec.interpreter
        if name not in DEFAULT_ALLOWED:
            problems.append(
                Problem(
                    rel,
                    f"runs with {name!r}, which scripts may use only when allowed_interpreters "
                    "includes it",
                    f"rewrite it for {', '.join(DEFAULT_ALLOWED)} or allow {name!r} "
                    "(%config SkillMagics.allowed_interpreters)",
                    "interpreter-not-allowed",
                )
            )
        if name != "python3" and shutil.which(program) is None and not os.path.isfile(program):
            problems.append(
                Problem(
                    rel,
                    f"its interpreter {program!r} is not installed here",
                    f"install {program!r} or rewrite the script for {', '.join(DEFAULT_ALLOWED)}",
                    "interpreter-missing",
                )
            )
        if rel in direct and not executable:
            problems.append(
                Problem(
                    rel,
                    f"SKILL.md runs it as ./{rel} but it is not executable",
                    f"chmod +x {rel}",
                    "not-executable",
                )
            )
    return problems


def _raw_first_line(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(256).split(b"\n", 1)[0]
    except OSError:
        return b""


# -- secrets --------------------------------------------------------------------------------


def _mask(value: str) -> str:
    return value[:4] + "…" + value[-2:] if len(value) > 10 else value[:2] + "…"


def secret_problems(skill_dir: Path) -> list[Problem]:
    problems: list[Problem] = []
    for path in _walk(skill_dir):
        try:
            if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_SCAN_BYTES:
                continue
            data = path.read_bytes()
        except OSError:
            continue
        if b"\0" in data[:8192]:
            continue  # binary
        text = data.decode("utf-8", "replace")
        rel = path.relative_to(skill_dir).as_posix()
        reported: set[int] = set()
        for what, pattern in SECRET_PATTERNS:
            for m in pattern.finditer(text):
                value = m.group(m.lastindex or 0)
                line = text.count("\n", 0, m.start()) + 1
                if line in reported or _PLACEHOLDER.search(value):
                    continue
                reported.add(line)
                problems.append(
                    Problem(
                        rel,
                        f"looks like {what} ({_mask(value)})",
                        "remove it, rotate the key, and have the script read it from an "
                        "environment variable (SkillMagics.env_passthrough)",
                        "secret",
                        line=line,
                    )
                )
    return problems


__all__ = [
    "MAX_FILES",
    "MAX_SCAN_BYTES",
    "SECRET_PATTERNS",
    "SKIP_DIRS",
    "Problem",
    "reference_problems",
    "script_problems",
    "secret_problems",
]
