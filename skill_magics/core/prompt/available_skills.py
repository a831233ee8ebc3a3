"""The ``<available_skills>`` block for a system prompt: filtered, budgeted, never silent.

One name for it in code and docs: *available skills* (``available_skills()``, an
:class:`AvailableSkills` ``str``); ``core/catalog/`` is the other thing, the skills on disk.
What is listed (docs/architecture.md, *The available skills block*):

1. Skills in priority order: the order of ``names``; else, with ``include`` patterns, the
   skills matching the first pattern (by name), then the second, ...; else by name.
2. Left out entirely, as the Agent Skills client guide asks (the model never sees them):
   skills not matching any ``include`` glob, skills matching an ``exclude`` glob, and skills
   whose frontmatter says ``disable-model-invocation: true`` (Claude Code's opt-out of
   model-driven use; also read from ``metadata:``). ``AvailableSkills.omitted`` names each,
   with why.
3. With ``max_chars`` and/or ``max_tokens``, the whole block must fit (both, when both are
   given). The rule, in order:

   a. everything fits: nothing changes;
   b. else descriptions longer than a common cap are **shortened** at a word boundary and end
      in ``…``; the cap is the largest that fits, never below ``min_description`` (100);
   c. if even that does not fit, skills are **dropped from the end of the priority order**
      (last first) until the rest fits (step b is redone for the rest).

   Every shortened or dropped skill is named in a comment inside the block (which the
   model reads, and which is counted in the budget) and in ``AvailableSkills.shortened`` /
   ``AvailableSkills.omitted``. A description is never cut without the ``…`` and the note.
4. No skill left: the block is ``""`` (no empty block: the guide says to omit it).

Layouts (``layout=``): ``"skills-ref"`` (default; byte-identical to skills-ref's
``to_prompt`` when nothing is filtered, shortened or dropped) and ``"guide"`` (the client
guide's indented layout, escaped with ``core/prompt/xmltext.py``).

Example:
    >>> block = available_skills(manager, max_tokens=400, exclude=["demo-*"])
    >>> block.omitted
    (Omission(name='demo-behaviours', reason="excluded by 'demo-*'"),)
    >>> block.tokens <= 400   # counted by block.counter: tiktoken when cached, else an estimate
    True
"""

from __future__ import annotations

import fnmatch
import html
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from skill_magics.core.base.deprecation import (
    deprecated_alias,
    renamed_argument,
    renamed_module_name,
)
from skill_magics.core.base.models import SkillMetadata
from skill_magics.core.installed.lock import LOCK_NAME
from skill_magics.core.manager import SkillManager
from skill_magics.core.mcp.listed import OPT_OUT_KEY, McpListed, listed
from skill_magics.core.prompt.tokens import TokenCounter, as_counter
from skill_magics.core.prompt.xmltext import element
from skill_magics.core.trust.installed import origin_of

Layout = Literal["skills-ref", "guide"]
LAYOUTS: tuple[str, ...] = ("skills-ref", "guide")
MIN_DESCRIPTION = 100  # characters a shortened description keeps at least
ELLIPSIS = "…"


@dataclass(frozen=True)
class ListedSkill:
    """One listed skill: what the model sees of it and what it costs."""

    name: str
    description: str  # as listed (shortened ones end in "…")
    location: str  # absolute, resolved SKILL.md path
    chars: int  # of this skill's entry in the block
    tokens: int  # of this skill's entry, by the block's counter
    original_chars: int  # of the full description
    shortened: bool = False


@dataclass(frozen=True)
class Omission:
    """A skill that is not in the block, and why (``budget``, a pattern, the opt-out)."""

    name: str
    reason: str


