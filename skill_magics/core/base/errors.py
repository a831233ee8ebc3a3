"""One exception tree. Every message says what happened and what to do about it.

Example:
    >>> raise InterpreterNotFoundError(
    ...     "Interpreter 'node' not found in PATH for scripts/build.js: "
    ...     "install Node.js or remove 'node' from allowed_interpreters")
    Traceback (most recent call last):
    skill_magics.core.base.errors.InterpreterNotFoundError: Interpreter 'node' not found in PATH ...
"""

from __future__ import annotations

from skill_magics.core.base.visible import visible


class SkillMagicsError(Exception):
    """Base of every error skill_magics raises on purpose.

    Its text is always one line: a name or path taken from a skill or from the caller may
    hold newlines, terminal escapes or bidi overrides, and those are shown visibly (``\\n``,
    ``\\x1b``, ``⟨U+202E⟩``) instead of breaking or forging the line.

    ``magic`` is the same message in the words of the magics (``%skills add DIR`` where the
    text says ``manager.add_dir(path)``): a magic shows :meth:`magic_text`, Python ``str()``.
    """

    magic: str | None = None

    def __init__(self, *args: object, magic: str | None = None) -> None:
        super().__init__(*args)
        if magic is not None:
            self.magic = magic

    def __str__(self) -> str:
        return visible(super().__str__())

    def magic_text(self) -> str:
        """The message for a magic's user (one line; ``str()`` when there is no other)."""
        return visible(self.magic) if self.magic is not None else str(self)


def magic_words(exc: BaseException) -> str:
    """``exc``'s message as a magic's user should read it (see SkillMagicsError.magic)."""
    return exc.magic_text() if isinstance(exc, SkillMagicsError) else str(exc)


class SkillNotFoundError(SkillMagicsError, LookupError):
    """No skill of that name in the configured directories. ``skipped``: why a folder of
    that name was left out (a clash, a bad SKILL.md), else empty; ``name``: the name asked
    for ("" when not known)."""

    skipped: str = ""
    name: str = ""

    def __init__(
        self, *args: object, magic: str | None = None, skipped: str = "", name: str = ""
    ) -> None:
        super().__init__(*args, magic=magic)
        self.skipped = skipped
        self.name = name

    def model_text(self, name: str) -> str:
        """The message for a model (an envelope's ``<error>``): neither the local folders
        searched nor a Python call or magic it cannot make."""
        if self.skipped:
            return visible(f"Skill {name!r} cannot be used: {self.skipped}")
        return visible(f"No skill named {name!r} is available")


class ScriptNotFoundError(SkillMagicsError, LookupError):
    """The skill has no script matching the name, file name or path given."""


class AmbiguousScriptError(SkillMagicsError, LookupError):
    """Two or more scripts share the stem that was asked for."""


class SkillParseError(SkillMagicsError, ValueError):
    """SKILL.md cannot be read as frontmatter + body."""


class PathSecurityError(SkillMagicsError, PermissionError):
    """A path resolves outside the skill directory (traversal, absolute, symlink)."""


class ScriptPermissionError(SkillMagicsError, PermissionError):
    """The script has setuid/setgid bits or is not a regular file."""


class InterpreterNotFoundError(SkillMagicsError, FileNotFoundError):
    """The interpreter a script needs is not installed (not on PATH)."""


class InterpreterNotAllowedError(SkillMagicsError, PermissionError):
    """The interpreter a script needs is not in allowed_interpreters."""


class ToolRestrictionError(SkillMagicsError, PermissionError):
    """The skill's allowed-tools does not include Bash, so its scripts may not run."""


class ArgumentSerializationError(SkillMagicsError, ValueError):
    """The arguments cannot be encoded as strict JSON."""


class ArgumentSizeError(SkillMagicsError, ValueError):
    """The encoded arguments exceed the size limit."""


class ApprovalDeclined(SkillMagicsError):
    """The person asked said No."""


class ApprovalUnavailable(SkillMagicsError):
    """Nobody can be asked (headless run, no TTY, wait timed out)."""


