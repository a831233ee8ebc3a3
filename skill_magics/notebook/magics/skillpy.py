"""``%%skillpy SKILL``: run the cell as Python inside the skill's own venv.

Core plans the ``python -c`` run, the gate decides (the request carries the code), the
executor runs it (core/run/env/skillpy.py). This module parses the line and shows the result.
"""

from __future__ import annotations

import html
from typing import Any

from IPython.core.magic import cell_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from skill_magics.notebook.magics import drive
from skill_magics.notebook.magics.skills import SharedMagics


class SkillPyResult(dict):
    """The skillpy result dict (``skill_name``, ``stdout``, ``stderr``, ``returncode``,
    ``timed_out``, ``error``) with a readable display."""

    def summary(self) -> str:
        if "returncode" not in self:
            name = self.get("skill_name", "")
            head = f"%%skillpy {name}" if name else "%%skillpy"
            return f"{head}: {self.get('error', '')}".strip()
        state = "timed out" if self.get("timed_out") else f"exit code {self['returncode']}"
        return f"%%skillpy {self['skill_name']}: {state}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        parts = [self.summary()]
        if self.get("stdout"):
            parts.append(self["stdout"].rstrip("\n"))
        if self.get("stderr"):
            parts.append("-- stderr --\n" + self["stderr"].rstrip("\n"))
        if "error" in self and "returncode" in self:
            parts.append(f"error: {self['error']}")
        printer.text("\n".join(parts))

    def _repr_html_(self) -> str:
        pre = "<pre style='margin:0;white-space:pre-wrap;max-height:24em;overflow:auto'>"
        out = [f"<div><b>{html.escape(self.summary())}</b></div>"]
        if self.get("stdout"):
            out.append(f"{pre}{html.escape(self['stdout'])}</pre>")
        if self.get("stderr"):
            out.append(
                f"<div style='color:#a31515'>stderr</div>{pre}{html.escape(self['stderr'])}</pre>"
            )
        if "error" in self and "returncode" in self:
            out.append(f"<div style='color:#a31515'>{html.escape(self['error'])}</div>")
        return "<div class='skill-magics-skillpy'>" + "".join(out) + "</div>"


@magics_class
class SkillPyMagics(SharedMagics):
    """%%skillpy, sharing SkillMagics' manager, approvals and config (``skill_magics``)."""

    # %%skillpy ---------------------------------------------------------------------------
    @magic_arguments(name="%skillpy")  # a cell magic: usage reads %%skillpy
    @argument("skill", help="the skill whose venv runs the code")
    @argument("--timeout", type=float, default=None, help="seconds before the code is killed")
    @argument("-o", "--out", default=None, help="also store the result dict in this variable")
    @cell_magic
    def skillpy(self, line: str, cell: str = "") -> SkillPyResult | None:
        """Run the cell as Python inside a skill's own venv: %%skillpy SKILL [--timeout N]

        cwd is the skill folder; the approval panel shows the code. Returns the skillpy
        dict: skill_name, stdout, stderr, returncode, timed_out (and error).
        """
        return drive.blocking(self.skill_magics, self._skillpy, line, cell)

    async def skillpy_async(self, line: str, cell: str) -> SkillPyResult | None:
        """The await path: approval in a worker thread, the run awaited (interrupt kills it)."""
        return await drive.awaited(self.skill_magics, self._skillpy, line, cell)

    def _skillpy(self, mode: drive.Mode, line: str, cell: str) -> drive.Magic[SkillPyResult | None]:
        from skill_magics.core.run.env import skillpy

        opts = parse_argstring(self.skillpy, line)
        run = (self.manager, opts.skill, cell)
        approver = mode.approver()
        result = yield drive.Step(
            lambda: skillpy.run_python_in_skill(*run, timeout=opts.timeout, approver=approver),
            lambda: skillpy.run_python_in_skill_async(
                *run, timeout=opts.timeout, approver=approver, cancel=mode.cancel
            ),
        )
        return self._store(opts.out, SkillPyResult(result))


__all__ = ["SkillPyMagics", "SkillPyResult"]
