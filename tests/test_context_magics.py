"""%skill_context, %skills catalog and %%skillpy in a real IPython InteractiveShell.

Approval comes from real ipywidgets buttons clicked from another thread while the cell waits
(approval_ui "widgets"), or from configuration (auto_approve / require_approval).
"""

from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ET

import pytest
from IPython.core.interactiveshell import InteractiveShell
from test_context_support import make_skill

from skill_magics.notebook.context_magics import (
    SkillContextText,
    _wants_rewrite,
    context_to_await,
    highlight_xml,
    rewrite_to_await,
)
from skill_magics.notebook.extension import get_magics

BODY = "# Echo\n\n```\npython scripts/echo.py\n```\n"
ECHO = "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"


@pytest.fixture
def shell(tmp_path, monkeypatch):
    monkeypatch.delenv("SKILL_MAGICS_AUTO_APPROVE", raising=False)
    monkeypatch.delenv("SKILL_MAGICS_PATH", raising=False)
    ip = InteractiveShell.instance()
    ip.config.pop("SkillMagics", None)
    skills = tmp_path / "skills"
    make_skill(skills, "echo", BODY, {"scripts/echo.py": ECHO})
    ip.run_line_magic("load_ext", "skill_magics")
    ip.run_line_magic("load_ext", "skill_magics.notebook.context_magics")
    ip.run_cell(f"%config SkillMagics.skill_dirs = [{str(skills)!r}]")
    ip.run_cell("%config SkillMagics.approval_ui = 'widgets'")
    ip.skills_root = skills
    yield ip
    ip.run_line_magic("unload_ext", "skill_magics.notebook.context_magics")
    ip.run_line_magic("unload_ext", "skill_magics")
    ip.config.pop("SkillMagics", None)
    for name in ("ctx", "res", "cat", "out"):
        ip.user_ns.pop(name, None)


def click_when_shown(ip, label: str, timeout: float = 20) -> threading.Thread:
    m = get_magics(ip)
    seen = len(m.panels)

    def clicker() -> None:
        deadline = time.monotonic() + timeout
        while len(m.panels) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        if len(m.panels) > seen:
            panel = m.panels[seen]
            _ = panel.widget
            value = {"Yes once": "yes_once", "Yes in session": "yes_in_session", "No": "no"}
            panel.buttons[value[label]].click()

    thread = threading.Thread(target=clicker, daemon=True)
    thread.start()
    return thread


def test_skill_context_with_a_click(shell):
    click_when_shown(shell, "Yes once")
    result = shell.run_cell("ctx = %skill_context echo --args '{\"a\": 1}'\nctx")
    assert result.success, result.error_in_exec
    ctx = shell.user_ns["ctx"]
    assert isinstance(ctx, SkillContextText) and isinstance(ctx, str)
    out = ET.fromstring(ctx).find(".//script_output")
    assert out.get("status") == "completed" and out.text == '{"a": 1}\n'
    panel = get_magics(shell).panels[-1]
    assert [s.path for s in panel.request.scripts] == ["scripts/echo.py"]
    assert f"{ctx}" == str(ctx)  # usable directly in f-strings
    assert ctx.approx_tokens == (len(ctx) + 3) // 4


def test_declined_click_gives_declined_elements(shell):
    click_when_shown(shell, "No")
    shell.run_cell("%skill_context echo -o ctx")
    out = ET.fromstring(shell.user_ns["ctx"]).find(".//script_output")
    assert out.get("status") == "declined"


def test_no_run_and_refs_and_several_names(shell):
    make_skill(shell.skills_root, "other", "# Other\n", {"references/r.md": "ref text\n"})
    shell.run_cell("%reload_ext skill_magics")
    get_magics(shell).manager.reload()
    result = shell.run_cell("%skill_context echo other --no-run --refs content")
    root = ET.fromstring(result.result)
    assert root.tag == "skill_contexts"
    assert root.find(".//script_output").get("status") == "skipped"
    assert root.find(".//file").text == "ref text\n"
    assert get_magics(shell).panels == [] or all(
        p.request.skill_name != "other" for p in get_magics(shell).panels
    )


def test_headless_like_config_and_auto_approve(shell):
    shell.run_cell("%config SkillMagics.auto_approve = ['echo']")
    ctx = shell.run_cell("%skill_context echo --args '{\"k\": 2}'").result
    assert ET.fromstring(ctx).find(".//script_output").text == '{"k": 2}\n'
    records = [r for r in get_magics(shell).manager.audit.records() if r.outcome == "approved"]
    assert records and "auto_approve" in records[-1].reason


def test_args_from_a_variable_and_bad_args(shell, capsys):
    shell.run_cell("%config SkillMagics.require_approval = False")
    shell.user_ns["payload"] = {"v": [1, 2]}
    ctx = shell.run_cell("%skill_context echo --args payload").result
    assert ET.fromstring(ctx).find(".//script_output").text == '{"v": [1, 2]}\n'
    result = shell.run_cell("%skill_context echo --args {nope")
    assert result.result is None


def test_unknown_skill_is_an_element_not_an_error(shell):
    ctx = shell.run_cell("%skill_context ecko").result
    root = ET.fromstring(ctx)
    assert root.get("status") == "not_found" and root.get("close_matches") == "echo"


def test_catalog_subcommand(shell):
    from skill_magics.core.context import skills_catalog

    cat = shell.run_cell("%skills catalog").result
    assert isinstance(cat, SkillContextText)
    assert cat == skills_catalog(get_magics(shell).manager)
    assert cat.startswith("<available_skills>\n<skill>\n<name>\necho\n</name>")


