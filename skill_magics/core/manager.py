"""SkillManager: where skills live, which one wins a name clash, and running their scripts.

Listing reads only each SKILL.md's frontmatter (progressive disclosure); bodies and scripts
load when a skill is first used. Running a script goes: resolve -> executor checks ->
approval -> run, and every refusal, decline or run is audited.

Example:
    >>> manager = SkillManager(["skills"])           # or SkillManager() for the default dirs
    >>> [m.name for m in manager.list_skills()]
    ['csv-profiler', 'text-tools']
    >>> manager.execute_skill_script("csv-profiler", "profile", {"path": "data/sample.csv"}).json()
"""

from __future__ import annotations

import difflib
import os
import threading
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from skill_magics.core import fingerprint
from skill_magics.core.catalog.detect import ScriptDetector
from skill_magics.core.catalog.frontmatter import load_skill_metadata
from skill_magics.core.catalog.skill import Skill
from skill_magics.core.errors import (
    ApprovalDeclined,
    ApprovalUnavailable,
    InterpreterNotAllowedError,
    ScriptNotFoundError,
    SkillMagicsError,
    SkillNotFoundError,
)
from skill_magics.core.interpreters import DEFAULT_ALLOWED, canonical
from skill_magics.core.models import ScriptExecutionResult, ScriptMetadata, SkillMetadata
from skill_magics.core.run.approval import (
    PREVIEW_MAX_BYTES,
    ApprovalRequest,
    ApprovalStore,
    Approver,
    Decision,
    ScriptToApprove,
)
from skill_magics.core.run.payload import normalize_argv

if TYPE_CHECKING:  # imported lazily at runtime: executor/audit are heavier and optional here
    from skill_magics.core.audit import AuditLog
    from skill_magics.core.run.executor import PreparedRun, ScriptExecutor

ENV_VAR = "SKILL_MAGICS_PATH"
DEFAULT_SUBDIRS = ("skills", ".agents/skills", ".claude/skills")
MAX_SCAN_DEPTH = 5
SKIP_DIRS = frozenset({"node_modules", "__pycache__", "venv", ".venv", "site-packages"})

_USE_DEFAULT: Any = object()  # "use self.approver" (None is a real choice: no approval asked)


def examples_dir() -> Path:
    """The bundled example skills (csv-profiler, text-tools, unit-converter, demo-behaviours)."""
    return Path(__file__).resolve().parent.parent / "examples" / "skills"


def default_skill_dirs(env: dict[str, str] | None = None) -> list[Path]:
    """``$SKILL_MAGICS_PATH`` entries, then ./skills, ./.agents/skills, ./.claude/skills, then ~."""
    env = os.environ if env is None else env
    dirs: list[Path] = []
    for entry in (env.get(ENV_VAR) or "").split(os.pathsep):
        if entry.strip():
            dirs.append(Path(entry.strip()))
    cwd = Path.cwd()
    home = Path.home()
    dirs.extend(cwd / sub for sub in DEFAULT_SUBDIRS)
    dirs.extend(home / sub for sub in DEFAULT_SUBDIRS)
    return dirs


@dataclass
class _Index:
    skills: dict[str, SkillMetadata] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # dir name -> why it was skipped


