"""What a person is asked, and what they can answer. Values only: the gate (gate.py) decides.

An approver is any callable ``approver(request) -> Decision | str | Answer``; it may raise
ApprovalUnavailable (nobody can be asked) or ApprovalPending (the question stays open).

Example:
    >>> def approver(request: ApprovalRequest) -> Decision:
    ...     return Decision.YES_IN_SESSION

Several skills, one decision (``%skill_context a b``): :func:`combine_requests` makes one
request that carries each skill's own request in ``parts``. Its ``skill_name`` is the names
joined with ", " ("a, b"), its ``scripts`` every part's scripts in order with the path prefixed
by the skill name ("a/scripts/x.py": the path under the skills folder, since a skill's name is
its folder's), ``arguments``/``argv`` the parts' common value (None / () when they differ) and
``content_hash`` a hash of the parts' fingerprints. An approver that knows nothing of ``parts``
still sees every script that would run; one that does can show them skill by skill. Decisions
apply to every part: "Yes in session" approves each skill at its own fingerprint (as if asked
separately), No declines them all.

An approver may define ``decides_alone(request) -> bool``: True when it would answer
``request`` without asking anyone (configuration pre-approved the skill). Such skills are
decided on their own and left out of a combined request (see :func:`decides_alone`).
"""

from __future__ import annotations

import enum
import hashlib
import os
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from skill_magics.core.base.errors import PathSecurityError
from skill_magics.core.base.paths import open_inside
from skill_magics.core.base.visible import non_ascii_note
from skill_magics.core.installed.signature import Signature
from skill_magics.core.mcp.origin import McpOriginInfo
from skill_magics.core.run.launching.sandbox_profiles import SandboxInfo


class Decision(enum.StrEnum):
    """The three answers a person can give."""

    YES_ONCE = "yes_once"
    YES_IN_SESSION = "yes_in_session"
    NO = "no"

    @property
    def label(self) -> str:
        return {"yes_once": "Yes once", "yes_in_session": "Yes in session", "no": "No"}[self.value]


@dataclass(frozen=True)
class ScriptToApprove:
    """One script a request would run."""

    path: str  # relative to the skill base dir
    interpreter: str
    preview: str = ""  # the file's text (up to PREVIEW_MAX_BYTES), so people see what runs
    # The full command that runs: program (absolute), its flags, the script's real path, argv.
    command: tuple[str, ...] = ()
    # The program's real path when it differs from command[0] (a skill venv's python is
    # usually a symlink to some interpreter; this says which one really runs).
    program_realpath: str = ""
    lines: int = 0  # total lines of the script (the preview may hold fewer)
    size: int = 0  # bytes of the script
    cwd: str = ""  # the folder the run starts in ("": the skill folder)
    missing: tuple[str, ...] = ()  # packages/programs it needs that are not installed


PREVIEW_MAX_BYTES = 200_000  # how much of a script an approval request carries
BATCH_SAMPLE = 3  # items of a batch a request shows


@dataclass(frozen=True)
class BatchInfo:
    """A run repeated over many inputs: how many, and the first few (JSON values or argv)."""

    count: int
    sample: tuple[Any, ...] = ()


@dataclass(frozen=True)
class InstallInfo:
    """An environment install that must run first: the packages, where, and the command."""

    packages: tuple[str, ...]
    target: str = ""  # the environment's path
    command: tuple[str, ...] = ()


@dataclass(frozen=True)
class ScopeInfo:
    """Runs a *model* will choose later, all decided by this one answer (an evaluation):
    what for, and in how many agent runs at most. The request lists the scripts the model
    may call; it chooses each call's inputs itself, within this scope only."""

    purpose: str  # e.g. "output evaluation of 'csv-profiler' (iteration-3)"
    agent_runs: int  # conversations the answer covers
    sample: tuple[str, ...] = ()  # the first prompts

    def summary(self) -> str:
        runs = f"{self.agent_runs:,} agent run{'s' if self.agent_runs != 1 else ''}"
        return (
            f"{self.purpose}: in up to {runs} the model may call the scripts below with "
            "inputs it chooses; this one answer decides every such call"
        )


