"""%skill_context, %skills available and %%skillpy in a real IPython InteractiveShell.

Approval comes from real ipywidgets buttons clicked from another thread while the cell waits
(approval_ui "widgets"), or from configuration (auto_approve / require_approval).
"""

from __future__ import annotations

import threading
import time
import xml.etree.ElementTree as ET

import pytest
from magics_support import click_when_shown

from skill_magics.notebook.extension import get_magics
from skill_magics.notebook.magics.context import ContextMagics, SkillContextText, highlight_xml
from skill_magics.notebook.magics.rewrite import HOOK_ATTR, rewrite, to_await

BODY = "# Echo\n\n```\npython scripts/echo.py\n```\n"
ECHO = "import json, sys\nprint(json.dumps(json.load(sys.stdin)))\n"


@pytest.fixture
def shell(tmp_path, make_skill, ipython_shell):
    skills = tmp_path / "skills"
    make_skill(skills, "echo", scripts={"scripts/echo.py": ECHO}, body=BODY)
    return ipython_shell(skills, approval_ui="widgets")


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


def test_no_run_and_refs_and_several_names(shell, make_skill):
    make_skill(
        shell.skills_root, "other", files={"references/r.md": "ref text\n"}, body="# Other\n"
    )
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


NEEDS = (
    "import json, sys\nargs = json.load(sys.stdin)\n"
    "if 'x' not in args:\n    sys.exit('give x')\nprint(args['x'])\n"
)


def test_without_args_failed_scripts_are_said_once_with_the_fix(shell, make_skill, capsys):
    """Issue 44 item 4: without --args every referenced script gets {}; when one fails,
    the person is told (one line, the fix), not only the model through the envelope."""
    make_skill(
        get_magics(shell).manager.skill_dirs[0],
        "needs-x",
        scripts={"scripts/need.py": NEEDS},
        body="# Needs x\n\n```\npython scripts/need.py\n```\n",
    )
    shell.run_cell("%config SkillMagics.require_approval = False")
    ctx = shell.run_cell("%skill_context needs-x").result
    assert ET.fromstring(ctx).find(".//script_output").get("status") == "failed"
    err = capsys.readouterr().err
    assert (
        "needs-x: 1 referenced script failed with no arguments "
        "(scripts/need.py: failed, exit 1: give x)" in err
    )
    assert "%skill_context needs-x --args '{...}'" in err and len(err.strip().splitlines()) == 1
    # With --args, or when the scripts succeed, nothing more is said.
    shell.run_cell("%skill_context needs-x --args '{\"x\": 1}'")
    shell.run_cell("%skill_context echo")
    assert "referenced script" not in capsys.readouterr().err


def test_args_from_a_variable_and_bad_args(shell, capsys):
    shell.run_cell("%config SkillMagics.require_approval = False")
    shell.user_ns["payload"] = {"v": [1, 2]}
    ctx = shell.run_cell("%skill_context echo --args payload").result
    assert ET.fromstring(ctx).find(".//script_output").text == '{"v": [1, 2]}\n'
    result = shell.run_cell("%skill_context echo --args {nope")
    assert result.result is None


def test_each_skill_gets_its_own_args(shell, make_skill, capsys):
    # Issue 31 item 6: --args went to every skill's references alike.
    make_skill(shell.skills_root, "echo2", scripts={"scripts/echo.py": ECHO}, body=BODY)
    get_magics(shell).manager.reload()
    shell.run_cell("%config SkillMagics.require_approval = False")
    shell.user_ns["second"] = {"b": 2}
    ctx = shell.run_cell(
        "%skill_context echo echo2 --args 'echo={\"a\": 1}' --args echo2=second"
    ).result
    outs = {
        ctx_el.get("id"): ctx_el.find(".//script_output").text
        for ctx_el in ET.fromstring(ctx).iter("skill_context")
    }
    assert outs == {"echo": '{"a": 1}\n', "echo2": '{"b": 2}\n'}
    # One for all, one for a skill: the named one gets its own, the other the shared one.
    ctx = shell.run_cell(
        "%skill_context echo echo2 --args '{\"all\": 0}' --args 'echo2={\"b\": 3}'"
    ).result
    outs = {
        el.get("id"): el.find(".//script_output").text
        for el in ET.fromstring(ctx).iter("skill_context")
    }
    assert outs == {"echo": '{"all": 0}\n', "echo2": '{"b": 3}\n'}
    capsys.readouterr()
    result = shell.run_cell("%skill_context echo echo2 --args '{}' --args '{}'")
    assert result.result is None
    assert "NAME=JSON" in capsys.readouterr().err


