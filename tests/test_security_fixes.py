"""Guards for the fixes to the security review's findings (beyond tests/test_security_review.py).

Real files, real processes, no mocks.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

import pytest

from skill_magics import SkillManager
from skill_magics.core.context import build_skill_context, parse_skill_context
from skill_magics.core.errors import ArgumentSizeError, PathSecurityError
from skill_magics.core.fingerprint import MAX_HASHED_BYTES, skill_fingerprint
from skill_magics.core.visible import visible

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX shebangs and signals")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        return False


# -- interpreter: an absolute shebang names the program by basename only ----------------------


def test_absolute_shebang_runs_the_allow_listed_program_on_path_with_its_flags(
    make_skill, tmp_path
):
    fake = tmp_path / "bin" / "bash"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\necho FAKE\n")
    fake.chmod(0o755)
    make_skill(tmp_path / "s", "sh", scripts={"scripts/run": f"#!{fake} -e\necho real $0\n"})
    manager = SkillManager([tmp_path / "s"])
    prepared = manager.prepare_skill_script("sh", "run")
    assert prepared.command[0] == shutil.which("bash")
    assert prepared.command[1] == "-e"  # the shebang's flags are kept
    assert manager.executor.run(prepared).stdout.startswith("real ")


# -- approval request: the real command, the real program, the whole script ----------------


def test_approval_request_shows_command_argv_and_the_venv_pythons_real_path(make_skill, tmp_path):
    skill = make_skill(tmp_path, "vv", scripts={"scripts/p.py": "print('hi')\n"})
    (skill / "venv" / "bin").mkdir(parents=True)
    os.symlink(os.path.realpath(sys.executable), skill / "venv" / "bin" / "python")
    seen = []
    manager = SkillManager([tmp_path], approver=lambda r: seen.append(r) or "yes_once")
    manager.execute_skill_script("vv", "p", argv=["--flag"])
    (item,) = seen[0].scripts
    assert item.command == (
        str(skill / "venv" / "bin" / "python"),
        str((skill / "scripts" / "p.py").resolve()),
        "--flag",
    )
    assert item.program_realpath == os.path.realpath(sys.executable)
    assert (item.lines, item.size) == (1, len("print('hi')\n"))

    from skill_magics.notebook.approval.panel import summary_html, summary_text

    for text in (summary_text(seen[0]), summary_html(seen[0])):
        assert str(skill / "venv" / "bin" / "python") in text
        assert os.path.realpath(sys.executable) in text
        assert "--flag" in text


def test_long_script_preview_counts_lines_and_shows_all_on_request(make_skill, tmp_path):
    from skill_magics.notebook.approval import waiting
    from skill_magics.notebook.approval.panel import summary_html, summary_text

    body = "".join(f"x{i} = {i}\n" for i in range(300)) + "EVIL_LAST_LINE = 1\n"
    make_skill(tmp_path, "long", scripts={"scripts/long.py": body})
    manager = SkillManager([tmp_path])
    request = manager.approval_request("long", [manager.get_skill("long").find_script("long")])
    text = summary_text(request)
    assert "... 289 more lines (301 total)" in text and "EVIL_LAST_LINE" not in text
    assert "EVIL_LAST_LINE" in summary_text(request, full=True)
    html = summary_html(request)
    assert "<details><summary>show all 301 lines" in html and "EVIL_LAST_LINE" in html
    printed: list[str] = []
    answers = iter(["a", "o"])
    import builtins

    original = builtins.print
    builtins.print = lambda *a, **k: printed.append(" ".join(map(str, a)))
    try:
        answer = waiting.ask_terminal(
            text, lambda _prompt: next(answers), full=summary_text(request, full=True)
        )
    finally:
        builtins.print = original
    assert answer == "yes_once"
    assert "EVIL_LAST_LINE" in printed[-1]


def test_preview_of_a_huge_script_is_capped_but_counts_everything(make_skill, tmp_path):
    line = "# " + "x" * 97 + "\n"  # 100 bytes
    make_skill(tmp_path, "huge", scripts={"scripts/h.py": line * 5000})  # 500 KB
    manager = SkillManager([tmp_path])
    (item,) = manager.approval_request("huge", [manager.get_skill("huge").find_script("h")]).scripts
    assert (item.lines, item.size) == (5000, 500_000)
    assert len(item.preview) <= 200_000 and item.preview.endswith("\n")


def test_visible_escapes_controls_separators_and_bidi():
    assert visible("a\x1b[2Kb\rc\u2028d\u202ee\x00") == "a\\x1b[2Kb\\rc⟨U+2028⟩d⟨U+202E⟩e\\x00"
    assert visible("tab\tnew\nline", keep="\t\n") == "tab\tnew\nline"
    assert visible("üñí😀 plain") == "üñí😀 plain"


# -- the skill fingerprint ("Yes in session" key) -------------------------------------------


def test_fingerprint_covers_every_file_but_not_venv_contents(make_skill, tmp_path):
    skill = make_skill(
        tmp_path,
        "fp",
        scripts={"scripts/a.sh": "echo a\n"},
        files={".hidden.rc": "x=1\n", "lib/helper.py": "X = 1\n", "venv/lib/site.py": "a\n"},
    )
    first = skill_fingerprint(skill)
    assert skill_fingerprint(skill) == first  # stable
    (skill / "venv" / "lib" / "site.py").write_text("pip rewrote me\n")
    (skill / "__pycache__").mkdir()
    (skill / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert skill_fingerprint(skill) == first  # installed packages and caches do not count
    for rel in (".hidden.rc", "lib/helper.py"):
        (skill / rel).write_text("changed\n")
        changed = skill_fingerprint(skill)
        assert changed != first
        first = changed
    (skill / "lib" / "link.py").symlink_to(skill / "lib" / "helper.py")
    assert skill_fingerprint(skill) != first


def test_fingerprint_counts_big_files_by_identity_without_reading_them(make_skill, tmp_path):
    skill = make_skill(tmp_path, "big", files={"data/big.bin": b"\0" * (MAX_HASHED_BYTES + 1)})
    first = skill_fingerprint(skill)
    path = skill / "data" / "big.bin"
    st = path.stat()
    with open(path, "r+b") as fh:  # same size, mtime put back: ctime still moves
        fh.write(b"\1")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert skill_fingerprint(skill) != first


# -- references ------------------------------------------------------------------------------


def test_fifo_in_references_does_not_hang_the_context(make_skill, tmp_path):
    skill = make_skill(tmp_path, "ff", files={"references/a.md": "a\n"})
    os.mkfifo(skill / "references" / "pipe.md")
    start = time.monotonic()
    xml = build_skill_context(
        SkillManager([tmp_path]), "ff", run_scripts=False, include_references="content"
    )
    assert time.monotonic() - start < 5
    refs = {r["path"]: r for r in parse_skill_context(xml)[0]["references"]}
    assert refs["references/a.md"]["content"] == "a\n"
    assert refs["references/pipe.md"]["error"] == "true"


# -- argv size, NUL names ------------------------------------------------------------------


def test_argv_over_the_total_limit_is_refused_before_spawn_and_audited(make_skill, tmp_path):
    make_skill(tmp_path, "argv", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path])
    many = ["y" * 100_000] * (os.sysconf("SC_ARG_MAX") // 100_000 + 2)
    with pytest.raises(ArgumentSizeError, match="stdin"):
        manager.prepare_skill_script("argv", "a", argv=many)
    (record,) = manager.audit.records()
    assert (record.outcome, record.script) == ("refused", "scripts/a.sh")
    # Well under the limits: runs.
    assert manager.execute_skill_script("argv", "a", argv=["z" * 100_000]).stdout == "hi\n"


def test_nul_in_a_script_name_is_a_path_security_refusal(make_skill, tmp_path):
    make_skill(tmp_path, "nul", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path])
    for name in ("a\0", "scripts/a.sh\0x"):
        with pytest.raises(PathSecurityError, match="NUL"):
            manager.execute_skill_script("nul", name)
    assert [r.outcome for r in manager.audit.records()] == ["refused", "refused"]


# -- processes that leave the group ----------------------------------------------------------

_ESCAPE_THEN_HANG = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    open({marker!r}, "w").write(str(os.getpid()))
    time.sleep(60)
    os._exit(0)
time.sleep(60)
"""