@dataclass(frozen=True)
class SkillInstallInfo:
    """Third-party skill files copied into a skills folder (``%skills install``, ``update``,
    ``sync``): from where, at which commit, every file, which of them are scripts. Nothing
    runs; a "Yes" lets the files be installed, each later run still asks."""

    action: str  # "install", "update" or "sync"
    source: str  # the URL or path, with the ref asked for
    commit: str = ""  # the resolved commit ("" for an archive or a folder)
    path: str = ""  # the skill's folder in the source
    target: str = ""  # the folder it is installed as
    files: tuple[tuple[str, int], ...] = ()  # (path, bytes) of every file
    scripts: tuple[str, ...] = ()  # the files that are scripts (entry points and helpers)
    tree: str = ""  # the tree digest the lock will record
    signature: str = ""  # who signed it, as verified (core/trust), or why it is unsigned
    replaces: str = ""  # what happens to a folder already there ("" when there is none)
    changes: tuple[str, ...] = ()  # an update: "added x", "changed y", "removed z"
    diff: str = ""  # an update: unified diff of the text files that changed
    staged: str = field(default="", compare=False)  # the approved copy the gate re-hashes

    @property
    def size(self) -> int:
        return sum(size for _path, size in self.files)


@dataclass(frozen=True)
class ProvenanceInfo:
    """Where an installed skill came from (its ``skills-lock.json``) and whether its files
    still match the lock: ``changes`` lists what differs (empty: they match)."""

    source: str
    commit: str = ""
    lock: str = ""  # the lock file's path
    changes: tuple[str, ...] = ()

    @property
    def matches(self) -> bool:
        return not self.changes


def _rank(info: SandboxInfo | None) -> int:
    return 0 if info is None else info.rank


def no_weaker(run: SandboxInfo | None, approved: SandboxInfo | None) -> bool:
    """Is ``run`` confined at least as much as the run that was ``approved``?

    A "Yes in session" given for a sandboxed run must not cover the same skill run with the
    sandbox off or under a profile of a lower rank, with network it did not have, or with
    other writable paths (docs/architecture.md, *Sandbox and secrets*). None means no sandbox.

    Example:
        >>> ro = SandboxInfo("read-only", False, ("<private TMPDIR>",))
        >>> no_weaker(ro, None), no_weaker(None, ro)
        (True, False)
    """
    if _rank(approved) == 0:
        return True  # approved with the user's full rights: anything is no weaker
    assert approved is not None
    if run is None or run.rank < approved.rank:
        return False
    if run.network and not approved.network:
        return False
    return set(run.writable) <= set(approved.writable)


def no_weaker_within(run: SandboxInfo | None, approved: SandboxInfo | None) -> bool:
    """Like :func:`no_weaker`, for runs inside an approved *folder*: each path ``run`` may
    write is one ``approved`` may write, or lies inside one (a scope approved for a
    workspace covers runs in its subfolders)."""
    if _rank(approved) == 0:
        return True
    assert approved is not None
    if run is None or run.rank < approved.rank:
        return False
    if run.network and not approved.network:
        return False
    allowed = [p.rstrip("/") for p in approved.writable]
    return all(
        any(path == base or path.startswith(base + "/") for base in allowed)
        for path in (p.rstrip("/") for p in run.writable)
    )


@dataclass(frozen=True)
class SecretsInfo:
    """The secrets a skill declares (names only, never values) and which are not set yet:
    those are asked for with a masked field before the run."""

    declared: tuple[str, ...]
    missing: tuple[str, ...] = ()