class AvailableSkills(str):
    """The block's text (a plain ``str``), with what was listed, left out and counted."""

    entries: tuple[ListedSkill, ...]
    omitted: tuple[Omission, ...]
    tokens: int
    counter: str  # which tokenizer counted: "tiktoken o200k_base" or the estimate's label
    max_chars: int | None
    max_tokens: int | None
    layout: str  # the layout it was written in: "skills-ref" or "guide"

    def __new__(cls, text: str, **info: Any) -> AvailableSkills:
        self = super().__new__(cls, text)
        self.entries = tuple(info.get("entries", ()))
        self.omitted = tuple(info.get("omitted", ()))
        self.tokens = int(info.get("tokens", 0))
        self.counter = str(info.get("counter", ""))
        self.max_chars = info.get("max_chars")
        self.max_tokens = info.get("max_tokens")
        self.layout = str(info.get("layout", "skills-ref"))
        return self

    @property
    def shortened(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries if e.shortened)

    @property
    def dropped(self) -> tuple[str, ...]:
        """Skills left out to fit the budget (not those filtered out on purpose)."""
        return tuple(o.name for o in self.omitted if o.reason == "budget")

    def budget_text(self) -> str:
        parts = []
        if self.max_chars is not None:
            parts.append(f"{self.max_chars:,} characters")
        if self.max_tokens is not None:
            parts.append(f"{self.max_tokens:,} tokens")
        return " and ".join(parts) or "none"

    def report(self) -> str:
        """Plain-text summary: per-skill sizes, total, the tokenizer, what was left out."""
        lines = [f"{'skill':<32} {'tokens':>7} {'chars':>7}  note"]
        for e in self.entries:
            note = f"shortened from {e.original_chars:,} characters" if e.shortened else ""
            lines.append(f"{e.name:<32} {e.tokens:>7,} {e.chars:>7,}  {note}".rstrip())
        for o in self.omitted:
            lines.append(f"{o.name:<32} {'-':>7} {'-':>7}  left out: {o.reason}")
        lines.append(
            f"total: {len(self.entries)} skills, {self.tokens:,} tokens, {len(self):,} "
            f"characters ({self.counter}); budget: {self.budget_text()}"
        )
        return "\n".join(lines)


def available_skills(
    manager: SkillManager,
    names: Iterable[str] | None = None,
    *,
    max_chars: int | None = None,
    max_tokens: int | None = None,
    include: str | Iterable[str] | None = None,
    exclude: str | Iterable[str] | None = None,
    layout: Layout | None = None,
    min_description: int = MIN_DESCRIPTION,
    counter: TokenCounter | Any | None = None,
    descriptions: Mapping[str, str] | None = None,
    format: Layout | None = None,
) -> AvailableSkills:
    """The ``<available_skills>`` block (an :class:`AvailableSkills`, a ``str``); see the
    module doc.

    ``include``/``exclude`` are name globs (``"pdf-*"``); ``names`` picks and orders skills
    explicitly (an unknown name raises SkillNotFoundError). ``counter`` counts tokens
    (default: :func:`core.prompt.tokens.default_counter`). ``descriptions`` (skill name -> text)
    lists those skills with another description than SKILL.md's, to try one out without
    editing the file (the skill lab's ``description=``); budgets apply to it as to any.
    ``layout``: "skills-ref" (default) or "guide" (module doc); ``format`` is its deprecated
    old name (a DeprecationWarning).
    """
    layout = renamed_argument(layout, format, new="layout=", old="format=") or "skills-ref"
    if layout not in LAYOUTS:
        raise ValueError(f"layout={layout!r}: use one of {', '.join(LAYOUTS)}")
    for label, limit in (("max_chars", max_chars), ("max_tokens", max_tokens)):
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise ValueError(f"{label}={limit!r}: use a number of 0 or more, or None")
    tokenizer = as_counter(counter)
    metas, omitted = _select(manager, names, _patterns(include), _patterns(exclude))
    if descriptions:
        metas = [
            replace(m, description=str(descriptions[m.name])) if m.name in descriptions else m
            for m in metas
        ]
    where: dict[str, str] = {}  # SKILL.md -> resolved location, computed once per call
    fitted = _fit(metas, layout, max_chars, max_tokens, max(1, min_description), tokenizer, where)
    text, kept, cap, dropped = fitted
    omitted += [Omission(m.name, "budget") for m in dropped]
    entries = tuple(_entry(m, cap, layout, tokenizer, where) for m in kept)
    return AvailableSkills(
        text,
        entries=entries,
        omitted=omitted,
        tokens=tokenizer.count(text) if text else 0,
        counter=tokenizer.label,
        max_chars=max_chars,
        max_tokens=max_tokens,
        layout=layout,
    )


def opted_out(meta: SkillMetadata) -> bool:
    """True when the skill says ``disable-model-invocation: true`` (bool or text)."""
    value = meta.metadata.get(OPT_OUT_KEY)
    return value is True or (isinstance(value, str) and value.strip().lower() == "true")


def model_visible(manager: SkillManager) -> list[str]:
    """Names of the skills a model may activate (not opted out), by name; MCP servers'
    skills (``LABEL/NAME``) included."""
    metas = list(manager.local_skills()) + mcp_listed(manager)
    return sorted(m.name for m in metas if not opted_out(m))


