"""What differs between kernel stacks (notebook/compat.py), and the stdin prompt, in a real kernel.

scripts/kernel-matrix.sh runs these on every kernel it builds; its "colab" entry is Google
Colab's pinned stack (IPython 7.34, ipykernel 6.17, ipywidgets 7.7 on Python 3.13:
scripts/colab-pins.txt), where completion has no Matcher API v2, a widget shows itself without
a display id and tabs are titled by ``set_title``. Everything is spoken over jupyter_client,
as a browser would: complete_request, comm messages for typing and clicking, input_reply.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from kernel_fixtures import KernelSession, kernel_ipykernel_version, kernel_python, start_kernel

pytestmark = pytest.mark.kernel

REPO = Path(__file__).resolve().parents[1]
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
BANG = "#!/usr/bin/env python3\n"
ECHO = 'import json, sys\nprint(json.dumps({"got": json.load(sys.stdin)}))\n'
KEYED = (
    BANG + "import hashlib, os\n"
    "print(hashlib.sha256(os.environ.get('API_KEY', '').encode()).hexdigest())\n"
)
SECRET = "typed-in-the-panel-3f9a1c"
MANAGER = "from skill_magics.notebook.extension import get_magics\nm = get_magics(get_ipython())\n"


@pytest.fixture
def skills(tmp_path: Path, make_skill) -> Path:
    root = tmp_path / "skills"
    make_skill(
        root,
        "compat-skill",
        {"name": "compat-skill", "description": "Scripts for the stack tests."},
        {"scripts/echo.py": BANG + ECHO},
        executable=False,
    )
    make_skill(
        root,
        "keyed",
        {"name": "keyed", "description": "Needs a key.", "metadata": {"secrets": "API_KEY"}},
        {"scripts/run.py": KEYED},
        executable=False,
    )
    return root


@contextmanager
def _kernel(skills: Path, cwd: Path, **env: str) -> Iterator[KernelSession]:
    with start_kernel(env={"SKILL_MAGICS_PATH": str(skills), **env}, cwd=cwd) as session:
        r = session.execute("%load_ext skill_magics")
        assert r.ok, r.error_text
        yield session


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def test_kernel_environment_satisfies_the_package() -> None:
    """The kernel's environment meets every runtime requirement of pyproject.toml; in the
    colab entry (SKILL_MAGICS_EXPECT_PINS) it holds every pin at exactly its version, so the
    package was installed beside Colab's stack without moving any of it."""
    from packaging.requirements import Requirement

    probe = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    out = subprocess.run(
        [kernel_python(), "-c", probe], capture_output=True, text=True, check=True, timeout=60
    ).stdout
    installed = {_canonical(k): v for k, v in json.loads(out).items()}
    import tomllib

    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    for dep in map(Requirement, deps):
        have = installed.get(_canonical(dep.name))
        assert have is not None and dep.specifier.contains(have, prereleases=True), (
            f"{dep} not met in the kernel's environment ({have})"
        )
    pins = os.environ.get("SKILL_MAGICS_EXPECT_PINS")
    if pins:
        wanted = {}
        for line in Path(pins).read_text().splitlines():
            line = line.split("#", 1)[0].strip()
            if "==" in line:
                name, version = line.split("==", 1)
                wanted[_canonical(name)] = version
        moved = {n: (v, installed.get(n)) for n, v in wanted.items() if installed.get(n) != v}
        assert not moved, f"pinned -> installed: {moved}"
        for name in ("ipython", "ipykernel", "ipywidgets"):
            assert name in wanted, f"{pins} does not pin {name}"


def test_completion_answers_over_the_kernel(skills: Path, tmp_path: Path) -> None:
    """Tab after ``%%skillrun`` and ``%skills show`` offers skill names, alone (no file
    names); elsewhere it offers none. IPython 7 has no Matcher API v2: a line matcher."""
    with _kernel(skills, tmp_path) as k:
        (tmp_path / "compat-notes.txt").write_text("a file a path matcher would offer\n")
        line = "%%skillrun compat-skill.e"
        reply = k.complete(line)
        assert reply["status"] == "ok", reply
        assert reply["matches"] == ["compat-skill.echo"], reply
        assert reply["cursor_start"] == len("%%skillrun "), reply
        reply = k.complete("%%skillrun co")
        assert reply["matches"] == ["compat-skill.echo"], reply  # not compat-notes.txt
        reply = k.complete("%skills show ke")
        assert reply["matches"] == ["keyed"] and reply["cursor_start"] == len("%skills show ")
        reply = k.complete("print(compat")
        assert "compat-skill.echo" not in reply["matches"], reply


def _subshell() -> bool:
    """On ipykernel 7.0-7.3 send widget messages on a subshell, as JupyterLab does (the main
    shell works too: tests/test_vscode_kernel.py)."""
    return (7, 0) <= kernel_ipykernel_version() < (7, 4)


