"""Terminal IPython end to end: a real ``python -m IPython`` under a real pseudo-terminal.

No kernel and no mocks: the approval question is asked by ``waiting.ask_terminal`` with
``input()`` because stdin is a TTY, on the default ``approval_ui = "auto"``. Each test starts
IPython with its own IPYTHONDIR, HOME and working directory, and SKILL_MAGICS_PATH pointing at
a copy of the bundled example skills (SKILL_MAGICS_AUTO_APPROVE removed), then types into the
pty and reads what IPython prints (ANSI escapes stripped, ``\\r\\n`` -> ``\\n``):

- ``%skills``: the aligned plain-text table of the four example skills;
- a one-line ``run_cell_magic('skillrun', ...)`` answered ``o``: the script runs;
- a typed ``%%skillrun`` cell answered ``maybe`` (asked again), ``a`` (the whole script),
  then ``n``: declined, and the marker the script would write never appears;
- ``s`` (yes in session), then the same cell again: not asked, it runs;
- ``exit()``: IPython exits with code 0 and leaves no process behind.

Also: with stdin a pipe instead of a terminal, a piped ``o`` line cannot approve anything.

Notes on the simple prompt (``--simple-prompt`` reads lines with ``input()``): a cell magic is
complete only after two empty lines there, and IPython refuses ``run_cell_magic`` with an empty
body (typed ``%%skillrun`` cells get a blank body from skill_magics' transformer).
"""

from __future__ import annotations

import codecs
import os
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from process_support import assert_group_gone

# A POSIX pseudo-terminal is needed (skipped on Windows).
fcntl = pytest.importorskip("fcntl")
termios = pytest.importorskip("termios")

READ_TIMEOUT = 60.0  # generous: a busy 2-core CI machine can be slow to start IPython
EXIT_TIMEOUT = 30.0
IPYTHON_ARGS = ("--simple-prompt", "--no-banner", "--colors=nocolor", "--no-confirm-exit")

PROMPT = r"In \[\d+\]: "
CONTINUATION = r"\.\.\.: "
# The question waiting.ask_terminal asks (with "show [a]ll" since the full text is passed).
QUESTION = re.escape("Run it? [o]nce / [s]ession / [N]o / show [a]ll: ")
EXAMPLE_SKILLS = ("csv-profiler", "demo-behaviours", "text-tools", "unit-converter")
CONVERT = "unit-converter.convert -- --value 3 --from km --to mi"

# CSI (ESC [ ... final), OSC (ESC ] ... BEL or ST) and two-character escapes.
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def clean(text: str) -> str:
    """Terminal output as plain text: no ANSI escapes, no carriage returns."""
    return ANSI.sub("", text).replace("\r", "")