class _ExecutorSetting:
    """A manager attribute the executor is built from: assigning it rebuilds the executor."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.attr = "_" + name

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        return self if obj is None else getattr(obj, self.attr)

    def __set__(self, obj: Any, value: Any) -> None:
        _check_setting(self.attr[1:], value)
        with obj._lock:
            setattr(obj, self.attr, value)
            obj._executor = None


def _check_setting(name: str, value: Any) -> None:
    # Fail when the manager is configured, not at the first run (the executor is lazy).
    if name == "timeout":
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and 1 <= value <= 600
        if not ok:
            raise ValueError(f"timeout {value!r} is out of range: use 1 to 600 seconds")
    elif name == "max_output_size":
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"max_output_size {value!r} is invalid: use a number of bytes >= 0")


def _as_dirs(value: Any) -> list[Path]:
    if value is None:
        return default_skill_dirs()
    if isinstance(value, (str, os.PathLike)):
        return [Path(value)]  # one directory, not its characters
    return [Path(d) for d in value]


def _names(names: Sequence[str] | str) -> tuple[str, ...]:
    # "python3 bash" or "python3,bash" is a list written as one string, not 12 letters.
    if isinstance(names, str):
        return tuple(names.replace(",", " ").split())
    return tuple(str(n) for n in names)


class SkillManager:
    """Find skills in directories (earlier wins a name clash) and run their scripts safely.

    ``skill_dirs`` (paths, or one path) overrides the defaults; ``None`` uses
    :func:`default_skill_dirs`. ``approver=None`` means the Python caller decides: nothing is
    asked. Missing directories are ignored; bad skills are skipped with a warning.
    """

    def __init__(
        self,
        skill_dirs: Iterable[str | os.PathLike] | str | os.PathLike | None = None,
        *,
        timeout: float = 30,
        max_output_size: int = 10 * 2**20,
        allowed_interpreters: Sequence[str] | None = None,
        approver: Approver | None = None,
        inherit_env: bool = False,
        env_passthrough: Sequence[str] = (),
        audit_log: str | os.PathLike | None = None,
    ) -> None:
        dirs = _as_dirs(skill_dirs)
        self._lock = threading.RLock()
        self._index: _Index | None = None
        self._skills: dict[str, Skill] = {}
        self._executor: ScriptExecutor | None = None
        self._audit: AuditLog | None = None
        self._dirs = _dedupe([_absolute(d) for d in dirs])
        # Executor settings: assigning any of them later rebuilds the executor on next use.
        self.timeout = timeout
        self.max_output_size = max_output_size
        self.allowed_interpreters = allowed_interpreters
        self.inherit_env = inherit_env
        self.env_passthrough = env_passthrough
        self.audit_log = audit_log
        self.approver: Approver | None = approver
        self.approvals = ApprovalStore()

    timeout = _ExecutorSetting()
    max_output_size = _ExecutorSetting()
    inherit_env = _ExecutorSetting()

    @property
    def env_passthrough(self) -> tuple[str, ...]:
        return self._env_passthrough

    @env_passthrough.setter
    def env_passthrough(self, names: Sequence[str] | str) -> None:
        with self._lock:
            self._env_passthrough = _names(names)
            self._executor = None

    @property
    def allowed_interpreters(self) -> tuple[str, ...] | None:
        """Interpreters scripts may use (None: the default python3, bash, sh, node)."""
        return self._allowed_interpreters

    @allowed_interpreters.setter
    def allowed_interpreters(self, names: Sequence[str] | str | None) -> None:
        with self._lock:
            self._allowed_interpreters = None if names is None else _names(names)
            allowed = self._allowed_interpreters or DEFAULT_ALLOWED
            # .ts files count as scripts only when tsx may run them.
            allow_ts = "tsx" in {canonical(a) for a in allowed}
            self._detector = ScriptDetector(allow_typescript=allow_ts)
            self._executor = None
            self._skills = {}  # their cached script lists used the old detector

    @property
    def audit_log(self) -> str | os.PathLike | None:
        """JSONL file every audit record is appended to (None: logging + memory only)."""
        return self._audit_log

    @audit_log.setter
    def audit_log(self, path: str | os.PathLike | None) -> None:
        with self._lock:
            self._audit_log = path
            if self._audit is not None:
                # Keep the history (and the executor's reference): only the file changes.
                self._audit.jsonl_path = Path(path).expanduser() if path is not None else None

    def __repr__(self) -> str:
        return f"SkillManager(skill_dirs={[str(d) for d in self._dirs]!r})"

    # -- directories -----------------------------------------------------------------------

    @property
    def skill_dirs(self) -> list[Path]:
        """Directories searched, in precedence order (absolute; may not all exist).

        Assign a new list to replace them all (None: the defaults); the next use rescans.
        """
        return list(self._dirs)

    @skill_dirs.setter
    def skill_dirs(self, dirs: Iterable[str | os.PathLike] | str | os.PathLike | None) -> None:
        paths = _as_dirs(dirs)
        with self._lock:
            self._dirs = _dedupe([_absolute(p) for p in paths])
            self._invalidate()

    def add_dir(self, path: str | os.PathLike, *, first: bool = False) -> Path:
        """Add a directory (last in precedence, or first with ``first=True``) and rescan."""
        new = _absolute(Path(path))
        with self._lock:
            dirs = [d for d in self._dirs if d != new]
            dirs.insert(0, new) if first else dirs.append(new)
            self._dirs = dirs
            self._invalidate()
        return new

    def remove_dir(self, path: str | os.PathLike) -> bool:
        """Stop searching a directory and rescan; False when it was not configured."""
        gone = _absolute(Path(path))
        with self._lock:
            if gone not in self._dirs:
                return False
            self._dirs = [d for d in self._dirs if d != gone]
            self._invalidate()
        return True

    def reload(self) -> None:
        """Forget everything loaded and scan the directories again on next use."""
        with self._lock:
            self._invalidate()

    def _invalidate(self) -> None:
        self._index = None
        self._skills = {}

    # -- listing ---------------------------------------------------------------------------

    def list_skills(self) -> list[SkillMetadata]:
        """Every usable skill's metadata, sorted by name. Reads frontmatter only."""
        index = self._ensure_index()
        return [index.skills[name] for name in sorted(index.skills)]

    @property
    def warnings(self) -> list[str]:
        """Skipped skills, name clashes and spec warnings, each naming the path and reason."""
        return list(self._ensure_index().warnings)

    def get_skill(self, name: str) -> Skill:
        """The skill called ``name`` (body and scripts load on first use, then cached)."""
        index = self._ensure_index()
        with self._lock:
            skill = self._skills.get(name)
            if skill is not None:
                return skill
            metadata = index.skills.get(name)
            if metadata is None:
                raise SkillNotFoundError(self._not_found_message(name, index))
            skill = Skill(metadata, detector=self._detector)
            self._skills[name] = skill
            return skill

    def _not_found_message(self, name: str, index: _Index) -> str:
        if name in index.skipped:
            return f"Skill {name!r} was skipped: {index.skipped[name]}"
        close = difflib.get_close_matches(name, list(index.skills), n=3, cutoff=0.6)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else "."
        where = ", ".join(str(d) for d in self._dirs) or "(no directories)"
        return (
            f"No skill named {name!r}{hint} List skills with manager.list_skills() or %skills; "
            f"searched {where}: add a directory with add_dir(path) or ${ENV_VAR}"
        )

    def _ensure_index(self) -> _Index:
        with self._lock:
            if self._index is None:
                self._index = self._scan()
            return self._index

    def _scan(self) -> _Index:
        index = _Index()
        owner: dict[str, Path] = {}  # skill name -> winning SKILL.md
        seen_skills: set[tuple] = set()  # so overlapping dirs do not look like clashes
        for root in self._dirs:
            for skill_md, identity in _find_skill_files(root):
                if identity in seen_skills:
                    continue
                seen_skills.add(identity)
                try:
                    metadata = load_skill_metadata(skill_md)
                except (SkillMagicsError, OSError, UnicodeError) as exc:
                    reason = _reason(exc)
                    index.warnings.append(f"Skipped {skill_md}: {reason}")
                    index.skipped.setdefault(skill_md.parent.name, f"{skill_md}: {reason}")
                    continue
                winner = owner.get(metadata.name)
                if winner is not None:
                    index.warnings.append(
                        f"Skill {metadata.name!r} at {skill_md} is shadowed by {winner} "
                        "(earlier in skill_dirs); rename one or remove a directory to use it"
                    )
                    continue
                for warning in metadata.warnings:
                    index.warnings.append(f"{skill_md}: {warning}")
                owner[metadata.name] = skill_md
                index.skills[metadata.name] = metadata
        for name in index.skills:
            index.skipped.pop(name, None)
        return index

    # -- execution -------------------------------------------------------------------------

    @property
    def audit(self) -> AuditLog:
        """The audit log every attempt is recorded in (stdlib logging + optional JSONL)."""
        with self._lock:
            if self._audit is None:
                from skill_magics.core.audit import AuditLog

                self._audit = AuditLog(jsonl_path=self.audit_log)
            return self._audit

    @property
    def executor(self) -> ScriptExecutor:
        """The ScriptExecutor configured from this manager's settings (created on first use)."""
        with self._lock:
            if self._executor is None:
                from skill_magics.core.run.executor import ScriptExecutor

                self._executor = ScriptExecutor(
                    timeout=self.timeout,
                    max_output_size=self.max_output_size,
                    allowed_interpreters=self.allowed_interpreters,
                    inherit_env=self.inherit_env,
                    env_passthrough=self.env_passthrough,
                    audit=self.audit,
                )
                self._executor.on_run = self._keep_session_approval
            return self._executor

    def _keep_session_approval(self, prepared: PreparedRun) -> Any:
        """Before a run of a skill approved "in session": note its files, and after the run
        move the approval to the new fingerprint when the run changed only data files (an
        output file in its cwd), so those do not lapse it. A run that changed code (rewrote a
        script, wrote a module it may import: ``fingerprint.is_code``) lapses it: the next run
        asks again. Changes made by anyone before the run lapse it too; a change made by
        another process *during* the run is attributed to the run (files are not traced)."""
        name = prepared.skill_name
        if name not in self.approvals.approvals():
            return None  # the common case: nothing to keep, no fingerprint computed
        try:
            skill = self.get_skill(name)
            before = fingerprint.skill_entries(skill.base_dir)
        except (SkillMagicsError, OSError):
            return None
        before_hash = fingerprint.fingerprint_of(before)
        if not self.approvals.is_approved(name, before_hash):
            return None
        skipped_before = fingerprint.skipped_entries(skill.base_dir)

        def finish() -> None:
            after = fingerprint.skill_entries(skill.base_dir)
            changed = fingerprint.changed_entries(before, after)
            changed += fingerprint.changed_entries(
                skipped_before, fingerprint.skipped_entries(skill.base_dir)
            )
            code = [rel for rel in changed if fingerprint.is_code(skill.base_dir, rel)]
            if not code:
                self.approvals.rebase(name, before_hash, fingerprint.fingerprint_of(after))
                return
            shown = ", ".join(code[:5]) + (f" (+{len(code) - 5} more)" if len(code) > 5 else "")
            # Revoke, not just leave it at the old hash: changes in venv/ or __pycache__/ do
            # not move the fingerprint, so the old approval would still match.
            self.approvals.revoke(name, before_hash)
            reason = (
                f"the run changed code in the skill ({shown}): the session approval lapsed; "
                "the next run asks again"
            )
            self.audit.event(name, prepared.script_rel, None, "approval_lapsed", reason=reason)

        return finish

    def resolve_script(
        self, skill_name: str, script: str | os.PathLike
    ) -> tuple[Skill, ScriptMetadata]:
        """(skill, script) for a skill name and a script stem, file name or relative path."""
        skill = self.get_skill(skill_name)
        return skill, skill.find_script(script)

    def approval_request(
        self,
        skill_name: str,
        scripts: Sequence[ScriptMetadata],
        arguments: Any = None,
        argv: Sequence[str] = (),
        code: str | None = None,
        *,
        prepared: Sequence[PreparedRun | None] | None = None,
    ) -> ApprovalRequest:
        """What a person is asked to approve: scripts with their text and the exact command
        (program path, flags, script, argv), arguments, and the skill's fingerprint.

        ``prepared`` (aligned with ``scripts``) gives each script's checked run, so the
        command shown is the one that will run, with that script's own argv. Without it the
        command is worked out here with ``argv`` (nothing is audited; checks happen later).
        """
        skill = self.get_skill(skill_name)
        # The executor's rules (a lone string is refused, not split into characters), so the
        # request shows exactly the argv that will run.
        argv_t = normalize_argv(() if argv is None else argv)
        items = []
        for i, s in enumerate(scripts):
            run = prepared[i] if prepared is not None and i < len(prepared) else None
            command = run.command if run is not None else self._command_for(skill, s, argv_t)
            preview, lines, size = _preview(skill.base_dir / s.path)
            items.append(
                ScriptToApprove(
                    path=s.path.as_posix(),
                    interpreter=s.interpreter,
                    preview=preview,
                    command=tuple(command),
                    program_realpath=_realpath_if_different(command[0]) if command else "",
                    lines=lines,
                    size=size,
                )
            )
        return ApprovalRequest(
            skill_name=skill_name,
            scripts=tuple(items),
            arguments=arguments,
            argv=argv_t,
            content_hash=skill.content_hash(),
            code=code,
            request_id=uuid.uuid4().hex,
        )

    def _command_for(
        self, skill: Skill, script: ScriptMetadata, argv: tuple[str, ...]
    ) -> tuple[str, ...]:
        try:
            return self.executor.command_for(skill.base_dir / script.path, skill.base_dir) + argv
        except (SkillMagicsError, OSError, ValueError):
            return ()  # it would be refused anyway; the refusal is audited when it is tried

    def prepare_skill_script(
        self,
        skill_name: str,
        script: str | os.PathLike,
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
    ) -> PreparedRun:
        """Resolve and check a run without asking anyone or running it (refusals audited)."""
        return self._prepare(skill_name, script, arguments, argv, timeout)[1]

    def execute_skill_script(
        self,
        skill_name: str,
        script: str | os.PathLike,
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        approver: Approver | None = _USE_DEFAULT,
    ) -> ScriptExecutionResult:
        """Run one script: resolve -> checks -> approval -> run. Raises before anything runs.

        ``script`` is a stem (``"profile"``), file name (``"profile.py"``) or relative path
        (``"scripts/profile.py"``). ``approver`` defaults to ``self.approver``; None asks nobody.
        """
        prepared = self.approved_run(
            skill_name, script, arguments, argv=argv, timeout=timeout, approver=approver
        )
        return self.executor.run(prepared)

    def approved_run(
        self,
        skill_name: str,
        script: str | os.PathLike,
        arguments: Any = None,
        *,
        argv: Sequence[str] | None = None,
        timeout: float | None = None,
        approver: Approver | None = _USE_DEFAULT,
    ) -> PreparedRun:
        """The first half of :meth:`execute_skill_script`: checks and approval, no run.

        Returns the checked run for ``executor.run`` / ``run_async``; raises (audited) when
        a check refuses or the approval is No or unavailable. Blocking (file scans, hashing,
        an approver that waits for a person): async callers run it in a worker thread.
        """
        meta, prepared = self._prepare(skill_name, script, arguments, argv, timeout)
        if approver is _USE_DEFAULT:
            approver = self.approver
        if approver is not None:
            request = self.approval_request(
                skill_name, [meta], arguments, argv or (), prepared=[prepared]
            )
            self.ask_approval(request, approver)
        return prepared

    def ask_approval(
        self, request: ApprovalRequest, approver: Approver | None = _USE_DEFAULT
    ) -> Decision | None:
        """Ask ``approver`` (default ``self.approver``; None: nobody is asked, returns None).

        A stored "Yes in session" for the same scripts counts. A No or unavailable approval
        is audited for every script (or the code) in ``request`` and then raised
        (ApprovalDeclined / ApprovalUnavailable): nothing may run. A combined request (several
        skills, ``request.parts``) is audited per skill, each script under its own skill.
        """
        if approver is _USE_DEFAULT:
            approver = self.approver
        try:
            return self.approvals.ask(approver, request)
        except (ApprovalDeclined, ApprovalUnavailable) as exc:
            outcome = "declined" if isinstance(exc, ApprovalDeclined) else "approval_unavailable"
            self.audit_decision(request, outcome, f"{type(exc).__name__}: {exc}")
            raise

    def request_is_current(self, request: ApprovalRequest) -> bool:
        """Are the skills' files still the ones ``request`` showed? An approval given for it
        must not run changed code (the person decided on the old one)."""
        for part in request.requests:
            try:
                if self.get_skill(part.skill_name).content_hash() != part.content_hash:
                    return False
            except (SkillMagicsError, OSError):
                return False
        return True

    def audit_decision(self, request: ApprovalRequest, outcome: str, reason: str) -> None:
        """One audit record per script (or the code) of every skill ``request`` covers."""
        from skill_magics.core.audit import CODE_LABEL, arguments_preview, code_preview

        for part in request.requests:
            if part.code is not None:
                scripts, preview = [CODE_LABEL], code_preview(part.code)
            else:
                scripts = [s.path for s in part.scripts]
                preview = arguments_preview(part.arguments, part.argv)
            for script in scripts:
                self.audit.event(part.skill_name, script, preview, outcome, reason=reason)

    def _prepare(
        self,
        skill_name: str,
        script: str | os.PathLike,
        arguments: Any,
        argv: Sequence[str] | None,
        timeout: float | None,
    ) -> tuple[ScriptMetadata, PreparedRun]:
        started = time.monotonic()
        try:
            skill, meta = self.resolve_script(skill_name, script)
            # SKILL.md may have been edited since listing (e.g. Bash dropped from
            # allowed-tools): check against what it says now, not what it said then.
            metadata = skill.current_metadata()
        except SkillMagicsError as exc:
            error: SkillMagicsError = exc
            if isinstance(exc, ScriptNotFoundError) and not self._detector.allow_typescript:
                # A .ts file is not listed while tsx is not allowed: say that, not "no script".
                ts = _typescript_script(self.get_skill(skill_name), script)
                if ts is not None:
                    error = InterpreterNotAllowedError(
                        f"Interpreter 'tsx' is not allowed for {ts.path.as_posix()} in skill "
                        f"{skill_name!r}: add 'tsx' to allowed_interpreters to run it"
                    )
            # Never reached the executor, so audit the refusal here.
            from skill_magics.core.audit import arguments_preview

            self.audit.refused(
                skill_name,
                os.fspath(script),
                arguments_preview(arguments, argv),
                error,
                duration_ms=(time.monotonic() - started) * 1000,
            )
            if error is exc:
                raise
            raise error from None
        prepared = self.executor.prepare(  # audits its own refusals
            meta.path,  # relative: resolved against the skill dir, and audited as given
            arguments,  # None: the executor sends {} (or nothing in argv mode)
            skill.base_dir,
            metadata,
            argv=argv,  # unchanged: the executor validates it (and audits a bad one)
            timeout=timeout,
        )
        return meta, prepared


