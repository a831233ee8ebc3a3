"""Declared secrets: which environment variables a skill needs, and their values for a session.

A skill declares them in its frontmatter, as a space-separated string (``metadata`` values
are strings in the Agent Skills spec)::

    metadata:
      secrets: "WEATHER_API_KEY OTHER_TOKEN"

Also accepted (docs/architecture.md, *Sandbox and secrets*): commas instead of spaces, a YAML
list, a mapping ``NAME: description``, the keys ``secret``, ``required-secrets``,
``required_secrets``, ``requiredSecrets``, ``env-secrets``, ``api-keys`` (under ``metadata``
or at the top level of the frontmatter, which the parser keeps in ``metadata``).

Values live in a :class:`SecretStore`, in memory only: never on disk, in the audit log or in
a notebook. A value reaches only runs of the skill it was provided for, and every occurrence
of any known value in output or audit text is replaced by ``****`` (:meth:`SecretStore.redact`).

Example:
    >>> store = SecretStore()
    >>> store.provide("weather", "WEATHER_API_KEY", "k-123456")
    >>> store.env_for("weather", ("WEATHER_API_KEY",))
    {'WEATHER_API_KEY': 'k-123456'}
    >>> store.redact("key=k-123456")
    'key=****'
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

from skill_magics.core.errors import SecretMissingError
from skill_magics.core.namelist import name_list

REDACTED = "****"
MIN_SECRET_CHARS = 4  # shorter values would redact ordinary text ("a", "1") everywhere
SECRET_KEYS = (
    "secrets",
    "secret",
    "required-secrets",
    "required_secrets",
    "requiredSecrets",
    "env-secrets",
    "env_secrets",
    "api-keys",
    "api_keys",
)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Names a secret may not take: they steer the interpreter or the run itself, not a credential.
_RESERVED = frozenset(
    {"PATH", "HOME", "TMPDIR", "LANG", "TERM", "USER", "LOGNAME", "TZ", "SHELL", "PWD"}
)
_RESERVED_PREFIXES = ("SKILL_", "LD_", "PYTHON", "BASH_", "LC_", "XDG_", "DYLD_", "NODE_")


def _is_allowed(name: str) -> bool:
    return (
        bool(_NAME.match(name))
        and name not in _RESERVED
        and not name.upper().startswith(_RESERVED_PREFIXES)
    )


def _words(value: Any) -> list[str]:
    if isinstance(value, str):
        return list(name_list(value))
    if isinstance(value, Mapping):
        return [str(k) for k in value]
    if isinstance(value, (list, tuple)):
        out: list[str] = []
        for item in value:
            out += _words(item) if isinstance(item, str) else []
        return out
    return []


def declared_secrets(metadata: Any) -> tuple[str, ...]:
    """The secret names a skill declares (``SkillMetadata`` or its ``metadata`` dict), in order.

    Names that are not environment variable names, or that would steer the run rather than
    carry a credential (PATH, LD_*, PYTHON*, SKILL_*, ...), are left out: see
    :func:`rejected_secrets`.
    """
    return tuple(n for n in _all_names(metadata) if _is_allowed(n))


def rejected_secrets(metadata: Any) -> tuple[str, ...]:
    """Declared names that are not accepted as secrets (shown as a warning)."""
    return tuple(n for n in _all_names(metadata) if not _is_allowed(n))


def _all_names(metadata: Any) -> list[str]:
    extra = getattr(metadata, "metadata", metadata)
    if not isinstance(extra, Mapping):
        return []
    names: list[str] = []
    for key in SECRET_KEYS:
        if key in extra:
            names += _words(extra[key])
    return list(dict.fromkeys(names))


class SecretStore:
    """Secret values for this session, per (skill, name); thread-safe, memory only.

    ``repr`` never shows a value. :meth:`redact` masks every known value in a text.
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._pattern: re.Pattern[str] | None = None

    def provide(self, skill: str, name: str, value: str) -> None:
        """Keep ``value`` for runs of ``skill`` that declare ``name`` (replaces an old one)."""
        if not isinstance(value, str):
            raise TypeError(f"The value of secret {name} must be a str, got {type(value).__name__}")
        if not _is_allowed(name):
            raise ValueError(
                f"{name!r} cannot be a secret: use an environment variable name such as "
                "MY_API_KEY (not PATH, HOME, LD_*, PYTHON*, SKILL_*)"
            )
        if "\0" in value:
            raise ValueError(
                f"The value of secret {name} contains a NUL byte: environment "
                "variables cannot hold one"
            )
        if len(value) < MIN_SECRET_CHARS:
            raise ValueError(
                f"The value of secret {name} is shorter than {MIN_SECRET_CHARS} characters, too "
                "short to redact from output reliably: provide the real value"
            )
        with self._lock:
            self._values[(skill, name)] = value
            self._pattern = None

    def provide_declared(self, skill: str, declared: Iterable[str], name: str, value: str) -> None:
        """:meth:`provide`, for a ``name`` the skill declares (``declared``); ValueError
        naming the declared ones (and how to declare it) otherwise."""
        declared = tuple(declared)
        if name not in declared:
            shown = ", ".join(declared) or "none"
            raise ValueError(
                f"Skill '{skill}' does not declare secret {name!r} (declared: {shown}): add "
                f'it to its SKILL.md as metadata: {{secrets: "{name}"}} or use env_passthrough'
            )
        self.provide(skill, name, value)

    def forget(self, skill: str | None = None, name: str | None = None) -> int:
        """Drop values (all, a skill's, or one); returns how many were dropped."""
        with self._lock:
            keys = [
                k
                for k in self._values
                if (skill is None or k[0] == skill) and (name is None or k[1] == name)
            ]
            for key in keys:
                del self._values[key]
            self._pattern = None
            return len(keys)

    def is_set(self, skill: str, name: str) -> bool:
        with self._lock:
            return (skill, name) in self._values

    def missing(self, skill: str, names: Iterable[str]) -> tuple[str, ...]:
        """Which of ``names`` have no value for ``skill``."""
        with self._lock:
            return tuple(n for n in names if (skill, n) not in self._values)

    def env_for(self, skill: str, names: Iterable[str]) -> dict[str, str]:
        """Environment entries for a run of ``skill``: only its declared ``names`` that are set."""
        with self._lock:
            return {n: self._values[(skill, n)] for n in names if (skill, n) in self._values}

    def require(self, skill: str, names: Iterable[str]) -> dict[str, str]:
        """``env_for``, or SecretMissingError naming what is missing and how to provide it."""
        names = tuple(names)
        missing = self.missing(skill, names)
        if missing:
            raise SecretMissingError(
                f"Skill '{skill}' needs secret{'s' if len(missing) > 1 else ''} "
                f"{', '.join(missing)}, not provided: enter {'them' if len(missing) > 1 else 'it'}"
                f" in the approval panel, or call manager.provide_secret('{skill}', "
                f"'{missing[0]}', value)"
            )
        return self.env_for(skill, names)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values)

    def __repr__(self) -> str:
        with self._lock:
            names = sorted(f"{s}:{n}" for s, n in self._values)
        return f"<SecretStore {len(names)} value(s): {', '.join(names) or 'none'}>"

    # -- redaction ---------------------------------------------------------------------------

    @property
    def longest(self) -> int:
        """Length of the longest known value (0: nothing to redact)."""
        with self._lock:
            return max((len(v) for v in self._values.values()), default=0)

    def _regex(self) -> re.Pattern[str] | None:
        with self._lock:
            if self._pattern is None and self._values:
                values = sorted(set(self._values.values()), key=len, reverse=True)
                self._pattern = re.compile("|".join(re.escape(v) for v in values))
            return self._pattern

    def redact(self, text: str, *, cut: bool = False) -> str:
        """``text`` with every known value replaced by ``****``.

        ``cut=True``: the text was truncated (an output cap), so a value's first characters
        at its very end are masked too.
        """
        pattern = self._regex()
        if pattern is None or not text:
            return text
        text = pattern.sub(REDACTED, text)
        if cut:
            with self._lock:
                values = list(self._values.values())
            for value in values:
                for size in range(min(len(value) - 1, len(text)), 0, -1):
                    if text.endswith(value[:size]):
                        return text[:-size] + REDACTED
        return text

    def stream(self) -> StreamRedactor:
        """A redactor for text that arrives in pieces (a value may straddle two pieces)."""
        return StreamRedactor(self)


class StreamRedactor:
    """Redacts a stream piece by piece, holding back at most ``longest - 1`` characters that
    might start a value until the next piece (or :meth:`flush`) shows they do not."""

    def __init__(self, store: SecretStore) -> None:
        self.store = store
        self._held = ""

    def feed(self, text: str) -> str:
        pattern = self.store._regex()
        if pattern is None:
            out, self._held = self._held + text, ""
            return out
        buf = self._held + text
        cut = max(0, len(buf) - (self.store.longest - 1))
        pieces: list[str] = []
        pos = 0
        for match in pattern.finditer(buf):
            if match.start() >= cut:
                break
            pieces += [buf[pos : match.start()], REDACTED]
            pos = match.end()
        cut = max(cut, pos)
        pieces.append(buf[pos:cut])
        self._held = buf[cut:]
        return "".join(pieces)

    def flush(self, *, cut: bool = False) -> str:
        out, self._held = self.store.redact(self._held, cut=cut), ""
        return out


__all__ = [
    "REDACTED",
    "SECRET_KEYS",
    "SecretStore",
    "StreamRedactor",
    "declared_secrets",
    "rejected_secrets",
]