def test_unknown_skill_is_an_element_not_an_error(shell, capsys):
    capsys.readouterr()
    ctx = shell.run_cell("%skill_context ecko").result
    root = ET.fromstring(ctx)
    assert root.get("status") == "not_found" and root.get("close_matches") == "echo"
    # The person also gets where it looked and the fix, in the magics' words.
    err = capsys.readouterr().err
    assert "No skill named 'ecko'" in err and "%skills add DIR" in err
    assert "manager." not in err


def test_available_subcommand(shell):
    from skill_magics.core.prompt.context import available_skills

    cat = shell.run_cell("%skills available").result
    assert isinstance(cat, SkillContextText)
    assert cat == available_skills(get_magics(shell).manager)
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
    assert to_await(lines) == lines  # a plain InteractiveShell has no kernel


def test_rewrite():
    first = rewrite(["ctx = %skill_context a b --no-run\n", "x = 1\n"])
    assert first[0] == f"ctx = await get_ipython().{HOOK_ATTR}('skill_context', 'a b --no-run')\n"
    assert first[1] == "x = 1\n"
    (cell,) = rewrite(["%%skillpy calc --timeout 5\n", "print(1)\n"])
    assert (
        cell == f"await get_ipython().{HOOK_ATTR}('skillpy', 'calc --timeout 5', 'print(1)\\n')\n"
    )
    assert rewrite(["    %skill_context a\n"]) == ["    %skill_context a\n"]
    compile(first[0], "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


def test_interrupt_while_waiting_for_approval_ends_the_wait(shell):
    """On the await path a kernel interrupt cancels the cell's coroutine: the worker thread
    must stop waiting for a click at once (not after approval_timeout) and run nothing."""
    import asyncio

    shell.run_cell("%config SkillMagics.approval_timeout = 60")
    m = get_magics(shell)
    cm = shell.magics_manager.registry[ContextMagics.__name__]
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
    assert (last.outcome, last.script) == ("interrupted", "scripts/echo.py")
    assert last.reason == "the cell was interrupted while waiting for approval; nothing ran"


AWAITED = f"await get_ipython().{HOOK_ATTR}('skill_context'"


@pytest.mark.parametrize(
    "cell",
    [
        "%%writefile howto.txt\nType this in a cell:\n%skill_context demo\n",
        "%%time\nx = %skill_context demo --no-run\n",
        "%%bash\n%skill_context demo\n",
        'doc = """\n%skill_context demo\n"""\nprint(doc)\n',
        "doc = '''\nx = %skill_context demo\n'''\n",
        "total = 1 + \\\n%skill_context demo\n",  # a continued line, not a statement
        "if True:\n    %skill_context demo\n",  # indented: not top level
        "# %skill_context demo\n",
    ],
)
def test_rewrite_leaves_other_cell_magics_strings_and_inner_lines_alone(cell):
    lines = cell.splitlines(keepends=True)
    assert rewrite(lines) == lines


def test_a_skillrun_cell_keeps_its_body_as_typed():
    (cell,) = rewrite(["%%skillrun demo.echo\n", "%skill_context demo\n"])
    assert (
        cell
        == f"await get_ipython().{HOOK_ATTR}('skillrun', 'demo.echo', '%skill_context demo\\n')\n"
    )


def test_rewrite_finds_statements_around_strings_and_blocks():
    cell = (
        'doc = """\n%skill_context no\n"""\n'
        'ctx = %skill_context a --args \'{"k": "%skill_context"}\'\n'
        "for i in range(2):\n    pass\n"
        "%skill_context b\n"
    )
    out = rewrite(cell.splitlines(keepends=True))
    assert out[1] == "%skill_context no\n"
    assert out[3].startswith(f"ctx = {AWAITED}") and out[3].endswith(
        ", 'a --args \\'{\"k\": \"%skill_context\"}\\'')\n"
    )
    assert out[6] == f"{AWAITED}, 'b')\n"
    compile("".join(out), "<cell>", "exec", flags=0x2000)  # PyCF_ALLOW_TOP_LEVEL_AWAIT


def test_other_cell_magics_keep_their_text_where_await_is_on(shell, tmp_path, monkeypatch):
    """As on ipykernel >= 7.4 (where the rewrite is active): %%writefile writes the line as
    typed, %%time and %time run the magic synchronously inside their own compile."""
    from skill_magics.notebook.approval import waiting

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


# -- several skills: one approval for the whole context ------------------------------------

# Written into the skill folder (not the run's cwd, the caller's folder by default).
MARK = (
    "import os, pathlib\npathlib.Path(os.environ['SKILL_BASE_DIR'], 'ran-{name}')"
    ".write_text('yes')\nprint('{name} ran')\n"
)


def _two_skills(make_skill, ip) -> tuple:
    """Skills alpha (two scripts) and beta (one); each script writes ran-<name> when it runs."""
    dirs = []
    for name, scripts in (("alpha", ("a1", "a2")), ("beta", ("b",))):
        body = "".join(f"Run `python scripts/{s}.py`.\n" for s in scripts)
        files = {f"scripts/{s}.py": MARK.format(name=s) for s in scripts}
        dirs.append(make_skill(ip.skills_root, name, scripts=files, body=body))
    get_magics(ip).manager.reload()
    return tuple(dirs)


def _statuses(xml: str) -> dict[str, list[str]]:
    return {
        ctx.get("id"): [o.get("status") for o in ctx.iter("script_output")]
        for ctx in ET.fromstring(xml).iter("skill_context")
    }


def test_several_skills_one_panel_click_yes_once(shell, make_skill):
    alpha, beta = _two_skills(make_skill, shell)
    m = get_magics(shell)
    seen = len(m.panels)
    clicker = click_when_shown(shell, "Yes once")
    result = shell.run_cell("%skill_context alpha beta -o ctx")
    clicker.join(5)
    assert result.success, result.error_in_exec
    assert len(m.panels) == seen + 1, "one panel for the whole context"
    request = m.panels[-1].request
    assert request.skill_names == ("alpha", "beta")
    assert [s.path for s in request.scripts] == [
        "alpha/scripts/a1.py",
        "alpha/scripts/a2.py",
        "beta/scripts/b.py",
    ]
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["completed", "completed"],
        "beta": ["completed"],
    }
    assert (alpha / "ran-a1").exists() and (alpha / "ran-a2").exists() and (beta / "ran-b").exists()
    approved = [(r.skill, r.script) for r in m.manager.audit.records() if r.outcome == "approved"]
    assert approved == [
        ("alpha", "scripts/a1.py"),
        ("alpha", "scripts/a2.py"),
        ("beta", "scripts/b.py"),
    ]
    panel_html = m.panels[-1].widget.children[0].value
    assert "<b>alpha</b>" in panel_html and "<b>beta</b>" in panel_html