class ApprovalStale(SkillMagicsError, PermissionError):
    """The skill's files changed between the approval request and the run: the approval
    was for other code, so nothing ran."""


class ApprovalPending(ApprovalUnavailable):
    """The question stays open after the caller stopped waiting (a notebook cell returned a
    pending result): ``decision`` is what will deliver the answer later, an object with
    ``on_decision(callback)`` calling ``callback(Decision, by)`` once (the approval panel)."""

    def __init__(self, message: str, decision: object) -> None:
        super().__init__(message)
        self.decision = decision


class SandboxUnavailableError(SkillMagicsError, PermissionError):
    """A sandbox mode was asked for explicitly and cannot be had here (no bubblewrap, not
    permitted, not Linux): nothing ran, and nothing runs without the sandbox instead."""


class SecretMissingError(SkillMagicsError, LookupError):
    """A skill declares a secret that nobody provided: the run would lack it, so it did not
    start."""


class RunInterrupted(SkillMagicsError):
    """A kernel interrupt (or Ctrl-C) stopped a run or an approval wait; the script's
    process group was killed, or nothing ran."""

    def _render_traceback_(self) -> list[str]:
        # IPython's hook: show this one line instead of a traceback through our frames
        return [f"{type(self).__name__}: {self}"]


class BatchInterrupted(RunInterrupted):
    """A batch was interrupted (Ctrl-C, Kernel > Interrupt): every running process group was
    killed and the items that had not started are ``cancelled``; ``result`` holds them all."""

    def __init__(self, message: str, result: object = None) -> None:
        super().__init__(message)
        self.result = result


class WarmStateError(SkillMagicsError, RuntimeError):
    """A warm server was moved between two states no event links (a bug here, never a
    skill's doing): the transition table in core/run/launching/warm/server.py says what may follow
    what."""


class HelperScriptError(SkillMagicsError, LookupError):
    """The script does nothing when run: an ``__init__.py``, or a module holding only
    imports, definitions and constants (catalog/kinds.py). The message names the scripts
    that run."""


class WorkingDirectoryError(SkillMagicsError, ValueError):
    """The working directory asked for a run is not "skill", "workspace" or a folder."""


class EnvironmentBuildError(SkillMagicsError, RuntimeError):
    """Building a skill's managed environment failed, or was refused before it started (a
    requirement that names no distribution); nothing half-built is used."""


class SkillNameError(SkillMagicsError, ValueError):
    """A skill's name cannot be one folder name (``/``, ``..``, a control character): the
    skill is listed with a warning, but nothing of it runs until its name is fixed."""


class SkillTooDeepError(SkillMagicsError):
    """The skill nests folders deeper than its fingerprint walks (fingerprint.MAX_DEPTH): a
    change down there could not be seen, so nothing of the skill may be approved or run."""


class SourceError(SkillMagicsError, ValueError):
    """Skills cannot be installed from this source (a bad URL, ref or path, a failed fetch,
    no skill in it); nothing was written."""


class UnsafeArchiveError(SourceError):
    """A .skill/.zip archive holds something that is never extracted (an absolute path,
    ``..``, a link, a device file) or exceeds a size or file-count limit; nothing was
    written."""


class SkillExistsError(SkillMagicsError, FileExistsError):
    """A skill folder of that name already exists with other files; it is only replaced when
    asked to (``force=True``, ``--force``)."""


class LockFileError(SkillMagicsError, ValueError):
    """``skills-lock.json`` is missing or unreadable, or the source no longer gives the
    files it pins; nothing was written."""


