"""A newcomer's first day in a real kernel (issue 31; jupyter_client, no mocks).

- a skill (or a ./skills folder) written after the first ``%skills`` is listed and runs
  without ``%skills reload``;
- every message a magic user sees names the magic or flag (``%skills add DIR``,
  ``--timeout N``, ``unit-converter.convert``), not the Python call;
- csv-profiler reads ``{"path": "mine.csv"}`` beside the notebook.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from kernel_fixtures import start_kernel

pytestmark = pytest.mark.kernel

HI = "#!/usr/bin/env python3\nprint('hi from second')\n"
SLOW = "#!/usr/bin/env python3\nimport time\ntime.sleep(30)\n"


def _skill(root: Path, name: str, scripts: dict[str, str]) -> None:
    folder = root / name
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Test skill {name}.\n---\n# {name}\n", encoding="utf-8"
    )
    for rel, text in scripts.items():
        (folder / rel).write_text(text, encoding="utf-8")


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    """One kernel in an empty notebook folder (no ./skills yet; HOME empty too)."""
    work = tmp_path_factory.mktemp("work")
    home = tmp_path_factory.mktemp("home")
    env = {"HOME": str(home), "SKILL_MAGICS_PATH": "", "SKILL_MAGICS_AUTO_APPROVE": "*"}
    with start_kernel(env=env, cwd=work) as k:
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        yield k, work


def test_a_skills_folder_made_after_the_first_listing_is_seen(newcomer):
    k, work = newcomer
    r = k.execute("%skills", allow_stdin=False)
    assert r.ok, r.error_text
    assert "second" not in r.text()
    _skill(work / "skills", "second", {"scripts/hi.py": HI, "scripts/slow.py": SLOW})
    r = k.execute("%skills", allow_stdin=False)
    assert r.ok, r.error_text
    assert "second" in r.text(), "the listing shows what is on disk now"
    _skill(work / "skills", "third", {"scripts/hi.py": HI})
    r = k.execute("%%skillrun third.hi\n", allow_stdin=False, timeout=60)
    assert r.ok, r.error_text  # found by the rescan a miss triggers, no %skills reload
    assert "hi from second" in r.text()


def test_errors_name_the_magic_not_the_python_call(newcomer):
    k, work = newcomer
    r = k.execute("%%skillrun nope.hi\n", allow_stdin=False)
    assert not r.ok
    error = r.error_text
    assert "%skills add DIR" in error and "add_dir" not in error, error
    assert "list_skills" not in error, error
    _skill(work / "skills", "unit-converter", {"scripts/convert.py": HI})
    r = k.execute("%%skillrun unit-converter.convrt\n", allow_stdin=False)
    assert not r.ok
    assert "did you mean unit-converter.convert?" in r.error_text, r.error_text
    assert "scripts/convert.py" not in r.error_text, r.error_text


def test_the_timeout_note_names_the_flag(newcomer):
    k, work = newcomer
    if not (work / "skills" / "second").exists():
        _skill(work / "skills", "second", {"scripts/hi.py": HI, "scripts/slow.py": SLOW})
    r = k.execute("%%skillrun second.slow --timeout 1 -o res\n", allow_stdin=False, timeout=60)
    assert r.ok, r.error_text
    r = k.execute("print(res.status); print(res.stderr)", allow_stdin=False)
    assert "--timeout N" in r.stdout, r.stdout


def test_csv_profiler_reads_a_csv_beside_the_notebook(newcomer):
    k, work = newcomer
    (work / "mine.csv").write_text("city,temp\nOslo,4\nLima,19\nRome,15\n", encoding="utf-8")
    r = k.execute("%skills add --examples", allow_stdin=False)
    assert r.ok, r.error_text
    r = k.execute(
        '%%skillrun csv-profiler.profile -o prof\n{"path": "mine.csv"}\n',
        allow_stdin=False,
        timeout=60,
    )
    assert r.ok, r.error_text
    r = k.execute("print(prof.status, prof.json()['rows'])", allow_stdin=False)
    assert r.stdout.strip() == "completed 3", r.stdout


def test_the_lab_magic_with_a_rejected_key_is_one_line(newcomer, server):
    # Issue 31: every lab cell printed a 21,000-27,000-character traceback.
    from model_server import Scripted

    k, _ = newcomer
    server.script = lambda c: Scripted(status=401, error="invalid x-api-key")
    r = k.execute(
        "import anthropic\n"
        f"bad = anthropic.Anthropic(base_url={server.url!r}, api_key='wrong', max_retries=0)",
        allow_stdin=False,
    )
    assert r.ok, r.error_text
    r = k.execute("%%skillagent --client bad --model m -o t\nconvert 3 km\n", allow_stdin=False)
    assert not r.ok
    text = r.text() + r.error_text
    assert "rejected the key (HTTP 401" in text and "ANTHROPIC_API_KEY" in text, text
    assert "Traceback" not in text and len(r.error_text) < 600, text


def test_the_lab_magic_without_a_key_says_where_a_model_would_answer(newcomer):
    k, _ = newcomer
    r = k.execute(
        "import os, anthropic\n"
        "os.environ.pop('ANTHROPIC_API_KEY', None); os.environ.pop('ANTHROPIC_AUTH_TOKEN', None)\n"
        "keyless = anthropic.Anthropic()",
        allow_stdin=False,
    )
    assert r.ok, r.error_text
    r = k.execute("%%skillagent --client keyless --model m -o t\nconvert 3 km\n", allow_stdin=False)
    assert r.ok, r.error_text  # the notebook goes on (a teacher without a key)
    assert "No model answered here: a model would get this prompt" in r.stdout
    assert "No Anthropic API key: set ANTHROPIC_API_KEY" in r.stdout
    r = k.execute("print(t)", allow_stdin=False)
    assert r.stdout.strip() == "None"


def test_a_missing_package_names_skills_env(newcomer):
    k, work = newcomer
    _skill(work / "skills", "needs-pkg", {"scripts/run.py": "import no_such_pkg_i31\n\nprint(1)\n"})
    r = k.execute("%%skillrun needs-pkg.run -o r\n", allow_stdin=False, timeout=60)
    assert r.ok, r.error_text
    r = k.execute("print(r.status); print(r.stderr)", allow_stdin=False)
    assert "failed" in r.stdout and "%skills env needs-pkg installs" in r.stdout, r.stdout


def test_after_a_restart_the_not_found_line_names_the_folder_added_before(tmp_path: Path):
    """Issue 44 item 8: `%skills add DIR` lasts one kernel. After a restart (a new kernel,
    the same IPython history) the error says the folder was added in an earlier session and
    what to run, instead of suggesting an unrelated skill with a close name."""
    ipython = tmp_path / "ipython"  # one IPython profile: its history outlives the kernel
    work = tmp_path / "work"
    mine = work / "mine"
    _skill(mine, "greeter", {"scripts/hi.py": HI})
    _skill(work / "skills", "greeted", {"scripts/hi.py": HI})  # a close, unrelated name
    env = {"HOME": str(tmp_path), "IPYTHONDIR": str(ipython), "SKILL_MAGICS_PATH": ""}
    env["SKILL_MAGICS_AUTO_APPROVE"] = "*"
    with start_kernel(env=env, cwd=work) as k:
        r = k.execute("%load_ext skill_magics\n%skills add mine", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute("%%skillrun greeter.hi\n", allow_stdin=False)
        assert r.ok and "hi from second" in r.text() + r.stdout, r.error_text
    with start_kernel(env=env, cwd=work) as k:  # the restart
        r = k.execute("%load_ext skill_magics", allow_stdin=False)
        assert r.ok, r.error_text
        r = k.execute("%%skillrun greeter.hi\n", allow_stdin=False)
        said = r.error_text + r.stderr
        assert "No skill named 'greeter' in this kernel: it is in mine" in said, said
        assert "`%skills add mine`" in said and "greeted" not in said
        # a name no earlier session's folder holds keeps the ordinary line
        r = k.execute("%%skillrun nobody.hi\n", allow_stdin=False)
        assert "No skill named 'nobody'" in r.error_text + r.stderr
