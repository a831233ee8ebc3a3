"""Renderers for the notebook layer: pure functions from core objects to views.

No ipywidgets import here; ``widgets.ResultView`` imports it when a live view is built.

Result of ``%%skillrun`` (see ``skill_magics.notebook.result.SkillRunResult``):
    result_text(run) -> str            plain text: header line, stdout/stderr, ANSI stripped
    result_html(run) -> str            static HTML: header + <details> per section (no JS/CSS)
    header_text(run) / header_html(run)
    widgets.ResultView(run)            live view: header, Stop button, message, Tab of 5 panes
    widgets.widgets_supported() -> bool   kernel with a comm manager + ipywidgets installed
    TAB_TITLES = ("stdout", "stderr", "exit code", "signal", "timing")

An approval question (one model, ``core/panel/summary.py``; not imported here):
    approval_text.summary_text(request, full=False)    terminal prompt, text/plain, side panel
    approval_html.summary_html(request)                 the panel's widget and its static HTML

Tables (each returns a Display: text/plain + text/html, __repr__ is the text):
    skills_table(skills, warnings=(), *, script_counts=None, dirs=None)     %skills
    skill_detail(skill, *, approved=None, scripts=None, content=None)      %skills show NAME
    scripts_table(scripts, *, approved=None)
    approvals_table(approvals, *, current=None)                            %skills approvals
    history_table(audit_records)                                           %skills history

Helpers: strip_ansi(text), ansi_to_html(text), markdown_html(text), format_duration(ms),
display_path(path), Display(text, html).
"""

from __future__ import annotations

from skill_magics.notebook.render.ansi import ansi_to_html, strip_ansi
from skill_magics.notebook.render.display import Display
from skill_magics.notebook.render.format import format_duration, status_label
from skill_magics.notebook.render.history import approvals_table, history_table
from skill_magics.notebook.render.html import header_html, result_html
from skill_magics.notebook.render.markdown import markdown_html
from skill_magics.notebook.render.paths import display_path
from skill_magics.notebook.render.sections import TAB_TITLES, WAITING_MESSAGE
from skill_magics.notebook.render.skills import scripts_table, skill_detail, skills_table
from skill_magics.notebook.render.text import header_text, result_text

__all__ = [
    "TAB_TITLES",
    "WAITING_MESSAGE",
    "Display",
    "ansi_to_html",
    "strip_ansi",
    "approvals_table",
    "history_table",
    "header_html",
    "result_html",
    "header_text",
    "result_text",
    "markdown_html",
    "display_path",
    "format_duration",
    "status_label",
    "scripts_table",
    "skill_detail",
    "skills_table",
]
