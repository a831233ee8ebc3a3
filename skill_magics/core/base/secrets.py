"""Declared secrets: which environment variables a skill needs, and their values for a session.

A skill declares them in its frontmatter, as a space-separated string (``metadata`` values
are strings in the Agent Skills spec)::

    metadata:
      secrets: "WEATHER_API_KEY OTHER_TOKEN"

Also accepted (docs/architecture.md, *Sandbox and secrets*): commas instead of spaces, a YAML
list, a mapping ``NAME: description``, the keys ``secret``, ``required-secrets``,
``required_secrets``, ``requiredSecrets``, ``env-secrets``, ``api-keys`` (under ``metadata``
or at the top level of the frontmatter, which the parser keeps in ``metadata``), and the
forms other tools write: ``env: {NAME: {description, secret: true}}`` (agentskills#86; an
``env`` entry without ``secret: true`` is not a secret) and ``requires: {env: [NAME]}``
(hermes-agent). :func:`secret_declarations` says which form declared each name (``%skills
show``); :func:`secret_conflicts` names a name declared twice differently (validation).

Values live in a :class:`SecretStore`, in memory only: never on disk, in the audit log or in
a notebook. A value reaches only runs of the skill it was provided for, and every occurrence
of any known value in output or audit text is replaced by ``****`` (:meth:`SecretStore.redact`).

Redaction (docs/architecture.md, *Sandbox and secrets*):

- it covers a value as written and its escaped forms, alone or mixed: JSON's ``\\uXXXX``
  (either hex case; a surrogate pair for characters beyond U+FFFF), ``\\"``, ``\\\\``,
  ``\\/`` and ``\\n``-style escapes, Python's ``\\xXX`` and ``\\UXXXXXXXX``, a backslash
  before any punctuation, and up to three levels of JSON inside JSON (``\\\\\\"``), so
  ``json.dumps({"k": value})`` with any ``ensure_ascii`` is masked and a JSON view parsed
  from masked text never gives the value back;
- it happens before any cut: :meth:`Masks.head` redacts a text (or a stream of pieces) and
  only then keeps its first characters, so the head of a value cut in two never survives;
- every :class:`SecretStore` registers its values process-wide, and :func:`redact_known` /
  :func:`cut_known` mask the values of every live store: the audit and the notebook views
  (arguments, batch samples, messages) use them, without being handed a store.

Example:
    >>> store = SecretStore()
    >>> store.provide("weather", "WEATHER_API_KEY", "k-123456")
    >>> store.env_for("weather", ("WEATHER_API_KEY",))
    {'WEATHER_API_KEY': 'k-123456'}
    >>> store.redact("key=k-123456")
    'key=****'
"""

from __future__ import annotations

import itertools
import re
import threading
import weakref
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from skill_magics.core.base.errors import SecretMissingError
from skill_magics.core.base.namelist import name_list

REDACTED = "****"
ELLIPSIS = "…"
# JSON inside JSON inside JSON: an escape is introduced by 1, 3 or 7 backslashes.
ESCAPE_LEVELS = 3
_MAX_INTRO = 2**ESCAPE_LEVELS - 1  # backslashes before an escape letter (7)
_MAX_BACKSLASH = 2**ESCAPE_LEVELS  # a literal backslash written at the deepest level (8)
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
ENV_FORM = "env"  # env: {NAME: {description, secret: true}}
REQUIRES_FORM = "requires"  # requires: {env: [NAME, ...]}
_SECRET_KEY_SET = frozenset((*SECRET_KEYS, ENV_FORM, REQUIRES_FORM))
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
    names = _all_names(metadata)
    return tuple(n for n in names if _is_allowed(n)) if names else ()


def rejected_secrets(metadata: Any) -> tuple[str, ...]:
    """Declared names that are not accepted as secrets (shown as a warning)."""
    return tuple(n for n in _all_names(metadata) if not _is_allowed(n))


def _all_names(metadata: Any) -> list[str]:
    extra = getattr(metadata, "metadata", metadata)
    if type(extra) is dict and _SECRET_KEY_SET.isdisjoint(extra):
        return []  # every run asks: the usual answer without the walk
    return list(dict.fromkeys(d.name for d in secret_declarations(metadata) if d.secret))


@dataclass(frozen=True)
class SecretDeclaration:
    """One name as one form declares it. ``secret`` False: an ``env`` entry without
    ``secret: true`` (a plain variable, kept to spot a name declared both ways)."""

    name: str
    form: str  # "secrets", "required-secrets", ..., "env (secret: true)", "requires.env"
    description: str = ""
    secret: bool = True