def _take_controlling_tty() -> None:
    """In the child, after setsid(): make stdin (the pty slave) the controlling terminal.
    Passing an open fd does not do that by itself, and without it the terminal's Ctrl-C
    reaches no process."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class TerminalIPython:
    """``python -m IPython`` on the slave side of a pty; the test talks to the master side."""

    def __init__(self, env: dict[str, str], cwd: Path) -> None:
        master, slave = os.openpty()
        # A real terminal has a size; 200 columns keep IPython from guessing.
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "IPython", *IPYTHON_ARGS],
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=env,
                cwd=cwd,
                start_new_session=True,  # own session, whose controlling tty is the pty:
                preexec_fn=_take_controlling_tty,  # so Ctrl-C (ISIG) signals IPython
                close_fds=True,
            )
        except BaseException:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self.master = master
        self.pgid = self.proc.pid  # start_new_session: the group id is the child's pid
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._raw = ""
        self.eof = False
        self.pos = 0  # expect() searches the cleaned transcript from here

    @property
    def transcript(self) -> str:
        return clean(self._raw)

    def _read(self, timeout: float) -> None:
        """Append whatever the pty has within ``timeout`` seconds (EOF sets ``eof``)."""
        if self.eof:
            return
        ready, _, _ = select.select([self.master], [], [], timeout)
        if not ready:
            return
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: every process holding the slave side has gone
            data = b""
        if not data:
            self.eof = True
            self._raw += self._decoder.decode(b"", final=True)
            return
        self._raw += self._decoder.decode(data)

    def expect(self, pattern: str, timeout: float = READ_TIMEOUT) -> re.Match[str]:
        """Wait until ``pattern`` appears after the last match; fail with the transcript tail."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        while True:
            text = self.transcript
            match = regex.search(text, self.pos)
            if match:
                self.pos = match.end()
                return match
            remaining = deadline - time.monotonic()
            if remaining <= 0 or self.eof:
                why = "EOF" if self.eof else f"{timeout:.0f} s"
                pytest.fail(
                    f"{pattern!r} did not appear ({why}; IPython exit code {self.proc.poll()})."
                    f"\n--- transcript tail (searched from {self.pos}) ---\n{text[-3000:]}"
                )
            self._read(min(remaining, 0.5))

    def upto(self, pattern: str, timeout: float = READ_TIMEOUT) -> str:
        """Like expect(); returns the text between the last match and this one."""
        start = self.pos
        match = self.expect(pattern, timeout)
        return match.string[start : match.start()]

    def send(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode("utf-8"))

    def run(self, line: str) -> str:
        """Type one line at the prompt; the output (with the echoed line) up to the next prompt."""
        self.send(line)
        return self.upto(PROMPT)

    def type_cell(self, *lines: str) -> None:
        """Type a multi-line cell; the simple prompt ends a cell magic at two empty lines."""
        first, *rest = [*lines, "", ""]
        self.send(first)
        for line in rest:
            self.expect(CONTINUATION)
            self.send(line)

    def answer(self, text: str) -> None:
        """Wait for the approval question, then answer it."""
        self.expect(QUESTION)
        self.send(text)

    def close(self) -> None:
        """Kill the whole process group if anything is left, reap IPython, close the pty."""
        try:
            if self.proc.poll() is None:
                try:
                    os.killpg(self.pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            try:
                self.proc.wait(timeout=EXIT_TIMEOUT)
            except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
                pass
            try:
                os.killpg(self.pgid, signal.SIGKILL)  # scripts IPython may have left behind
            except (ProcessLookupError, PermissionError):
                pass
        finally:
            os.close(self.master)


def _env(tmp_path: Path, examples_dir: Path) -> tuple[dict[str, str], Path]:
    """Environment and working directory for an isolated IPython over copied examples.

    The copy is inside the working directory, so tables show it as ``./skills-copy/...``
    (render/paths.py: display_path) whatever the length of the temp folder's path."""
    home, work = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    work.mkdir()
    skills = work / "skills-copy"
    shutil.copytree(examples_dir, skills)
    env = dict(os.environ)
    for name in ("SKILL_MAGICS_AUTO_APPROVE", "PYTHONSTARTUP", "COLUMNS", "LINES"):
        env.pop(name, None)
    env.update(
        IPYTHONDIR=os.fspath(tmp_path / "ipython"),
        HOME=os.fspath(home),
        SKILL_MAGICS_PATH=os.fspath(skills),
        TERM="xterm",
        PYTHONIOENCODING="utf-8",
    )
    return env, work


@pytest.fixture
def ipython(tmp_path: Path, examples_dir: Path) -> Iterator[TerminalIPython]:
    """Terminal IPython at its first prompt with ``%load_ext skill_magics`` done."""
    env, work = _env(tmp_path, examples_dir)
    session = TerminalIPython(env, work)
    try:
        session.expect(PROMPT)
        out = session.run("%load_ext skill_magics")
        assert "Error" not in out, out
        yield session
    finally:
        session.close()


def test_skills_prints_an_aligned_text_table(ipython: TerminalIPython) -> None:
    ui = ipython.run(
        "print(get_ipython().find_cell_magic('skillrun').__self__.skill_magics.approval_ui)"
    )
    assert ui.strip().splitlines()[-1] == "auto"  # the real default path, nothing forced

    out = ipython.run("%skills")
    assert "<table" not in out and "<div" not in out  # text in a terminal, not HTML
    lines = out.splitlines()
    header = next(i for i, line in enumerate(lines) if line.startswith("name "))
    assert lines[header].split() == ["name", "description", "scripts", "location"]
    separator = lines[header + 1]
    assert re.fullmatch(r"-+(  -+)+\s*", separator), separator
    columns = [m.start() for m in re.finditer(r"-+", separator)]
    rows = {line.split()[0]: line for line in lines[header + 2 :] if line.strip()}
    assert sorted(rows) == sorted(EXAMPLE_SKILLS), out
    for line in [lines[header], *rows.values()]:
        for start in columns[1:]:  # every column starts at the separator's dashes
            assert line[start - 2 : start] == "  " and line[start] != " ", (start, line)
    for name, line in rows.items():
        # location: our copy, relative to the working directory, whole (not shortened)
        assert line[columns[3] :] == f"./skills-copy/{name}", line
        assert line[columns[2] :].split()[0].isdigit(), line  # scripts: a count
    assert rows["demo-behaviours"][columns[2] :].split()[0] == "5"


def test_yes_once_runs_the_script(ipython: TerminalIPython) -> None:
    ipython.send(f"r = get_ipython().run_cell_magic('skillrun', {CONVERT!r}, '{{}}')")
    ipython.expect(r"Approval needed: skill 'unit-converter' wants to run:")
    ipython.expect(r"argv: --value 3 --from km --to mi")
    ipython.answer("o")
    out = ipython.upto(PROMPT)
    assert "Traceback" not in out and "Error" not in out, out

    out = ipython.run("print(r.status, r.exit_code, r.json()['result'])")
    assert "completed 0 1.864114" in out, out
    out = ipython.run("r")  # the text view of the result
    assert re.search(r"unit-converter\.convert\W+completed\W+exit 0", out), out
    assert '"result": 1.864114' in out, out

    # Yes once is not remembered: the next run asks again.
    ipython.send(f"r = get_ipython().run_cell_magic('skillrun', {CONVERT!r}, '{{}}')")
    ipython.answer("n")
    ipython.expect(PROMPT)
    assert "declined None" in ipython.run("print(r.status, r.exit_code)")


def test_no_runs_nothing(ipython: TerminalIPython, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    ipython.type_cell("%%skillrun demo-behaviours.touch_marker -o r", f'{{"path": "{marker}"}}')
    ipython.expect(r"Approval needed: skill 'demo-behaviours' wants to run:")
    ipython.expect(r"first lines of scripts/touch_marker\.py")
    ipython.answer("maybe")
    ipython.expect(re.escape("Please answer o (yes once), s (yes in session) or n (no)."))
    ipython.answer("a")  # show all: the whole script, then the question again
    ipython.expect(r"print\(json\.dumps\(\{\"marker\": os\.path\.abspath\(path\)\}\)\)")
    ipython.answer("n")
    out = ipython.upto(PROMPT)
    assert re.search(r"touch_marker\W+declined", out), out
    assert "nothing ran" in out, out

    assert "declined None" in ipython.run("print(r.status, r.exit_code)")
    assert not marker.exists()
    out = ipython.run("%skills approvals")
    assert "demo-behaviours" not in out, out


def test_ctrl_c_at_the_prompt_runs_nothing_and_is_audited(
    ipython: TerminalIPython, tmp_path: Path
) -> None:
    marker = tmp_path / "marker.txt"
    ipython.type_cell("%%skillrun demo-behaviours.touch_marker -o r", f'{{"path": "{marker}"}}')
    ipython.expect(QUESTION)
    # Ctrl-C: the terminal sends SIGINT to IPython. input() prints its prompt just before it
    # blocks in read(); a SIGINT in between only sets a flag and read() still blocks, so
    # press again (as a person would) when the first press fell into that gap.
    start = ipython.pos
    for _ in range(5):
        time.sleep(0.3)
        os.write(ipython.master, b"\x03")
        deadline = time.monotonic() + 3
        while "RunInterrupted" not in ipython.transcript[start:] and time.monotonic() < deadline:
            ipython._read(0.2)
        if "RunInterrupted" in ipython.transcript[start:]:
            break
    out = ipython.upto(PROMPT)
    assert "RunInterrupted: demo-behaviours.scripts/touch_marker.py: interrupted at the" in out
    assert "Traceback" not in out, out
    assert not marker.exists()
    out = ipython.run(
        "print(get_ipython().magics_manager.registry['SkillMagics']"
        ".manager.audit.records()[-1].outcome)"
    )
    assert "interrupted" in out, out


def test_ctrl_d_at_the_prompt_declines(ipython: TerminalIPython, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    ipython.type_cell("%%skillrun demo-behaviours.touch_marker -o r", f'{{"path": "{marker}"}}')
    ipython.expect(QUESTION)
    os.write(ipython.master, b"\x04")  # Ctrl-D on an empty line: end of input
    out = ipython.upto(PROMPT)
    assert re.search(r"touch_marker\W+declined", out), out
    assert "declined None" in ipython.run("print(r.status, r.exit_code)")
    assert not marker.exists()


def test_ctrl_d_at_the_skill_context_prompt_declines(ipython: TerminalIPython) -> None:
    ipython.send('ctx = %skill_context csv-profiler --args \'{"path": "data/sample.csv"}\'')
    ipython.expect(QUESTION)
    os.write(ipython.master, b"\x04")  # Ctrl-D: end of input means No here too
    ipython.expect(PROMPT)
    out = ipython.run("import re; print(re.findall(r'status=\"(\\w+)\"', ctx))")
    assert "['declined']" in out, out


def test_yes_in_session_is_not_asked_again(ipython: TerminalIPython, tmp_path: Path) -> None:
    marker = tmp_path / "marker.txt"
    cell = ("%%skillrun demo-behaviours.touch_marker -o r", f'{{"path": "{marker}"}}')
    ipython.type_cell(*cell)
    ipython.answer("s")
    ipython.expect(PROMPT)
    assert "completed 0" in ipython.run("print(r.status, r.exit_code)")
    assert marker.exists()
    marker.unlink()
    assert "demo-behaviours" in ipython.run("%skills approvals")

    asked_before = len(re.findall(QUESTION, ipython.transcript))
    ipython.type_cell(*cell)
    out = ipython.upto(PROMPT)
    assert re.search(r"touch_marker\W+completed\W+exit 0", out), out
    assert len(re.findall(QUESTION, ipython.transcript)) == asked_before  # not asked
    assert marker.exists()
    assert "completed 0" in ipython.run("print(r.status, r.exit_code)")

    # The session approval is per skill: another skill is still asked about.
    ipython.type_cell(f"%%skillrun {CONVERT}")  # typed with an empty body
    ipython.answer("n")
    ipython.expect(PROMPT)


def test_exit_ends_ipython_cleanly(ipython: TerminalIPython) -> None:
    ipython.send(f"r = get_ipython().run_cell_magic('skillrun', {CONVERT!r}, '{{}}')")
    ipython.answer("o")
    ipython.expect(PROMPT)
    assert "completed 0" in ipython.run("print(r.status, r.exit_code)")

    ipython.send("exit()")
    try:
        code = ipython.proc.wait(timeout=EXIT_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"IPython did not exit after exit():\n{ipython.transcript[-3000:]}")
    assert code == 0, ipython.transcript[-3000:]
    assert_group_gone(ipython.pgid)


def test_piped_stdin_cannot_approve(tmp_path: Path, examples_dir: Path) -> None:
    """stdin not a terminal: approval is unavailable, a piped "o" answers nothing."""
    env, work = _env(tmp_path, examples_dir)
    marker = tmp_path / "marker.txt"
    cell = f'%%skillrun demo-behaviours.touch_marker -o r\n{{"path": "{marker}"}}\n\n\n'
    stdin = f"%load_ext skill_magics\n{cell}o\nprint('STATUS', r.status)\nexit()\n"
    proc = subprocess.run(
        [sys.executable, "-m", "IPython", *IPYTHON_ARGS],
        input=stdin,
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        timeout=READ_TIMEOUT,
        start_new_session=True,
    )
    out = clean(proc.stdout + proc.stderr)
    assert "STATUS approval_unavailable" in out, out
    assert "SKILL_MAGICS_AUTO_APPROVE=demo-behaviours" in out, out
    assert "Run it?" not in out, out
    assert not marker.exists()
