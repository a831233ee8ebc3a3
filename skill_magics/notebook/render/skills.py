"""``%skills`` views: the skills table, ``%skills show NAME``, and a skill's scripts table.

Inputs are duck-typed core objects: SkillMetadata, or a Skill with ``.metadata``,
``.base_dir``, ``.scripts`` (list of ScriptMetadata), ``.content`` and ``.references``.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from skill_magics.core.base.visible import visible
from skill_magics.notebook.render.display import Display
from skill_magics.notebook.render.format import shorten
from skill_magics.notebook.render.markdown import markdown_html
from skill_magics.notebook.render.paths import display_path
from skill_magics.notebook.render.table import (
    Cell,
    html_table,
    text_table,
    warnings_html,
    warnings_text,
)

_DESCRIPTION_WIDTH = 80
RUNNABLE_TITLE = "also runnable (other scripts import them; not offered to a model)"
LIBRARY_TITLE = "modules (imported by the scripts; running them does nothing)"


def _metadata(skill: Any) -> Any:
    # A Skill wraps its SkillMetadata in .metadata; SkillMetadata.metadata is the plain dict.
    inner = getattr(skill, "metadata", None)
    return inner if hasattr(inner, "name") else skill


def _base_dir(skill: Any) -> Any:
    base = getattr(skill, "base_dir", None)
    return base if base is not None else getattr(_metadata(skill), "base_dir", None)


def _script_count(skill: Any, counts: Mapping[str, int] | None) -> str:
    name = _metadata(skill).name
    if counts is not None and name in counts:
        return str(counts[name])
    try:
        scripts = getattr(skill, "scripts", None)  # a Skill detects its scripts lazily
    except Exception:  # detection failed: the table still lists the skill
        return "?"
    if scripts is None:
        return "–"
    # Offered scripts first; the ones other scripts import, and modules, counted apart.
    offered, runnable, library = _by_role(scripts)
    extra = [f"+{len(runnable)} runnable"] if runnable else []
    extra += [f"+{len(library)} modules"] if library else []
    return f"{len(offered)} ({', '.join(extra)})" if extra else str(len(offered))


def _by_role(scripts: Iterable[Any]) -> tuple[list[Any], list[Any], list[Any]]:
    """(offered, runnable but not offered, not runnable) of ``ScriptMetadata``-like values."""
    offered, runnable, library = [], [], []
    for s in scripts:
        if not getattr(s, "runnable", True):
            library.append(s)
        elif getattr(s, "offered", True):
            offered.append(s)
        else:
            runnable.append(s)
    return offered, runnable, library


def skills_table(
    skills: Iterable[Any],
    warnings: Sequence[str] = (),
    *,
    script_counts: Mapping[str, int] | None = None,
    dirs: Sequence[Any] | None = None,
    plugins: Sequence[tuple[Any, Sequence[str]]] = (),
    mcp: Sequence[Any] = (),
    signatures: Mapping[str, str] | None = None,
) -> Display:
    """Name, shortened description, scripts count, location; warnings listed beneath.
    ``signatures``: skill name -> who signed it (a "signature" column; core/trust).
    ``plugins``: (Plugin, its skills' names) for the skills that came in an Agent Plugin,
    listed under the plugin's name with the MCP servers it offers. ``mcp``: the MCP servers
    added (core/mcp/servers.py McpServer), their skills named ``label/name`` and marked with
    where they came from."""
    items = list(skills)
    headers = ["name", "description", "scripts", "location"]
    if signatures is not None:
        headers.append("signature")
    rows = []
    for skill in items:
        meta = _metadata(skill)
        description = str(meta.description or "")
        row = [
            Cell(meta.name, f"<code>{html.escape(meta.name)}</code>"),
            Cell(shorten(description, _DESCRIPTION_WIDTH), title=description),
            _script_count(skill, script_counts),
            display_path(_base_dir(skill)),
        ]
        if signatures is not None:
            row.append(signatures.get(meta.name, "unsigned"))
        rows.append(row)
    mcp_skills = [(server, entry) for server in mcp for entry in server.skills]
    if items:
        text = text_table(headers, rows, max_width=_DESCRIPTION_WIDTH)
        body = html_table(headers, rows, "skill-magics-skills")
    elif mcp_skills:
        text, body = "", ""
    else:
        where = ", ".join(display_path(d) for d in dirs) if dirs else "the configured directories"
        text = f"No skills found in {where}. Add a directory with %skills add DIR."
        body = f"<p>{html.escape(text)}</p>"
    if mcp:
        text, body = _mcp_section(mcp, mcp_skills, text, body)
    if plugins:
        lines = plugin_lines(plugins)
        text += "\n\n--- plugins ---\n" + "\n".join(lines)
        body += (
            "<p><b>plugins</b></p><ul>"
            + "".join(f"<li>{html.escape(line.strip())}</li>" for line in lines)
            + "</ul>"
        )
    if warnings:
        text += "\n\n" + warnings_text(warnings)
        body += warnings_html(warnings)
    return Display(text, f'<div class="skill-magics-skills">{body}</div>')


def _mcp_section(
    servers: Sequence[Any], skills: Sequence[tuple[Any, Any]], text: str, body: str
) -> tuple[str, str]:
    """The skills of MCP servers: ``label/name``, description, files, and their origin."""
    headers = ["name", "description", "files", "origin"]
    rows = []
    for server, entry in skills:
        description = visible(str(entry.frontmatter.get("description") or ""))
        files = "dynamic" if entry.files is None else str(len(entry.files))
        # The label only: the server's command (a path, long) is said once, below the table.
        origin = f"mcp: {server.label}"
        rows.append(
            [
                Cell(
                    visible(entry.qualified_name),
                    f"<code>{html.escape(visible(entry.qualified_name))}</code>",
                ),
                Cell(shorten(description, _DESCRIPTION_WIDTH), title=description),
                files,
                Cell(origin, title=visible(server.origin)),
            ]
        )
    empty = [s.label for s in servers if not s.skills and not getattr(s, "error", None)]
    notes = [f"MCP server '{s.label}': {visible(s.origin)}" for s in servers if s.skills]
    notes += [f"MCP servers with no skills: {', '.join(empty)}"] if empty else []
    notes += [
        f"MCP server '{s.label}' could not be listed again (its last listing is shown): "
        + visible(s.error)
        for s in servers
        if getattr(s, "error", None)
    ]
    note = "\n".join(notes)
    title = "--- from MCP servers ---"
    table = text_table(headers, rows, max_width=_DESCRIPTION_WIDTH) if rows else ""
    text = "\n\n".join(part for part in (text, title, table, note) if part)
    body += f"<p><b>{html.escape(title.strip('- '))}</b></p>"
    if rows:
        body += html_table(headers, rows, "skill-magics-mcp-skills")
    body += "".join(f"<p>{html.escape(line)}</p>" for line in notes)
    return text, body


def plugin_lines(plugins: Sequence[tuple[Any, Sequence[str]]]) -> list[str]:
    """Per plugin: its name, folder and skills; its MCP servers (offered, not started); its
    manifest problems."""
    lines = []
    for plugin, names in plugins:
        lines.append(
            f"{visible(plugin.name)} ({display_path(plugin.root)}): skills "
            + ", ".join(visible(n) for n in names)
        )
        if plugin.mcp_servers:
            servers = ", ".join(visible(m.describe()) for m in plugin.mcp_servers)
            lines.append(f"  MCP servers: {servers} ({plugin.mcp_note})")
        lines += [f"  note: {visible(p)}" for p in plugin.problems]
    return lines


def _approval_state(approved: bool | None) -> str:
    if approved is None:
        return ""
    return "yes in session" if approved else "asks before running"


def scripts_table(scripts: Iterable[Any], *, approved: bool | None = None) -> Display:
    """Name, path, interpreter, description, approval state (per skill: a content hash)."""
    items = list(scripts)
    if not items:
        text = "No scripts in this skill."
        return Display(text, f"<p>{html.escape(text)}</p>")
    state = _approval_state(approved)
    headers = ["name", "path", "interpreter", "description", "approval"]
    rows = []
    for script in items:
        path = str(getattr(script, "path", ""))
        # Script docstrings run to paragraphs; the table shows the first one.
        description = str(getattr(script, "description", "") or "").strip().split("\n\n")[0]
        rows.append(
            [
                script.name,
                Cell(path, f"<code>{html.escape(path)}</code>"),
                getattr(script, "interpreter", ""),
                Cell(shorten(description, _DESCRIPTION_WIDTH), title=description),
                state,
            ]
        )
    return Display(text_table(headers, rows), html_table(headers, rows, "skill-magics-scripts"))


def _fields(meta: Any, skill: Any) -> list[tuple[str, str]]:
    allowed = getattr(meta, "allowed_tools", None)
    extra = getattr(meta, "metadata", None) or {}
    fields = [
        ("name", meta.name),
        ("description", str(meta.description or "")),
        ("version", getattr(meta, "version", None) or ""),
        ("license", getattr(meta, "license", None) or ""),
        ("compatibility", getattr(meta, "compatibility", None) or ""),
        ("allowed-tools", "(no restriction)" if allowed is None else " ".join(allowed)),
        ("metadata", ", ".join(f"{k}={v}" for k, v in extra.items()) if extra else ""),
        ("location", display_path(_base_dir(skill))),
    ]
    return [(k, str(v)) for k, v in fields if v not in ("", None)]


def requirements_view(reqs: Any) -> Display:
    """What a skill's scripts need (core Requirements): packages, programs, what is missing."""
    headers = ["needs", "kind", "for", "state", "source"]
    rows = []
    for pkg in reqs.packages:
        imports = ", ".join(pkg.imports)
        what = pkg.name + (f" (import {imports})" if imports and imports != pkg.name else "")
        if pkg.installed:
            state = f"installed {pkg.version}".strip()
        else:
            state = "missing (optional)" if pkg.optional else "MISSING"
        rows.append([what, "package", _scripts_text(pkg.scripts), state, pkg.source])
    for prog in reqs.programs:
        state = "found" if prog.found else "MISSING"
        rows.append([prog.name, "program", _scripts_text(prog.scripts), state, "PATH"])
    where = f"checked for {reqs.python_source} Python {reqs.python}"
    # Lines naming no distribution (a path, a URL, bad bytes): never installed.
    refused = "".join(f" Refused: {r}." for r in getattr(reqs, "refused", ()))
    if not rows:
        text = f"No third-party packages or programs ({where}).{refused}"
        return Display(text, f"<p>{html.escape(text)}</p>")
    missing = list(reqs.missing)
    hint = ""
    if any(not p.installed and not p.optional for p in reqs.packages):
        hint = f" %skills env {reqs.skill} installs the missing packages."
    note = f"Missing: {', '.join(missing)}.{hint}" if missing else "Nothing is missing."
    note += f" ({where}){refused}"
    text = text_table(headers, rows) + "\n" + note
    body = html_table(headers, rows, "skill-magics-requirements") + f"<p>{html.escape(note)}</p>"
    return Display(text, body)


def _scripts_text(scripts: Sequence[str]) -> str:
    shown = ", ".join(s.removeprefix("scripts/") for s in scripts[:3])
    return shown + (f" +{len(scripts) - 3}" if len(scripts) > 3 else "")


def skill_detail(
    skill: Any,
    *,
    approved: bool | None = None,
    scripts: Sequence[Any] | None = None,
    content: str | None = None,
    secrets: Mapping[str, bool] | None = None,
    requirements: Any = None,
    provenance: Any = None,
    signature: Any = None,
    secret_forms: Mapping[str, str] | None = None,
    plugin: Any = None,
) -> Display:
    """``%skills show NAME``: metadata, the offered scripts, the ones other scripts import
    (apart: they run when asked, but are not offered), the modules that do nothing when
    run, requirements (what is missing), references, then the rendered SKILL.md (often
    long: what a person acts on comes first).

    ``secrets``: each declared secret -> whether a value is set (values are never shown);
    ``secret_forms``: the form(s) that declared it (``required-secrets``, ``env (secret:
    true)``, ``requires.env``, ...). ``plugin``: the Agent Plugin the skill came with.
    ``provenance``: an installed skill's ProvenanceInfo (its source, and whether its files
    still match its skills-lock.json)."""
    meta = _metadata(skill)
    if scripts is None:
        scripts = list(getattr(skill, "scripts", None) or [])
    scripts, runnable, library = _by_role(scripts)
    if content is None:
        content = str(getattr(skill, "content", "") or "")
    references = [str(r) for r in (getattr(skill, "references", None) or [])]
    warnings = list(getattr(meta, "warnings", None) or [])
    fields = _fields(meta, skill)
    fields += _secret_fields(secrets, secret_forms)
    fields += plugin_fields(plugin) if plugin is not None else []
    fields += provenance_fields(provenance) if provenance is not None else []
    fields += [("signature", signature.describe())] if signature is not None else []
    # What a person acts on (scripts, what is missing) comes before the long SKILL.md.
    views = [("scripts", scripts_table(scripts, approved=approved))]
    views += [(RUNNABLE_TITLE, scripts_table(runnable, approved=approved))] if runnable else []
    views += [(LIBRARY_TITLE, scripts_table(library))] if library else []
    views += [("requirements", requirements_view(requirements))] if requirements is not None else []
    # Text goes to terminals as is: a skill's escapes must not clear or rewrite lines there.
    text = visible(_detail_text(fields, warnings, views, references, content), keep="\n\t")
    body = _detail_html(meta.name, fields, warnings, views, references, content)
    return Display(text, f'<div class="skill-magics-skill">{body}</div>')


def _secret_fields(
    secrets: Mapping[str, bool] | None, forms: Mapping[str, str] | None
) -> list[tuple[str, str]]:
    """("secrets", each declared secret: set or not, and where it was declared); never a value."""
    if not secrets:
        return []
    forms = forms or {}
    shown = ", ".join(
        f"{k} ({'set' if v else 'not set'}"
        + (f"; declared in {forms[k]}" if forms.get(k) else "")
        + ")"
        for k, v in secrets.items()
    )
    return [("secrets", shown)]


def _detail_text(
    fields: list[tuple[str, str]],
    warnings: list[str],
    views: list[tuple[str, Display]],
    references: list[str],
    content: str,
) -> str:
    width = max(len(k) for k, _ in fields)
    parts = ["\n".join(f"{k.ljust(width)}  {v}" for k, v in fields)]
    if warnings:
        parts.append(warnings_text(warnings))
    parts += [f"--- {title} ---\n" + view.text for title, view in views]
    if references:
        parts.append("--- references ---\n" + "\n".join(references))
    parts.append("--- SKILL.md ---\n" + (content.strip("\n") or "(empty)"))
    return "\n\n".join(parts)


def _detail_html(
    name: str,
    fields: list[tuple[str, str]],
    warnings: list[str],
    views: list[tuple[str, Display]],
    references: list[str],
    content: str,
) -> str:
    field_rows = "".join(
        f'<tr><th style="text-align:left;vertical-align:top">{html.escape(k)}</th>'
        f'<td style="text-align:left">{html.escape(v)}</td></tr>'
        for k, v in fields
    )
    parts = [
        f"<h3><code>{html.escape(name)}</code></h3>",
        f"<table>{field_rows}</table>",
        warnings_html(warnings),
    ]
    for title, view in views:
        head, _, rest = title.partition(" (")
        note = f" ({html.escape(rest)}" if rest else ""
        parts.append(f"<p><strong>{html.escape(head)}</strong>{note}</p>{view.html}")
    if references:
        items = "".join(f"<li><code>{html.escape(r)}</code></li>" for r in references)
        parts.append(f"<p><strong>references</strong></p><ul>{items}</ul>")
    parts.append(
        f"<details open><summary>SKILL.md ({len(content):,} characters)</summary>"
        f"{markdown_html(content) if content.strip() else '<p><em>(empty)</em></p>'}</details>"
    )
    return "".join(parts)


def plugin_fields(plugin: Any) -> list[tuple[str, str]]:
    """("plugin", its name and folder) and ("mcp servers", offered, never started here)."""
    fields = [("plugin", f"{visible(plugin.name)} ({visible(str(plugin.root))})")]
    if plugin.mcp_servers:
        names = ", ".join(visible(m.describe()) for m in plugin.mcp_servers)
        fields.append(("mcp servers", f"{names} ({plugin.mcp_note})"))
    return fields


def provenance_fields(provenance: Any) -> list[tuple[str, str]]:
    """("installed from", source) and ("lock", whether the files still match it)."""
    fields = [("installed from", visible(provenance.source))]
    if provenance.matches:
        fields.append(("lock", f"files match {visible(provenance.lock)}"))
    else:
        changes = list(provenance.changes)
        shown = ", ".join(changes[:6]) + (f", +{len(changes) - 6} more" if len(changes) > 6 else "")
        fields.append(
            (
                "lock",
                f"{len(changes)} CHANGED since the install: {visible(shown)} "
                "(%skills verify lists them; %skills sync --force restores them)",
            )
        )
    return fields


__all__ = [
    "skills_table",
    "scripts_table",
    "skill_detail",
    "requirements_view",
    "provenance_fields",
]