def _declared(value: Any, form: str) -> list[SecretDeclaration]:
    if isinstance(value, Mapping):
        out = []
        for key, item in value.items():
            about = item if isinstance(item, str) else ""
            if isinstance(item, Mapping):
                about = str(item.get("description") or "")
            out.append(SecretDeclaration(str(key), form, about))
        return out
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if isinstance(item, Mapping) and isinstance(item.get("name"), str):
                out.append(
                    SecretDeclaration(item["name"], form, str(item.get("description") or ""))
                )
            elif isinstance(item, str):
                out += [SecretDeclaration(n, form) for n in name_list(item)]
        return out
    return [SecretDeclaration(n, form) for n in _words(value)]


def secret_declarations(metadata: Any) -> list[SecretDeclaration]:
    """Every declaration of a secret name (and every ``env`` entry), in the order of the forms
    (``SecretDeclaration.form`` says which)."""
    extra = getattr(metadata, "metadata", metadata)
    if not isinstance(extra, Mapping):
        return []
    out: list[SecretDeclaration] = []
    for key in SECRET_KEYS:
        if key in extra:
            out += _declared(extra[key], key)
    env = extra.get(ENV_FORM)
    if isinstance(env, Mapping):
        for key, item in env.items():
            spec = item if isinstance(item, Mapping) else {}
            about = str(spec.get("description") or "")
            secret = spec.get("secret") is True
            form = "env (secret: true)" if secret else "env"
            out.append(SecretDeclaration(str(key), form, about, secret))
    requires = extra.get(REQUIRES_FORM)
    if isinstance(requires, Mapping) and "env" in requires:
        out += _declared(requires["env"], "requires.env")
    return out


def secret_forms(metadata: Any) -> dict[str, str]:
    """Each accepted secret name -> the forms that declare it ("required-secrets, env
    (secret: true)"), for ``%skills show``."""
    forms: dict[str, list[str]] = {}
    for d in secret_declarations(metadata):
        if d.secret and _is_allowed(d.name) and d.form not in forms.setdefault(d.name, []):
            forms[d.name].append(d.form)
    return {name: ", ".join(found) for name, found in forms.items()}


def _declared_twice(name: str, decls: list[SecretDeclaration]) -> str:
    """Why ``name``'s declarations disagree ('' when they do not)."""
    if len(decls) < 2 and not any(d.secret for d in decls):
        return ""
    kinds = {d.secret for d in decls}
    if len(kinds) > 1 and any(d.secret for d in decls):
        secret = next(d.form for d in decls if d.secret)
        plain = next(d.form for d in decls if not d.secret)
        return (
            f"{name} is declared a secret ({secret}) and a plain variable ({plain}): "
            "declare it once"
        )
    about = {d.description for d in decls if d.description}
    if len(about) > 1:
        forms = ", ".join(dict.fromkeys(d.form for d in decls))
        return f"{name} is described differently in {forms}: declare it once"
    return ""


def secret_conflicts(metadata: Any) -> list[str]:
    """One line per name declared twice differently: a secret in one form and a plain
    ``env`` entry in another, two different descriptions, or two spellings differing only in
    case (an environment is case-sensitive: the script would get one of them)."""
    by_name: dict[str, list[SecretDeclaration]] = {}
    for d in secret_declarations(metadata):
        by_name.setdefault(d.name, []).append(d)
    lines = [line for name, decls in by_name.items() if (line := _declared_twice(name, decls))]
    secrets = [n for n, decls in by_name.items() if any(d.secret for d in decls)]
    folded: dict[str, str] = {}
    for name in secrets:
        other = folded.setdefault(name.upper(), name)
        if other != name:
            lines.append(f"{other} and {name} differ only in case: declare one of them")
    return lines


class SecretStore:
    """Secret values for this session, per (skill, name); thread-safe, memory only.

    ``repr`` never shows a value. :meth:`redact` masks every known value in a text, in any
    of its escaped forms. Every store registers itself for :func:`redact_known`.
    """

    def __init__(self) -> None:
        self._values: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._masks: Masks | None = None
        with _KNOWN_LOCK:
            _STORES.add(self)

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
            self._masks = None
        _values_changed()

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
            self._masks = None
        _values_changed()
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

    def masks(self) -> Masks:
        """The compiled redaction for this store's values (rebuilt after a change)."""
        with self._lock:
            masks = self._masks
            values = None if masks is not None else frozenset(self._values.values())
        if masks is not None:
            return masks
        assert values is not None
        masks = Masks.of(values) if values else _NO_MASKS
        with self._lock:
            if self._masks is None and frozenset(self._values.values()) == values:
                self._masks = masks
        return masks

    @property
    def longest(self) -> int:
        """Length of the longest known value (0: nothing to redact)."""
        return self.masks().longest

    def redact(self, text: str) -> str:
        """``text`` with every known value, in any written form, replaced by ``****``."""
        return self.masks().redact(text)

    def stream(self) -> StreamRedactor:
        """A redactor for text that arrives in pieces (a value may straddle two pieces)."""
        return StreamRedactor(self.masks())