@dataclass(frozen=True)
class ApprovalRequest:
    """Everything a person needs to decide.

    ``parts`` is empty for one skill. A request for several skills at once (built by
    :func:`combine_requests`) holds each skill's own request there, in the order named; its
    other fields summarise them (see the module docstring).
    """

    skill_name: str
    scripts: tuple[ScriptToApprove, ...]
    arguments: Any = None  # JSON-able payload or None
    argv: tuple[str, ...] = ()
    content_hash: str = ""  # the skill's fingerprint (Skill.content_hash: every file of it)
    code: str | None = None  # for %%skillpy: the Python code that would run
    request_id: str = field(default="", compare=False)
    parts: tuple[ApprovalRequest, ...] = ()  # one request per skill of a combined request
    # What else the decision covers (shown in the same panel, decided by the same answer):
    batch: BatchInfo | None = None  # the scripts run once per item
    install: InstallInfo | None = None  # packages installed before the run
    skill_install: SkillInstallInfo | None = None  # skill files copied in (nothing runs)
    provenance: ProvenanceInfo | None = None  # an installed skill: its source, lock state
    mcp: McpOriginInfo | None = None  # an MCP server's skill: origin, digest-set binding
    # Who signed the skill (core/trust/installed.py: verified at install, found by digest) or
    # why it is unsigned; "Yes in session" binds to it too (store.py).
    signature: Signature | None = None
    sandbox: SandboxInfo | None = None  # the isolation the run gets
    secrets: SecretsInfo | None = None  # secrets passed to the run (names; missing ones asked)
    scope: ScopeInfo | None = None  # later runs a model chooses, decided by this answer
    # How the processes will start (launching/warm/): "warm ...", "cold ..."; "" not Python.
    # Shown, never part of what is approved: a warm run is the same run started faster.
    start: str = field(default="", compare=False)
    # What the fingerprint was made of (path -> digest), so the gate can tell a change of
    # code (the approval is for other code: refused) from data a run wrote meanwhile.
    entries: Mapping[str, str] | None = field(default=None, compare=False, repr=False)
    # The managed environment the skill's Python scripts run with (envdirs.environment_id;
    # "" for none): a rebuilt environment is other code, so a "Yes in session" ends with it.
    environment: str = ""

    @property
    def is_combined(self) -> bool:
        """Does this request decide for several skills at once?"""
        return bool(self.parts)

    @property
    def requests(self) -> tuple[ApprovalRequest, ...]:
        """The per-skill requests this decision covers: ``parts``, or (self,)."""
        return self.parts or (self,)

    @property
    def shares_inputs(self) -> bool:
        """Do all skills of this request get the same arguments and argv (then shown once)?"""
        return all(
            _same(part.arguments, self.arguments) and part.argv == self.argv
            for part in self.requests
        )

    @property
    def skill_names(self) -> tuple[str, ...]:
        """Every skill this request covers, in order."""
        return tuple(part.skill_name for part in self.requests)

    @property
    def name_notes(self) -> tuple[str, ...]:
        """One line per name with non-ASCII letters that a person might take for another:
        a skill's name, a package to install, a package or program a script lacks
        (``requ⟨U+0435⟩sts`` is not ``requests``). Approvers show them before the buttons."""
        notes: dict[str, None] = {}
        for part in self.requests:
            names = [("skill", part.skill_name)]
            if part.install is not None:
                names += [("package", p) for p in part.install.packages]
            names += [("needed", m) for s in part.scripts for m in s.missing]
            for kind, name in names:
                note = non_ascii_note(name)
                if note is not None:
                    notes[f"{kind} {note}"] = None
        return tuple(notes)


@dataclass(frozen=True)
class Answer:
    """An approver's reply and who gave it, e.g. ``Answer(Decision.YES_ONCE, "button 'Yes once'")``.

    An approver may return a plain Decision (or its string value) instead; the gate then
    records it as given "by approver".
    """

    decision: Decision
    by: str


Approver = Callable[[ApprovalRequest], "Decision | str | Answer"]


class Caller(enum.StrEnum):
    """Who made a call that may run something; decides what ``approver=None`` means
    (docs/architecture.md, *Who approves*)."""

    PERSON = "person"  # a person's own call: the Python API, %%skillrun, %skill_context, %%skillpy
    MODEL = "model"  # a call a model made: tools, LangChain, an agent loop


