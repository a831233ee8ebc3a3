"""Skill: one skill directory, loaded progressively.

The metadata comes from the frontmatter (cheap, read at listing time). The body of SKILL.md
and the script list are loaded on first use, cached, and re-read only when the files change
(SKILL.md: mtime + size; scripts: directory mtimes + each script's mtime and size).

Example:
    >>> skill = manager.get_skill("csv-profiler")
    >>> skill.content[:16], [s.path.as_posix() for s in skill.scripts]
    ('# CSV profiler\\n\\n', ['scripts/profile.py'])
    >>> skill.find_script("profile").interpreter
    'python3'
"""

from __future__ import annotations

import difflib
import os
import posixpath
import threading
from pathlib import Path

from skill_magics.core.base.errors import (
    AmbiguousScriptError,
    PathSecurityError,
    ScriptNotFoundError,
    SkillMagicsError,
    SkillNotFoundError,
    SkillParseError,
)
from skill_magics.core.base.fingerprint import skill_fingerprint
from skill_magics.core.base.models import ScriptMetadata, SkillMetadata
from skill_magics.core.catalog import kinds
from skill_magics.core.catalog import references as markdown
from skill_magics.core.catalog.detect import ScanResult, ScriptDetector
from skill_magics.core.catalog.frontmatter import (
    build_metadata,
    parse_frontmatter_yaml,
    split_frontmatter,
)

REFERENCE_DIRS = ("references", "assets")