def entry_text(
    meta: SkillMetadata, layout: Layout | None = None, *, format: Layout | None = None
) -> str:
    """One skill's ``<skill>`` element as the block lists it (full description), in
    ``layout`` (default "skills-ref"; ``format`` is its deprecated old name)."""
    chosen: Layout = renamed_argument(layout, format, new="layout=", old="format=") or "skills-ref"
    return _entry_lines(meta.name, meta.description, _location(meta), chosen, _origin(meta))


def shorten(text: str, cap: int) -> str:
    """``text`` cut at a word boundary to at most ``cap`` characters, ending in ``…``."""
    if len(text) <= cap:
        return text
    cut = text[: max(cap - 1, 1)]
    space = cut.rfind(" ")
    if space > len(cut) // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:.-") + ELLIPSIS


# -- selecting ------------------------------------------------------------------------------


def _patterns(value: str | Iterable[str] | None) -> list[str] | None:
    if value is None:
        return None
    return [value] if isinstance(value, str) else [str(p) for p in value]


def mcp_listed(manager: SkillManager) -> list[SkillMetadata]:
    """The skills of the manager's MCP servers, from their checked listings, by name."""
    return listed(manager)


def _select(
    manager: SkillManager,
    names: Iterable[str] | None,
    include: list[str] | None,
    exclude: list[str] | None,
) -> tuple[list[SkillMetadata], list[Omission]]:
    everything = list(manager.local_skills()) + mcp_listed(manager)
    # The opt-out is the skill's own say: reported as the reason even when a filter also hides it.
    omitted = [Omission(m.name, f"{OPT_OUT_KEY}: true") for m in everything if opted_out(m)]
    listed = [m for m in everything if not opted_out(m)]
    if names is not None:
        by_name = {m.name: m for m in everything}
        wanted = list(dict.fromkeys(names))
        chosen = [by_name[n] if n in by_name else manager.get_skill(n).metadata for n in wanted]
        omitted = [Omission(m.name, f"{OPT_OUT_KEY}: true") for m in chosen if opted_out(m)]
        metas = [m for m in chosen if not opted_out(m)]
    elif include:
        metas = []
        for pattern in include:
            metas += [m for m in listed if fnmatch.fnmatchcase(m.name, pattern) and m not in metas]
        omitted += [
            Omission(m.name, f"not matched by --include {' '.join(include)}")
            for m in listed
            if m not in metas
        ]
    else:
        metas = listed
    kept = []
    for meta in metas:
        hit = next((p for p in exclude or () if fnmatch.fnmatchcase(meta.name, p)), None)
        if hit is not None:
            omitted.append(Omission(meta.name, f"excluded by {hit!r}"))
        else:
            kept.append(meta)
    return kept, omitted


# -- fitting --------------------------------------------------------------------------------


def _fit(
    metas: Sequence[SkillMetadata],
    layout: Layout,
    max_chars: int | None,
    max_tokens: int | None,
    floor: int,
    counter: TokenCounter,
    where: dict[str, str],
) -> tuple[str, list[SkillMetadata], int | None, list[SkillMetadata]]:
    """(text, skills kept, description cap or None, skills dropped) per the module's rule."""

    def fits(text: str) -> bool:
        if max_chars is not None and len(text) > max_chars:
            return False
        return max_tokens is None or counter.count(text) <= max_tokens

    full = _render(metas, None, layout, [], where)
    if not metas or fits(full):
        return full, list(metas), None, []

    def render(keep: int, cap: int | None) -> str:
        return _render(metas[:keep], cap, layout, metas[keep:], where)

    # The most skills that fit with every description at the floor (bisection: more skills,
    # more text), then the largest description cap that fits for them.
    low, high = 0, len(metas)
    while low < high:
        mid = (low + high + 1) // 2
        if fits(render(mid, floor)):
            low = mid
        else:
            high = mid - 1
    keep = low
    if keep == 0:
        return "", [], None, list(metas)
    kept, dropped = list(metas[:keep]), list(metas[keep:])
    if fits(render(keep, None)):
        return render(keep, None), kept, None, dropped
    low, high = floor, max(len(m.description) for m in kept) - 1
    while low < high:
        mid = (low + high + 1) // 2
        if fits(render(keep, mid)):
            low = mid
        else:
            high = mid - 1
    return render(keep, low), kept, low, dropped