def _typescript_script(skill: Skill, script: str | os.PathLike) -> ScriptMetadata | None:
    """The ``.ts`` script ``script`` names, looked up as if tsx were allowed (the same rules
    as any lookup), or None: while tsx is not allowed such a file is not listed at all."""
    with_ts = Skill(skill.metadata, detector=ScriptDetector(allow_typescript=True))
    try:
        found = with_ts.find_script(script)
    except SkillMagicsError:
        return None
    return found if found.script_type == "typescript" else None


def _find_skill_files(root: Path, max_depth: int = MAX_SCAN_DEPTH) -> list[tuple[Path, tuple]]:
    """(SKILL.md, identity) pairs under ``root`` (root itself may be a skill); depth-bounded.

    The identity is the directory's (st_dev, st_ino): it detects symlink loops and the same
    skill reached twice, at one stat per directory (realpath would lstat every component).
    """
    found: list[tuple[Path, tuple]] = []
    visited: set[tuple[int, int]] = set()

    def walk(path: str, depth: int) -> None:
        try:
            st = os.stat(path)
            key = (st.st_dev, st.st_ino)
            if key in visited:
                return  # symlink loop or a directory reached twice
            visited.add(key)
            with os.scandir(path) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError:
            return  # missing or unreadable: not an error for a search path
        for entry in entries:
            if entry.name in ("SKILL.md", "skill.md") and _is_file(entry):
                found.append((Path(entry.path), key))
                return  # a skill's own subdirectories are its scripts and data, not skills
        if depth >= max_depth:
            return
        for entry in entries:
            if entry.name.startswith(".") or entry.name in SKIP_DIRS:
                continue
            try:
                is_dir = entry.is_dir()
            except OSError:
                continue
            if is_dir:
                walk(entry.path, depth + 1)

    walk(os.fspath(root), 0)
    return found