def test_timeout_also_kills_a_child_that_left_the_group(make_skill, tmp_path):
    marker = tmp_path / "pid"
    make_skill(
        tmp_path / "s",
        "esc",
        scripts={"scripts/e.py": _ESCAPE_THEN_HANG.format(marker=str(marker))},
    )
    result = SkillManager([tmp_path / "s"], timeout=1).execute_skill_script("esc", "e")
    assert result.timeout
    pid = int(marker.read_text())
    deadline = time.monotonic() + 2
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    survived = _alive(pid)
    if survived:
        os.kill(pid, signal.SIGKILL)
    assert not survived


def test_session_approval_counts_as_approval_for_agent_calls_only_when_given(make_skill, tmp_path):
    # A "Yes in session" a person gave for the skill's current files also covers a tool call
    # (that is what it means); without one and without an approver nothing runs.
    from skill_magics.core.tools import handle_tool_call

    make_skill(tmp_path, "sess", scripts={"scripts/a.sh": "echo ran\n"})
    manager = SkillManager([tmp_path])
    assert handle_tool_call(manager, "sess__a", {}, "t")["is_error"] is True
    manager.execute_skill_script("sess", "a", approver=lambda r: "yes_in_session")
    assert handle_tool_call(manager, "sess__a", {}, "t") == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": "ran\n",
        "is_error": False,
    }