class Skill:
    """A skill: metadata now, body and scripts when first asked for. Thread-safe caches."""

    # An MCP server's skill (core/mcp/skill.py): the set of {uri, digest} its files were
    # verified against, which a "Yes in session" binds to; "" for a skills folder's skill.
    binding = ""

    def __init__(self, metadata: SkillMetadata, *, detector: ScriptDetector | None = None) -> None:
        self.metadata = metadata
        self._detector = detector or ScriptDetector()
        self._lock = threading.RLock()
        self._content: str | None = None
        self._content_key: tuple[int, ...] | None = None
        self._broken: SkillMagicsError | None = None  # why the current SKILL.md does not parse
        self._scan: ScanResult | None = None
        # (key, classified, (mtime, size) of the scripts only markdown names)
        self._kinds: tuple[object, list[ScriptMetadata], tuple] | None = None

    def __repr__(self) -> str:
        return f"Skill({self.name!r}, base_dir={str(self.base_dir)!r})"

    @property
    def name(self) -> str:
        return self.metadata.name

    @property
    def base_dir(self) -> Path:
        """The skill directory (where SKILL.md lives; scripts run with it as cwd)."""
        return self.metadata.path.parent

    # -- SKILL.md body ---------------------------------------------------------------------

    @property
    def content_loaded(self) -> bool:
        """True once the body has been read (listing alone never reads it)."""
        return self._content is not None

    @property
    def content(self) -> str:
        """The SKILL.md body (instructions after the frontmatter). Re-read when the file changes."""
        path = self.metadata.path
        try:
            st = os.stat(path)
        except FileNotFoundError:
            gone = f"SKILL.md of skill {self.name!r} is gone ({path}): run "
            raise SkillNotFoundError(
                gone + "manager.reload()", magic=gone + "%skills reload"
            ) from None
        # ctime and inode too: a same-size edit with its mtime put back is still an edit.
        key = (st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
        with self._lock:
            if self._content is not None and self._content_key == key:
                return self._content
            raw = path.read_bytes().decode("utf-8", "replace")
            broken: SkillMagicsError | None = None
            try:
                yaml_text, body = split_frontmatter(raw)
            except SkillMagicsError as exc:
                body = raw  # the frontmatter was edited away: the whole file is instructions
                broken = exc
            else:
                try:
                    # The frontmatter may have changed too: keep metadata in step with the body.
                    data, warnings = parse_frontmatter_yaml(yaml_text)
                    self.metadata = build_metadata(data, path, warnings)
                except SkillMagicsError as exc:
                    # Shown with the last good metadata, but not run on it: the edit may have
                    # narrowed allowed-tools (see current_metadata).
                    broken = exc
            self._content, self._content_key, self._broken = body, key, broken
            return body

    # -- scripts ---------------------------------------------------------------------------

    @property
    def scripts(self) -> list[ScriptMetadata]:
        """Detected scripts, sorted by relative path. Rescanned when any of them changes."""
        with self._lock:
            scan = self._scan
            if scan is None or (
                self._detector.signature(self.base_dir, scan.signature) != scan.signature
            ):
                self._scan = scan = self._detector.scan(self.base_dir)
            return list(self._classified(scan))

    def _classified(self, scan: ScanResult) -> list[ScriptMetadata]:
        """The scan's scripts, plus the ones a markdown file runs outside ``scripts/`` and the
        root (``python eval-viewer/generate_review.py``), with their roles and ``python -m``
        modules (kinds.py); redone when a script, SKILL.md or any markdown file changes."""
        try:
            _ = self.content  # re-read when SKILL.md changed; refs depend on it
            readable = True
        except SkillMagicsError:
            readable = False  # SKILL.md vanished: nothing is referenced
        signature = markdown.markdown_signature(self.base_dir)
        key = (scan.signature, self._content_key, signature)
        cached = self._kinds
        if (
            cached is not None
            and cached[0] == key
            and _stats(self.base_dir, cached[2]) == cached[2]
        ):
            return cached[1]
        refs: list[str] = []
        modules: frozenset[str] = frozenset()
        scripts = list(scan.scripts)
        if readable:
            found = markdown.scan_markdown(self, signature)
            refs = [r.path for r in found.refs if r.ok]
            modules = found.modules
            known = {s.path.as_posix() for s in scripts}
            # A command elsewhere names a script too; a mention (``see examples/x.py``) not.
            for rel in [r.path for r in found.refs if r.ok and r.as_command]:
                extra = None if rel in known else self._detector.describe(self.base_dir, rel)
                if extra is not None:
                    scripts.append(extra)
                    known.add(rel)
        scripts.sort(key=lambda s: s.path.as_posix())
        extras = {s.path.as_posix() for s in scripts} - {s.path.as_posix() for s in scan.scripts}
        classified = kinds.classify(self.base_dir, scripts, refs, modules)
        self._kinds = (
            key,
            classified,
            _stats(self.base_dir, tuple((r, 0, 0) for r in sorted(extras))),
        )
        return classified

    @property
    def offered_scripts(self) -> list[ScriptMetadata]:
        """Scripts offered to a model (tools) and in completion (``ScriptMetadata.offered``)."""
        return [s for s in self.scripts if s.offered]

    def current_metadata(self) -> SkillMetadata:
        """The metadata as SKILL.md says now (re-read when the file changed since last look).

        Running a script checks ``allowed-tools`` against this, so an edit that drops Bash
        takes effect at once, without ``manager.reload()``. Costs one stat when unchanged.
        """
        with self._lock:  # content and _broken change together under the lock
            _ = self.content  # re-parses the frontmatter when the file's stat identity changed
            broken, metadata = self._broken, self.metadata
        if broken is not None:  # fail closed: never run on metadata SKILL.md no longer says
            raise SkillParseError(
                f"SKILL.md of skill {self.name!r} no longer parses ({broken}): fix it; its "
                "scripts do not run until it does"
            )
        return metadata

    def content_hash(self) -> str:
        """The skill's fingerprint (every file, the venv interpreter): "Yes in session" is
        keyed to it, so it lapses when any code a script may load changes (core.base.fingerprint).
        """
        return skill_fingerprint(self.base_dir)

    @property
    def references(self) -> list[Path]:
        """Files under ``references/`` and ``assets/`` (relative paths, sorted, no hidden).

        Listed as found, a symlink to a file outside the skill included: whoever reads one
        must check it is inside (``paths.read_inside``); the prompt context marks such a file
        ``error="outside the skill"`` and never reads it.
        """
        found: list[Path] = []
        base = os.fspath(self.base_dir)
        for top in REFERENCE_DIRS:
            root = os.path.join(base, top)
            for dirpath, dirnames, filenames in os.walk(root):
                dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
                rel_dir = os.path.relpath(dirpath, base)
                for name in filenames:
                    if not name.startswith("."):
                        found.append(Path(rel_dir, name))
        return sorted(found, key=lambda p: p.as_posix())

    @property
    def referenced_scripts(self) -> list[markdown.ScriptReference]:
        """Scripts SKILL.md and the markdown files it links name (``python scripts/x.py``,
        ``python -m scripts.x``, links, ``{baseDir}/...``): what ``%skill_context`` runs.

        A list of ``references.ScriptReference`` (path, exists, inside, error), in the order
        the instructions mention them.
        """
        return markdown.referenced_scripts(self)

    # -- lookup ----------------------------------------------------------------------------

    def find_script(self, name: str | os.PathLike[str]) -> ScriptMetadata:
        """Find a script by stem (``extract``), file name (``extract.py``) or relative path.

        An exact relative path (``run.py`` for a root script) wins over a file name or stem.
        Raises AmbiguousScriptError when a stem or file name matches several scripts,
        ScriptNotFoundError (with close matches) when nothing matches, and PathSecurityError
        when a path points outside the skill.
        """
        if "\0" in os.fspath(name):
            raise PathSecurityError(
                f"Script name {os.fspath(name)!r} for skill {self.name!r} contains a NUL byte: "
                "pass a script name or a relative path without it"
            )
        scripts = self.scripts
        query = os.fspath(name).strip().replace("\\", "/")
        if not query:
            raise ScriptNotFoundError(
                f"No script name given for skill {self.name!r}: pass one of {_listing(scripts)}"
            )
        by_path = {s.path.as_posix(): s for s in scripts}
        # An exact relative path names one script: a root run.py must stay reachable (its tool,
        # its context entry) even when scripts/run.py shares its file name.
        if query in by_path:
            return by_path[query]
        if "/" in query:
            normal = posixpath.normpath(query)
            if normal.startswith("./"):
                normal = normal[2:]
            hit = by_path.get(normal) or by_path.get(f"scripts/{normal}")
            if hit is not None:
                return hit
            self._check_inside(query)
        else:
            by_file = [s for s in scripts if s.path.name == query]
            by_stem = [s for s in scripts if s.name == query]
            # "build" with scripts/build and scripts/build.sh names two scripts by stem: never
            # let the extensionless one win just because its file name equals the query.
            hits = by_stem if len(by_stem) > 1 else (by_file or by_stem)
            if len(hits) == 1:
                return hits[0]
            if len(hits) > 1:
                paths = [s.path.as_posix() for s in hits]
                raise AmbiguousScriptError(
                    f"Script {query!r} in skill {self.name!r} matches {len(hits)} scripts "
                    f"({', '.join(paths)}): pass the relative path, e.g. {paths[0]!r}"
                )
        raise ScriptNotFoundError(
            _not_found_message(self.name, query, scripts),
            magic=_not_found_message(self.name, query, scripts, magic=True),
        )

    def _check_inside(self, query: str) -> None:
        # A path that leaves the skill is a security problem, not a typo: say so.
        if posixpath.isabs(query) or os.path.isabs(query):
            target = os.path.realpath(query)
        else:
            target = os.path.realpath(os.path.join(self.base_dir, query))
        base = os.path.realpath(self.base_dir)
        if target != base and not target.startswith(base.rstrip(os.sep) + os.sep):
            raise PathSecurityError(
                f"Script path {query!r} resolves outside skill {self.name!r} ({base}): "
                "only scripts inside the skill directory can run"
            )


def _stats(base: Path, files: tuple) -> tuple:
    """``((rel, mtime_ns, size), ...)`` now for the rels of ``files`` (-1s when gone)."""
    out = []
    for rel, _, _ in files:
        try:
            st = os.stat(os.path.join(base, rel))
            out.append((rel, st.st_mtime_ns, st.st_size))
        except OSError:
            out.append((rel, -1, -1))
    return tuple(out)


def _listing(scripts: list[ScriptMetadata]) -> str:
    if not scripts:
        return "(none)"
    return ", ".join(s.path.as_posix() for s in scripts)


def _not_found_message(
    skill: str, query: str, scripts: list[ScriptMetadata], *, magic: bool = False
) -> str:
    """The error; ``magic``: suggestions as a magic names them (``skill.stem``)."""
    if not scripts:
        return (
            f"Skill {skill!r} has no scripts (looked in scripts/ and the skill root for "
            f"known extensions or a shebang), so {query!r} cannot run"
        )
    candidates: dict[str, ScriptMetadata] = {}
    for s in scripts:
        for key in (s.name, s.path.name, s.path.as_posix()):
            candidates.setdefault(key, s)
    close = difflib.get_close_matches(query, list(candidates), n=3, cutoff=0.6)
    hint = ""
    if close:
        suggestions = sorted({_call_name(skill, candidates[c], scripts, magic) for c in close})
        hint = f"; did you mean {' or '.join(suggestions)}?"
    if magic:
        names = ", ".join(_call_name(skill, s, scripts, True) for s in scripts)
        return (
            f"Skill {skill!r} has no script {query!r}{hint or '.'} Available: {names} "
            "(run one with %%skillrun SKILL.SCRIPT)"
        )
    return (
        f"Skill {skill!r} has no script {query!r}{hint or '.'} Available: {_listing(scripts)} "
        "(pass a name, file name or relative path)"
    )


def _call_name(
    skill: str, script: ScriptMetadata, scripts: list[ScriptMetadata], magic: bool
) -> str:
    """How a person names ``script``: ``'scripts/x.py'`` in Python; ``skill.x`` for a magic
    (``skill.scripts/x.py`` when another script shares the stem)."""
    if not magic:
        return repr(script.path.as_posix())
    unique = sum(1 for s in scripts if s.name == script.name) == 1
    return f"{skill}.{script.name if unique else script.path.as_posix()}"


__all__ = ["Skill", "REFERENCE_DIRS"]