# -- the patterns ------------------------------------------------------------------------------

_SHORT_ESCAPES = {"\n": "n", "\t": "t", "\r": "r", "\b": "b", "\f": "f", "\v": "v", "\0": "0"}
_INTRO = rf"\\{{1,{_MAX_INTRO}}}"


def _hex(n: int, width: int) -> tuple[str, int]:
    """``n`` as ``width`` hex digits, each letter matching either case."""
    digits = f"{n:0{width}x}"
    return "".join(f"[{d}{d.upper()}]" if d.isalpha() else d for d in digits), width


@dataclass(frozen=True)
class _Forms:
    """How one character of a value may be written."""

    literal: str  # the character itself (regex)
    escapes: str  # what may follow the introducing backslashes (regex alternatives)
    slashable: bool  # a backslash before it is tolerated (punctuation: \" \/ \')
    reach: int  # the longest text one form can span


def _forms(ch: str) -> _Forms:
    cp = ord(ch)
    escapes: list[tuple[str, int]] = []
    if cp < 0x10000:
        digits, n = _hex(cp, 4)
        escapes.append(("u" + digits, 1 + n))
    else:  # JSON's surrogate pair, and Python's \UXXXXXXXX
        hi, lo = 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF)
        (hi_d, _), (lo_d, _) = _hex(hi, 4), _hex(lo, 4)
        escapes.append((f"u{hi_d}{_INTRO}u{lo_d}", 5 + _MAX_INTRO + 5))
        digits, n = _hex(cp, 8)
        escapes.append(("U" + digits, 1 + n))
    if cp < 0x100:
        digits, n = _hex(cp, 2)
        escapes.append(("x" + digits, 1 + n))
    if ch in _SHORT_ESCAPES:
        escapes.append((_SHORT_ESCAPES[ch], 1))
    slashable = cp < 0x80 and not ch.isalnum() and ch.isprintable() and ch != "\\"
    literal_reach = _MAX_BACKSLASH if ch == "\\" else _MAX_INTRO + 1 if slashable else 1
    reach = max(literal_reach, _MAX_INTRO + max(n for _, n in escapes))
    return _Forms(re.escape(ch), "|".join(e for e, _ in escapes), slashable, reach)


def _char_pattern(ch: str) -> str:
    """One character of a value in any of its written forms."""
    f = _forms(ch)
    if ch == "\\":
        literal = rf"\\{{1,{_MAX_BACKSLASH}}}"
    elif f.slashable:
        literal = rf"\\{{0,{_MAX_INTRO}}}{f.literal}"
    else:
        literal = f.literal
    return f"(?:{literal}|{_INTRO}(?:{f.escapes}))"


def _value_pattern(value: str) -> tuple[list[str], int]:
    """Alternatives matching ``value`` in any written form, and the longest text one spans.

    Each alternative starts with a plain character (the value's first character, or a
    backslash), so the regex engine can skip ahead to the next such character instead of
    trying every position (about 5x faster on text full of escapes)."""
    first = _forms(value[0])
    rest = "".join(_char_pattern(ch) for ch in value[1:])
    more = rf"\\{{0,{_MAX_INTRO - 1}}}"  # after the first backslash
    if value[0] == "\\":
        alternatives = [rf"\\\\{{0,{_MAX_BACKSLASH - 1}}}{rest}"]
    else:
        alternatives = [first.literal + rest]
        if first.slashable:
            alternatives.append(rf"\\{more}{first.literal}{rest}")
    alternatives.append(rf"\\{more}(?:{first.escapes}){rest}")
    reach = first.reach + sum(_forms(ch).reach for ch in value[1:])
    return alternatives, reach