def test_secret_typed_in_the_panel_reaches_the_run_and_is_cleared(
    skills: Path, tmp_path: Path
) -> None:
    """The browser types into the masked field (a widget update), then clicks Yes once while
    the cell waits: the run gets the value, and the field is emptied in the browser too."""
    subshell = _subshell()
    with _kernel(skills, tmp_path) as k:
        if subshell:
            k.comms_subshell()
        msg_id = k.submit("%%skillrun keyed.run -o res\n", allow_stdin=True)
        field = k.wait_for_widget("PasswordModel")
        button = k.wait_for_button("Yes once")
        k.set_state(field, {"value": SECRET}, subshell=subshell)
        k.click_until_handled(button, msg_id, subshell=subshell)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        r = k.execute("print(res.status); print(res.stdout.strip())")
        assert r.stdout.split() == ["completed", hashlib.sha256(SECRET.encode()).hexdigest()]
        k.drain(0.5)
        assert k.widgets[field]["value"] == "" and k.widgets[field]["disabled"] is True


def test_stdin_prompt_approves_in_a_notebook(skills: Path, tmp_path: Path) -> None:
    """``approval_ui = "stdin"``: the question is an input_request (Colab shows an input box);
    o runs once, n declines, s runs and is not asked again."""
    with _kernel(skills, tmp_path) as k:
        r = k.execute("%config SkillMagics.approval_ui = 'stdin'")
        assert r.ok, r.error_text
        answers = {"o": "completed", "n": "declined", "s": "completed"}
        for answer, status in answers.items():
            msg_id = k.submit('%%skillrun compat-skill.echo -o res\n{"k": 2}', allow_stdin=True)
            prompt = k.answer_input(answer, timeout=60)
            assert "Run it? [o]nce / [s]ession / [N]o" in prompt
            r = k.collect(msg_id, timeout=60)
            assert r.ok, r.error_text
            assert "Approval needed: skill 'compat-skill' wants to run:" in r.stdout
            check = k.execute("print(res.status)")
            assert check.stdout.strip() == status, (answer, check.stdout, r.stdout)
        # "Yes in session": the next run asks nobody (no input_request: it just finishes).
        again = k.execute('%%skillrun compat-skill.echo -o res\n{"k": 3}', allow_stdin=True)
        assert again.ok, again.error_text
        r = k.execute(
            MANAGER + "print(res.status)\n"
            "print(sorted({r.reason for r in m.manager.audit.records() if r.reason}))"
        )
        lines = r.stdout.splitlines()
        assert lines[0] == "completed"
        assert "notebook stdin prompt" in lines[1], lines


def test_stdin_prompt_asks_for_a_missing_secret(skills: Path, tmp_path: Path) -> None:
    """At the stdin prompt a missing secret is asked with getpass (an input_request with
    password true): nothing is echoed, and the run gets it."""
    with _kernel(skills, tmp_path) as k:
        k.execute("%config SkillMagics.approval_ui = 'stdin'")
        msg_id = k.submit("%%skillrun keyed.run -o res\n", allow_stdin=True)
        assert "Run it?" in k.answer_input("o", timeout=60)
        request = k.kc.get_stdin_msg(timeout=30)
        assert request["content"]["password"] is True
        assert "Secret API_KEY for skill 'keyed'" in request["content"]["prompt"]
        k.kc.input(SECRET)
        r = k.collect(msg_id, timeout=60)
        assert r.ok, r.error_text
        assert SECRET not in r.stdout
        r = k.execute("print(res.status); print(res.stdout.strip())")
        assert r.stdout.split() == ["completed", hashlib.sha256(SECRET.encode()).hexdigest()]


def test_batch_progress_bar_is_replaced_by_its_summary(skills: Path, tmp_path: Path) -> None:
    """The live progress bar is shown with a display id and replaced by one text line when
    the batch ends (ipywidgets 7 ignores display ids: compat.show_widget gives one)."""
    with _kernel(skills, tmp_path, SKILL_MAGICS_AUTO_APPROVE="compat-skill") as k:
        k.execute("rows = [{'k': i} for i in range(3)]")
        r = k.execute("%%skillrun compat-skill.echo --map rows -o out\n", allow_stdin=True)
        assert r.ok, r.error_text
        k.drain(0.5)
        shown = [
            m["content"]
            for m in r.outputs
            if m["msg_type"] == "display_data" and WIDGET_VIEW in m["content"]["data"]
        ]

        def is_bar(content: dict) -> bool:
            state = k.every_widget.get(content["data"][WIDGET_VIEW]["model_id"], {})
            children = [k.every_widget.get(c[len("IPY_MODEL_") :], {}) for c in state["children"]]
            return "IntProgressModel" in [c.get("_model_name") for c in children]

        bars = [c for c in shown if is_bar(c)]
        assert len(bars) == 1, shown
        display_id = bars[0]["transient"]["display_id"]
        updates = [
            m["content"]
            for m in r.outputs
            if m["msg_type"] == "update_display_data"
            and m["content"]["transient"]["display_id"] == display_id
        ]
        assert updates and "compat-skill.echo: 3 items" in updates[-1]["data"]["text/plain"]
        assert WIDGET_VIEW not in updates[-1]["data"]