def test_several_skills_yes_in_session_asks_nothing_next_time(shell, make_skill):
    _two_skills(make_skill, shell)
    m = get_magics(shell)
    clicker = click_when_shown(shell, "Yes in session")
    shell.run_cell("%skill_context alpha beta -o ctx")
    clicker.join(5)
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["completed", "completed"],
        "beta": ["completed"],
    }
    assert set(m.manager.approvals.approvals()) == {"alpha", "beta"}
    seen = len(m.panels)
    for line in ("%skill_context alpha beta -o ctx", "%skill_context beta -o out"):
        assert shell.run_cell(line).success
    assert len(m.panels) == seen, "approved in session: no panel"
    assert _statuses(shell.user_ns["out"]) == {"beta": ["completed"]}


def test_several_skills_no_declines_every_script(shell, make_skill):
    alpha, beta = _two_skills(make_skill, shell)
    clicker = click_when_shown(shell, "No")
    shell.run_cell("%skill_context alpha beta -o ctx")
    clicker.join(5)
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["declined", "declined"],
        "beta": ["declined"],
    }
    assert not list(alpha.glob("ran-*")) and not list(beta.glob("ran-*"))
    declined = [
        (r.skill, r.script)
        for r in get_magics(shell).manager.audit.records()
        if r.outcome == "declined"
    ]
    assert declined == [
        ("alpha", "scripts/a1.py"),
        ("alpha", "scripts/a2.py"),
        ("beta", "scripts/b.py"),
    ]


def test_pre_approved_skill_is_not_in_the_panel(shell, make_skill):
    _two_skills(make_skill, shell)
    m = get_magics(shell)
    shell.run_cell("%config SkillMagics.auto_approve = ['alpha']")
    seen = len(m.panels)
    clicker = click_when_shown(shell, "Yes once")
    shell.run_cell("%skill_context alpha beta -o ctx")
    clicker.join(5)
    assert len(m.panels) == seen + 1
    request = m.panels[-1].request
    assert request.skill_name == "beta" and not request.is_combined
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["completed", "completed"],
        "beta": ["completed"],
    }
    reasons = {r.skill: r.reason for r in m.manager.audit.records() if r.outcome == "approved"}
    assert "auto_approve" in reasons["alpha"] and "button 'Yes once'" in reasons["beta"]


@pytest.mark.parametrize(
    "config",
    [
        "%config SkillMagics.auto_approve = ['alpha', 'beta']",
        "%config SkillMagics.require_approval = False",
    ],
)
def test_everything_pre_approved_shows_no_panel(shell, config, make_skill):
    _two_skills(make_skill, shell)
    m = get_magics(shell)
    shell.run_cell(config)
    seen = len(m.panels)
    shell.run_cell("%skill_context alpha beta -o ctx")
    assert len(m.panels) == seen
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["completed", "completed"],
        "beta": ["completed"],
    }