class _ManagerApprover:
    """The type of :data:`MANAGER_APPROVER`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "MANAGER_APPROVER"

    def __reduce__(self) -> str:
        return "MANAGER_APPROVER"  # one object, also after pickling


# The default of every ``approver=`` parameter: "the manager's approver" (``manager.approver``).
MANAGER_APPROVER = _ManagerApprover()
ApproverArg = Approver | None | _ManagerApprover


def combine_requests(parts: Sequence[ApprovalRequest]) -> ApprovalRequest:
    """One request deciding for several skills; a single request is returned unchanged.

    Parts keep their order (skills as named, scripts as referenced); combined parts are
    flattened. ``scripts`` lists every part's scripts with ``"{skill}/"`` before the path.
    """
    flat: list[ApprovalRequest] = []
    for part in parts:
        flat.extend(part.requests)
    if not flat:
        raise ValueError("combine_requests needs at least one request")
    if len(flat) == 1:
        return flat[0]
    if any(part.code is not None for part in flat):
        raise ValueError("requests that run Python code (%%skillpy) are not combined")
    first = flat[0]
    shared_arguments = (
        first.arguments if all(_same(p.arguments, first.arguments) for p in flat) else None
    )
    shared_argv = first.argv if all(p.argv == first.argv for p in flat) else ()
    digest = hashlib.sha256()
    for part in flat:
        digest.update(f"{part.skill_name}\0{part.content_hash}\0".encode("utf-8", "surrogatepass"))
    return ApprovalRequest(
        skill_name=", ".join(p.skill_name for p in flat),
        scripts=tuple(
            replace(script, path=f"{part.skill_name}/{script.path}")
            for part in flat
            for script in part.scripts
        ),
        arguments=shared_arguments,
        argv=shared_argv,
        content_hash=digest.hexdigest(),
        request_id=uuid.uuid4().hex,
        parts=tuple(flat),
    )


def decides_alone(approver: Approver | None, request: ApprovalRequest) -> bool:
    """Would ``approver`` answer ``request`` without asking anyone (configuration said yes)?

    Uses the approver's optional ``decides_alone(request)``; False when it has none or it
    fails (then the skill is asked about with the others, the safe side).
    """
    check = getattr(approver, "decides_alone", None)
    if check is None:
        return False
    try:
        return bool(check(request))
    except Exception:  # noqa: BLE001 - a broken hint must not decide anything
        return False


def _same(a: Any, b: Any) -> bool:
    if a is b:
        return True
    try:
        return bool(a == b) and type(a) is type(b)
    except Exception:  # noqa: BLE001 - e.g. arrays whose == is elementwise
        return False


def code_approval_hash(skill_fingerprint: str, code: str) -> str:
    """What "Yes in session" for code (``%%skillpy``) is keyed to: the skill's files AND this
    exact code, so it never approves other code or the skill's scripts."""
    text = f"{skill_fingerprint}\0python-c\0{code}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


INSTALL_LABEL = "<install>"  # the "script" an environment install is audited under


def install_approval_hash(skill_fingerprint: str, packages: Sequence[str]) -> str:
    """What "Yes in session" for an environment install is keyed to: the skill's files AND
    these packages, so it never approves the skill's scripts or other packages."""
    text = f"{skill_fingerprint}\0install\0" + "\0".join(packages)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def skill_install_hash(info: SkillInstallInfo) -> str:
    """What "Yes in session" for installing skill files is keyed to: the action, the source,
    the commit and the exact files (tree digest), so it never approves other files or runs."""
    text = f"skill-install\0{info.action}\0{info.source}\0{info.commit}\0{info.tree}"
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def scripts_content_hash(base_dir: Path, script_paths: Iterable[Path | str]) -> str:
    """SHA-256 over the relative paths and bytes of a skill's scripts (sorted, stable).

    Editing, adding or removing any script changes the hash, so a session approval lapses.
    Read as any skill file is (paths.open_inside): a link only while it stays inside the
    skill, never a FIFO or device (a script may have planted one under a script's name).
    """
    digest = hashlib.sha256()
    for rel in sorted(str(p) for p in script_paths):
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with os.fdopen(open_inside(rel, base_dir), "rb") as fh:
                while chunk := fh.read(1 << 20):
                    digest.update(chunk)
        except (OSError, PathSecurityError) as exc:  # outside, gone, unreadable, special
            digest.update(f"<unreadable:{type(exc).__name__}>".encode())
        digest.update(b"\0")
    return digest.hexdigest()


def coerce_decision(value: Decision | str | Answer) -> Decision:
    """Accept a Decision or its string value; anything else is a programming error."""
    if isinstance(value, Answer):
        return value.decision
    try:
        return Decision(value)
    except ValueError:
        raise ValueError(
            f"Approver returned {value!r}: return one of 'yes_once', 'yes_in_session', 'no'"
        ) from None


__all__ = [
    "Decision",
    "Answer",
    "BatchInfo",
    "InstallInfo",
    "SkillInstallInfo",
    "ProvenanceInfo",
    "McpOriginInfo",
    "SandboxInfo",
    "SecretsInfo",
    "ScopeInfo",
    "no_weaker",
    "no_weaker_within",
    "BATCH_SAMPLE",
    "ScriptToApprove",
    "ApprovalRequest",
    "Approver",
    "ApproverArg",
    "Caller",
    "MANAGER_APPROVER",
    "scripts_content_hash",
    "code_approval_hash",
    "install_approval_hash",
    "skill_install_hash",
    "INSTALL_LABEL",
    "coerce_decision",
    "combine_requests",
    "decides_alone",
    "PREVIEW_MAX_BYTES",
]