def _render(
    metas: Sequence[SkillMetadata],
    cap: int | None,
    layout: Layout,
    dropped: Sequence[SkillMetadata],
    where: dict[str, str] | None = None,
) -> str:
    if not metas:
        return ""
    entries = []
    shortened = []
    for meta in metas:
        description = meta.description if cap is None else shorten(meta.description, cap)
        if description != meta.description:
            shortened.append(meta.name)
        entries.append(
            _entry_lines(meta.name, description, _location(meta, where), layout, _origin(meta))
        )
    indent = "  " if layout == "guide" else ""
    lines = ["<available_skills>", *entries]
    note = _note([m.name for m in dropped], shortened)
    if note:
        lines.append(f"{indent}<!-- {note} -->")
    lines.append("</available_skills>")
    return "\n".join(lines)


def _note(dropped: Sequence[str], shortened: Sequence[str]) -> str:
    parts = []
    if dropped:
        parts.append(
            f"{len(dropped)} more skill{'s' if len(dropped) != 1 else ''} not listed to fit "
            f"the catalog budget: {', '.join(dropped)}."  # text the model reads: unchanged
        )
    if shortened:
        parts.append(f"Descriptions shortened to fit (ending in …): {', '.join(shortened)}.")
    # "--" may not appear inside an XML comment; names are the only free text here.
    return " ".join(parts).replace("--", "- -")


def _origin(meta: SkillMetadata) -> str:
    """An MCP skill's ``mcp:LABEL`` and that nothing signed it (no signature is delivered
    over MCP); an installed skill's signer (or why it is unsigned, core/trust/installed.py);
    "" for a local folder, so the block stays skills-ref's."""
    if isinstance(meta, McpListed):
        label = meta.origin.removeprefix("mcp:")
        return f"{meta.origin}; unsigned (MCP server {label})"
    folder = os.path.dirname(os.fspath(meta.path))
    if not os.path.isfile(os.path.join(os.path.dirname(folder), LOCK_NAME)):
        return ""
    return origin_of(folder, meta.name).signature.describe()


def _location(meta: SkillMetadata, where: dict[str, str] | None = None) -> str:
    if isinstance(meta, McpListed):
        return meta.location
    # ``where`` memoises per call: resolving paths dominated a 1,000-skill bisection.
    key = str(meta.path)
    if where is not None and key in where:
        return where[key]
    # What skills-ref writes: the resolved skill directory joined with the SKILL.md name.
    path = os.fspath(meta.path)
    location = os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))
    if where is not None:
        where[key] = location
    return location


def _entry_lines(
    name: str, description: str, location: str, layout: Layout, origin: str = ""
) -> str:
    # An MCP server's skill says where it came from (SEP-2640: the origin shown to the model);
    # its location is the server's URI: activate_skill loads it.
    if layout == "guide":
        lines = [
            "  <skill>",
            "    " + element("name", name),
            "    " + element("description", description),
            "    " + element("location", location),
        ]
        if origin:
            lines.append("    " + element("origin", origin))
        return "\n".join([*lines, "  </skill>"])
    lines = [
        "<skill>",
        "<name>",
        html.escape(name),
        "</name>",
        "<description>",
        html.escape(description),
        "</description>",
        "<location>",
        html.escape(location) if origin else location,
        "</location>",
    ]
    if origin:
        lines += ["<origin>", html.escape(origin), "</origin>"]
    return "\n".join([*lines, "</skill>"])


def _entry(
    meta: SkillMetadata,
    cap: int | None,
    layout: Layout,
    counter: TokenCounter,
    where: dict[str, str],
) -> ListedSkill:
    description = meta.description if cap is None else shorten(meta.description, cap)
    text = _entry_lines(meta.name, description, _location(meta, where), layout, _origin(meta))
    return ListedSkill(
        name=meta.name,
        description=description,
        location=_location(meta, where),
        chars=len(text),
        tokens=counter.count(text),
        original_chars=len(meta.description),
        shortened=description != meta.description,
    )


# The old name (issue 30: ``catalog`` is also core/catalog/, the skills on disk), for one release.
skills_catalog = deprecated_alias(available_skills, "skills_catalog")

__all__ = [
    "AvailableSkills",
    "LAYOUTS",
    "Layout",
    "ListedSkill",
    "McpListed",
    "MIN_DESCRIPTION",
    "OPT_OUT_KEY",
    "Omission",
    "available_skills",
    "entry_text",
    "mcp_listed",
    "model_visible",
    "opted_out",
    "shorten",
    "skills_catalog",
]


def __getattr__(name: str) -> Any:
    """Old names kept for one release: ``FORMATS`` (now ``LAYOUTS``)."""
    return renamed_module_name(__name__, name, {"FORMATS": ("LAYOUTS", LAYOUTS)})