def test_several_skills_unavailable_approval(shell, make_skill):
    """Nobody can answer (no kernel, stdin not a terminal): every asked skill's scripts are
    approval_unavailable, and the fix names every skill."""
    alpha, beta = _two_skills(make_skill, shell)
    m = get_magics(shell)
    shell.run_cell("%config SkillMagics.approval_ui = 'terminal'")
    seen = len(m.panels)
    shell.run_cell("%skill_context alpha beta -o ctx")
    ctx = shell.user_ns["ctx"]
    assert _statuses(ctx) == {
        "alpha": ["approval_unavailable", "approval_unavailable"],
        "beta": ["approval_unavailable"],
    }
    assert len(m.panels) == seen
    message = ET.fromstring(ctx).find(".//script_output").text
    assert "SKILL_MAGICS_AUTO_APPROVE=alpha,beta" in message
    assert "auto_approve = ['alpha', 'beta']" in message
    assert not list(alpha.glob("ran-*")) and not list(beta.glob("ran-*"))
    unavailable = [
        r.skill for r in m.manager.audit.records() if r.outcome == "approval_unavailable"
    ]
    assert unavailable == ["alpha", "alpha", "beta"]


def test_several_skills_await_path_click(shell, make_skill):
    """The await path (ipykernel >= 7.4): core in a worker thread waits for the one panel."""
    import asyncio

    alpha, beta = _two_skills(make_skill, shell)
    m = get_magics(shell)
    cm = shell.magics_manager.registry[ContextMagics.__name__]
    clicker = click_when_shown(shell, "Yes once")
    ctx = asyncio.run(cm.skill_context_async("alpha beta"))
    clicker.join(5)
    assert m.panels[-1].request.skill_names == ("alpha", "beta")
    assert m.panels[-1].decided_by == "button 'Yes once'"
    assert _statuses(ctx) == {"alpha": ["completed", "completed"], "beta": ["completed"]}


def test_skill_changed_while_the_panel_waits_does_not_run(shell, make_skill):
    alpha, beta = _two_skills(make_skill, shell)
    m = get_magics(shell)
    seen = len(m.panels)

    def edit_then_click() -> None:
        deadline = time.monotonic() + 20
        while len(m.panels) <= seen and time.monotonic() < deadline:
            time.sleep(0.02)
        (beta / "scripts/b.py").write_text(
            "import os\nopen(os.path.join(os.environ['SKILL_BASE_DIR'], 'evil'), 'w')\n"
        )
        m.panels[seen].buttons["yes_once"].click()

    thread = threading.Thread(target=edit_then_click, daemon=True)
    thread.start()
    shell.run_cell("%skill_context alpha beta -o ctx")
    thread.join(5)
    assert _statuses(shell.user_ns["ctx"]) == {
        "alpha": ["completed", "completed"],
        "beta": ["refused"],
    }
    assert not (beta / "evil").exists() and (alpha / "ran-a1").exists()


@pytest.mark.kernel
def test_several_skills_in_a_real_kernel_headless_and_clicked(tmp_path, make_skill):
    """A real kernel: headless (allow_stdin False) gives approval_unavailable for both skills
    at once; with a frontend, one panel and one click run both."""
    from kernel_fixtures import kernel_ipykernel_version, start_kernel

    skills = tmp_path / "skills"
    for name in ("alpha", "beta"):
        make_skill(
            skills, name, scripts={"scripts/echo.py": ECHO}, body="Run `python scripts/echo.py`.\n"
        )
    status = (
        "import xml.etree.ElementTree as ET\n"
        "print(sorted({o.get('status') for o in ET.fromstring(ctx).iter('script_output')}),"
        " [c.get('id') for c in ET.fromstring(ctx).iter('skill_context')])"
    )
    subshell = (7, 0) <= kernel_ipykernel_version() < (7, 4)
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills)}, cwd=tmp_path) as k:
        assert k.execute("%load_ext skill_magics", allow_stdin=False).ok
        r = k.execute("ctx = %skill_context alpha beta", allow_stdin=False, timeout=60)
        assert r.ok, r.error_text
        r = k.execute(status, allow_stdin=False)
        assert r.stdout.strip() == "['approval_unavailable'] ['alpha', 'beta']"
        if subshell:
            k.comms_subshell()
        msg_id = k.submit("ctx = %skill_context alpha beta --args '{\"n\": 1}'", allow_stdin=True)
        k.click_while_waiting(msg_id, "Yes once", subshell=subshell)
        r = k.execute(status, allow_stdin=True)
        assert r.stdout.strip() == "['completed'] ['alpha', 'beta']"
        buttons = [s for s in k.widgets.values() if s.get("_model_name") == "ButtonModel"]
        assert len(buttons) == 3, "one panel (three buttons) for both skills"