class ModelCallError(SkillMagicsError, RuntimeError):
    """A request to the model's API failed (an HTTP error status, no connection, a timeout).

    ``kind`` is ``"status"``, ``"connection"``, ``"timeout"`` or ``"reply"`` (an answer that
    is not a well-formed message of the API's schema); ``status_code`` is the HTTP status for
    ``"status"`` (else None); ``retry_after`` the seconds the API asked to wait before a
    retry (its ``retry-after-ms`` / ``retry-after`` header, when between 0 and 60 s, as the
    SDKs read it). The skill lab counts these apart from the model's answers (core/lab)."""

    def __init__(
        self,
        message: str,
        kind: str = "status",
        status_code: int | None = None,
        retry_after: float | None = None,
    ):
        super().__init__(message)
        self.kind = kind
        self.status_code = status_code
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        """Would sending the same request again make sense (as the SDKs decide: no
        connection, a timeout, 408, 409, 429, 5xx)?"""
        if self.kind in ("connection", "timeout"):
            return True
        code = self.status_code
        return (
            self.kind == "status" and code is not None and (code in (408, 409, 429) or code >= 500)
        )


class ModelAuthError(ModelCallError):
    """The model's API cannot be used with these credentials: no key (found before any
    request) or a key the API rejected (HTTP 401/403). Not transient, so a lab run stops at
    the first one instead of counting every request as failed; the message names the fix."""

    def __init__(self, message: str, status_code: int | None = None):
        super().__init__(message, "auth", status_code)


class UnknownScriptTypeError(SkillMagicsError, ValueError):
    """A file to run is no script: neither its extension nor a shebang names an
    interpreter."""


class ModuleScriptError(SkillMagicsError, ValueError):
    """A script cannot run as ``python -m module`` as asked: the module does not name the
    checked file, or the Python that would run it lacks ``-P`` (3.11+) for another cwd."""


class CommandError(SkillMagicsError, ValueError):
    """A command that is not a script file (``python -c`` code) is malformed: it must start
    with an absolute program path."""


class McpError(SkillMagicsError, RuntimeError):
    """A skills MCP server (SEP-2640) could not be used: it failed to start, hung past its
    timeout, sent garbage, or does not offer skills. The message names the server's label."""


class McpSkillMismatchError(McpError, ValueError):
    """What a skills MCP server sent contradicts what it listed (a digest or size lie, an
    unlisted file, frontmatter that differs, a URI outside the skill, past the limits).
    Nothing of that skill is used; the message names the label, the file and what differed."""


class McpCacheError(McpError, PermissionError):
    """The host-only cache of MCP skills is not safe to use (not ours, open to others,
    inside a skill discovery path) or its files no longer match what was verified."""


class TracingUnavailable(SkillMagicsError, RuntimeError):
    """Traces were asked for (``%skills trace on``) but OpenTelemetry's SDK is not installed
    here; the message names the extra that installs it."""


class SidePanelError(SkillMagicsError, RuntimeError):
    """The Skills side panel's channel to a kernel (core/panel/channel.py) cannot be used:
    its folder is not private, the request was not signed with the kernel's key, or the
    kernel does not answer. The message names the fix."""


__all__ = [
    "magic_words",
    "SkillMagicsError",
    "SkillNotFoundError",
    "ScriptNotFoundError",
    "AmbiguousScriptError",
    "SkillParseError",
    "PathSecurityError",
    "ScriptPermissionError",
    "InterpreterNotFoundError",
    "InterpreterNotAllowedError",
    "ToolRestrictionError",
    "ArgumentSerializationError",
    "ArgumentSizeError",
    "ApprovalDeclined",
    "ApprovalUnavailable",
    "ApprovalPending",
    "ApprovalStale",
    "RunInterrupted",
    "BatchInterrupted",
    "SandboxUnavailableError",
    "SecretMissingError",
    "WarmStateError",
    "HelperScriptError",
    "WorkingDirectoryError",
    "EnvironmentBuildError",
    "ModelCallError",
    "ModelAuthError",
    "SkillNameError",
    "SkillTooDeepError",
    "SourceError",
    "UnsafeArchiveError",
    "SkillExistsError",
    "LockFileError",
    "UnknownScriptTypeError",
    "ModuleScriptError",
    "CommandError",
    "McpError",
    "McpSkillMismatchError",
    "McpCacheError",
    "TracingUnavailable",
    "SidePanelError",
]