def test_display_html_and_text(shell):
    shell.run_cell("%config SkillMagics.require_approval = False")
    ctx = shell.run_cell("%skill_context echo").result
    page = ctx._repr_html_()
    assert "characters" in page and "tokens (estimate: characters / 4)" in page
    assert "navigator.clipboard.writeText" in page and ">Copy</button>" in page
    assert "&lt;/instructions&gt;" in page  # escaped, never raw markup from the skill
    assert "<script" not in page
    fmt = shell.display_formatter.formatters["text/plain"]
    assert fmt(ctx).startswith('<skill_context id="echo">')
    highlighted = highlight_xml('<a b="c">x &amp; y</a>')
    assert "<b>a</b>" in highlighted and "x &amp;amp; y" in highlighted


def test_transformer_leaves_cells_alone_without_await_support(shell):
    lines = ["ctx = %skill_context echo\n", "print(1)\n"]
    assert context_to_await(lines) == lines  # a plain InteractiveShell has no kernel


def test_rewrite_to_await():
    first = rewrite_to_await(["ctx = %skill_context a b --no-run\n", "x = 1\n"])
    assert first[0] == (
        "ctx = await __import__('skill_magics.notebook.context_magics', fromlist=['_'])"
        ".run_skill_context('a b --no-run')\n"
    )
    assert first[1] == "x = 1\n"
    (cell,) = rewrite_to_await(["%%skillpy calc --timeout 5\n", "print(1)\n"])
    assert cell.endswith(".run_skillpy('calc --timeout 5', 'print(1)\\n')\n")
    assert rewrite_to_await(["    %skill_context a\n"]) == ["    %skill_context a\n"]
    compile(first[0], "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


def test_interrupt_while_waiting_for_approval_ends_the_wait(shell):
    """On the await path a kernel interrupt cancels the cell's coroutine: the worker thread
    must stop waiting for a click at once (not after approval_timeout) and run nothing."""
    import asyncio

    from skill_magics.notebook import context_magics

    shell.run_cell("%config SkillMagics.approval_timeout = 60")
    m = get_magics(shell)
    cm = context_magics.register(shell, m)
    seen = len(m.panels)

    async def interrupt_while_waiting() -> None:
        task = asyncio.ensure_future(cm.skill_context_async("echo"))
        deadline = time.monotonic() + 20
        while len(m.panels) <= seen:
            assert time.monotonic() < deadline, "no approval panel was shown"
            await asyncio.sleep(0.02)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    started = time.monotonic()
    asyncio.run(interrupt_while_waiting())
    assert time.monotonic() - started < 10, "the worker kept waiting for a click"
    assert m.panels[-1].decision is None
    last = m.manager.audit.records()[-1]
    assert (last.outcome, last.script) == ("approval_unavailable", "scripts/echo.py")
    assert "Interrupted while waiting for approval" in last.reason


AWAITED = "await __import__('skill_magics.notebook.context_magics'"


@pytest.mark.parametrize(
    "cell",
    [
        "%%writefile howto.txt\nType this in a cell:\n%skill_context demo\n",
        "%%time\nx = %skill_context demo --no-run\n",
        "%%bash\n%skill_context demo\n",
        "%%skillrun demo.echo\n%skill_context demo\n",  # notebook.transformer's cell
        'doc = """\n%skill_context demo\n"""\nprint(doc)\n',
        "doc = '''\nx = %skill_context demo\n'''\n",
        "total = 1 + \\\n%skill_context demo\n",  # a continued line, not a statement
        "if True:\n    %skill_context demo\n",  # indented: not top level
        "# %skill_context demo\n",
    ],
)
def test_rewrite_leaves_other_cell_magics_strings_and_inner_lines_alone(cell):
    lines = cell.splitlines(keepends=True)
    assert rewrite_to_await(lines) == lines
    assert not _wants_rewrite(lines)


def test_rewrite_finds_statements_around_strings_and_blocks():
    cell = (
        'doc = """\n%skill_context no\n"""\n'
        'ctx = %skill_context a --args \'{"k": "%skill_context"}\'\n'
        "for i in range(2):\n    pass\n"
        "%skill_context b\n"
    )
    out = rewrite_to_await(cell.splitlines(keepends=True))
    assert out[1] == "%skill_context no\n"
    assert out[3].startswith(f"ctx = {AWAITED}") and out[3].endswith(
        ".run_skill_context('a --args \\'{\"k\": \"%skill_context\"}\\'')\n"
    )
    assert out[6].startswith(AWAITED) and out[6].endswith(".run_skill_context('b')\n")
    compile("".join(out), "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


def test_other_cell_magics_keep_their_text_where_await_is_on(shell, tmp_path, monkeypatch):
    """As on ipykernel >= 7.4 (where the rewrite is active): %%writefile writes the line as
    typed, %%time and %time run the magic synchronously inside their own compile."""
    from skill_magics.notebook import waiting

    monkeypatch.setattr(waiting, "supports_await", lambda shell: True)
    monkeypatch.chdir(tmp_path)
    shell.run_cell("%config SkillMagics.require_approval = False")
    r = shell.run_cell("%%writefile howto.txt\nType this in a cell:\n%skill_context echo\n")
    assert r.success, r.error_in_exec
    assert (tmp_path / "howto.txt").read_text() == "Type this in a cell:\n%skill_context echo\n"
    r = shell.run_cell("%%time\nctx = %skill_context echo --no-run\n")
    assert r.success, r.error_in_exec or r.error_before_exec
    assert ET.fromstring(shell.user_ns["ctx"]).get("id") == "echo"
    r = shell.run_cell("%time res = %skill_context echo --no-run")
    assert r.success, r.error_in_exec or r.error_before_exec
    assert shell.user_ns["res"] == shell.user_ns["ctx"]
    # A top-level line is still rewritten into an await there.
    assert AWAITED in shell.transform_cell("out = %skill_context echo\n")