def _is_file(entry: os.DirEntry) -> bool:
    try:
        return entry.is_file()
    except OSError:
        return False


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def _dedupe(paths: list[Path]) -> list[Path]:
    out: list[Path] = []
    seen: set[str] = set()
    for p in paths:
        key = os.path.realpath(p)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError):
        return f"cannot read it ({exc.strerror or exc})"
    if isinstance(exc, UnicodeError):
        return "it is not UTF-8 text"
    return str(exc)


def _preview(path: Path, limit: int = PREVIEW_MAX_BYTES) -> tuple[str, int, int]:
    """(text of the file up to ``limit`` bytes, its total line count, its size in bytes).

    The person approving sees the real size of what is hidden beyond the preview.
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(limit)
            lines = head.count(b"\n")
            size = len(head)
            last = head
            while chunk := fh.read(1 << 20):  # count the rest without keeping it
                lines += chunk.count(b"\n")
                size += len(chunk)
                last = chunk
    except OSError as exc:
        return f"<cannot read: {exc.strerror or exc}>", 0, 0
    if last and not last.endswith(b"\n"):
        lines += 1  # a last line without a newline is still a line
    if size > len(head):
        # Do not end inside a multibyte character or a CRLF pair.
        head = head[: head.rfind(b"\n") + 1] or head
    text = head.decode("utf-8", "replace").replace("\r\n", "\n")
    return text, lines, size


def _realpath_if_different(program: str) -> str:
    real = os.path.realpath(program)
    return real if real != program else ""


__all__ = ["SkillManager", "default_skill_dirs", "examples_dir", "ENV_VAR", "DEFAULT_SUBDIRS"]