@dataclass(frozen=True)
class Masks:
    """Compiled redaction for a set of values (see the module docstring).

    ``plain`` matches the values as written; ``escaped`` also their escaped forms, and is
    used whenever a text holds a backslash (an escaped form always does). ``reach`` is the
    most characters one match can span; ``longest`` the longest value.
    """

    values: frozenset[str]
    plain: re.Pattern[str] | None = field(default=None, repr=False)
    escaped: re.Pattern[str] | None = field(default=None, repr=False)
    reach: int = 0
    longest: int = 0

    @classmethod
    def of(cls, values: Iterable[str]) -> Masks:
        found = frozenset(v for v in values if v)
        if not found:
            return cls(found)
        ordered = sorted(found, key=lambda v: (-len(v), v))
        compiled = [_value_pattern(v) for v in ordered]
        return cls(
            found,
            re.compile("|".join(re.escape(v) for v in ordered)),
            re.compile("|".join(a for alternatives, _ in compiled for a in alternatives)),
            max(n for _, n in compiled),
            len(ordered[0]),
        )

    def __bool__(self) -> bool:
        return bool(self.values)

    def _pattern(self, text: str) -> tuple[re.Pattern[str] | None, int]:
        """The pattern for ``text`` and the longest match it can make."""
        if "\\" in text:
            return self.escaped, self.reach
        return self.plain, self.longest

    def redact(self, text: str) -> str:
        """``text`` with every value, in any of its forms, replaced by ``****``."""
        if not self.values or not text:
            return text
        pattern, _ = self._pattern(text)
        assert pattern is not None
        return pattern.sub(REDACTED, text)

    def stream(self) -> StreamRedactor:
        """A redactor for text that arrives in pieces (a value may straddle two pieces)."""
        return StreamRedactor(self)

    def head(self, pieces: str | Iterable[str], limit: int) -> tuple[str, bool]:
        """The first ``limit`` characters of the redacted text, and whether more followed.

        Redacts first, then cuts: the pieces are redacted as a stream only as far as needed
        to know the first ``limit`` characters for sure (never the rest of a 10 MiB text).
        """
        if isinstance(pieces, str):
            if not self.values:
                return pieces[:limit], len(pieces) > limit
            pieces = _chunks(pieces)
        out: list[str] = []
        size = 0
        stream = self.stream()
        for piece in itertools.chain(pieces, [None]):
            text = stream.flush() if piece is None else stream.feed(piece)
            out.append(text)
            size += len(text)
            if size > limit:
                return "".join(out)[:limit], True
        return "".join(out), False


def _chunks(text: str, size: int = 4096) -> Iterator[str]:
    for start in range(0, len(text), size):
        yield text[start : start + size]


_NO_MASKS = Masks(frozenset())


class StreamRedactor:
    """Redacts a stream piece by piece, holding back the characters that might start a value
    (at most one match's reach) until the next piece (or :meth:`flush`) shows they do not."""

    def __init__(self, masks: Masks | SecretStore) -> None:
        self.masks = masks.masks() if isinstance(masks, SecretStore) else masks
        self._held = ""

    def feed(self, text: str) -> str:
        masks = self.masks
        if not masks:
            out, self._held = self._held + text, ""
            return out
        buf = self._held + text
        pattern, reach = masks._pattern(buf)
        assert pattern is not None
        cut = max(0, len(buf) - (reach - 1))
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

    def flush(self) -> str:
        """The rest of the stream, redacted (the stream ended: nothing more can follow)."""
        out, self._held = self.masks.redact(self._held), ""
        return out


# -- every store of this process ---------------------------------------------------------------

_STORES: weakref.WeakSet[SecretStore] = weakref.WeakSet()
_KNOWN_LOCK = threading.Lock()
_known: Masks | None = None
_generation = 0  # bumped by every change of any store: a stale build is never cached


def _values_changed() -> None:
    global _known, _generation
    with _KNOWN_LOCK:
        _known = None
        _generation += 1


def known_masks() -> Masks:
    """Masks for the values of every live :class:`SecretStore` in this process."""
    global _known
    masks = _known  # one reference read: no lock needed to use a built one
    if masks is not None:
        return masks
    with _KNOWN_LOCK:
        generation = _generation
        stores = list(_STORES)
    values: set[str] = set()
    for store in stores:
        values |= store.masks().values
    masks = Masks.of(values) if values else _NO_MASKS
    with _KNOWN_LOCK:
        if _generation == generation:
            _known = masks
    return masks


def redact_known(text: str) -> str:
    """``text`` with every value any store of this process holds masked (views, audit)."""
    return known_masks().redact(text) if text else text


def cut_known(text: str, limit: int, ellipsis: str = ELLIPSIS) -> str:
    """``text`` redacted (every known value), THEN cut to ``limit`` characters, the cut
    marked with ``ellipsis``: the head of a value crossing the cut never shows."""
    if len(text) <= limit:
        return redact_known(text)
    shown, more = known_masks().head(text, limit)
    if not more:
        return shown
    keep = max(limit - len(ellipsis), 0)
    return shown[:keep] + ellipsis


__all__ = [
    "ELLIPSIS",
    "REDACTED",
    "SECRET_KEYS",
    "Masks",
    "SecretStore",
    "StreamRedactor",
    "cut_known",
    "declared_secrets",
    "known_masks",
    "redact_known",
    "rejected_secrets",
    "SecretDeclaration",
    "secret_declarations",
    "secret_forms",
    "secret_conflicts",
]