def test_refusal_records_name_scripts_relative_to_the_skill(make_skill, tmp_path):
    skill = make_skill(tmp_path, "rel", scripts={"scripts/a.sh": "echo hi\n"})
    manager = SkillManager([tmp_path], allowed_interpreters=["python3"])
    with pytest.raises(Exception, match="not allowed"):
        manager.execute_skill_script("rel", "a")
    with pytest.raises(Exception, match="not allowed"):
        manager.executor.prepare(
            skill / "scripts" / "a.sh", {}, skill, manager.get_skill("rel").metadata
        )
    assert [r.script for r in manager.audit.records()] == ["scripts/a.sh", "scripts/a.sh"]
    assert not Path(manager.audit.records()[0].script).is_absolute()


def test_session_approval_survives_files_the_approved_run_writes_but_not_edits_between(
    make_skill, tmp_path
):
    skill = make_skill(
        tmp_path,
        "out",
        scripts={"scripts/w.sh": 'date +%s%N > "$SKILL_BASE_DIR/output.txt"\necho ok\n'},
    )
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    for _ in range(3):  # each run rewrites output.txt inside the skill
        assert manager.execute_skill_script("out", "w").stdout == "ok\n"
    assert len(asked) == 1
    (skill / "output.txt").write_text("source me\n")  # changed by someone else
    manager.execute_skill_script("out", "w")
    assert len(asked) == 2


@pytest.mark.parametrize(
    "writes",
    [
        'printf "echo rewritten\\n" > "$SKILL_BASE_DIR/scripts/w.sh"',  # the script itself
        'printf "x = 1\\n" > "$SKILL_BASE_DIR/helpers.py"',  # a module it may import
        'printf "#!/bin/sh\\n" > "$SKILL_BASE_DIR/tool"',  # a new program (shebang)
        'rm -f "$SKILL_BASE_DIR/SKILL.md.bak"; printf "x" >> "$SKILL_BASE_DIR/SKILL.md"',
        # outside the fingerprint, but code all the same: a .pth runs at the next start
        'mkdir -p "$SKILL_BASE_DIR/venv/lib/site-packages"; '
        'printf "import os\n" > "$SKILL_BASE_DIR/venv/lib/site-packages/zz.pth"',
        'mkdir -p "$SKILL_BASE_DIR/scripts/__pycache__"; '
        'printf "x" > "$SKILL_BASE_DIR/scripts/__pycache__/helper.cpython-311.pyc"',
        'mkdir -p "$SKILL_BASE_DIR/node_modules/pkg"; '
        'printf "x" > "$SKILL_BASE_DIR/node_modules/pkg/index.js"',
    ],
)
def test_session_approval_lapses_when_the_approved_run_changes_code(make_skill, tmp_path, writes):
    make_skill(tmp_path, "selfmod", scripts={"scripts/w.sh": f"{writes}\necho ok\n"})
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    manager.execute_skill_script("selfmod", "w")
    assert len(asked) == 1
    manager.execute_skill_script("selfmod", "w")  # the code changed: ask again
    assert len(asked) == 2
    lapsed = [r for r in manager.audit.records() if r.outcome == "approval_lapsed"]
    assert lapsed and "the run changed code in the skill" in lapsed[0].reason


def test_session_approval_survives_a_bundler_cache_in_node_modules(make_skill, tmp_path):
    writes = (
        'mkdir -p "$SKILL_BASE_DIR/node_modules/.cache/x"; '
        'date +%s%N > "$SKILL_BASE_DIR/node_modules/.cache/x/stamp"'
    )
    make_skill(tmp_path, "cache", scripts={"scripts/w.sh": f"{writes}\necho ok\n"})
    asked = []
    manager = SkillManager([tmp_path], approver=lambda r: asked.append(r) or "yes_in_session")
    for _ in range(3):
        assert manager.execute_skill_script("cache", "w").stdout == "ok\n"
    assert len(asked) == 1
